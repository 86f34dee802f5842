"""colosim: SLO-aware colocation of data-center tasks.

A Monte Carlo simulator of bin packing with estimators of task size built from
instantaneous CPU usage, after Janus & Rzadca, "SLO-aware colocation of data
center tasks based on instantaneous processor requirements" (ACM SoCC 2017).
"""

from ._version import __version__
from .api import pack, run, violations
from .errors import InputError
from .experiment import GridPoint, Metrics
from .io import Series, Store, open_series, open_store

__all__ = [
    "GridPoint",
    "Metrics",
    "pack",
    "run",
    "violations",
    "InputError",
    "Series",
    "Store",
    "__version__",
    "open_series",
    "open_store",
]
