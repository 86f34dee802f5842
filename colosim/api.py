"""The public Python API (SPEC §11): ``pack``, ``violations``, ``run``.

This layer validates and converts; the engine and the kernels below it never
see lists, files or configs. Invalid arguments raise
:class:`colosim.InputError`, a :class:`ValueError`, with a message naming
the argument.
"""

from __future__ import annotations

import numpy as np

from .engine import as_rows, checks_in_statistics, evaluate, instance_metrics, pack_observed
from .errors import InputError
from .io._checks import raise_usage_problem, usage_problem
from .model.grid import GridPoint
from .model.metrics import Metrics


def as_usage_matrix(name: str, value, check: bool = True) -> np.ndarray:
    """A 2-D, C-contiguous float32/float64 array of finite, non-negative
    usage, or an :class:`InputError` naming ``name`` (the values unchecked
    when ``check`` is False: the caller checks them, see :func:`run`)."""
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise InputError(f"{name} must be a 2-D array of usage values ({exc})") from None
    if arr.dtype.kind not in "fiu" or arr.dtype.kind == "b":
        raise InputError(f"{name} must hold numbers, not dtype {arr.dtype}")
    if arr.ndim != 2:
        raise InputError(f"{name} must be 2-D (tasks × realizations), not {arr.ndim}-D")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise InputError(f"{name} must have at least one task and one column, not shape {arr.shape}")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    arr = np.ascontiguousarray(arr)
    if check:
        raise_usage_problem(name, usage_problem(arr))  # one pass, no temporaries
    return arr


def _memory_point(point: GridPoint, memory, like: np.ndarray, name: str):
    """The validated memory matrix of a point (None for CPU alone):
    memory usage exactly when the point packs memory, shaped like ``like``."""
    if memory is None:
        if point.memory:
            raise InputError("memory_capacity (or machine shapes in capacity) needs memory: pass memory=MEM, "
                             f"the tasks' memory usage shaped like {name}")
        return None
    memory = as_usage_matrix("memory", memory)
    if memory.shape != like.shape:
        raise InputError(f"memory has shape {memory.shape} but {name} has shape {like.shape}")
    if not point.memory:
        raise InputError("memory is given but no memory capacity: pass memory_capacity=CM "
                         "(or machine shapes CPUxMEMORY:SHARE as capacity)")
    return memory


def pack(observed, estimator: str = "gpa:0.01", capacity: float = 1.0, algorithm: str = "best-fit",
         rebalance: bool = True, headroom: float = 1.0, *, memory=None, memory_capacity: float | None = None,
         memory_estimator: str = "max", fit_rule: str = "cpu") -> np.ndarray:
    """Pack tasks into bins from their observed usage.

    Parameters
    ----------
    observed : array_like, shape (n, k)
        Observed usage of n tasks (k observations each).
    estimator : str
        A spec of the estimator table (``colosim.ESTIMATORS``): ``av:F``,
        ``perc:P``, ``max``, ``cantelli:B``, ``gpa:RHO`` (SPEC §3), or
        ``emp:RHO``, ``gpa-cal:TARGET``, ``hoeffding:RHO``, ``effsize:RHO``,
        ``nsigma:N`` (docs/estimators.md).
    capacity, headroom : float
        Bins hold ``headroom * capacity`` (SPEC §4); capacity may also be a
        fleet ``"C:SHARE,..."`` (docs/estimators.md).
    algorithm : {"first-fit", "best-fit", "first-fit-decreasing", "best-fit-decreasing"}
    rebalance : bool
        Run the rebalancing pass after the online pass.
    memory : array_like, shape (n, k), optional
        Observed memory usage, packed too when ``memory_capacity`` (or a
        fleet of machine shapes) is given (docs/memory.md).
    memory_capacity : float, optional
        Each machine's memory capacity (no headroom).
    memory_estimator : str
        The estimator of memory's size (default ``max``: no overcommit).
    fit_rule : {"cpu", "l2", "dot"}
        Best Fit's score across the two resources.

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
        Each task's bin, bins numbered 0..m-1 in opening order.
    """
    observed = as_usage_matrix("observed", observed)
    point = GridPoint.make(estimator, algorithm, capacity, 1.0, "inst", rebalance, headroom, fit_rule,
                           memory_capacity, memory_estimator)
    memory = _memory_point(point, memory, observed, "observed")
    return pack_observed(observed, point, memory)


