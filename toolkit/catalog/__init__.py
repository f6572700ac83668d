"""The lake: a Delta table whose log is the one truth, its DuckDB index (a cache), the write protocol, the views."""

from toolkit.catalog.lake import Lake
from toolkit.catalog.store import Catalog

__all__ = ["Catalog", "Lake"]
