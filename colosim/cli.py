"""The ``colosim`` command line: parses, calls the library, formats.

Exit codes (SPEC §11): 0 success; 2 invalid input (typer's usage message, or
one ``error: …`` line naming the file and the problem); 1 internal or I/O
failure while writing; 130 when interrupted.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from pathlib import Path
from typing import Optional

import typer

from .errors import InputError

app = typer.Typer(
    name="colosim",
    help="SLO-aware colocation of data-center tasks: Monte Carlo bin packing "
    "with instantaneous CPU usage (Janus & Rzadca, SoCC 2017).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def handle_errors(func):
    """Turn input errors into ``error: …`` + exit 2, Ctrl-C into exit 130."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except InputError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None

    return wrapper


@contextlib.contextmanager
def progress_bar(description: str, total: int):
    """A rich progress bar on stderr; yields ``advance(n)``."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True), transient=False,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)


@contextlib.contextmanager
def _progress_factory():
    """A factory of progress callbacks whose bars are closed on exit."""
    stack = contextlib.ExitStack()
    with stack:
        yield lambda description, total: stack.enter_context(progress_bar(description, total))


@app.command()
@handle_errors
def sweep(
    config: Path = typer.Argument(..., help="Sweep config (TOML): source, instances, grid."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Results CSV (default: [output] path, else results/CONFIG.csv)."),
    force: bool = typer.Option(False, "--force", help="Replace results of another config at --out."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary table."),
    backend: str = typer.Option("local", "--backend", help="local (this process) or dask."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address, e.g. tcp://HOST:8786 (default: a local cluster)."),
    workers: int = typer.Option(2, "--workers", min=1, help="Worker processes of the local Dask cluster (without --scheduler)."),
) -> None:
    """Run every grid point of CONFIG on every instance and write a results CSV.

    Prints a summary per grid point: mean and quartiles of m and q over
    instances. Finished instances are checkpointed; an interrupted sweep
    resumes when the same command is run again.
    """
    from .config import load_config
    from .sources import resolve_store
    from .sweep import Interrupted, default_output, summarize, sweep as run

    cfg = load_config(config)
    out = out if out is not None else default_output(cfg)
    with _progress_factory() as factory:
        store_path = resolve_store(cfg.source, cfg.path.parent, factory)
        try:
            result = run(cfg, store_path, out, force=force, progress_factory=factory,
                         backend=backend, scheduler=scheduler, workers=workers)
        except Interrupted as exc:
            typer.echo(f"{exc}; run the same command again to resume", err=True)
            raise typer.Exit(130) from None
    if not quiet:
        _print_summary(summarize(result.rows))
    if result.computed:
        typer.echo(f"wrote {out} ({len(result.rows)} rows, {result.elapsed:.1f} s)", err=True)
    else:
        typer.echo(f"{out} is up to date with {config}; nothing recomputed", err=True)


def _capacity_text(capacity) -> str:
    return f"{capacity:g}" if isinstance(capacity, float) else str(capacity)  # a number or a fleet


def _print_summary(summary: list[dict]) -> None:
    """One row per grid point: the grid keys that vary, then m_abs, m and q
    over instances as mean (first quartile to third)."""
    import sys

    from rich.console import Console
    from rich.table import Table

    keys = ["estimator", "algorithm", "capacity", "clairvoyance", "data", "rebalance", "headroom"]
    varying = [k for k in keys if len({str(s[k]) for s in summary}) > 1] or ["estimator"]
    fixed = [f"{k} = {_fmt_key(summary[0][k])}" for k in keys if k not in varying]
    title = "mean (quartiles) over instances" + (f"; {', '.join(fixed)}" if fixed else "")
    table = Table(title=title, title_justify="left")
    for k in varying:
        table.add_column(k, justify="left" if isinstance(summary[0][k], str) else "right")
    for name in ("n", "m_abs", "m", "q"):
        table.add_column(name, justify="right")
    for s in summary:
        table.add_row(
            *(_fmt_key(s[k]) for k in varying), str(s["instances"]),
            f"{s['m_abs_mean']:.1f} ({s['m_abs_q1']:.0f}-{s['m_abs_q3']:.0f})",
            f"{s['m_mean']:.3f} ({s['m_q1']:.3f}-{s['m_q3']:.3f})",
            f"{s['q_mean']:.2e} ({s['q_q1']:.1e}-{s['q_q3']:.1e})",
        )
    Console(width=None if sys.stdout.isatty() else 200).print(table)


def _fmt_key(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


@app.command()
@handle_errors
def generate(
    out: Path = typer.Option(..., "--out", "-o", help="Store file to write (HDF5)."),
    tasks: int = typer.Option(100_000, "--tasks", "-n", min=1, help="Tasks N (rows of the store)."),
    realizations: int = typer.Option(10_000, "--realizations", "-r", min=2, help="Realizations R per task."),
    seed: int = typer.Option(2017, "--seed", min=0, help="Seed of the population and of the draws."),
    sampling: str = typer.Option("independent", "--sampling", help="independent (the paper: x and y drawn separately), paired (x and y from the same record; docs/spec.md §8) or time-aligned (shared trace times; docs/beyond.md)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --out."),
    daily_amplitude: float = typer.Option(0.0, "--daily-amplitude", help="Amplitude in [0, 1) of a daily pattern "
                                          "common to all tasks (docs/beyond.md); 0: none."),
) -> None:
    """Realize N tasks of the built-in synthetic population into a store."""
    from .sources import generate_synthetic_store

    if out.exists() and not force:
        raise InputError(f"{out}: exists already (pass --force to replace it)")
    if not 0 <= daily_amplitude < 1:
        raise InputError(f"--daily-amplitude must be in [0, 1), not {daily_amplitude!r}")
    with progress_bar(f"generate {out.name}", tasks) as advance:
        generate_synthetic_store(out, n_tasks=tasks, n_realizations=realizations, seed=seed,
                                 sampling=sampling, progress=advance, daily_amplitude=daily_amplitude)
    typer.echo(f"wrote {out} ({tasks} tasks x {realizations} realizations)", err=True)

# ---------------------------------------------------------------- ingest ---

ingest_app = typer.Typer(
    help="Read a real trace into a series file, applying the ingest filters (docs/spec.md §7).",
    no_args_is_help=True,
)
app.add_typer(ingest_app, name="ingest")


def _shard_progress():
    """A rich progress bar over shards (bytes), and the callback that feeds it."""
    from rich.progress import (
        BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn, TransferSpeedColumn,
    )

    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
        TimeElapsedColumn(), TextColumn("{task.fields[shard]}"), transient=False,
        console=_stderr_console(),
    )
    bars: dict = {}

    def callback(kind, path, index, n_shards, size, total):
        if kind not in bars:
            bars[kind] = progress.add_task(kind, total=total, shard="")
        progress.update(bars[kind], advance=size, shard=f"{index + 1}/{n_shards} {path.name}")

    return progress, callback


def _stderr_console():
    """Rich output on stderr; wide when it goes to a file rather than a terminal."""
    import sys

    from rich.console import Console

    return Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def _print_report(report, out: Path) -> None:
    """The counts table of an ingest (SPEC §7), then the extra counts."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"ingest filters → {out}")
    for name in ("step", "tasks dropped", "records dropped", "tasks left", "records left", "what"):
        table.add_column(name, justify="left" if name in ("step", "what") else "right")
    fmt = lambda v: "" if v is None else f"{v:,}"  # noqa: E731
    for s in report.steps:
        table.add_row(s["step"], fmt(s["tasks_dropped"]), fmt(s["records_dropped"]),
                      fmt(s["tasks"]), fmt(s["records"]), s["what"])
    console = Console()
    console.print(table)
    extra = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in report.counts.items())
    console.print(extra)
    phases = ", ".join(f"{k} {v['wall']:.1f} s (cpu {v['cpu']:.1f} s)" for k, v in report.timings.items())
    console.print(f"{report.seconds:.1f} s" + (f" ({phases})" if phases else ""))


