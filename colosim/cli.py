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
) -> None:
    """Run every grid point of CONFIG on every instance and write a results CSV.

    Prints a summary per grid point: mean and quartiles of m and q over instances.
    """
    from .config import load_config
    from .sources import resolve_store
    from .sweep import default_output, summarize, sweep as run

    cfg = load_config(config)
    out = out if out is not None else default_output(cfg)
    with _progress_factory() as factory:
        store_path = resolve_store(cfg.source, cfg.path.parent, factory)
        result = run(cfg, store_path, out, force=force, progress_factory=factory)
    if not quiet:
        _print_summary(summarize(result.rows))
    if result.computed:
        typer.echo(f"wrote {out} ({len(result.rows)} rows, {result.elapsed:.1f} s)", err=True)
    else:
        typer.echo(f"{out} is up to date with {config}; nothing recomputed", err=True)


def _print_summary(summary: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="m and q over instances: mean [q1, median, q3]")
    for name in ("estimator", "algorithm", "c", "clairv.", "data", "rebal.", "h", "n", "m_abs", "m", "q"):
        table.add_column(name, justify="right" if name not in ("estimator", "algorithm", "data") else "left")
    for s in summary:
        table.add_row(
            s["estimator"], s["algorithm"], f"{s['capacity']:g}", f"{s['clairvoyance']:g}", s["data"],
            "yes" if s["rebalance"] else "no", f"{s['headroom']:g}", str(s["instances"]),
            f"{s['m_abs_mean']:.1f}",
            f"{s['m_mean']:.3f} [{s['m_q1']:.3f}, {s['m_median']:.3f}, {s['m_q3']:.3f}]",
            f"{s['q_mean']:.2e} [{s['q_q1']:.1e}, {s['q_median']:.1e}, {s['q_q3']:.1e}]",
        )
    Console().print(table)


@app.command()
@handle_errors
def generate(
    out: Path = typer.Option(..., "--out", "-o", help="Store file to write (HDF5)."),
    tasks: int = typer.Option(100_000, "--tasks", "-n", min=1, help="Tasks N (rows of the store)."),
    realizations: int = typer.Option(10_000, "--realizations", "-r", min=2, help="Realizations R per task."),
    seed: int = typer.Option(2017, "--seed", min=0, help="Seed of the population and of the draws."),
    sampling: str = typer.Option("independent", "--sampling", help="independent (the paper) or paired (SPEC 8)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --out."),
) -> None:
    """Realize N tasks of the built-in synthetic population into a store."""
    from .sources import generate_synthetic_store

    if out.exists() and not force:
        raise InputError(f"{out}: exists already (pass --force to replace it)")
    with progress_bar(f"generate {out.name}", tasks) as advance:
        generate_synthetic_store(out, n_tasks=tasks, n_realizations=realizations, seed=seed,
                                 sampling=sampling, progress=advance)
    typer.echo(f"wrote {out} ({tasks} tasks x {realizations} realizations)", err=True)


@app.command()
@handle_errors
def characterize(
    series: Path = typer.Argument(..., help="Series file (colosim-series HDF5), e.g. from `colosim ingest`."),
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
):
    """Characterize a trace as in the paper's Section 3 (SPEC §9): Figs. 1-6,
    Table 1, clusters and report.md with the paper's values beside."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from . import characterize as ch
    from .io import open_series, open_store

    size_list = ch.parse_sizes(sizes)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: --out exists and is not a folder")
    series_file = open_series(series)
    store_file = open_store(store) if store is not None else None
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:

        def start(description: str, total: int):
            task = bar.add_task(description, total=total)
            return lambda n=1: bar.advance(task, n)

        result = ch.characterize(series_file, store_file, seed=seed, repetitions=repetitions, sizes=size_list,
                                 n_init=n_init, store_tasks=store_tasks, realizations=realizations,
                                 progress=start)
        written = ch.write_outputs(result, out, progress=start)
    if store_file is not None:
        store_file.close()
    for note in result.notes:
        console.print(f"note: {note}")
    typer.echo(f"wrote {len(written)} files to {out} (summary: {out / 'report.md'})")


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    main()
