"""The one error type that means "the input is wrong".

The command line turns an :class:`InputError` into a single ``error: …`` line
on stderr and exit code 2 (SPEC §11); the Python API lets it propagate. It
subclasses :class:`ValueError` so that ``except ValueError`` keeps working for
library users.

A library function names its own parameter at the start of the message
(``n_tasks must be >= 1``) and says which one with ``param``; a caller that
knows the parameter by another name — a command-line option, a config key —
renames it with :func:`parameters_as`.
"""

from __future__ import annotations

import contextlib


class InputError(ValueError):
    """Invalid user input: a bad argument, config, or data file.

    The message names the culprit (argument, config key, file) and fits on one
    line; ``param`` is the library parameter it is about, when there is one,
    and then the message begins with the parameter's name.
    """

    def __init__(self, message: str, *, param: str | None = None):
        super().__init__(message)
        if param is not None and not message.startswith(param):
            raise ValueError(f"an InputError about {param!r} must begin with its name: {message!r}")
        self.param = param


@contextlib.contextmanager
def parameters_as(names: dict[str, str], prefix: str = ""):
    """Re-raise an :class:`InputError` about a parameter in ``names`` with
    the caller's name for it (``{"n_tasks": "--tasks"}``) in place of the
    name the message begins with, after ``prefix`` (e.g. the config file)."""
    try:
        yield
    except InputError as exc:
        if exc.param not in names:
            raise
        raise InputError(prefix + names[exc.param] + str(exc)[len(exc.param):]) from None


def printable(text) -> str:
    """``str(text)`` with every non-printable character (control characters,
    escape sequences, line and paragraph separators, lone surrogates of
    undecodable file names) replaced by its ``\\x..``/``\\u....`` escape."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
