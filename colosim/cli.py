"""The ``colosim`` command line: each command parses its options, calls one
library function and prints.

Errors are handled once, for the whole app (:class:`_App`): an
:class:`~colosim.errors.InputError` becomes one ``error: …`` line and exit
code 2; Ctrl-C exit code 130. Other exit codes (SPEC §11): 0 success; 2
also for typer's usage errors; 1 an internal or I/O failure.
"""

from __future__ import annotations

import contextlib
import errno
import re
import signal
import sys
import threading
from pathlib import Path
from typing import Literal, Optional

import typer
from typer.core import TyperGroup

from .errors import InputError, parameters_as, printable
from .resources import MAX_REALIZATIONS, MAX_SEED, MAX_TASKS
from .runner.backends import BACKENDS
from .sources.ingest import MIN_RECORDS, ON_BAD_LINES
from .sources.realize import SAMPLINGS

#: The options that take one of fixed values (checked against their sources by the tests).
Backend = Literal[BACKENDS]
Sampling = Literal[SAMPLINGS]
#: the built-in population has no window percentiles (docs/spec.md)
PopulationSampling = Literal[tuple(s for s in SAMPLINGS if s != "window-quantiles")]
OnBadLines = Literal[ON_BAD_LINES]
Scale = Literal["paper", "small", "tiny"]


class _App(TyperGroup):
    """The app's group: the one place errors become exit codes and one line."""

    def invoke(self, ctx):
        from .runner.sweep import Interrupted

        try:
            with _terminate_as_interrupt():
                return super().invoke(ctx)
        except InputError as exc:
            typer.echo(f"error: {printable(exc)}", err=True)  # one line, whatever a file name holds
            raise typer.Exit(2) from None
        except OSError as exc:
            if exc.errno != errno.ENAMETOOLONG:
                raise
            # a path given on the command line that no file system can hold
            typer.echo(f"error: {printable(exc.filename or '')}: {exc.strerror}", err=True)
            raise typer.Exit(2) from None
        except Interrupted as exc:
            typer.echo(f"{exc}; run the same command again to resume", err=True)
            raise typer.Exit(130) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """Usage errors (an unknown option, a value out of range) are one
        ``error: …`` line too, exit code 2, rather than a box of text."""
        usage, click_error, no_args = _click_errors()
        _strict_numbers(self)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except no_args:  # `colosim` or `colosim ingest` alone: the help, already printed
            code = 2
        except usage as exc:
            where = f" (see {exc.ctx.command_path} --help)" if exc.ctx is not None else ""
            message = " ".join(exc.format_message().split())
            typer.echo(f"error: {printable(message)}{where}", err=True)
            code = 2
        except typer.Abort:
            typer.echo("interrupted", err=True)
            code = 130
        except click_error as exc:
            typer.echo(f"error: {printable(' '.join(exc.format_message().split()))}", err=True)
            code = exc.exit_code
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(nan|inf|infinity)", re.IGNORECASE)


def _strict_numbers(group) -> None:
    """Integer and float options read only plain ASCII numbers: Python's
    ``int()`` and ``float()`` also take ``1_0`` (as 10) and other scripts'
    digits, which a typo should not become. Done once per command."""
    import typing

    commands = list(group.commands.values())
    while commands:
        command = commands.pop()
        commands.extend(getattr(command, "commands", {}).values())
        for param in command.params:
            annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
            if typing.get_origin(annotation) is typing.Union:  # Optional[int]
                annotation = next((a for a in typing.get_args(annotation) if a is not type(None)), None)
            if typing.get_origin(annotation) is list:
                annotation = (typing.get_args(annotation) or (None,))[0]
            if annotation not in (int, float) or getattr(param, "_colosim_strict", False):
                continue

            def process_value(ctx, value, _process=param.process_value, _param=param, _int=annotation is int):
                for v in value if isinstance(value, (list, tuple)) else (value,):
                    if isinstance(v, str):
                        text = v.strip()
                        if not (re.fullmatch(r"[+-]?[0-9]+", text) if _int else _NUMBER.fullmatch(text)):
                            raise typer.BadParameter(f"{v!r} is not {'an integer' if _int else 'a number'}",
                                                     ctx=ctx, param=_param)
                return _process(ctx, value)

            param.process_value = process_value
            param._colosim_strict = True


