"""What the machine can hold: sizes are checked against the memory and the
disk space available before any work starts, so that a huge size is a clear
input error (exit 2, nothing written) rather than a ``MemoryError``, a full
disk or a run that never ends."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import InputError

#: Upper bounds of sizes and seeds, far above any real use (the paper: 50
#: instances of 1,000 tasks, R = 10,000): a larger value is a typing error
#: that would otherwise run out of memory or never end. Sizes within them
#: are checked against the memory and disk available (:func:`check_memory`, :func:`check_disk`).
MAX_INSTANCES = 100_000
MAX_TASKS = 100_000_000
MAX_REALIZATIONS = 10_000_000
MAX_SEED = 2**63 - 1


def _human(nbytes: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(nbytes) < 1000 or unit == "PB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1000
    return f"{nbytes:.1f} PB"  # pragma: no cover


#: glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
#: free memory at the top of the heap that malloc keeps for reuse
KEPT_FREE_BYTES = 1 << 30


def keep_freed_memory() -> bool:
    """Have glibc's malloc serve every allocation from its heap and keep up
    to :data:`KEPT_FREE_BYTES` of freed memory there, for a long batch
    process: by default arrays over 32 MB (an instance's packings, its rows)
    are mapped fresh and unmapped at free, so that each instance faults
    and zeroes them again. Results do not
    depend on it; peak memory may grow by what is kept. Returns whether it
    applied (False where the C library is not glibc)."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, KEPT_FREE_BYTES))


def available_memory() -> int:
    """Bytes of memory available to new allocations."""
    import psutil

    return int(psutil.virtual_memory().available)


def check_memory(nbytes: float, what: str) -> None:
    """An :class:`InputError` naming ``what`` when ``nbytes`` would not fit
    in the memory available now."""
    free = available_memory()
    if nbytes > free:
        raise InputError(f"{what} needs {_human(nbytes)} of memory, more than the {_human(free)} available")


def check_disk(folder: str | os.PathLike, nbytes: float, what: str) -> None:
    """An :class:`InputError` naming ``what`` when ``nbytes`` would not fit
    on the disk of ``folder`` (its nearest existing ancestor)."""
    folder = Path(os.path.abspath(folder))
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    if nbytes > free:
        raise InputError(f"{what} needs {_human(nbytes)} of disk, more than the {_human(free)} free in {folder}")