@ingest_app.command("google2011")
@handle_errors
def ingest_google2011_cmd(
    trace_dir: Optional[Path] = typer.Argument(
        None, help="Folder with task_events/ and task_usage/ shards (*.csv.gz or *.csv, no header)."),
    out: Path = typer.Option(..., "--out", "-o", help="Series file to write (HDF5, atomically)."),
    task_events: Optional[str] = typer.Option(
        None, "--task-events", help="task_events shards instead of TRACE_DIR/task_events: folder, glob or file."),
    task_usage: Optional[str] = typer.Option(
        None, "--task-usage", help="task_usage shards instead of TRACE_DIR/task_usage: folder, glob or file."),
    min_records: int = typer.Option(24, "--min-records", help="Tasks with fewer records (after dropping incomplete ones) are dropped as short (docs/spec.md §7, step 5)."),
    threads: Optional[int] = typer.Option(None, "--threads", help="DuckDB worker threads (default: all cores)."),
    memory_limit: Optional[str] = typer.Option(
        None, "--memory-limit", help="DuckDB memory limit, e.g. 4GB; beyond it DuckDB spills to --tmp-dir."),
    on_bad_lines: str = typer.Option("error", "--on-bad-lines", help="error: stop at the first bad line; skip: drop and count."),
    tmp_dir: Optional[Path] = typer.Option(None, "--tmp-dir", help="Folder for DuckDB's database and spill files."),
) -> None:
    """Ingest the Google 2011 trace (task_events + task_usage) into a series file."""
    from .trace.google2011 import ingest_google2011

    progress, callback = _shard_progress()
    with progress:
        report = ingest_google2011(
            trace_dir, out, task_events=task_events, task_usage=task_usage, min_records=min_records,
            threads=threads, memory_limit=memory_limit, on_bad_lines=on_bad_lines, tmp_dir=tmp_dir,
            progress=callback,
        )
    _print_report(report, out)


