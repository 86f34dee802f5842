"""Checkpoints of a running sweep: ``NAME.csv.parts/``, one file per
finished instance (its rows, without a header), written atomically, and a
``fingerprint`` file saying which config and store they belong to.

An interrupted sweep resumes by computing only the instances without a
part; the parts are joined into the results table at the end and removed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import InputError
from .atomic import write_text_atomic


def parts_dir(results: Path) -> Path:
    results = Path(results)
    return results.with_name(results.name + ".parts")


def part_path(parts: Path, k: int) -> Path:
    return Path(parts) / f"instance-{k:06d}.csv"


def prepare(results: Path, fingerprint: str, *, force: bool = False) -> Path:
    """The checkpoint folder of ``results`` for this fingerprint: an
    existing one is reused when it belongs to the same fingerprint;
    another one is an :class:`InputError` unless ``force`` (then it is
    discarded)."""
    parts = parts_dir(results)
    stamp = parts / "fingerprint"
    if parts.exists():
        same = stamp.is_file() and stamp.read_text().strip() == fingerprint
        if not same:
            if not force:
                raise InputError(
                    f"{parts}: holds checkpoints of another config or store (or of an earlier colosim); "
                    "pass --force to discard them, "
                    "or choose another --out"
                )
            shutil.rmtree(parts)
    if not parts.exists():
        parts.mkdir(parents=True)
        write_text_atomic(stamp, fingerprint + "\n")
    return parts


def missing(parts: Path, total: int) -> list[int]:
    """The instances ``0 .. total - 1`` without a part, in order."""
    return [k for k in range(total) if not part_path(parts, k).exists()]


def write_part(parts: Path, k: int, text: str) -> None:
    write_text_atomic(part_path(parts, k), text)


def joined(parts: Path, total: int) -> str:
    """The parts of instances ``0 .. total - 1``, in order."""
    return "".join(part_path(parts, k).read_text(encoding="utf-8") for k in range(total))


def remove(parts: Path) -> None:
    shutil.rmtree(parts)
