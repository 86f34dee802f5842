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
) -> None:
    """Run every config, draw Figures 7-13 and write REPORT.md with the paper's
    Section 5 claims beside colosim's values, each marked holds or not (SPEC 12)."""
    from .reproduce import reproduce as run

    with _progress_factory() as factory:
        report = run(out, scale=scale, configs_dir=configs, force=force, progress_factory=factory,
                     log=lambda msg: typer.echo(msg, err=True))
    typer.echo(f"wrote {report}")


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    main()