@ingest_app.command("google2019")
@handle_errors
def ingest_google2019_cmd(
    paths: list[str] = typer.Argument(..., help="instance_usage CSV files (header row; .csv or .csv.gz), folders or globs."),
    out: Path = typer.Option(..., "--out", "-o", help="Series file to write (HDF5, atomically)."),
    min_records: int = typer.Option(24, "--min-records", help="Tasks with fewer records (after dropping incomplete ones) are dropped as short (docs/spec.md §7, step 5)."),
    on_bad_lines: str = typer.Option("error", "--on-bad-lines", help="error: stop at the first bad line; skip: drop and count."),
) -> None:
    """Ingest Google 2019 per-task instance_usage series into a series file (docs/spec.md §7, steps 2-5)."""
    from .trace.google2019 import ingest_google2019

    progress, callback = _shard_progress()
    with progress:
        report = ingest_google2019(paths, out, min_records=min_records, on_bad_lines=on_bad_lines, progress=callback)
    _print_report(report, out)


# --------------------------------------------------------------- realize ---

@app.command("realize")
@handle_errors
def realize_cmd(
    series: Path = typer.Argument(..., help="Series file (from `colosim ingest`)."),
    out: Path = typer.Option(..., "--out", "-o", help="Store file to write (HDF5, atomically)."),
    tasks: int = typer.Option(..., "--tasks", "-n", help="N: tasks drawn without replacement from the series."),
    realizations: int = typer.Option(..., "--realizations", "-r", help="R: draws per task."),
    seed: int = typer.Option(..., "--seed", help="Seed of the row selection and of the draws (docs/spec.md §8)."),
    sampling: str = typer.Option("independent", "--sampling", help="independent (the paper), paired, or time-aligned (shared trace times; docs/beyond.md)."),
    threads: Optional[int] = typer.Option(None, "--threads", help="Worker threads (the output does not depend on it)."),
) -> None:
    """Draw a realization store (x: instantaneous, y: average) from a series file (docs/spec.md §8)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from .io import open_series
    from .io._hdf5 import sha256_file
    from .realize import realize

    source_series = open_series(series)
    source = {"series": str(series), "sha256": sha256_file(series)}
    with Progress(TextColumn("realize"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=_stderr_console()) as progress:
        bar = progress.add_task("rows", total=tasks)
        realize(source_series, out, n_tasks=tasks, n_realizations=realizations, seed=seed,
                sampling=sampling, source=source, threads=threads,
                progress=lambda n: progress.update(bar, advance=n))
    typer.echo(f"wrote {out}: {tasks} tasks x {realizations} realizations ({sampling})")


@app.command()
@handle_errors
def info(
    file: Path = typer.Argument(..., help="A store, series or results file."),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Scan every value and check the recorded source checksum."),
) -> None:
    """Print a file's format, shape, seed and provenance, and verify it."""
    from .info import describe

    lines, problems = describe(file, verify)
    for line in lines:
        typer.echo(line)
    if problems:
        raise InputError(f"{file}: " + "; ".join(problems))


