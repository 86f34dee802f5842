"""One place for Numba options, so every kernel is compiled the same way.

``cache=True`` lets the second run of the CLI reuse compiled machine code.
``error_model="numpy"`` avoids Python-style division checks in hot loops.
``fastmath`` stays off: results must not depend on reassociation, since the
violation counts are compared bit for bit across backends and thread counts.
"""

import numba

_OPTIONS = dict(cache=True, nogil=True, error_model="numpy", fastmath=False)


def jit(*args, **kwargs):
    """``numba.njit`` with the project's options (serial kernels)."""
    return numba.njit(*args, **{**_OPTIONS, **kwargs})


def pjit(*args, **kwargs):
    """``numba.njit(parallel=True)`` with the project's options."""
    return numba.njit(*args, **{**_OPTIONS, "parallel": True, **kwargs})

