"""The one output guard of every command that writes (SPEC §11).

Every file a command writes goes through :func:`claim` before any work
starts, and every output is held under :func:`lock` while it is written:

- an output that is, or resolves to (through links, hard or symbolic), an
  input of the run is refused, with or without ``--force``;
- an existing file is replaced only with ``force``, and even then only when
  it is of the kind the command writes (:class:`Kind`): ``--force`` never
  replaces a store with a results table, or a config with anything;
- an output whose folder is a file, or that is itself a directory, is
  refused;
- two runs writing one output are refused (the second names the process
  holding it), or the second waits with ``wait=True``.

Temporary files are named ``.NAME.PID-TOKEN.colosim-tmp`` beside their
target (:func:`temp_path`), so that the next write of the same target finds
and removes those left by a process that no longer runs (a SIGKILL, a power
cut): :func:`remove_stale`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from ..errors import InputError

TMP_SUFFIX = ".colosim-tmp"
LOCK_SUFFIX = ".colosim-lock"
_TMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)-[0-9a-f]{8}" + re.escape(TMP_SUFFIX) + "$")


# ------------------------------------------------------------ temporaries


def temp_path(target: str | os.PathLike) -> Path:
    """A fresh temporary name beside ``target`` that records this process
    (``.NAME.PID-TOKEN.colosim-tmp``); nothing is created."""
    target = named(target)
    return target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}{TMP_SUFFIX}")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    except OverflowError:
        return False
    return True


def remove_stale(folder: str | os.PathLike, name: str | None = None) -> list[Path]:
    """Remove the temporaries in ``folder`` (of target ``name``, or of any
    target) whose process no longer runs; the paths removed. A live
    process's temporaries are never touched."""
    folder = Path(folder) if str(folder) else Path(".")
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = _TMP.match(entry.name)
        if m is None or (name is not None and m["name"] != name) or _alive(int(m["pid"])):
            continue
        path = Path(entry.path)
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
    return removed


# ------------------------------------------------------------------ kinds


@dataclass(frozen=True)
class Kind:
    """What a command writes: a name for messages and a test that an
    existing file is of this kind (so that ``--force`` may replace it)."""

    name: str
    test: Callable[[Path], bool]

    def __call__(self, path: Path) -> bool:
        try:
            return bool(self.test(Path(path)))
        except (OSError, ValueError, UnicodeDecodeError):
            return False


def _head(path: Path, n: int = 4096) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(n)


def hdf5_kind(fmt: str, name: str) -> Kind:
    """An HDF5 file whose ``format`` attribute is ``fmt``."""

    def test(path: Path) -> bool:
        import h5py

        if not path.is_file() or not h5py.is_hdf5(path):
            return False
        with h5py.File(path, "r") as f:
            value = f.attrs.get("format")
        return (value.decode() if isinstance(value, bytes) else value) == fmt

    return Kind(name, test)


def csv_kind(header_prefix: str, name: str) -> Kind:
    """A text file whose first line starts with ``header_prefix``."""
    return Kind(name, lambda p: p.is_file() and _head(p).decode("utf-8").startswith(header_prefix))


def json_kind(fmt: str, name: str, key: str = "format") -> Kind:
    """A JSON object whose ``key`` is ``fmt``."""

    def test(path: Path) -> bool:
        if not path.is_file() or path.stat().st_size > 1 << 24:
            return False
        value = json.loads(path.read_text(encoding="utf-8"))
        return isinstance(value, dict) and value.get(key) == fmt

    return Kind(name, test)


def text_kind(prefix: str, name: str) -> Kind:
    return Kind(name, lambda p: p.is_file() and _head(p).decode("utf-8").startswith(prefix))


PNG = Kind("PNG image", lambda p: p.is_file() and _head(p, 8) == b"\x89PNG\r\n\x1a\n")
def _is_svg(path: Path) -> bool:
    """An XML document (``<?xml`` first) whose root element is ``<svg``."""
    head = _head(path, 4096).lstrip()
    return path.is_file() and head.startswith(b"<?xml") and b"<svg" in head


SVG = Kind("SVG image", _is_svg)


