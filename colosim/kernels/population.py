"""The built-in population's per-window kernel (colosim.sources.population)."""

from .._jit import jit

__all__ = ["phases"]


@jit
def phases(u, level, n_phases, a, b, p, pi, inst, avg):
    """Per window t: phases ``min(1, level[t] * F)`` from the uniforms
    ``u[t * n_phases : (t + 1) * n_phases]``; inst = the first, avg = their
    mean (summed in order, float64)."""
    for t in range(level.shape[0]):
        s = 0.0
        for j in range(n_phases):
            v = u[t * n_phases + j]
            f = a + b * (v / pi) ** p if v < pi else 0.0
            x = min(level[t] * f, 1.0)
            if j == 0:
                inst[t] = x
            s += x
        avg[t] = s / n_phases
