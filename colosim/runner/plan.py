"""``colosim plan``: the cheapest estimator of every family that meets an SLO,
searched on training instances and checked on held-out ones
(docs/plan.md).

An SLO ``s`` (e.g. 0.99) means a violation frequency of at most ``1 - s``:
fleet-wide (the mean q over instances) or, with ``per_machine``, on every
machine (the mean worst machine's frequency q_max). A parameter *meets* the
target on a set of instances when the upper end of the 95% interval of that
mean (:mod:`colosim.model.intervals`) is within it.

For each family its parameter runs over a ladder (:data:`LADDERS`), ordered
from the cheapest value to the most conservative; violations fall along it.
A bisection over the ladder finds the cheapest value that meets the target
on the training instances (instances ``0 .. T-1``), every family's probe of
a step evaluated in one engine call per instance; the chosen value is then
judged on the held-out instances (``T .. count-1``, other seeds), and it
*meets* only when their upper bound is within the target.

Every evaluation is kept (with its bins' violation counts) in the cache
folder, keyed by the fingerprint of the store and the fixed grid keys
(:class:`Evaluations`), so that a second plan — another SLO, per machine,
more instances, another ``--out`` — recomputes nothing it has already.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._version import __version__
from ..analysis.summary import summarize_point
from ..config import SweepConfig, load_config
from ..engine import instance_metrics
from ..errors import InputError
from ..io import outputs as guard
from ..io import results
from ..io.atomic import write_text_atomic
from ..io.results import GRID_KEYS
from ..io.store import Store, open_store
from ..model.grid import GridPoint, evaluation_columns, value_text
from ..model.intervals import mean_difference_interval, mean_q_interval
from ..progress import Progress, no_progress
from ..sources.resolve import cache_dir, resolve_store, source_inputs
from .sweep import check_against_store, deferred_interrupt, instance_rows

PLAN_FORMAT = "colosim-plan"

#: What a plan writes in its --out folder.
OUTPUTS = ("plan.json", "plan.csv", "frontier.png")

_RHOS = (0.5, 0.3, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01, 0.005, 0.003, 0.002, 0.001, 5e-4, 3e-4, 2e-4, 1e-4,
         5e-5, 2e-5, 1e-5, 5e-6, 2e-6, 1e-6, 1e-7, 1e-8)
_FACTORS = (0.5, 0.75, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2.0, 2.2, 2.5, 2.8, 3.2, 3.6, 4.0, 5.0, 6.0)
_SIGMAS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0,
           8.0, 10.0)

#: Each family's ladder, cheapest first: ``(what is searched, values)``;
#: what is searched is the estimator's parameter, or for ``max`` (which has
#: none) the headroom h.
LADDERS: dict[str, tuple[str, tuple[float, ...]]] = {
    "gpa": ("parameter", _RHOS),
    "gpa-cal": ("parameter", _RHOS[2:]),
    "emp": ("parameter", _RHOS[:-2] + (0.0,)),
    "av": ("parameter", _FACTORS),
    "perc": ("parameter", (50.0, 60.0, 70.0, 80.0, 85.0, 90.0, 92.0, 94.0, 95.0, 96.0, 97.0, 98.0, 99.0,
                           99.5, 99.8, 99.9, 99.95, 99.99, 100.0)),
    "cantelli": ("parameter", _SIGMAS),
    "nsigma": ("parameter", _SIGMAS),
    "effsize": ("parameter", _RHOS),
    "hoeffding": ("parameter", _RHOS),
    "max": ("headroom", (1.0, 0.98, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5)),
}

#: The paper's estimator families (Section 5.1).
PAPER_FAMILIES = ("gpa", "cantelli", "av", "perc", "max")

#: The columns of ``plan.csv``.
PLAN_COLUMNS = ("family", "estimator", "m_abs_mean", "m_abs_ci_low", "m_abs_ci_high", "m_mean", "q_mean",
                "q_ci_low", "q_ci_high", "q_max_mean", "machines_share_meeting", "meets", "headroom",
                "trained_bound", "instances", "q_memory_mean", "memory_bound_mean")

#: What ``--force`` may replace in a plan's folder (:mod:`colosim.io.outputs`).
_KINDS = {"plan.json": guard.json_kind(PLAN_FORMAT, "colosim plan record (JSON)"),
          "plan.csv": guard.csv_kind(",".join(PLAN_COLUMNS[:3]) + ",", "colosim plan table (CSV)"),
          "frontier.png": guard.PNG}

_CACHE_COLUMNS = ("instance", "estimator", "headroom", *results.METRICS, *results.INTERVALS, "bin_violations",
                  "q_memory", "memory_bound")


@dataclass(frozen=True)
class Probe:
    """One value of a family's ladder: the estimator and headroom it packs
    with."""

    family: str
    estimator: str
    headroom: float


def probe(family: str, value: float, config_headroom: float) -> Probe:
    what, _ = LADDERS[family]
    if what == "headroom":
        return Probe(family, family, float(value))
    return Probe(family, GridPoint.make(estimator=f"{family}:{value!r}").estimator.spec, config_headroom)


@dataclass
class FamilyPlan:
    """What the plan found for one family: the chosen probe, its held-out
    summary, whether it meets, and every probe tried on the training
    instances with its training summary (for the frontier)."""

    family: str
    chosen: Probe
    held_out: dict
    meets: bool
    trained_bound: float
    tried: list[tuple[Probe, dict]]
    rows: list[dict] = dataclasses.field(default_factory=list)  # on the held-out instances


@dataclass
class PlanResult:
    slo: float
    per_machine: bool
    tasks: int
    training: int
    held_out: int
    families: list[FamilyPlan]
    out: Path
    computed: int
    columns: int = 0  # |E| per instance

    @property
    def target(self) -> float:
        return 1.0 - self.slo


def check_slo(slo) -> float:
    """An SLO in (0, 1); anything else is an :class:`InputError`."""
    if isinstance(slo, bool) or not isinstance(slo, (int, float)) or not 0.0 < float(slo) < 1.0:
        raise InputError(f"--slo must be a number in (0, 1) such as 0.99, not {slo!r}")
    if 1.0 - float(slo) == 1.0:
        raise InputError(f"--slo {slo!r} allows every violation (1 - s rounds to 1); an SLO is a share of time "
                         "without violations, such as 0.99")
    return float(slo)


def check_config(config: SweepConfig) -> GridPoint:
    """The plan's one grid point (its estimator unused): every grid key must
    have one value, and there must be instances to hold out."""
    for key, values in config.grid:
        if len(values) > 1:
            raise InputError(f"{config.path}: grid.{key} lists {len(values)} values; a plan config takes one "
                             f"value of each grid key (plan searches the estimators itself)")
    if config.instances.count < 4:
        raise InputError(f"{config.path}: instances.count = {config.instances.count} is too few to hold out: "
                         "plan needs at least 4 (half to train on, half to check on, at least 2 each)")
    return config.points[0]


def split(count: int) -> tuple[range, range]:
    """Training instances ``0 .. T-1`` and held-out ``T .. count-1``, ``T``
    the larger half."""
    held = count // 2
    return range(count - held), range(count - held, count)


def fingerprint(config: SweepConfig, store: Store) -> str:
    """What determines each cached evaluation besides its instance,
    estimator and headroom: the store, the instances' size and seed, and the
    fixed grid keys."""
    fixed = {k: value_text(v[0]) for k, v in config.grid if k not in ("estimator", "headroom")}
    identity = {"shape": list(store.x.shape),
                "attrs": {k: v for k, v in store.attrs.items() if k != "colosim_version"}}
    return results.fingerprint({"store": identity, "tasks": config.instances.tasks,
                                "seed": config.instances.seed, "grid": fixed, "results_schema": results.RESULTS_SCHEMA,
                                "format": PLAN_FORMAT})


class Evaluations:
    """Cached rows per (instance, estimator, headroom) of one fingerprint, in
    ``plans/FINGERPRINT.csv`` of the cache folder (``$COLOSIM_CACHE`` or
    ``~/.cache/colosim``, as for stores): any plan of the same store and
    fixed grid keys reuses them, whatever its SLO or ``--out``. A cache file
    that cannot be read is recomputed."""

    def __init__(self, fp: str, reuse: bool = True):
        self.path = cache_dir() / "plans" / f"{fp}.csv"
        self.rows: dict[tuple, dict] = {}
        if reuse and self.path.is_file():
            try:
                self.rows = {(r["instance"], r["estimator"], r["headroom"]): r for r in _read_cache(self.path)}
            except (InputError, OSError, UnicodeDecodeError, csv.Error, IndexError):
                self.rows = {}

    def get(self, k: int, p: Probe) -> dict | None:
        return self.rows.get((k, p.estimator, p.headroom))

    def put(self, k: int, p: Probe, row: dict) -> None:
        self.rows[(k, p.estimator, p.headroom)] = row

    def save(self) -> None:
        ordered = sorted(self.rows.values(), key=lambda r: (r["instance"], r["estimator"], r["headroom"]))
        text = results.csv_text([tuple(r[c] for c in _CACHE_COLUMNS) for r in ordered], _CACHE_COLUMNS)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.path, text)


def _read_json(path: Path) -> dict:
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return meta if isinstance(meta, dict) and meta.get("format") == PLAN_FORMAT else {}


def _read_cache(path: Path) -> list[dict]:
    out = []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        if tuple(next(reader, ())) != _CACHE_COLUMNS:
            raise InputError(f"{path}: not a plan's evaluations (unexpected header)")
        for line, values in enumerate(reader, start=2):
            try:
                r = dict(zip(_CACHE_COLUMNS, values, strict=True))
                row = {"instance": int(r["instance"]), "estimator": r["estimator"],
                       "headroom": float(r["headroom"]),
                       "bin_violations": tuple(int(v) for v in r["bin_violations"].split(";"))}
                for c in ("m_abs", "m_norm", "oversize"):
                    row[c] = int(r[c])
                for c in ("m", "q", "q_max", "severity", *results.INTERVALS):
                    row[c] = float(r[c])
                for c in ("q_memory", "memory_bound"):  # empty for CPU alone
                    row[c] = float(r[c]) if r[c] else None
                    if row[c] is not None and not 0 <= row[c] <= 1:
                        raise ValueError(c)
            except (ValueError, KeyError):
                raise InputError(f"{path}: line {line}: malformed evaluation") from None
            if not (row["m_abs"] >= 1 and row["m_norm"] >= 1 and len(row["bin_violations"]) == row["m_abs"]
                    and all(math.isfinite(row[c]) for c in ("m", "q", "q_max", "severity", *results.INTERVALS))
                    and 0 <= row["q_ci_low"] <= row["q"] <= row["q_ci_high"] <= 1 and 0 <= row["q_max"] <= 1
                    and min(row["bin_violations"]) >= 0):
                raise InputError(f"{path}: line {line}: an evaluation out of its domain")
            out.append(row)
    return out


class _Evaluator:
    """Evaluates probes on instances, through the cache."""

    def __init__(self, config: SweepConfig, store: Store, base: GridPoint, cache: Evaluations):
        self.config, self.store, self.base, self.cache = config, store, base, cache
        self.computed = 0
        self.stop = None  # a threading.Event set by Ctrl-C
        self.columns = evaluation_columns(base.clairvoyance, store.n_realizations)

    def point(self, p: Probe) -> GridPoint:
        return dataclasses.replace(self.base, estimator=GridPoint.make(estimator=p.estimator).estimator,
                                   headroom=p.headroom)

    def rows(self, probes: list[Probe], instances, advance) -> dict[Probe, list[dict]]:
        """Every probe's row on every instance, computing the missing ones
        (one engine call per instance for all its missing probes). A Ctrl-C
        stops after the instance in progress, whose rows are kept."""
        for k in instances:
            if self.stop is not None and self.stop.is_set():
                raise KeyboardInterrupt
            missing = list(dict.fromkeys(p for p in probes if self.cache.get(k, p) is None))
            if missing:
                index = instance_rows(self.config.instances.seed, k, self.store.n_tasks, self.config.instances.tasks)
                x = self.store.rows(index, "x")
                y = self.store.rows(index, "y") if self.base.data == "avg" else None
                memory = self.store.rows(index, "memory") if self.base.memory else None
                for p, met in zip(missing, instance_metrics(x, y, [self.point(p) for p in missing], memory=memory)):
                    row = {"instance": k, "estimator": p.estimator, "headroom": p.headroom,
                           **{c: getattr(met, c) for c in (*results.METRICS, *results.INTERVALS)},
                           "bin_violations": tuple(int(v) for v in met.counts), "q_memory": met.q_memory,
                           "memory_bound": met.memory_bound}
                    self.cache.put(k, p, row)
                    self.computed += 1
                self.cache.save()
            advance(1)
        return {p: [self.cache.get(k, p) for k in instances] for p in probes}

    def summary(self, rows: list[dict]) -> dict:
        keyed = [dict(r, **{k: value_text(getattr(self.base, k)) for k in GRID_KEYS if k not in r}) for r in rows]
        return summarize_point(keyed, self.store.n_realizations)


def _bound(summary: dict, per_machine: bool) -> float:
    return summary["q_max_ci_high" if per_machine else "q_ci_high"]


def machines_share_meeting(rows: list[dict], target: float, columns: int) -> float:
    """The mean over instances of the share of machines whose own violation
    frequency ``q_j / |E|`` is within ``target``."""
    return float(np.mean([np.count_nonzero(np.asarray(r["bin_violations"]) / columns <= target)
                          / len(r["bin_violations"]) for r in rows]))


def plan(config: SweepConfig, store_path: Path, out: Path, slo: float, *, per_machine: bool = False,
         force: bool = False, progress: Progress = no_progress, wait: bool = False) -> PlanResult:
    """Search every family's cheapest parameter meeting SLO ``slo``, check it
    on held-out instances, and write ``out/plan.csv`` and the frontier
    figure (see the module docstring)."""
    slo = check_slo(slo)
    base = check_config(config)
    target = 1.0 - slo
    out = claim_outputs(out, [config.path, Path(store_path)])
    with open_store(store_path) as store:
        check_against_store(config, store)
        fp = fingerprint(config, store)
        with guard.lock(out, wait=wait):
            return _locked(config, store, base, out, fp, slo, target, per_machine, force, progress)


def claim_outputs(out, inputs: list) -> Path:
    """Check the files a plan writes in ``out`` before any work: none may
    be an input (``inputs``), a directory, or a file of another kind
    (:func:`colosim.io.outputs.claim`)."""
    out = guard.claim_dir(out, inputs=inputs)
    for name, kind in _KINDS.items():
        guard.claim(out / name, kind=kind, inputs=inputs, force=True)
    return out


def _locked(config, store, base, out, fp, slo, target, per_machine, force, progress) -> PlanResult:
    previous = _read_json(out / "plan.json")
    asked = {"slo": slo, "per_machine": per_machine, "fingerprint": fp, "instances": config.instances.count}
    ours = {k: previous.get(k) for k in asked} == asked
    taken = [out / name for name in OUTPUTS if (out / name).exists()]
    if taken and not force and not ours:
        raise InputError(f"{taken[0]}: exists and is not this plan's (another config, store or SLO, or not a "
                         "plan); pass --force to replace it, or choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    meta = json.dumps({"format": PLAN_FORMAT, **asked, "config": str(config.path), "store": str(store.path),
                       "colosim_version": __version__, "numpy_version": np.__version__},
                      indent=2, sort_keys=True) + "\n"
    write_text_atomic(out / "plan.json", meta)  # first: an interrupted plan is still this plan's
    ev = _Evaluator(config, store, base, Evaluations(fp))
    with deferred_interrupt() as stop:
        ev.stop = stop
        result = _plan(ev, config, base, out, slo, target, per_machine, progress)
    return result


def _plan(ev, config, base, out, slo, target, per_machine, progress) -> PlanResult:
    """Search, check on the held-out instances, write plan.csv and the figure."""
    train, held = split(config.instances.count)
    families = _search(ev, base, train, target, per_machine, progress)
    advance = progress("plan: held-out check", len(held))
    chosen = ev.rows([f.chosen for f in families], held, advance)
    for f in families:
        rows = f.rows = chosen[f.chosen]
        f.held_out = ev.summary(rows)
        f.held_out["machines_share_meeting"] = machines_share_meeting(rows, target, ev.columns)
        f.meets = _bound(f.held_out, per_machine) <= target
    families.sort(key=lambda f: (not f.meets, f.held_out["m_abs_mean"], _bound(f.held_out, per_machine),
                                 f.family))
    result = PlanResult(slo, per_machine, config.instances.tasks, len(train), len(held), families, out,
                        ev.computed, ev.columns)
    write_text_atomic(out / "plan.csv", plan_text(result))
    from ..figures.plan import plot_frontier

    plot_frontier(result, out / "frontier.png")
    return result


def _search(ev: _Evaluator, base: GridPoint, train, target: float, per_machine: bool,
            progress: Progress) -> list[FamilyPlan]:
    """Bisection over every family's ladder at once: the most conservative
    value first (if it misses, it is the family's answer), then halving the
    bracket (cheapest meeting index) until it closes."""
    ladders = {f: [probe(f, v, base.headroom) for v in values] for f, (_, values) in LADDERS.items()}
    lo = {f: -1 for f in ladders}  # the largest index known to miss (or -1)
    hi = {f: len(v) - 1 for f, v in ladders.items()}  # the smallest index known to meet (or the last)
    tried: dict[str, list] = {f: [] for f in ladders}
    bounds: dict[str, dict[int, float]] = {f: {} for f in ladders}
    todo = {f: hi[f] for f in ladders}  # the index each family probes next
    step = 0
    while todo:
        step += 1
        advance = progress(f"plan: search step {step} ({len(todo)} families)", len(train))
        got = ev.rows([ladders[f][i] for f, i in todo.items()], train, advance)
        nxt = {}
        for f, i in todo.items():
            p = ladders[f][i]
            summary = ev.summary(got[p])
            tried[f].append((p, summary))
            bounds[f][i] = _bound(summary, per_machine)
            meets = bounds[f][i] <= target
            if i == len(ladders[f]) - 1 and not meets:
                continue  # not even the most conservative value meets: done
            if meets:
                hi[f] = i
            else:
                lo[f] = i
            if hi[f] - lo[f] > 1:
                nxt[f] = (lo[f] + hi[f]) // 2
        todo = nxt
    return [FamilyPlan(f, ladders[f][hi[f]], {}, False, bounds[f][hi[f]], tried[f]) for f in ladders]


def plan_text(result: PlanResult) -> str:
    rows = []
    for f in result.families:
        s = f.held_out
        rows.append((f.family, f.chosen.estimator, s["m_abs_mean"], s["m_abs_ci_low"], s["m_abs_ci_high"],
                     s["m_mean"], s["q_mean"], s["q_ci_low"], s["q_ci_high"], s["q_max_mean"],
                     s["machines_share_meeting"], f.meets, f.chosen.headroom, f.trained_bound, s["instances"],
                     s["q_memory_mean"], s["memory_bound_mean"]))
    return results.csv_text(rows, PLAN_COLUMNS)


def answer(result: PlanResult) -> str:
    """The plan in one sentence (and how far the cheapest is below the
    paper's cheapest estimator that meets the target)."""
    view = "on every machine" if result.per_machine else "fleet-wide"
    per = 1000 / result.tasks
    meeting = [f for f in result.families if f.meets]
    if not meeting:
        text = (f"No family meets SLO {result.slo:.10g} {view} (violations at most {result.target:.3g}) on the "
                f"{result.held_out} held-out instances.")
        floor = resolvable_bound(result)
        if floor > result.target:
            text += (f" Even no violation at all would only bound the frequency by {floor:.2g} with these "
                     "instances: a target this small needs more instances or realizations.")
        return text
    best = meeting[0]
    s = best.held_out
    bound = "q_max" if result.per_machine else "q"
    text = (f"SLO {result.slo:.10g} {view}: {s['m_abs_mean'] * per:.1f} machines per 1,000 tasks "
            f"[{s['m_abs_ci_low'] * per:.1f}, {s['m_abs_ci_high'] * per:.1f}] with {_name(best)}; held-out "
            f"{bound} {s[bound + '_mean']:.2g} (95% upper bound {_bound(s, result.per_machine):.2g} "
            f"<= {result.target:.3g}).")
    if s.get("q_memory_mean") is not None:
        text += (f" Memory: held-out q_memory {s['q_memory_mean']:.2g}; memory fills "
                 f"{s['memory_bound_mean']:.0%} of the machines more than CPU.")
    paper = [f for f in meeting if f.family in PAPER_FAMILIES]
    if paper and paper[0] is not best:
        # paired on the held-out instances: the share of the paper's machines saved
        theirs = np.array([r["m_abs"] for r in paper[0].rows], dtype=np.float64)
        ours = np.array([r["m_abs"] for r in best.rows], dtype=np.float64)
        saving, low, high = mean_difference_interval(ours / theirs, np.ones_like(theirs))
        text += (f" That is {saving:.1%} [{low:.1%}, {high:.1%}] fewer machines than the paper's cheapest, "
                 f"{_name(paper[0])} (paired on the held-out instances).")
    elif paper:
        text += " It is one of the paper's estimators."
    return text


def resolvable_bound(result: PlanResult) -> float:
    """The smallest upper bound the held-out instances can give: the bound
    when no violation is seen at all, on the most machines any family used
    (fleet-wide) or on one machine per instance (per machine)."""
    K = result.held_out
    if result.per_machine:
        trials = K * result.columns
    else:
        trials = max(f.held_out["m_abs_mean"] for f in result.families) * K * result.columns
    return mean_q_interval(np.zeros(K), trials)[1]


def _name(f: FamilyPlan) -> str:
    return f"max at headroom {f.chosen.headroom:g}" if f.family == "max" else f.chosen.estimator


def plan_file(config_path, slo: float, out, *, per_machine: bool = False, force: bool = False,
              progress: Progress = no_progress, wait: bool = False) -> PlanResult:
    """Load a plan config, make (or reuse) its store, and :func:`plan`."""
    slo = check_slo(slo)
    config = load_config(config_path, grid_required=False)
    check_config(config)
    claim_outputs(out, [config.path, *source_inputs(config.source, config.path.parent)])
    store_path = resolve_store(config.source, config.path.parent, progress, config_path=config.path)
    return plan(config, store_path, Path(out), slo, per_machine=per_machine, force=force, progress=progress,
                wait=wait)

