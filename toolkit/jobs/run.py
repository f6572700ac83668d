"""``run_shards``: the one call the stages make to fan a game job out."""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Sequence
from typing import Any, TypeVar

from toolkit.jobs.backends import ShardFn, make_backend
from toolkit.jobs.config import BackendConfig
from toolkit.jobs.plan import Shard
from toolkit.progress import Progress, ProgressFn

R = TypeVar("R")


def run_shards(
    fn: ShardFn,
    shards: Sequence[Shard],
    shared: Any,
    config: BackendConfig | None = None,
    *,
    progress: ProgressFn | None = None,
    unit: str = "games",
) -> list[Any]:
    """``fn(shard, shared)`` for every shard on the configured back end; the results in shard order.

    ``fn`` must be a module-level function (workers import it by name) and,
    off the in-process back end, ``shared`` plain picklable data. A shard's
    result does not depend on where it ran, so neither does the job's.

    Raises:
        JobError: a shard's worker died more often than ``config.retries``, or Ray is unavailable.
        DistillError: what ``fn`` raised, as it raised it.
    """
    config = config or BackendConfig()
    backend = make_backend(
        config.kind,
        shards=len(shards),
        workers=config.workers,
        address=config.address,
        retries=config.retries,
        object_store_mb=config.object_store_mb,
    )
    payload = None
    if backend.name != "inprocess":
        data = pickle.dumps(shared, protocol=pickle.HIGHEST_PROTOCOL)
        payload = (hashlib.sha256(data).hexdigest(), data)
    results: list[Any] = [None] * len(shards)
    total = sum(s.size for s in shards)
    done = 0
    for position, result in backend.run(fn, shards, shared, payload):
        results[position] = result
        done += shards[position].size
        if progress is not None:
            progress(Progress(done, total, unit, backend.name))
    return results
