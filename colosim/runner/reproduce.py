"""The paper's Section 5 in one run: every config, its figures, and a table
of the paper's claims beside colosim's values (SPEC §12), judged by
:mod:`colosim.analysis.claims`.

Scales (:data:`SCALES`) shrink a loaded config, never its file: ``paper``
runs the configs as written; ``small`` and ``tiny`` replace the synthetic
source's N and R and the instances' count and size, and keep every grid
value. Machine counts the paper gives for 1,000-task instances are judged
only at 1,000 tasks per instance ("paper scale only" elsewhere).
"""

from __future__ import annotations

import dataclasses
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._version import __version__
from ..analysis.claims import Claim, Results, claims_markdown, evaluate_claims
from ..config import SweepConfig, load_config
from ..errors import InputError
from ..figures.results import FIGURES, plot_results, supported_figures
from ..io.atomic import write_text_atomic
from ..io.outputs import claim, claim_dir, lock, text_kind
from ..io.results import meta_path, read_meta, summary_path
from ..io.store import open_store
from ..progress import Progress, no_progress
from ..sources.resolve import resolve_store, source_inputs
from . import backends
from .sweep import claim_outputs as claim_sweep_outputs
from .sweep import read_results, sweep

# ---------------------------------------------------------------- scales


@dataclass(frozen=True)
class Scale:
    """How far to shrink a config: store rows N, realizations R (synthetic
    sources only), instance count and tasks per instance."""

    store_tasks: int
    realizations: int
    instances: int
    tasks: int


#: ``None`` = the configs as written (paper: N = 100,000, R = 10,000,
#: 50 instances of 1,000 tasks)
SCALES: dict[str, Scale | None] = {
    "paper": None,
    "small": Scale(store_tasks=3_000, realizations=2_000, instances=10, tasks=200),
    "tiny": Scale(store_tasks=400, realizations=300, instances=3, tasks=40),
}


def scale_config(config: SweepConfig, scale: str) -> SweepConfig:
    """``config`` shrunk to ``scale`` (see :data:`SCALES`).

    A synthetic source gets ``tasks = store_tasks`` and ``realizations``,
    and its cached store is chosen by those numbers (any ``source.store``
    path is dropped, since it names a store of the full size). A ``store``
    source is kept: only the instances shrink. Instances get ``count`` and
    ``tasks`` from the scale (never more than the config's own). The grid is
    untouched; clairvoyance levels keep their meaning as shares of R.
    """
    if scale not in SCALES:
        raise InputError(f"unknown scale {scale!r} (choose one of {', '.join(SCALES)})")
    s = SCALES[scale]
    if s is None:
        return config
    source = config.source
    if source.kind == "synthetic":
        source = dataclasses.replace(source, store=None, tasks=min(source.tasks, s.store_tasks),
                                     realizations=min(source.realizations, s.realizations))
    instances = dataclasses.replace(config.instances, count=min(config.instances.count, s.instances),
                                    tasks=min(config.instances.tasks, s.tasks))
    return dataclasses.replace(config, source=source, instances=instances)


# ---------------------------------------------------------------- pipeline

#: the figures each of the paper's experiments is for (others: every
#: figure their rows support)
EXPERIMENT_FIGURES = {
    "baseline": (7, 8, 9),
    "firstfit_vs_bestfit": (),
    "inst_vs_avg": (10,),
    "capacity": (11,),
    "clairvoyance": (12,),
    "rebalancing": (13,),
}


FORMATS = ("png", "svg")


def _up_to_date(paths: list[Path], source: Path) -> bool:
    """Whether every path exists and is no older than ``source``."""
    t = source.stat().st_mtime_ns
    return all(p.exists() and p.stat().st_mtime_ns >= t for p in paths)


@dataclass
class ExperimentRun:
    name: str
    config: SweepConfig
    csv: Path
    results: Results
    seconds: float
    computed: bool
    figures: dict[int, list[Path]]


