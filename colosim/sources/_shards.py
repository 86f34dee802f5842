"""Finding trace shards and locating bad lines in them.

Shared by the trace readers: a shard set is named by a directory (every
``*.csv`` and ``*.csv.gz`` in it, in name order), a glob, or a single file.
The line-locating helpers run only on the error path, to turn "this shard has
a bad line" into "this shard, line N".
"""

from __future__ import annotations

import glob
import gzip
import os
import zlib
from pathlib import Path
from typing import Callable, Iterator

from ..errors import InputError

SHARD_SUFFIXES = (".csv", ".csv.gz")


def is_shard_name(name: str) -> bool:
    return name.endswith(SHARD_SUFFIXES)


def find_shards(spec: str | os.PathLike, what: str) -> list[Path]:
    """The shard files named by ``spec`` (directory, glob or file), sorted.

    An empty selection is an :class:`InputError` naming ``spec``.
    """
    text = str(spec)
    path = Path(text)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and is_shard_name(p.name))
        if not files:
            raise InputError(f"{path}: no {what} shards (*.csv or *.csv.gz) in this directory")
        return files
    if path.is_file():
        return [path]
    if glob.has_magic(text):
        files = sorted(Path(p) for p in glob.glob(text) if Path(p).is_file())
        if not files:
            raise InputError(f"{text}: no {what} shards match this pattern")
        return files
    raise InputError(f"{path}: {what} directory or file not found")


def open_text(path: Path):
    """Open a shard as text (gzip'd when its name ends in ``.gz``). A UTF-8
    byte order mark at its start is dropped, as DuckDB's reader does."""
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8-sig", errors="replace", newline="")
    return open(path, encoding="utf-8-sig", errors="replace", newline="")


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its newline) of a shard.

    A truncated or corrupt gzip stream is an :class:`InputError` naming the
    file and the last line read in full.
    """
    lineno = 0
    try:
        with open_text(path) as fh:
            for lineno, line in enumerate(fh, start=1):
                yield lineno, line.rstrip("\n")
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
        raise InputError(
            f"{path}: unreadable after line {lineno} ({type(exc).__name__}: {str(exc) or 'truncated'})"
        ) from None


def first_bad_line(path: Path, check: Callable[[str], str | None]) -> tuple[int, str] | None:
    """The first line (number, reason) of ``path`` that ``check`` rejects.

    ``check`` returns None for a good line or a short reason. Blank lines are
    skipped, as the CSV reader does.
    """
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        reason = check(line)
        if reason is not None:
            return lineno, reason
    return None
