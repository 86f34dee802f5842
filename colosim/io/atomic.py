"""Atomic file creation: write to a temporary name beside the target, then
rename. A crash or an error never leaves a half-written file under the final
name, and never touches an existing file at that name (SPEC §10)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike, *, overwrite: bool = True):
    """Yield a temporary path in ``target``'s folder; rename it onto
    ``target`` when the block succeeds, delete it when the block raises.

    With ``overwrite=False`` an existing ``target`` is an error raised before
    anything is written.
    """
    target = Path(target)
    folder = target.parent if str(target.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)
    if not overwrite and target.exists():
        from ..errors import InputError

        raise InputError(f"{target}: exists already (will not overwrite)")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    tmp = Path(tmp)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a new file gets the usual mode
    try:
        yield tmp
        _fsync_file(tmp)
        os.replace(tmp, target)
        _fsync_dir(folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(target: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``target`` atomically (UTF-8)."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