def image_kind(path: Path) -> Kind:
    """The kind of a figure by its suffix."""
    return SVG if Path(path).suffix.lower() == ".svg" else PNG


# ------------------------------------------------------------------ claim


def _same(a: Path, b: Path) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


#: room kept in a file name for the hidden lock and temporary names beside it
_NAME_ROOM = 48


def named(target: str | os.PathLike) -> Path:
    """``target`` with a last component (``.``, ``..`` or ``/`` made
    absolute), so that its lock and temporaries can be named beside it."""
    target = Path(target)
    if not target.name or target.name == "..":
        target = Path(os.path.abspath(target))
    return target


def _check_name(target: Path, option: str) -> None:
    """Refuse a name too long for the lock and temporaries beside it."""
    name = named(target).name
    try:
        limit = os.pathconf(named(target).parent if named(target).parent.is_dir() else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    if len(os.fsencode(name)) + _NAME_ROOM > limit:
        raise InputError(f"{option} {target}: a file name of {len(os.fsencode(name))} bytes; at most "
                         f"{limit - _NAME_ROOM} (room is kept for the lock and temporaries beside it)")


def claim(target: str | os.PathLike, *, kind: Kind, inputs: Iterable = (), force: bool = False,
          option: str = "--out") -> Path:
    """Check that ``target`` may be written by this run (see the module
    doc); an :class:`InputError` naming ``option`` and the path otherwise.
    Nothing is created."""
    text = os.fspath(target)
    if text == "":
        raise InputError(f"{option} '': an empty path")
    target = Path(text)
    _check_name(target, option)
    for given in inputs:
        if given is None:
            continue
        given = Path(given)
        if (os.path.lexists(target) or os.path.exists(given)) and _same(target, given):
            raise InputError(f"{option} {target}: is the input {given} of this run; choose another file")
    if target.is_dir():
        raise InputError(f"{option} {target}: is a directory, not a {kind.name}")
    parent = target.parent
    for folder in (parent, *parent.parents):
        if os.path.lexists(folder):
            if not folder.is_dir():
                raise InputError(f"{option} {target}: {folder} is not a directory")
            break
    if os.path.lexists(target):
        if not force:
            raise InputError(f"{option} {target}: exists; pass --force to replace it")
        if target.is_symlink() or not kind(target):
            raise InputError(f"{option} {target}: exists and is not a {kind.name}; "
                             "it is not replaced, even with --force")
    return target


def claim_dir(target: str | os.PathLike, *, inputs: Iterable = (), option: str = "--out") -> Path:
    """Check that ``target`` can be (or is) a folder of outputs: not an
    input, not a file, not below a file. The files in it are claimed one by
    one with :func:`claim`."""
    text = os.fspath(target)
    if text == "":
        raise InputError(f"{option} '': an empty path")
    target = Path(text)
    _check_name(target, option)
    for given in inputs:
        if given is not None and os.path.exists(given) and os.path.exists(target) and _same(target, given):
            raise InputError(f"{option} {target}: is the input {given} of this run; choose another folder")
    for folder in (target, *target.parents):
        if os.path.lexists(folder):
            if not folder.is_dir():
                raise InputError(f"{option} {target}: {folder} is not a directory")
            break
    return target


# ------------------------------------------------------------------- lock


def lock_path(target: str | os.PathLike) -> Path:
    target = named(target)
    return target.with_name(f".{target.name}{LOCK_SUFFIX}")


def _holder(path: Path) -> str:
    with contextlib.suppress(OSError, ValueError):
        pid = int(path.read_text().split()[0])
        return f"process {pid}"
    return "another process"


@contextlib.contextmanager
def lock(target: str | os.PathLike, *, wait: bool = False, can_wait: bool = True):
    """Hold the advisory lock of output ``target`` (a hidden
    ``.NAME.colosim-lock`` beside it, removed on release). Held already by
    another run: an :class:`InputError` naming its process, or with
    ``wait`` block until it is released."""
    import fcntl

    path = lock_path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            raise InputError(f"{target}: being written by {_holder(path)} (another colosim run); "
                             + ("wait for it, or pass --wait" if can_wait else "wait for it")) from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:  # not removed by a run that released it meanwhile
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield path
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)
