"""Numba kernels only: arrays and scalars in, arrays and scalars out; never
files, configs or Python lists (the engine and the API validate and
convert). Each module's public entries are its ``__all__`` (one algorithm
per module: its entry, with the constants and companion kernels it needs);
names with a leading underscore are internal.

========================  ==================================================
module                    public entry
========================  ==================================================
``stats``                 ``task_statistics``, ``row_means``, ``log_mgf``:
                          per-task statistics of usage rows
``packing``               ``pack_many``: the scalar packing kernel
``vector_packing``        ``pack_vector``: vector states, per-bin capacities
``tiles``                 ``column_tiles``: evaluation columns laid out
``evaluate``              ``count_violations``: q_j of many packings at once
``anderson``              Anderson–Darling statistics (characterization)
``population``            ``phases``: the built-in population's windows
``_bins``, ``_sort``      shared bin helpers; one radix sort
========================  ==================================================
"""

from ._bins import BEST_FIT, DECREASING, FIRST_FIT

__all__ = ["BEST_FIT", "DECREASING", "FIRST_FIT"]