def _click_errors() -> tuple[type, type, type]:
    """Click's UsageError, ClickException and NoArgsIsHelpError, from
    wherever this typer takes click (its own copy, or click itself)."""
    mro = {c.__name__: c for c in typer.BadParameter.__mro__}
    module = sys.modules[mro["UsageError"].__module__]
    no_args = getattr(module, "NoArgsIsHelpError", None)
    return mro["UsageError"], mro["ClickException"], no_args or type("_Never", (Exception,), {})


@contextlib.contextmanager
def _terminate_as_interrupt():
    """SIGTERM (a ``kill``, a job scheduler's stop) is handled as Ctrl-C:
    temporary files removed, checkpoints kept, exit code 130."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


app = typer.Typer(
    name="colosim",
    cls=_App,
    help="SLO-aware colocation of data-center tasks: Monte Carlo bin packing "
    "with instantaneous CPU usage (Janus & Rzadca, SoCC 2017).",
    epilog="Start here: colosim configs copy quickstart && colosim sweep quickstart.toml",
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,  # plain help: wraps at the terminal's width, shows text as written
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from . import __version__

        typer.echo(f"colosim {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print colosim's version and exit."),
) -> None:
    """colosim's options that belong to no command."""
    from .resources import keep_freed_memory

    keep_freed_memory()  # a command's process works instance after instance: reuse what it frees


def _stderr_console():
    """Rich output on stderr; wide when it goes to a file rather than a terminal."""
    from rich.console import Console

    return Console(stderr=True, width=None if sys.stderr.isatty() else 160)


@contextlib.contextmanager
def _progress():
    """The progress protocol (:mod:`colosim.progress`) drawn on stderr by
    :class:`colosim.terminal.Display`: bars on a terminal, one line per
    finished step otherwise; its ``log`` prints a line above the bars."""
    from .terminal import Display

    with Display() as display:
        yield display


@app.command()
def sweep(
    config: Path = typer.Argument(..., metavar="CONFIG", help="Sweep config (TOML): source, instances, grid. "
                                  "Paths inside it are relative to its folder."),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", help="Results CSV (default: the config's [output] path, relative to the config's "
        "folder; else results/CONFIG.csv in the working directory)."
    ),
    force: bool = typer.Option(False, "--force", help="Replace results of another config at --out."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary table."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what the sweep would do (grid, store, kernels, "
                                 "a rough time) and write nothing."),
    backend: Backend = typer.Option(BACKENDS[0], "--backend", help="Run in this process, or on a Dask cluster."),
    scheduler: Optional[str] = typer.Option(
        None, "--scheduler", help="Dask scheduler address, e.g. tcp://HOST:8786 (default: a local cluster)."
    ),
    workers: int = typer.Option(
        2, "--workers", min=1, max=1024, help="Worker processes of the local Dask cluster (without --scheduler)."
    ),
    wait: bool = typer.Option(False, "--wait", help="If another run is writing --out, wait for it (default: "
                              "exit 2 naming its process)."),
) -> None:
    """Run every grid point of CONFIG on every instance and write a results CSV.

    Prints a summary per grid point: means of m and q over instances with their 95% intervals, also written to
    OUT.summary.csv. Finished instances are checkpointed; an interrupted sweep resumes when the same command is
    run again.

    Examples:

    \b
        colosim configs copy quickstart && colosim sweep quickstart.toml
        colosim sweep configs/clairvoyance.toml --dry-run
    """
    from .runner.sweep import sweep_file

    if dry_run:
        from .runner.dry_run import dry_run as plan_sweep

        for line in plan_sweep(config, out=out).lines():
            typer.echo(line)
        return
    with _progress() as progress, parameters_as({"backend": "--backend", "scheduler": "--scheduler"}):
        result = sweep_file(config, out=out, force=force, progress=progress, backend=backend,
                            scheduler=scheduler, workers=workers, wait=wait)
    if result.discarded:
        typer.echo(f"note: {len(result.discarded)} checkpoint(s) did not match their record and were computed "
                   f"again (instances {', '.join(map(str, result.discarded[:10]))}"
                   f"{', ...' if len(result.discarded) > 10 else ''})", err=True)
    if not quiet:
        _print_summary(result.summary)
    if result.computed:
        typer.echo(f"wrote {result.out} ({len(result.rows)} rows, {result.elapsed:.1f} s)", err=True)
    else:
        typer.echo(f"{result.out} is up to date with {config}; nothing recomputed", err=True)