def violations(evaluated, assign, capacity: float = 1.0) -> tuple[float, np.ndarray]:
    """Frequency of capacity violations of a packing (SPEC §5).

    Returns ``(q, counts)``: ``counts[j]`` is the number of columns on which
    bin j's summed usage exceeds ``capacity`` strictly; ``q = sum(counts) /
    (m * e)``. ``capacity`` is one number (every bin judged against it).
    """
    evaluated = as_usage_matrix("evaluated", evaluated)
    assign = _as_assignment(assign, evaluated.shape[0])
    point = GridPoint.make(capacity=capacity)
    if point.fleet:
        raise InputError(f"capacity must be one number here, not the fleet {capacity!r}")
    m = int(assign.max()) + 1
    e = evaluated.shape[1]
    (counts,), _, _ = evaluate(as_rows(evaluated, 0, e), [assign], [np.full(m, point.capacity)], [0])
    return int(counts.sum()) / (m * e), counts


def run(x, y=None, estimator: str = "gpa:0.01", capacity: float = 1.0, algorithm: str = "best-fit",
        clairvoyance: float = 1.0, data: str = "inst", rebalance: bool = True,
        headroom: float = 1.0, *, memory=None, memory_capacity: float | None = None,
        memory_estimator: str = "max", fit_rule: str = "cpu") -> Metrics:
    """Pack one instance from its observation columns and evaluate it on its
    evaluation columns (SPEC §2–5).

    Parameters
    ----------
    x, y : array_like, shape (n, R)
        Instantaneous and average realizations (``y`` may be None when
        ``data = "inst"``).
    memory : array_like, shape (n, R), optional
        Memory realizations, packed and judged too when ``memory_capacity``
        (or a fleet of machine shapes) is given (docs/memory.md).
    memory_capacity, memory_estimator, fit_rule
        As in :func:`pack`.

    Returns
    -------
    Metrics
        ``m_abs``, ``m_norm``, ``m``, ``q``, ``q_max``, ``severity``,
        ``oversize``, ``assign`` (and ``counts`` = q_j, ``bin_type``, ...);
        with memory also ``q_memory``, ``q_memory_max``, ``memory_bound``.
    """
    x = as_usage_matrix("x", x, check=False)
    # x's values are checked last, so that a point whose statistics cover
    # all of float32 x checks them in its statistics pass (each row read
    # once); any other error waits for x's check, which comes first as ever
    try:
        if y is not None:
            y = as_usage_matrix("y", y)
            if y.shape != x.shape:
                raise InputError(f"y has shape {y.shape} but x has shape {x.shape}")
        elif data == "avg":
            raise InputError("data = 'avg' needs y")
        point = GridPoint.make(estimator, algorithm, capacity, clairvoyance, data, rebalance, headroom, fit_rule,
                               memory_capacity, memory_estimator)
        memory = _memory_point(point, memory, x, "x")
    except Exception:
        raise_usage_problem("x", usage_problem(x))
        raise
    if x.dtype == np.float32 and checks_in_statistics(point):
        return instance_metrics(x, y, [point], memory=memory, unchecked="x")[0]
    raise_usage_problem("x", usage_problem(x))
    return instance_metrics(x, y, [point], memory=memory)[0]


def _as_assignment(assign, n: int) -> np.ndarray:
    arr = np.asarray(assign)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise InputError(f"assign must be 1-D with one bin per task ({n}), not shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise InputError(f"assign must hold integers, not dtype {arr.dtype}")
    if (arr < 0).any():
        raise InputError("assign holds negative bin numbers")
    if arr.size and int(arr.max()) >= n:
        # bins are numbered 0..m-1 and each holds a task: m <= n
        raise InputError(f"assign holds bin number {int(arr.max())}; the bins of {n} tasks are numbered "
                         f"0..m-1 with m <= {n}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def read_results(path):
    """A results table (``colosim sweep``'s CSV, SPEC §5) as a pandas
    DataFrame, every row checked as the CLI checks it: one row per instance
    and grid point, the columns in schema order with their types (grid keys,
    metrics, the interval of q, ``realizations``, ``evaluated``, then the
    extra columns, ``None`` or empty where they do not apply). Needs pandas
    (``pip install 'colosim[pandas]'``)."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("colosim.read_results returns a pandas DataFrame: install pandas "
                          "(pip install 'colosim[pandas]')") from None
    from .io.results import COLUMNS
    from .runner.sweep import read_results as read_rows

    return pd.DataFrame(read_rows(path), columns=list(COLUMNS))
