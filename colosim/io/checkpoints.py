"""Checkpoints of a running sweep: ``NAME.csv.parts/``, one part per
finished instance, each proving itself, and a ``fingerprint`` file saying
which config and store they belong to.

A part is ``instance-KKKKKK.csv`` (the instance's rows, without a header)
and its record ``instance-KKKKKK.json``: the instance, the fingerprint, the
number of rows and the SHA-256 of the part's bytes, written after the part
(both atomically). A part counts as done only when its record matches it
(:func:`valid`): a part edited by hand, cut, copied from another instance
or another run, or left without its record by a killed process is
discarded and its instance computed again, never merged.

An interrupted sweep resumes by computing only the instances without a
valid part; the parts are joined into the results table at the end and
removed.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

from ..errors import InputError
from .atomic import write_text_atomic
from .outputs import TMP_SUFFIX, remove_stale

_OURS = re.compile(r"^(fingerprint|instance-\d{6,}\.(csv|json))$")


def parts_dir(results: Path) -> Path:
    results = Path(results)
    return results.with_name(results.name + ".parts")


def part_path(parts: Path, k: int) -> Path:
    return Path(parts) / f"instance-{k:06d}.csv"


def record_path(parts: Path, k: int) -> Path:
    return Path(parts) / f"instance-{k:06d}.json"


def is_ours(parts: Path) -> bool:
    """Whether ``parts`` is a checkpoint folder (only files a sweep puts
    there), so that ``--force`` may discard it."""
    parts = Path(parts)
    if parts.is_symlink() or not parts.is_dir():
        return False
    for entry in parts.iterdir():
        if entry.is_symlink() or entry.is_dir():
            return False
        if not (_OURS.match(entry.name) or entry.name.endswith(TMP_SUFFIX)):
            return False
    return True


def check(results: Path) -> None:
    """Refuse a ``NAME.csv.parts`` that is not a checkpoint folder (a file,
    a link, a folder of other files): it is never used nor removed."""
    parts = parts_dir(results)
    if (parts.exists() or parts.is_symlink()) and not is_ours(parts):
        raise InputError(f"{parts}: exists and is not a checkpoint folder of colosim (only instance-*.csv, "
                         "instance-*.json and fingerprint files); it is not used or removed, even with --force: "
                         "choose another --out")


def prepare(results: Path, fingerprint: str, *, force: bool = False) -> tuple[Path, bool]:
    """The checkpoint folder of ``results`` for this fingerprint, and
    whether this call created it: an existing one is reused when it belongs
    to the same fingerprint; another one is an :class:`InputError` unless
    ``force`` (then it is discarded)."""
    check(results)
    parts = parts_dir(results)
    stamp = parts / "fingerprint"
    if parts.exists():
        same = stamp.is_file() and stamp.read_text(encoding="utf-8", errors="replace").strip() == fingerprint
        if not same:
            if not force:
                raise InputError(
                    f"{parts}: holds checkpoints of another config or store (or of an earlier colosim); "
                    "pass --force to discard them, "
                    "or choose another --out"
                )
            shutil.rmtree(parts)
    created = not parts.exists()
    if created:
        parts.mkdir(parents=True)
        write_text_atomic(stamp, fingerprint + "\n")
    remove_stale(parts)
    return parts, created


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def valid(parts: Path, k: int, fingerprint: str, rows: int) -> bool:
    """Whether instance ``k``'s part is there and matches its record: this
    instance, this fingerprint, ``rows`` rows, its checksum."""
    try:
        data = part_path(parts, k).read_bytes()
        record = json.loads(record_path(parts, k).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    if not isinstance(record, dict):
        return False
    lines = data.split(b"\n")
    return (record.get("instance") == k and record.get("fingerprint") == fingerprint
            and record.get("rows") == rows and record.get("sha256") == _digest(data)
            and data.count(b"\n") == rows and lines[-1] == b""
            and all(line.startswith(f"{k},".encode()) for line in lines[:-1]))


def missing(parts: Path, total: int, fingerprint: str, rows: int) -> tuple[list[int], list[int]]:
    """The instances ``0 .. total - 1`` without a valid part, in order, and
    those of them whose part was there but did not prove itself (removed,
    to be computed again)."""
    todo, discarded = [], []
    for k in range(total):
        if valid(parts, k, fingerprint, rows):
            continue
        todo.append(k)
        if part_path(parts, k).exists() or record_path(parts, k).exists():
            discarded.append(k)
            discard(parts, k)
    return todo, discarded


def discard(parts: Path, k: int) -> None:
    for path in (record_path(parts, k), part_path(parts, k)):
        path.unlink(missing_ok=True)


def write_part(parts: Path, k: int, text: str, fingerprint: str) -> None:
    """Write instance ``k``'s part, then its record."""
    data = text.encode("utf-8")
    write_text_atomic(part_path(parts, k), text)
    record = {"instance": k, "fingerprint": fingerprint, "rows": data.count(b"\n"), "sha256": _digest(data)}
    write_text_atomic(record_path(parts, k), json.dumps(record, sort_keys=True) + "\n")


def joined(parts: Path, total: int, fingerprint: str, rows: int) -> str:
    """The parts of instances ``0 .. total - 1``, in order, each checked
    against its record once more (an :class:`InputError` naming the part
    when one changed while the sweep ran)."""
    texts = []
    for k in range(total):
        if not valid(parts, k, fingerprint, rows):
            raise InputError(f"{part_path(parts, k)}: changed while the sweep ran (it does not match its record); "
                             "run the same command again to compute it anew")
        texts.append(part_path(parts, k).read_text(encoding="utf-8"))
    return "".join(texts)


def remove(parts: Path) -> None:
    shutil.rmtree(parts)
