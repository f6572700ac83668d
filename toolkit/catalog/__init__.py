"""The DuckDB catalog and the Parquet lake: atomic batches, queryable views."""

from toolkit.catalog.store import Catalog

__all__ = ["Catalog"]
