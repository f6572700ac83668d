"""The lake: a Delta table whose log is the one truth, its DuckDB index (a cache), the write protocol, the views.

``Lake`` and ``Catalog`` are imported when first asked for (``from toolkit.catalog import Lake``): the package's
light modules (its configs) can be imported without DuckDB and delta-rs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolkit.catalog.lake import Lake
    from toolkit.catalog.store import Catalog

_WHERE = {"Lake": "toolkit.catalog.lake", "Catalog": "toolkit.catalog.store"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'toolkit.catalog' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)


__all__ = ["Catalog", "Lake"]
