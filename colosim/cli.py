"""The ``colosim`` command line: parses, calls the library, formats.

Exit codes (SPEC §11): 0 success; 2 invalid input (typer's usage message, or
one ``error: …`` line naming the file and the problem); 1 internal or I/O
failure while writing; 130 when interrupted.
"""

from __future__ import annotations

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
        ch.write_outputs(result, out, task_id=series_file.task_id, progress=start)
    if store_file is not None:
        store_file.close()
    for note in result.notes:
        console.print(f"note: {note}")
    typer.echo(f"wrote {len(ch.OUTPUT_FILES)} files to {out} (summary: {out / 'report.md'})")


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    main()
