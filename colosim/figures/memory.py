"""The figure of CPU and memory together (docs/memory.md): for each way of
packing memory — not at all, by its maximum, by a chance constraint, under
each Best Fit rule — the machines used, CPU's violation frequency q and
memory's, ``q_memory``, each a mean over instances with its 95% interval.

Rows are those at the table's reference for the keys the figure does not
compare (algorithm, clairvoyance, data, rebalance, headroom); every CPU
estimator and every capacity of the table is drawn, a colour each.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..analysis.summary import summarize_point

#: the keys the figure compares; the others are held at the reference
COMPARED = ("estimator", "capacity", "fit_rule", "memory_capacity", "memory_estimator")
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
MARKERS = ("o", "s", "^", "D", "v", "P")


def treatment(r: dict) -> str:
    """How a row packs memory, as the figure labels it."""
    if r["q_memory"] is None:
        return "CPU alone (memory not packed)"
    memory = "shapes" if r["memory_capacity"] is None else f"memory {r['memory_capacity']:g}"
    return f"memory by {r['memory_estimator']}, fit {r['fit_rule']} ({memory})"


def memory_rows(rows: list[dict], select) -> list[dict]:
    """The rows the figure reads (``select(rows, free=...)`` of the results
    figures); CPU-alone rows once per (estimator, capacity), since the
    memory keys do not change them."""
    chosen = select(rows, free=COMPARED)
    out, seen = [], set()
    for r in chosen:
        if r["q_memory"] is None:
            key = (r["instance"], r["estimator"], r["capacity"])
            if key in seen:
                continue
            seen.add(key)
        out.append(r)
    return out


def why_not(rows: list[dict]) -> str | None:
    if not any(r["q_memory"] is not None for r in rows):
        return "needs rows that pack memory (grid.memory_capacity or machine shapes)"
    return None


def _series(rows: list[dict]) -> dict[str, list[dict]]:
    """Rows per CPU estimator and CPU capacity (the machine fleet's CPU)."""
    out: dict[str, list[dict]] = {}
    for r in rows:
        cap = r["capacity"]
        fleet = f"{cap.count(',') + 1} machine types" if isinstance(cap, str) and len(cap) > 30 else f"{cap}"
        out.setdefault(f"CPU {r['estimator']} on {fleet}", []).append(r)
    return out


def draw_memory(rows: list[dict], realizations=None, caption=None, *, heading: str | None = None) -> Figure:
    """Three panels sharing one row per treatment: machines,
    q and q_memory (log scales; a mean of 0 drawn at the floor)."""
    treatments = list(dict.fromkeys(treatment(r) for r in rows))
    series = _series(rows)
    fig = Figure(figsize=(12, 1.6 + 0.55 * len(treatments) * max(1, len(series)) ** 0.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 3, sharey=True)
    summaries = {}
    for name, rs in series.items():
        groups: dict[str, list[dict]] = {}
        for r in rs:
            groups.setdefault(treatment(r), []).append(r)
        summaries[name] = {t: (summarize_point(g, realizations) if realizations else None, g)
                           for t, g in groups.items()}
    positives = [v for per in summaries.values() for s, g in per.values()
                 for v in [r["q"] for r in g] + [r["q_memory"] or 0 for r in g] if v > 0]
    floor = 10.0 ** (math.floor(math.log10(min(positives))) - 1) if positives else 1e-6
    present = {t: [name for name, per in summaries.items() if t in per] for t in treatments}
    handles = []
    top = max([floor] + [r[c] for per in summaries.values() for _, g in per.values() for r in g
                         for c in ("q", "q_memory", "q_ci_high") if r.get(c) is not None])
    for (name, per), color, marker in zip(summaries.items(), COLORS, MARKERS):
        handles.append(Line2D([], [], ls="none", marker=marker, color=color, label=name))
        for t, (s, g) in per.items():
            here = present[t]
            dy = 0.0 if len(here) == 1 else -0.25 + 0.5 * here.index(name) / (len(here) - 1)
            y = treatments.index(t) + dy
            m_abs = np.array([r["m_abs"] for r in g], dtype=np.float64)
            mean = m_abs.mean()
            if s is not None and not math.isnan(s["m_abs_ci_low"]):
                axes[0].errorbar(mean, y, xerr=[[mean - s["m_abs_ci_low"]], [s["m_abs_ci_high"] - mean]],
                                 fmt=marker, color=color, capsize=3)
            else:
                axes[0].plot(mean, y, marker, color=color)
            for ax, metric in ((axes[1], "q"), (axes[2], "q_memory")):
                if g[0][metric] is None:
                    ax.text(floor, y, "  not packed", va="center", fontsize=7, color="0.4")
                    continue
                m = float(np.mean([r[metric] for r in g]))
                x = max(m, floor)
                if s is not None and s.get(metric + "_ci_low") is not None and not math.isnan(s[metric + "_ci_low"]):
                    lo, hi = max(s[metric + "_ci_low"], floor), max(s[metric + "_ci_high"], x)
                    ax.errorbar(x, y, xerr=[[x - lo], [hi - x]], fmt=marker, color=color, capsize=3)
                else:
                    ax.plot(x, y, marker, color=color)
    axes[0].set_yticks(range(len(treatments)), treatments, fontsize=8)
    axes[0].invert_yaxis()
    axes[0].set_xlabel("machines m_abs (mean per instance)")
    for ax, what in ((axes[1], "CPU violation frequency q"), (axes[2], "memory violation frequency q_memory")):
        ax.set_xscale("log")
        ax.set_xlim(floor / 2, top * 3)
        ax.axvline(floor, color="0.5", lw=0.8, ls="--")
        ax.set_xlabel(f"{what}\n(dashed line: q = 0)")
    for ax in axes:
        ax.grid(True, axis="x", alpha=0.3)
    n = len({r["instance"] for r in rows})
    if caption is None or caption.title:
        name = f"{caption.name}: " if caption is not None and caption.name else ""
        fig.suptitle(heading or f"{name}CPU and memory packed together (docs/memory.md)\n"
                     f"mean and 95% interval over {n} instances", fontsize=10)
    fig.legend(handles=handles, loc="outside lower center", fontsize=8, frameon=False, ncols=3)
    return fig
