"""One progress protocol for every long step.

A long step takes ``progress``, a function ``progress(description, total,
unit="")`` that it calls once, when its work is known, and that returns
``advance``; the step then calls ``advance(n)`` as n more units are done
(instances, rows, samples; ``unit="B"`` when they are bytes, such as a
trace's shards). The command line passes a function that draws a bar; the
library's default draws nothing.
"""

from __future__ import annotations

from typing import Callable

Advance = Callable[[int], None]
Progress = Callable[..., Advance]


def _ignore(n: int = 1) -> None:
    return None


def no_progress(description: str, total: int, unit: str = "") -> Advance:
    """The silent progress: every step's default."""
    return _ignore
