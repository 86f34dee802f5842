"""What the trace formats share: the ingest's defaults, its argument
checks, the guard of its output and the report of the filters' counts
(SPEC §7)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..errors import InputError

#: SPEC §7 step 5: tasks with fewer records (2 hours of 5-minute windows)
#: are short and dropped
MIN_RECORDS = 24
#: what a bad line does: stop the ingest with an error naming it, or be
#: dropped and counted
ON_BAD_LINES = ("error", "skip")


def check_arguments(min_records, on_bad_lines) -> None:
    """:class:`InputError` naming ``min_records`` or ``on_bad_lines``."""
    if on_bad_lines not in ON_BAD_LINES:
        raise InputError(f"on_bad_lines must be one of {', '.join(ON_BAD_LINES)}, not {on_bad_lines!r}",
                         param="on_bad_lines")
    if isinstance(min_records, bool) or not isinstance(min_records, int) or min_records < 1:
        raise InputError(f"min_records must be an integer >= 1, not {min_records!r}", param="min_records")


class SeriesOutput:
    """The series file an ingest writes, guarded by :mod:`colosim.io.outputs`.

    Made by :func:`series_output`; :meth:`check` claims it again (call it
    just before writing: the ingest may have run for hours).
    """

    def __init__(self, path: Path, inputs: list, force: bool):
        self.path, self._inputs, self._force = path, inputs, force

    def check(self) -> Path:
        from ..io.outputs import claim
        from ..io.series import SERIES_KIND

        return claim(self.path, kind=SERIES_KIND, inputs=self._inputs, force=self._force, option="--out")


def claim_series(out, *, inputs: Iterable, force: bool) -> SeriesOutput:
    """Check, before any work, that the series file ``out`` may be written:
    not an input (``inputs``: every input file and folder), not an existing
    file without ``force``, and with ``force`` only a series file; an
    :class:`InputError` naming ``--out`` otherwise. Nothing is created."""
    if isinstance(force, str) or not isinstance(force, (bool, int)):
        raise InputError(f"force must be True or False, not {force!r}", param="force")
    text = os.fspath(out) if isinstance(out, (str, os.PathLike)) else None
    if text is None:
        raise InputError(f"out must be a path, not {out!r}", param="out")
    output = SeriesOutput(Path(text), [p for p in inputs if p is not None], bool(force))
    output.path = output.check()
    return output


@contextlib.contextmanager
def writing(output: SeriesOutput):
    """Hold the lock of ``output`` for the whole ingest; claimed again once
    held (another run may have written it meanwhile). When the ingest fails,
    the folders made for the lock are removed, so that nothing is left."""
    from ..io.outputs import lock

    made = []
    folder = output.path.parent
    while not os.path.lexists(folder) and folder != folder.parent:
        made.append(folder)
        folder = folder.parent
    try:
        with lock(output.path, can_wait=False):
            output.check()
            yield output
    except BaseException:
        for folder in made:  # deepest first; only empty ones go
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        raise


@dataclass
class IngestReport:
    """Counts of every SPEC §7 step, as stored in the series' ``filters``."""

    steps: list[dict] = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    seconds: float = 0.0
    timings: dict = field(default_factory=dict)  # phase -> {wall, cpu} seconds (not stored)

    def add_step(self, name: str, what: str, tasks: int, records: int, tasks_dropped=None, records_dropped=None):
        self.steps.append(
            dict(
                step=name,
                what=what,
                tasks=int(tasks),
                records=int(records),
                tasks_dropped=None if tasks_dropped is None else int(tasks_dropped),
                records_dropped=None if records_dropped is None else int(records_dropped),
            )
        )

    def to_dict(self) -> dict:
        return {"steps": self.steps, **self.counts}

    def step(self, name: str) -> dict:
        for s in self.steps:
            if s["step"] == name:
                return s
        raise KeyError(name)
