"""The shard plan: a job of ``n`` units (games, deals, lineup rows) cut into fixed ranges.

The plan depends on the job's size and ``per_shard`` only, so every back end
and every worker count plays the same shards; shard ``index`` is named
``s<index:05d>`` wherever a name is needed (files, batches, game ids).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Shard:
    """Units ``start..stop-1`` of a job of ``of`` shards."""

    index: int
    start: int
    stop: int
    of: int

    @property
    def size(self) -> int:
        return self.stop - self.start

    @property
    def name(self) -> str:
        return f"s{self.index:05d}"


def shards(n: int, per_shard: int) -> list[Shard]:
    """``n`` units in consecutive ranges of ``per_shard`` (the last may be shorter); none for ``n == 0``."""
    per_shard = max(1, per_shard)
    count = -(-n // per_shard)
    return [Shard(i, i * per_shard, min(n, (i + 1) * per_shard), count) for i in range(count)]