def load_configs(configs_dir, scale: str) -> list[SweepConfig]:
    """Every ``*.toml`` of ``configs_dir`` (sorted by name), loaded, validated
    and scaled before anything runs; of the shipped configs folder, the
    paper's experiments (:data:`colosim.shipped.PAPER_CONFIGS`: not the
    quickstart)."""
    from ..shipped import PAPER_CONFIGS
    from ..shipped import configs_dir as shipped_dir

    configs_dir = Path(configs_dir)
    if not configs_dir.is_dir():
        raise InputError(f"{configs_dir}: configs folder not found")
    paths = sorted(configs_dir.glob("*.toml"))
    if configs_dir.resolve() == shipped_dir().resolve():
        paths = [p for p in paths if p.stem in PAPER_CONFIGS]
    if not paths:
        raise InputError(f"{configs_dir}: no *.toml config in the folder")
    return [scale_config(load_config(p), scale) for p in paths]


def reproduce(out_dir, *, scale: str = "paper", configs_dir="configs", force: bool = False,
              progress: Progress = no_progress, log=None, backend: str = "local",
              scheduler: str | None = None, wait: bool = False) -> Path:
    """Run every config, draw its figures, judge the claims, write
    ``out_dir/REPORT.md``; returns the report's path.

    Results go to ``out_dir/results/NAME.csv`` (reused when complete for
    the same scaled config, see :func:`colosim.runner.sweep.sweep`), figures to
    ``out_dir/figures/NAME/``. ``backend`` and ``scheduler`` are passed
    to every sweep. Every output is checked, and results of another scale
    or config refused unless ``force``, before any work.
    """
    backends.check_backend(backend, scheduler)
    configs = load_configs(configs_dir, scale)
    out_dir = claim_outputs(out_dir, configs, force=force)
    with lock(out_dir, wait=wait):
        return _reproduce(out_dir, configs, scale, force, progress, log, backend, scheduler)


#: What may be replaced at ``OUT/REPORT.md``: an earlier report.
REPORT_KIND = text_kind("# colosim: reproduction", "colosim reproduction report (Markdown)")


def claim_outputs(out_dir, configs: list[SweepConfig], *, force: bool = False) -> Path:
    """Check every results file of ``configs`` in ``out_dir`` before any
    work or store is made (:func:`colosim.runner.sweep.claim_outputs`):
    results there of another scale or config are refused unless ``force``,
    with nothing made."""
    inputs = [p for cfg in configs for p in (cfg.path, *source_inputs(cfg.source, cfg.path.parent))]
    out_dir = claim_dir(out_dir, inputs=inputs)
    claim(out_dir / "REPORT.md", kind=REPORT_KIND, inputs=inputs, force=True)
    for cfg in configs:
        csv = results_path(out_dir, cfg)
        claim_sweep_outputs(csv, [cfg.path, *source_inputs(cfg.source, cfg.path.parent)])
        taken = [p for p in (csv, meta_path(csv), summary_path(csv)) if p.exists()]
        meta = read_meta(csv)
        if taken and not force and (meta is None or meta.get("config_fingerprint") != cfg.fingerprint()):
            raise InputError(f"{taken[0]}: holds results of another scale or config (or of an earlier colosim); "
                             "pass --force to replace them, or choose another --out")
    return out_dir


def results_path(out_dir: Path, cfg: SweepConfig) -> Path:
    return Path(out_dir) / "results" / f"{cfg.path.stem}.csv"


def _reproduce(out_dir, configs, scale, force, progress, log, backend, scheduler) -> Path:
    t_start = time.perf_counter()
    runs: list[ExperimentRun] = []
    for cfg in configs:
        name = cfg.path.stem
        t0 = time.perf_counter()
        store_path = resolve_store(cfg.source, cfg.path.parent, progress, config_path=cfg.path)
        with open_store(store_path) as store:
            realizations = store.n_realizations
        csv = results_path(out_dir, cfg)
        res = sweep(cfg, store_path, csv, force=force, progress=progress, backend=backend, scheduler=scheduler)
        rows = read_results(csv)  # typed as any reader of the CSV sees them
        results = Results(rows=rows, realizations=realizations, tasks=cfg.instances.tasks)
        wanted = EXPERIMENT_FIGURES.get(name)
        support = supported_figures(rows)
        figures_for = [n for n in (wanted if wanted is not None else FIGURES) if support[n] is None]
        fig_dir = out_dir / "figures" / name
        figures = {n: [fig_dir / f"{FIGURES[n].stem}.{fmt}" for fmt in FORMATS] for n in figures_for}
        if res.computed or not _up_to_date([p for ps in figures.values() for p in ps], csv):
            figures = plot_results(rows, fig_dir, figures=figures_for, formats=FORMATS, progress=progress,
                                   realizations=realizations, config=cfg.path)
        seconds = time.perf_counter() - t0
        runs.append(ExperimentRun(name, cfg, csv, results, seconds, res.computed, figures))
        if log is not None:
            log(f"{name}: {len(rows)} rows, {len(figures)} figures, {seconds:.1f} s"
                + ("" if res.computed else " (results reused)"))
    claims = evaluate_claims({r.name: r.results for r in runs})
    report = out_dir / "REPORT.md"
    write_text_atomic(report, report_markdown(runs, claims, scale, time.perf_counter() - t_start, out_dir))
    return report


