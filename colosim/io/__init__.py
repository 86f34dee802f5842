"""File formats: HDF5 series and store files (SPEC §10), atomic writes."""

from .atomic import atomic_path, write_text_atomic
from .series import Series, SeriesWriter, open_series, write_series
from .store import Store, StoreWriter, open_store

__all__ = [
    "Series",
    "SeriesWriter",
    "Store",
    "StoreWriter",
    "atomic_path",
    "open_series",
    "open_store",
    "write_series",
    "write_text_atomic",
]
