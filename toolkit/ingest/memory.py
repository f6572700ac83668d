"""The memory pool of ingest."""

from __future__ import annotations

from functools import cache

import pyarrow as pa


@cache
def memory_pool() -> pa.MemoryPool:
    """The Arrow memory pool of ingest: jemalloc where pyarrow has it.

    Each chunk takes and frees several MB (its raw bytes, parsing, then
    Parquet encoding). mimalloc (pyarrow's default) gives such memory back to
    the system and takes it again, so the kernel zeroes fresh pages over and
    over (~10% of ingest's CPU); jemalloc keeps it for reuse. The raw bytes
    come from this pool too: from glibc's heap, blocks this size freed by
    other threads stay resident (~200 MB at 1M rows)."""
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:
        return pa.default_memory_pool()