@app.command()
@handle_errors
def characterize(
    series: Optional[Path] = typer.Argument(None, help="Series file (colosim-series HDF5), e.g. from "
                                            "`colosim ingest`; or use --synthetic."),
    out: Path = typer.Option(..., "--out", help="Folder for the figures, CSVs and report.md (created if needed; "
                             "other files in it are left alone)."),
    store: Optional[Path] = typer.Option(None, "--store", help="Store (colosim-store HDF5) for Table 1 and "
                                         "Figs. 5-6; without it, an in-memory store is realized from the series."),
    seed: int = typer.Option(0, "--seed", help="Seed of every random choice (and of the in-memory store)."),
    repetitions: int = typer.Option(1000, "--repetitions", help="Random samples per size for Table 1 and "
                                    "Fig. 6 (paper: 10000)."),
    sizes: str = typer.Option("10:500:10", "--sizes", help="Table 1 sample sizes N: 'A,B,C' or "
                              "'START:STOP:STEP' (inclusive)."),
    store_tasks: int = typer.Option(5000, "--store-tasks", help="Tasks of the in-memory store (without --store)."),
    realizations: int = typer.Option(10000, "--realizations", help="Realizations per task of the in-memory "
                                     "store (without --store)."),
    n_init: int = typer.Option(10, "--n-init", help="k-means initializations (the best is kept)."),
    synthetic: Optional[int] = typer.Option(None, "--synthetic", help="Characterize this many tasks of the "
                                            "built-in synthetic population instead of a series file."),
    population_seed: int = typer.Option(2017, "--population-seed", help="Seed of the --synthetic population "
                                        "(as `colosim generate --seed`)."),
):
    """Characterize a trace as in the paper's Section 3 (docs/spec.md §9): Figs. 1-6,
    Table 1, clusters and report.md with the paper's values beside."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from . import characterize as ch
    from .io import open_series, open_store

    size_list = ch.parse_sizes(sizes)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: --out exists and is not a folder")
    if (series is None) == (synthetic is None):
        raise InputError("give either a SERIES file or --synthetic N (not both)")
    if synthetic is not None:
        from .trace.synthetic import SyntheticPopulation

        if synthetic < 1:
            raise InputError(f"--synthetic must be >= 1, not {synthetic}")
        source = SyntheticPopulation(synthetic, population_seed)
        name = (f"built-in synthetic population ({synthetic} tasks, seed {population_seed}, "
                f"model v{source.source['model_version']})")
    else:
        source = open_series(series)
        name = str(series)
    store_file = open_store(store) if store is not None else None
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:

        def start(description: str, total: int):
            task = bar.add_task(description, total=total)
            return lambda n=1: bar.advance(task, n)

        result = ch.characterize(source, store_file, seed=seed, repetitions=repetitions, sizes=size_list,
                                 n_init=n_init, store_tasks=store_tasks, realizations=realizations,
                                 progress=start, name=name)
        written = ch.write_outputs(result, out, progress=start)
    if store_file is not None:
        store_file.close()
    for note in result.notes:
        console.print(f"note: {note}")
    typer.echo(f"wrote {len(written)} files to {out} (summary: {out / 'report.md'})")


@app.command()
@handle_errors
def plot(
    results: Path = typer.Argument(..., help="Results CSV written by `colosim sweep`."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the figures (PNG and SVG)."),
    figure: Optional[list[int]] = typer.Option(
        None, "--figure", "-f", help="Draw only this paper figure (7-13); repeatable. Default: every one "
        "the results support."),
) -> None:
    """Draw the paper's Section 5 figures (7-13) that the results' grid supports."""
    from .plots.section5 import FIGURES, figures_to_draw, load_results, plot_results, supported_figures

    rows = load_results(results)
    support = supported_figures(rows)
    wanted = figures_to_draw(rows, figure or None)
    if not wanted:
        raise InputError(f"{results}: supports none of Figures 7-13 ("
                         + "; ".join(f"{n}: {why}" for n, why in support.items()) + ")")
    with progress_bar(f"plot {results.name}", len(wanted)) as advance:
        written = plot_results(rows, out, figures=wanted, progress=advance)
    for n, paths in written.items():
        typer.echo(f"Figure {n} ({FIGURES[n].title}): " + ", ".join(str(p) for p in paths))
    skipped = [f"{n} ({why})" for n, why in support.items() if why is not None and not figure]
    if skipped:
        typer.echo("not drawn: " + "; ".join(skipped), err=True)


@app.command()
@handle_errors
def reproduce(
    out: Path = typer.Option(..., "--out", "-o", help="Folder for results/, figures/ and REPORT.md."),
    scale: str = typer.Option("paper", "--scale", help="paper (configs as written), small (N 3,000, R 2,000, "
                              "10 instances of 200 tasks) or tiny (a smoke test)."),
    configs: Path = typer.Option(Path("configs"), "--configs", help="Folder of sweep configs (*.toml)."),
    force: bool = typer.Option(False, "--force", help="Replace results of another scale or config in --out."),
    backend: str = typer.Option("local", "--backend", help="local (this process) or dask, for every sweep."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (default: a local cluster)."),
) -> None:
    """Run every config, draw Figures 7-13 and write REPORT.md with the paper's
    Section 5 claims beside colosim's values, each marked holds or not (tolerances: docs/spec.md §12)."""
    from .reproduce import reproduce as run
    from .sweep import Interrupted

    with _progress_factory() as factory:
        try:
            report = run(out, scale=scale, configs_dir=configs, force=force, progress_factory=factory,
                         log=lambda msg: typer.echo(msg, err=True), backend=backend, scheduler=scheduler)
        except Interrupted as exc:
            typer.echo(f"{exc}; run the same command again to resume", err=True)
            raise typer.Exit(130) from None
    typer.echo(f"wrote {report}")


# ----------------------------------------------------------- synth-trace ---

@app.command("synth-trace")
@handle_errors
def synth_trace_cmd(
    out: Path = typer.Option(..., "--out", "-o", help="Folder to create (must not exist, or be empty)."),
    tasks: int = typer.Option(..., "--tasks", "-n", help="Tasks of the built-in population (long-task candidates)."),
    days: int = typer.Option(29, "--days", help="Length of the trace in days (one shard per day)."),
    seed: int = typer.Option(..., "--seed", help="Seed of the population and of the planted tasks."),
) -> None:
    """Write a synthetic trace in the Google 2011 format (task_events + task_usage) with planted
    failing, zero-usage and short tasks, incomplete records and averages above 1 (see planted.json)."""
    from .trace.synth_trace import total_tasks, write_synthetic_trace

    with progress_bar(f"synth-trace {out.name}", total_tasks(max(tasks, 0))) as advance:
        planted = write_synthetic_trace(out, n_tasks=tasks, days=days, seed=seed, progress=advance)
    last = planted["steps"][-1]
    typer.echo(f"wrote {out}: {planted['steps'][0]['tasks']} tasks, {planted['steps'][0]['records']} records; "
               f"planted {last['tasks']} long tasks with {last['records']} records")


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    main()