def _print_summary(summary: list[dict]) -> None:
    """One row per grid point: the grid keys that vary, then m_abs, m and q
    over instances as mean [95% interval], and the resolution of q."""
    from rich.console import Console
    from rich.table import Table

    from .io.results import GRID_KEYS

    memory = any(s.get("q_memory_mean") is not None for s in summary)
    # without memory packed, its keys say nothing: left out
    keys = [k for k in GRID_KEYS if memory or k not in ("fit_rule", "memory_capacity", "memory_estimator")]
    varying = [k for k in keys if len({str(s[k]) for s in summary}) > 1] or ["estimator"]
    fixed = [f"{k} = {_fmt_key(summary[0][k])}" for k in keys if k not in varying]
    legend = ("; q_memory: memory's violation frequency, memory-bound: share of machines memory fills more than "
              "CPU" if memory else "")
    title = ("mean \\[95% interval] over instances (docs/spec.md, \"Intervals\"); m: machines over the "
             "lower bound (summed means); q: violation frequency, q_max: on the worst machine; resolution: the "
             "smallest nonzero q" + legend + (f"; {', '.join(fixed)}" if fixed else ""))
    table = Table(title=title, title_justify="left")
    for k in varying:
        table.add_column(k, justify="left" if isinstance(summary[0][k], str) else "right")
    names = ("instances", "machines (m_abs)", "m (normalized)", "q", "q_max")
    for name in names + (("q_memory", "memory-bound") if memory else ()) + ("q resolution",):
        table.add_column(name, justify="right")
    for s in summary:
        two = ()
        if memory:
            two = ("-", "-") if s["q_memory_mean"] is None else (
                _with_interval(s, "q_memory", "{:.2e}", "{:.1e}"), _with_interval(s, "memory_bound", "{:.2f}"))
        table.add_row(
            *(_fmt_key(s[k]) for k in varying), str(s["instances"]),
            _with_interval(s, "m_abs", "{:.1f}"), _with_interval(s, "m", "{:.3f}", "{:.2f}"),
            _with_interval(s, "q", "{:.2e}", "{:.1e}"), _with_interval(s, "q_max", "{:.2e}", "{:.1e}"),
            *two, f"{s['q_resolution']:.1e}",
        )
    Console(width=None if sys.stdout.isatty() else 200).print(table)


def _with_interval(s: dict, metric: str, fmt: str, bounds: str | None = None) -> str:
    """``mean [low, high]`` (the mean alone when there is no interval; the
    bounds in format ``bounds``, default ``fmt``), with rich markup escaped."""
    mean, low, high = s[metric + "_mean"], s[metric + "_ci_low"], s[metric + "_ci_high"]
    if low != low:  # NaN: fewer than two instances
        return fmt.format(mean)
    bounds = bounds or fmt
    return f"{fmt.format(mean)} \\[{bounds.format(low)}, {bounds.format(high)}]"


def _fmt_key(v) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


