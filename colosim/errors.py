"""The one error type that means "the input is wrong".

The command line turns an :class:`InputError` into a single ``error: …`` line
on stderr and exit code 2 (SPEC §11); the Python API lets it propagate. It
subclasses :class:`ValueError` so that ``except ValueError`` keeps working for
library users.
"""


class InputError(ValueError):
    """Invalid user input: a bad argument, config, or data file.

    The message names the culprit (argument, config key, file) and fits on one
    line.
    """
