"""One place for Numba options, so every kernel is compiled the same way.

``cache=True`` lets the second run of the CLI reuse compiled machine code.
``error_model="numpy"`` avoids Python-style division checks in hot loops.
``fastmath`` stays off: results must not depend on reassociation, since the
violation counts are compared bit for bit across backends and thread counts.

Numba checks a cached kernel against its own file only, while a kernel's
machine code also holds the kernels of other files that it calls (inlined
or linked): after an edit to one of those, it would load its old code and
give the old results. The cache therefore lives in a folder named after the
contents of every file with kernels (:data:`KERNEL_SOURCES`, see
:func:`cache_dir`): any change to one of them compiles all of them afresh.
"""

import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import numba

_OPTIONS = dict(cache=True, nogil=True, error_model="numpy", fastmath=False)

_PACKAGE = Path(__file__).resolve().parent

#: the files (relative to the package, glob patterns) whose code the kernels
#: compile: this one and every module that imports it
KERNEL_SOURCES = ("_jit.py", "kernels/*.py", "io/_checks.py")

#: cache folders of other contents untouched for this long are removed
_STALE_SECONDS = 86400.0


def sources_digest(package: Path = _PACKAGE) -> str:
    """A digest of the names and contents of the files of
    :data:`KERNEL_SOURCES` under ``package``."""
    h = hashlib.sha256()
    for path in sorted({p for pattern in KERNEL_SOURCES for p in package.glob(pattern)}):
        h.update(path.relative_to(package).as_posix().encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _prune(folder: Path, keep: str) -> None:
    """Remove the cache folders beside ``keep`` (kernels of other contents)
    that no run has used for a day."""
    now = time.time()
    for old in folder.glob("numba-*"):
        try:
            if old.name != keep and old.is_dir() and now - old.stat().st_mtime > _STALE_SECONDS:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass


def cache_dir() -> str | None:
    """The folder of the compiled kernels, ``numba-DIGEST``: in
    ``$NUMBA_CACHE_DIR/colosim`` where the user set one, else in the package's
    ``__pycache__``, else in colosim's cache (``COLOSIM_CACHE`` or
    ``~/.cache/colosim``): the first that can be written (None where none
    can: Numba's own choice, as for any cached function). Each run marks
    its folder used; folders of other contents unused for a day are
    removed."""
    name = f"numba-{sources_digest()}"
    if numba.config.CACHE_DIR:
        bases = [Path(numba.config.CACHE_DIR) / "colosim"]
    else:
        env = os.environ.get("COLOSIM_CACHE")
        bases = [_PACKAGE / "__pycache__", (Path(env) if env else Path.home() / ".cache" / "colosim")]
    for base in bases:
        folder = base / name
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=folder).close()
            os.utime(folder)
        except OSError:
            continue
        _prune(base, name)
        return str(folder)
    return None


_CACHE_DIR = None


def _njit(args, options):
    """``numba.njit(*args, **options)``, its cache in :func:`cache_dir`
    (Numba picks a cached function's folder when it is decorated)."""
    global _CACHE_DIR
    if _CACHE_DIR is None:
        _CACHE_DIR = cache_dir() or ""
    if not args:
        return lambda f: _njit((f,), options)
    if not callable(args[0]) or len(args) > 1:
        raise TypeError("colosim's jit takes options by keyword (a signature would be compiled outside its cache)")
    if not _CACHE_DIR:
        return numba.njit(*args, **options)
    saved = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = _CACHE_DIR
    try:
        return numba.njit(*args, **options)
    finally:
        numba.config.CACHE_DIR = saved


def jit(*args, **kwargs):
    """``numba.njit`` with the project's options (serial kernels)."""
    return _njit(args, {**_OPTIONS, **kwargs})


def pjit(*args, **kwargs):
    """``numba.njit(parallel=True)`` with the project's options."""
    return _njit(args, {**_OPTIONS, "parallel": True, **kwargs})
