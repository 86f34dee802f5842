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


def uncompiled_kernels() -> int | None:
    """How many of colosim's kernels have no compiled code in Numba's cache
    yet (each is compiled on its first call, then loaded from the cache);
    ``None`` when Numba's cache cannot be inspected."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    from . import kernels

    missing = 0
    try:
        for info in pkgutil.iter_modules(kernels.__path__):
            module = importlib.import_module(f"{kernels.__name__}.{info.name}")
            for value in vars(module).values():
                if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__:
                    cache = getattr(value, "_cache", None)
                    if cache is None or not cache._cache_file._load_index():
                        missing += 1
    except Exception:  # numba's cache layout is not public: an unknown answer, never an error
        return None
    return missing
