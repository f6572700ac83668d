"""What a worker process keeps between shards: each job's shared inputs and what was built from them.

A job's shared inputs (policies as safetensors bytes, opponent names) travel
to a worker once, pickled as plain data, and are unpickled once per worker
(:func:`shared`). Anything expensive built from them (a loaded policy) is
kept by :func:`cached` under a content key (a checkpoint's sha256), so a
worker loads each policy once, not once per game or per shard. In-process,
the same cache serves the driver.
"""

from __future__ import annotations

import os
import pickle
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final, TypeVar

T = TypeVar("T")

_KEEP: Final = 32  # entries per cache: a tournament's entrants with room to spare
_shared: OrderedDict[str, Any] = OrderedDict()
_built: OrderedDict[str, Any] = OrderedDict()
THREAD_VARS: Final = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def one_thread() -> None:
    """Keep a worker's numeric libraries on one thread (workers, not threads, use the cores)."""
    for var in THREAD_VARS:
        os.environ.setdefault(var, "1")
    import sys

    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def shared(key: str, payload: bytes) -> Any:
    """The job's shared inputs from their pickled ``payload`` (unpickled once per worker per ``key``)."""
    if key not in _shared:
        _remember(_shared, key, pickle.loads(payload))
    _shared.move_to_end(key)
    return _shared[key]


def cached(key: str, build: Callable[[], T]) -> T:
    """``build()`` once per process for ``key`` (a content hash), then the kept value."""
    if key not in _built:
        _remember(_built, key, build())
    _built.move_to_end(key)
    return _built[key]


def _remember(cache: OrderedDict[str, Any], key: str, value: Any) -> None:
    cache[key] = value
    while len(cache) > _KEEP:
        cache.popitem(last=False)
