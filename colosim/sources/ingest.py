"""What the trace formats share: the ingest's defaults, its argument
checks and the report of the filters' counts (SPEC §7)."""

from __future__ import annotations

from dataclasses import dataclass, field

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
