"""Atomic file creation: write to a temporary name beside the target
(:func:`colosim.io.outputs.temp_path`, removed by the next write of the
target when a killed process left it), then rename. A crash or an error never leaves a half-written file under the final
name, and never touches an existing file at that name (SPEC §10)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from .outputs import remove_stale, temp_path


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
    remove_stale(folder, target.name)  # left by a killed earlier write of this target
    tmp = temp_path(target)
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # the usual mode, under the umask
    try:
        yield tmp
        _fsync_file(tmp)
        os.replace(tmp, target)
        _fsync_dir(folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


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
