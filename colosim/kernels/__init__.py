"""Numba kernels only: per-task statistics, packing, per-bin running sums.

Every function here takes NumPy arrays and scalars, never files, configs or
Python lists; the public layer (``colosim.api``) validates and converts.
"""
