"""How the lake's Parquet files are encoded: one set of options for ingest, compaction and rewrites."""

from __future__ import annotations

from typing import Final

import pyarrow as pa

from toolkit.schema.arrow import lake_schema

# zstd level 1: within ~3% of level 3's size here, at about half the CPU.
PARQUET_OPTIONS: Final = {"compression": "zstd", "compression_level": 1, "write_statistics": True}


def lake_parquet_options() -> dict[str, object]:
    """Options of the lake's Parquet files: statistics only for top-level scalar
    columns, the ones a query can prune row groups by (those of the nested
    player columns cost ~8% of the encoding and serve no query)."""
    prunable = [f.name for f in lake_schema() if not pa.types.is_nested(f.type)]
    return {**PARQUET_OPTIONS, "write_statistics": prunable}
