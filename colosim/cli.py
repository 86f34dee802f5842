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


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    main()
