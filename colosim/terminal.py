"""What a long command shows while it works, on stderr.

:class:`Display` implements the progress protocol (:mod:`colosim.progress`)
for the command line:

- on a terminal, a bar per running step; a step's bar closes when the step
  ends and leaves one line, ``description: done in 12.3 s``; log lines are
  printed above the bars, never glued to them;
- when stderr is not a terminal (a file, a pipe, a job's log), no bars: one
  line per finished step with its elapsed time, and the log lines;
- before the first kernel is compiled (the first run after installing; later
  runs load the machine code from Numba's cache), one line saying so; at the
  end, how long compiling took.
"""

from __future__ import annotations

import re
import sys
import time

#: Compiling every kernel a paper sweep needs took about this long on a
#: 2-core machine (the quickstart's first run); the newer estimators add
#: some more.
COMPILE_SECONDS = 35


def _count(n: float, unit: str) -> str:
    if unit == "B":
        from rich import filesize

        return filesize.decimal(int(n))
    return f"{int(n):,}"


#: A finished step's line: ``description: done in 12.3 s`` (``done`` is a
#: count, a size, or ``done/total`` for a step that ended short).
STEP_LINE = re.compile(r".+: [0-9][0-9,.]*( ?[kMGTP]?B)?(/[0-9][0-9,.]*( ?[kMGTP]?B)?)? in [0-9]+\.[0-9] s")


class _Step:
    def __init__(self, description: str, total: int, unit: str):
        self.description, self.total, self.unit = description, total, unit
        self.done = 0
        self.started = time.monotonic()
        self.task = None  # the bar's task, on a terminal
        self.closed = False

    def line(self) -> str:
        seconds = time.monotonic() - self.started
        done = _count(self.done, self.unit)
        size = done if self.done == self.total else f"{done}/{_count(self.total, self.unit)}"
        return f"{self.description}: {size} in {seconds:.1f} s"


class Display:
    """The progress protocol drawn on stderr (see the module's text)."""

    def __init__(self, console=None):
        from rich.console import Console

        self.console = console or Console(stderr=True, width=None if sys.stderr.isatty() else 160,
                                          highlight=False)
        self.terminal = self.console.is_terminal
        self.bars = None
        self.steps: list[_Step] = []
        self._compile_depth = 0
        self._compile_started = 0.0
        self.compile_seconds = 0.0
        self._listener = None

    # -- the progress protocol
    def __call__(self, description: str, total: int, unit: str = ""):
        step = _Step(description, max(int(total), 0), unit)
        self.steps.append(step)
        if self.terminal:
            step.task = self._bars().add_task(description, total=step.total, unit=unit)

        def advance(n: int = 1) -> None:
            step.done += n
            if step.task is not None:
                self.bars.advance(step.task, n)
            if step.done >= step.total:
                self._finish(step)
        if step.total == 0:  # nothing to do: no bar, no line
            step.closed = True
        return advance

    def log(self, message: str) -> None:
        """One line above the bars (or alone, without a terminal)."""
        from rich.markup import escape

        self.console.print(escape(message), soft_wrap=True, highlight=False)

    # -- steps
    def _bars(self):
        from rich import filesize
        from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
        from rich.text import Text

        class Done(ProgressColumn):
            """``n/total``, or sizes and a rate for bytes."""

            def render(self, task):
                if task.fields.get("unit") == "B":
                    rate = f" {filesize.decimal(int(task.speed))}/s" if task.speed else ""
                    return Text(f"{filesize.decimal(int(task.completed))}/{filesize.decimal(int(task.total or 0))}"
                                + rate)
                return Text(f"{int(task.completed)}/{int(task.total or 0)}")

        if self.bars is None:
            self.bars = Progress(TextColumn("{task.description}"), BarColumn(), Done(), TimeElapsedColumn(),
                                 console=self.console, transient=True)
            self.bars.start()
        return self.bars

    def _finish(self, step: _Step) -> None:
        if step.closed:
            return
        step.closed = True
        if step.task is not None:
            self.bars.remove_task(step.task)
            step.task = None
        self.log(step.line())
        if self.bars is not None and not self.bars.tasks:  # no step left running: the display goes
            self.bars.stop()
            self.bars = None

    # -- Numba's compilations
    def _on_compile_start(self, event) -> None:
        self._compile_depth += 1
        if self._compile_depth == 1:
            if not self._compile_started and not self.compile_seconds:
                self.log(f"compiling kernels (once: later runs load them from Numba's cache; about "
                         f"{COMPILE_SECONDS} s, more with the newer estimators)")
            self._compile_started = time.monotonic()

    def _on_compile_end(self, event) -> None:
        self._compile_depth -= 1
        if self._compile_depth == 0:
            self.compile_seconds += time.monotonic() - self._compile_started

    # -- the context
    def __enter__(self) -> Display:
        from numba.core import event

        display = self

        class Listener(event.Listener):
            def on_start(self, ev):
                display._on_compile_start(ev)

            def on_end(self, ev):
                display._on_compile_end(ev)

        self._listener = Listener()
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, kind, exc, tb) -> None:
        from numba.core import event

        event.unregister("numba:compile", self._listener)
        if kind is None:
            for step in self.steps:  # steps that ended short of their total (a search that stopped early)
                self._finish(step)
            if self.compile_seconds:
                self.log(f"compiled kernels in {self.compile_seconds:.0f} s (cached for later runs)")
        if self.bars is not None:  # an error or interruption is one line: the bars go
            self.bars.stop()
            self.bars = None
