"""colosim: SLO-aware colocation of data-center tasks.

A Monte Carlo simulator of bin packing with estimators of task size built from
instantaneous CPU usage, after Janus & Rzadca, "SLO-aware colocation of data
center tasks based on instantaneous processor requirements" (ACM SoCC 2017).
"""

from ._version import __version__
from .api import pack, read_results, run, violations
from .errors import InputError
from .io import Series, Store, open_series, open_store
from .model.estimators import ESTIMATORS
from .model.grid import GridPoint
from .model.metrics import Metrics

__all__ = [
    "ESTIMATORS",
    "GridPoint",
    "InputError",
    "Metrics",
    "Series",
    "Store",
    "__version__",
    "open_series",
    "open_store",
    "pack",
    "read_results",
    "run",
    "violations",
]