def _scale_text(scale: str, runs: list[ExperimentRun]) -> str:
    cfg = runs[0].config
    src = cfg.source
    where = (f"synthetic population, N = {src.tasks:,} tasks × R = {src.realizations:,} realizations, seed {src.seed}"
             if src.kind == "synthetic" else f"store {src.path}, R = {runs[0].results.realizations:,}")
    return (f"Scale **{scale}**: {where}; {cfg.instances.count} instances of {cfg.instances.tasks:,} tasks "
            f"(instance seed {cfg.instances.seed}).")


def report_markdown(runs: list[ExperimentRun], claims: list[Claim], scale: str, seconds: float,
                    out_dir: Path) -> str:
    lines = ["# colosim: reproduction of the paper's Section 5", "",
             _scale_text(scale, runs), "",
             f"colosim {__version__}, NumPy {np.__version__}, Python {platform.python_version()}; "
             f"total {seconds:.0f} s.", ""]
    if scale != "paper":
        lines += ["This is not the paper's scale. Machine counts the paper gives for 1,000-task instances are "
                  "shown but judged only at 1,000 tasks per instance (\"paper scale only\"): the last, partly "
                  "filled machine weighs more in a small instance (and so does rebalancing, which fills it). A "
                  "sweep resolves violation frequencies only down to its resolution (shown beside each q), and "
                  "few instances give wide intervals, so rare-event claims are weak evidence here.", ""]
    lines += ["## Claims", "",
              "Tolerances (SPEC §12): a violation frequency holds within a factor of 3 of the paper's, or when "
              "both lie below three times the sweep's resolution 1 / (sum over instances of m_abs × |E|); a "
              "machine count or a share within ±5% (relative). A frequency or a machine count is judged on the "
              "95% interval of colosim's mean (a median's for a median count) over instances, shown in "
              "brackets: it holds when the interval meets the tolerance band around the paper's value and does "
              "not hold only when the interval lies outside it; with too few instances for an interval, the "
              "value itself must lie in the band. Other comparisons are stated in their row.", "",
              "Basis: **fitted** claims are numbers the built-in synthetic population was calibrated to (the "
              "rows of SPEC §12's table), so that they hold shows the calibration, not a prediction; **out of "
              "sample** claims were not calibrated to.", ""]
    if runs and runs[0].config.source.kind != "synthetic":
        lines += ["This run reads a store, not the built-in population: \"fitted\" marks what the built-in "
                  "population was calibrated to, not anything fitted to this store.", ""]
    lines += [claims_markdown(claims), "## Experiments", "",
              "| config | rows | instances | figures | time |", "|---|---|---|---|---|"]
    for r in runs:
        figs = ", ".join(str(n) for n in r.figures) or "—"
        took = f"{r.seconds:.1f} s" if r.computed else f"{r.seconds:.1f} s (results reused)"
        lines.append(f"| `{r.config.path.name}` → `{r.csv.relative_to(out_dir)}` | {len(r.results.rows)} | "
                     f"{r.config.instances.count} | {figs} | {took} |")
    lines += ["", "## Figures", ""]
    for r in runs:
        for n, paths in r.figures.items():
            png = next(p for p in paths if p.suffix == ".png")
            rel = png.relative_to(out_dir).as_posix()
            lines += [f"### Figure {n} — {FIGURES[n].title} (`{r.name}`)", "",
                      f"![Figure {n}]({rel})", "",
                      f"SVG: `{png.with_suffix('.svg').relative_to(out_dir).as_posix()}`", ""]
    return "\n".join(lines)