@app.command()
def plan(
    config: Path = typer.Argument(..., help="Plan config (TOML): source, instances, one value of each grid key."),
    slo: float = typer.Option(..., "--slo", help="The SLO s in (0, 1): violations at most 1 - s, e.g. 0.99."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory for plan.csv, frontier.png and the cache."),
    per_machine: bool = typer.Option(False, "--per-machine",
                                     help="Hold the SLO on every machine (q_max), not fleet-wide (q)."),
    force: bool = typer.Option(False, "--force", help="Replace a plan of another config or SLO at --out."),
    wait: bool = typer.Option(False, "--wait", help="If another run is writing --out, wait for it."),
) -> None:
    """The cheapest estimator of every family that meets an SLO.

    Searches each family's parameter on the first half of the instances,
    checks the choice on the other half, and writes OUT/plan.csv (cheapest
    meeting family first) and OUT/frontier.png. Evaluations are kept in OUT
    and reused by later plans of the same config.

    Example:

    \b
        colosim plan configs/plan/base_case.toml --slo 0.99 --out plans/slo99
    """
    from .runner.plan import answer, plan_file

    with _progress() as progress, parameters_as({"slo": "--slo"}):
        result = plan_file(config, slo, out, per_machine=per_machine, force=force, progress=progress, wait=wait)
    _print_plan(result)
    typer.echo(answer(result))
    typer.echo(f"wrote {result.out / 'plan.csv'} and {result.out / 'frontier.png'} "
               f"({result.computed} evaluations computed, the rest reused)", err=True)


def _print_plan(result) -> None:
    from rich.console import Console
    from rich.table import Table

    per = 1000 / result.tasks
    metric = "q_max" if result.per_machine else "q"
    view = "on every machine (q_max)" if result.per_machine else "fleet-wide (q)"
    table = Table(title=f"SLO {result.slo:.10g} {view}: target {result.target:.3g}; trained on {result.training}, "
                        f"checked on {result.held_out} held-out instances; mean \\[95% interval]",
                  title_justify="left")
    for name in ("family", "estimator", "machines / 1,000 tasks", "q", "q_max", "machines within", "meets"):
        table.add_column(name, justify="left" if name in ("family", "estimator") else "right")
    for f in result.families:
        s = f.held_out
        table.add_row(
            f.family, f.chosen.estimator + (f" h={f.chosen.headroom:g}" if f.family == "max" else ""),
            f"{s['m_abs_mean'] * per:.1f} \\[{s['m_abs_ci_low'] * per:.1f}, {s['m_abs_ci_high'] * per:.1f}]",
            f"{s['q_mean']:.2e} \\[{s['q_ci_low']:.1e}, {s['q_ci_high']:.1e}]",
            f"{s['q_max_mean']:.2e}" + (f" (≤ {s['q_max_ci_high']:.1e})" if metric == "q_max" else ""),
            f"{s['machines_share_meeting']:.1%}", "yes" if f.meets else "no")
    Console(width=None if sys.stdout.isatty() else 200).print(table)


@app.command()
def generate(
    out: Path = typer.Option(..., "--out", "-o", help="Store file to write (HDF5)."),
    tasks: int = typer.Option(100_000, "--tasks", "-n", min=1, max=MAX_TASKS, help="Tasks N (rows of the store)."),
    realizations: int = typer.Option(10_000, "--realizations", "-r", min=2, max=MAX_REALIZATIONS,
                                     help="Realizations R per task."),
    seed: int = typer.Option(2017, "--seed", min=0, max=MAX_SEED, help="Seed of the population and of the draws."),
    sampling: PopulationSampling = typer.Option(
        SAMPLINGS[0], "--sampling",
        help=(
            "independent (the paper: x and y drawn separately), paired (x and y from the same "
            "record; docs/spec.md §8) or time-aligned (shared trace times; docs/estimators.md)."
        ),
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --out."),
    daily_amplitude: float = typer.Option(0.0, "--daily-amplitude", help="Amplitude in [0, 1) of a daily pattern "
                                          "common to all tasks (docs/estimators.md); 0: none."),
) -> None:
    """Realize N tasks of the built-in synthetic population into a store.

    Example:

    \b
        colosim generate --out small.h5 --tasks 5000 --realizations 1000
    """
    from .sources.resolve import generate_synthetic_store

    names = {"n_tasks": "--tasks", "n_realizations": "--realizations", "sampling": "--sampling",
             "daily_amplitude": "--daily-amplitude"}
    with _progress() as progress, parameters_as(names):
        generate_synthetic_store(out, n_tasks=tasks, n_realizations=realizations, seed=seed, sampling=sampling,
                                 progress=progress, daily_amplitude=daily_amplitude, force=force)
    typer.echo(f"wrote {out} ({tasks} tasks x {realizations} realizations)", err=True)

# ---------------------------------------------------------------- ingest ---

ingest_app = typer.Typer(
    help="Read a real trace into a series file, applying the ingest filters (docs/spec.md §7).",
    no_args_is_help=True,
)
app.add_typer(ingest_app, name="ingest")

_INGEST_NAMES = {"min_records": "--min-records", "on_bad_lines": "--on-bad-lines"}


def _print_report(report, out: Path) -> None:
    """The counts table of an ingest (SPEC §7), then the extra counts."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"ingest filters → {out}", box=box.SIMPLE_HEAD)
    for name in ("step", "tasks\ndropped", "records\ndropped", "tasks\nleft", "records\nleft"):
        table.add_column(name, justify="left" if name == "step" else "right", no_wrap=True)
    table.add_column("what", ratio=1)
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
def ingest_google2011_cmd(
    trace_dir: Optional[Path] = typer.Argument(
        None, help="Folder with task_events/ and task_usage/ shards (*.csv.gz or *.csv, no header)."),
    out: Path = typer.Option(..., "--out", "-o", help="Series file to write (HDF5, atomically)."),
    task_events: Optional[str] = typer.Option(
        None, "--task-events", help="task_events shards instead of TRACE_DIR/task_events: folder, glob or file."),
    task_usage: Optional[str] = typer.Option(
        None, "--task-usage", help="task_usage shards instead of TRACE_DIR/task_usage: folder, glob or file."),
    min_records: int = typer.Option(
        MIN_RECORDS, "--min-records",
        help=(
            "Tasks with fewer records (after dropping incomplete ones) are dropped as short "
            "(docs/spec.md §7, step 5)."
        ),
    ),
    threads: Optional[int] = typer.Option(None, "--threads", help="DuckDB worker threads (default: all cores)."),
    memory_limit: Optional[str] = typer.Option(
        None, "--memory-limit", help="DuckDB memory limit, e.g. 4GB; beyond it DuckDB spills to --tmp-dir."),
    on_bad_lines: OnBadLines = typer.Option(
        ON_BAD_LINES[0], "--on-bad-lines", help="error: stop at the first bad line; skip: drop and count."
    ),
    tmp_dir: Optional[Path] = typer.Option(None, "--tmp-dir", help="Folder for DuckDB's database and spill files."),
    force: bool = typer.Option(False, "--force", help="Replace an existing series file at --out (never an input)."),
) -> None:
    """Ingest the Google 2011 trace (task_events + task_usage) into a series file.

    Example:

    \b
        colosim ingest google2011 clusterdata-2011-2 --out google2011.h5
    """
    from .sources.google2011 import ingest_google2011

    with _progress() as progress, parameters_as(_INGEST_NAMES):
        report = ingest_google2011(
            trace_dir, out, task_events=task_events, task_usage=task_usage, min_records=min_records,
            threads=threads, memory_limit=memory_limit, on_bad_lines=on_bad_lines, tmp_dir=tmp_dir,
            progress=progress, force=force,
        )
    _print_report(report, out)


@ingest_app.command("google2019")
def ingest_google2019_cmd(
    paths: list[str] = typer.Argument(
        ..., help=(
            "Per-task instance_usage CSVs (header row; .csv or .csv.gz), or the trace's own tables: "
            "instance_usage*.json, *.json.gz (JSON lines) or *.parquet, with optional instance_events* "
            "files (docs/ingest.md); files, folders or globs."
        ),
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Series file to write (HDF5, atomically)."),
    min_records: int = typer.Option(
        MIN_RECORDS, "--min-records",
        help=(
            "Tasks with fewer records (after dropping incomplete ones) are dropped as short "
            "(docs/spec.md §7, step 5)."
        ),
    ),
    on_bad_lines: OnBadLines = typer.Option(
        ON_BAD_LINES[0], "--on-bad-lines", help="error: stop at the first bad line; skip: drop and count."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing series file at --out (never an input)."),
) -> None:
    """Ingest Google 2019 instance_usage series into a series file (docs/spec.md §7).

    The format is told from the files: per-task CSVs (steps 2-5), or the
    trace's tables in their nested v3 shape, where instance_events files
    (EVICT, FAIL, KILL, LOST) drive step 1.

    Examples:

    \b
        colosim ingest google2019 instance_usage/ --out google2019.h5
        colosim ingest google2019 cell_a_tables/ --out cell_a.h5
    """
    from .sources.google2019 import ingest_google2019

    with _progress() as progress, parameters_as(_INGEST_NAMES):
        report = ingest_google2019(paths, out, min_records=min_records, on_bad_lines=on_bad_lines,
                                   progress=progress, force=force)
    _print_report(report, out)


# --------------------------------------------------------------- realize ---

@app.command("realize")
def realize_cmd(
    series: Path = typer.Argument(..., help="Series file (from `colosim ingest`)."),
    out: Path = typer.Option(..., "--out", "-o", help="Store file to write (HDF5, atomically)."),
    tasks: int = typer.Option(..., "--tasks", "-n", min=1, max=MAX_TASKS,
                              help="N: tasks drawn without replacement from the series."),
    realizations: int = typer.Option(..., "--realizations", "-r", min=1, max=MAX_REALIZATIONS,
                                     help="R: draws per task."),
    seed: int = typer.Option(..., "--seed", min=0, max=MAX_SEED,
                             help="Seed of the row selection and of the draws (docs/spec.md §8)."),
    sampling: Sampling = typer.Option(
        SAMPLINGS[0], "--sampling",
        help=(
            "independent (the paper), paired, time-aligned (shared trace times; "
            "docs/estimators.md) or window-quantiles (the window's CPU percentiles; docs/spec.md)."
        ),
    ),
    threads: Optional[int] = typer.Option(None, "--threads", help="Worker threads (the output does not depend on it)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing store at --out (never the series)."),
) -> None:
    """Draw a realization store (x: instantaneous, y: average) from a series file (docs/spec.md §8).

    Example:

    \b
        colosim realize google2011.h5 --out store.h5 -n 100000 -r 10000 --seed 1
    """
    from .sources.realize import realize_file

    names = {"n_tasks": "--tasks", "n_realizations": "--realizations", "sampling": "--sampling",
             "threads": "--threads"}
    with _progress() as progress, parameters_as(names):
        realize_file(series, out, n_tasks=tasks, n_realizations=realizations, seed=seed, sampling=sampling,
                     threads=threads, progress=progress, force=force)
    typer.echo(f"wrote {out}: {tasks} tasks x {realizations} realizations ({sampling})")


@app.command()
def info(
    file: Path = typer.Argument(..., metavar="FILE", help="A store, series file, results table, its sidecar "
                                "(.csv.json) or summary (.summary.csv), or a characterize output."),
    verify: bool = typer.Option(False, "--verify", help="Also scan every value for NaN, infinite or negative "
                                "(reads the whole file: 8 GB for a paper-scale store)."),
    check_source: bool = typer.Option(
        False, "--check-source", help="Also open the source file the provenance names and compare its checksum "
        "(by default provenance is only printed, never opened)."),
) -> None:
    """Print a file's format, shape, seed and provenance.

    Examples:

    \b
        colosim info results/quickstart.csv.json
        colosim info store.h5 --verify
    """
    from .info import describe

    lines, problems = describe(file, verify, check_source=check_source)
    for line in lines:
        typer.echo(line)
    if problems:
        raise InputError(f"{file}: " + "; ".join(problems))


def _sizes(text: str) -> tuple[int, ...]:
    """``"10,20,50"`` or ``"START:STOP:STEP"`` (inclusive) -> sorted sizes."""
    text = text.strip()

    def integer(p: str) -> int:
        if not re.fullmatch(r"[+-]?[0-9]+", p.strip()):  # no 1_0, no other digits
            raise ValueError(p)
        return int(p)
    try:
        if ":" in text:
            parts = [integer(p) for p in text.split(":")]
            if len(parts) != 3 or parts[2] < 1:
                raise ValueError
            sizes = range(parts[0], parts[1] + 1, parts[2])
        else:
            sizes = [integer(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise InputError(f"--sizes {text!r}: expected 'A,B,C' or 'START:STOP:STEP' of integers") from None
    if len(sizes) > MAX_SIZES:
        raise InputError(f"--sizes {text!r}: {len(sizes)} sizes, at most {MAX_SIZES}")
    if not sizes or min(sizes) < 1 or max(sizes) > MAX_TASKS:
        raise InputError(f"--sizes {text!r}: sizes must be integers in [1, {MAX_TASKS}]")
    return tuple(sorted(set(sizes)))


#: the most sizes ``characterize --sizes`` takes
MAX_SIZES = 10_000


@app.command()
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
    sampling: str = typer.Option("auto", "--sampling", help="Instantaneous data: 'sample' (the trace's sampled "
                                 "second of each window, the paper's), 'window-quantiles' (a second drawn from each "
                                 "window's distribution; Google 2019 series with percentiles), 'both' (the second "
                                 "in --out/window-quantiles/, one report) or 'auto' (both when the series has "
                                 "the distributions and no --store is given)."),
    force: bool = typer.Option(False, "--force", help="Replace the files of an earlier characterization in --out."),
):
    """Characterize a trace as in the paper's Section 3 (docs/spec.md §9): Figs. 1-6,
    Table 1, clusters and report.md with the paper's values beside.

    Examples:

    \b
        colosim characterize --synthetic 5000 --out char
        colosim characterize google2011.h5 --out char --repetitions 10000
        colosim characterize google2019.h5 --out char --sampling both
    """
    from .analysis.characterize_report import run_characterization

    names = {"seed": "--seed", "repetitions": "--repetitions", "n_init": "--n-init", "store_tasks": "--store-tasks",
             "n_realizations": "--realizations", "realizations": "--realizations", "synthetic": "--synthetic",
             "out_dir": "--out", "sampling": "--sampling"}
    if (series is None) == (synthetic is None):
        raise InputError("give either a SERIES file or --synthetic N (not both)")
    with _progress() as progress, parameters_as(names):
        result, written = run_characterization(
            out, series=series, synthetic=synthetic, population_seed=population_seed, store=store,
            progress=progress, seed=seed, repetitions=repetitions, sizes=_sizes(sizes), n_init=n_init,
            store_tasks=store_tasks, realizations=realizations, sampling=sampling, force=force)
    for note in result.notes:
        _stderr_console().print(f"note: {note}")
    typer.echo(f"wrote {len(written)} files to {out} (summary: {out / 'report.md'})")


@app.command()
def plot(
    results: Path = typer.Argument(..., help="Results CSV written by `colosim sweep`."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the figures (PNG and SVG by default; see "
                             "--format)."),
    figure: Optional[list[int]] = typer.Option(
        None, "--figure", "-f", help="Draw only this figure (7-13: the paper's; 14: CPU and memory together); "
        "repeatable. Default: every one the results support."),
    formats: Optional[list[str]] = typer.Option(None, "--format", help="png, svg or pdf; repeatable or "
                                                "comma-separated (default: png and svg)."),
    no_title: bool = typer.Option(False, "--no-title", help="No titles (for a paper's own captions)."),
    force: bool = typer.Option(False, "--force", help="Replace figures already in --out."),
) -> None:
    """Draw the paper's Section 5 figures (7-13) and Figure 14 (CPU and memory
    together) that the results' grid supports.

    Examples:

    \b
        colosim plot results/baseline.csv --out figures
        colosim plot results/capacity.csv --out figures --figure 11 --format pdf
    """
    from .figures.results import FIGURES, plot_file

    with _progress() as progress:
        chosen = tuple(f.strip() for given in formats or () for f in given.split(","))
        written, skipped = plot_file(results, out, figures=figure or None, progress=progress, force=force,
                                     formats=chosen or ("png", "svg"), title=not no_title)
    for n, paths in written.items():
        typer.echo(f"Figure {n} ({FIGURES[n].title}): " + ", ".join(str(p) for p in paths))
    if skipped:
        typer.echo("not drawn: " + "; ".join(f"{n} ({why})" for n, why in skipped.items()), err=True)


@app.command()
def reproduce(
    out: Path = typer.Option(..., "--out", "-o", help="Folder for results/, figures/ and REPORT.md."),
    scale: Scale = typer.Option("paper", "--scale", help="paper (configs as written), small (N 3,000, R 2,000, "
                                "10 instances of 200 tasks) or tiny (a smoke test)."),
    configs: Optional[Path] = typer.Option(None, "--configs", help="Folder of sweep configs (*.toml; default: "
                                           "the paper's configs shipped with colosim, `colosim configs list`)."),
    force: bool = typer.Option(False, "--force", help="Replace results of another scale or config in --out."),
    backend: Backend = typer.Option(BACKENDS[0], "--backend", help="Run every sweep in this process, or on a "
                                    "Dask cluster."),
    scheduler: Optional[str] = typer.Option(
        None, "--scheduler", help="Dask scheduler address (default: a local cluster)."
    ),
    wait: bool = typer.Option(False, "--wait", help="If another run is writing --out, wait for it."),
) -> None:
    """Run every config, draw Figures 7-13 and write REPORT.md with the paper's Section 5 claims beside colosim's
    values, each marked holds or not (tolerances: docs/spec.md §12). Works from any directory.

    Examples:

    \b
        colosim reproduce --out repro --scale small
        colosim reproduce --out repro
    """
    from .runner.reproduce import reproduce as reproduce_all
    from .shipped import configs_dir

    with _progress() as progress, parameters_as({"backend": "--backend", "scheduler": "--scheduler"}):
        report = reproduce_all(out, scale=scale, configs_dir=configs if configs is not None else configs_dir(),
                               force=force, progress=progress, log=progress.log, backend=backend,
                               scheduler=scheduler, wait=wait)
    typer.echo(f"wrote {report}")


# --------------------------------------------------------------- configs ---

configs_app = typer.Typer(help="The configs shipped with colosim: the paper's experiments, newer studies, the "
                          "quickstart.", no_args_is_help=True)
app.add_typer(configs_app, name="configs")


@configs_app.command("list")
def configs_list() -> None:
    """List the shipped configs with what each is.

    Example:

    \b
        colosim configs list
    """
    from .shipped import configs_dir, describe, shipped

    configs = shipped()
    width = max(map(len, configs))
    typer.echo(f"configs in {configs_dir()} (copy one with `colosim configs copy NAME`):")
    for name, path in configs.items():
        typer.echo(f"  {name:<{width}}  {describe(path)}")


@configs_app.command("copy")
def configs_copy(
    name: str = typer.Argument(..., metavar="NAME", help="A name from `colosim configs list`, e.g. quickstart."),
    dest: Optional[Path] = typer.Argument(None, metavar="[DEST]", help="File or folder to write to (default: "
                                          "NAME.toml in the working directory)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing file at DEST."),
) -> None:
    """Copy a shipped config where it can be edited.

    Examples:

    \b
        colosim configs copy quickstart
        colosim configs copy beyond/fleet my-fleet.toml
    """
    from .shipped import copy

    typer.echo(f"wrote {copy(name, dest, force=force)}")


# ----------------------------------------------------------- synth-trace ---

@app.command()
def compare(
    a: Path = typer.Argument(..., help="Results CSV A (before the change)."),
    b: Path = typer.Argument(..., help="Results CSV B (after it): the same grid, instances and store as A."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the comparison as CSV to this file."),
    force: bool = typer.Option(False, "--force", help="Replace an existing --out (never an input)."),
) -> None:
    """Did the change help? Per grid point, the mean over instances of the paired differences B - A
    of m and q with their 95% intervals, and which table is better (lower) at 95%.

    Example:

    \b
        colosim compare results/before.csv results/after.csv --out diff.csv
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from .analysis.compare import COMPARISON_KIND, compare_files, comparison_text
    from .io.atomic import write_text_atomic
    from .io.outputs import claim, lock
    from .io.results import GRID_KEYS, meta_path, summary_path

    inputs = (a, b, meta_path(a), meta_path(b), summary_path(a), summary_path(b))
    if out is not None:
        claim(out, kind=COMPARISON_KIND, inputs=inputs, force=force)
    comparison = compare_files(a, b)
    varying = [k for k in GRID_KEYS if len({str(c[k]) for c in comparison}) > 1] or ["estimator"]
    fixed = [f"{k} = {_fmt_key(comparison[0][k])}" for k in GRID_KEYS if k not in varying]
    title = (f"B - A (A = {escape(str(a))}, B = {escape(str(b))}): mean \\[95% interval] of the paired "
             "differences over instances; lower is better" + (f"; {', '.join(fixed)}" if fixed else ""))
    table = Table(title=title, title_justify="left")
    for k in varying:
        table.add_column(k, justify="left" if isinstance(comparison[0][k], str) else "right")
    for name in ("n", "Δm", "m", "Δq", "q"):
        table.add_column(name, justify="right" if name.startswith("Δ") or name == "n" else "left")
    for c in comparison:
        table.add_row(*(_fmt_key(c[k]) for k in varying), str(c["instances"]),
                      _with_interval(c, "dm", "{:+.4f}"), c["m_verdict"],
                      _with_interval(c, "dq", "{:+.2e}"), c["q_verdict"])
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    if out is not None:
        with lock(out, can_wait=False):
            write_text_atomic(out, comparison_text(comparison))
        typer.echo(f"wrote {out} ({len(comparison)} grid points)", err=True)


@app.command("synth-trace")
def synth_trace_cmd(
    out: Path = typer.Option(..., "--out", "-o", help="Folder to create (must not exist, or be empty)."),
    tasks: int = typer.Option(..., "--tasks", "-n", help="Tasks of the built-in population (long-task candidates)."),
    days: int = typer.Option(29, "--days", help="Length of the trace in days (one shard per day)."),
    seed: int = typer.Option(..., "--seed", help="Seed of the population and of the planted tasks."),
) -> None:
    """Write a synthetic trace in the Google 2011 format (task_events + task_usage) with planted
    failing, zero-usage and short tasks, incomplete records and averages above 1 (see planted.json).

    Example:

    \b
        colosim synth-trace --out trace --tasks 2000 --days 3 --seed 1
    """
    from .sources.trace_writer import write_synthetic_trace

    with _progress() as progress, parameters_as({"n_tasks": "--tasks", "days": "--days"}):
        planted = write_synthetic_trace(out, n_tasks=tasks, days=days, seed=seed, progress=progress)
    last = planted["steps"][-1]
    typer.echo(f"wrote {out}: {planted['steps'][0]['tasks']} tasks, {planted['steps'][0]['records']} records; "
               f"planted {last['tasks']} long tasks with {last['records']} records")


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    main()
