"""The back ends: run ``fn(shard, shared)`` for every shard, hand each result back as it completes.

- :class:`InProcess`: in the calling process, in shard order (the inputs are not copied).
- :class:`Pool`: a local process pool (``spawn``: no forked torch or catalog
  state), kept for the next job (starting workers costs seconds) until
  :func:`close_pools` (the CLI closes them as each command ends);
  a worker that dies (OOM, kill -9) breaks the pool, which is rebuilt and the
  unfinished shards re-run.
- :class:`Ray`: Ray tasks (``distill[ray]``), each shard retried by Ray when
  its worker or node dies; the job's inputs go to the object store once.

The remote back ends pickle the shared inputs once in the driver (plain
data: names, safetensors bytes; never a model) and the workers unpickle them
once each (:func:`toolkit.jobs.worker.shared`).
"""

from __future__ import annotations

import multiprocessing
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Final, Protocol

from toolkit.errors import JobError
from toolkit.jobs import worker
from toolkit.jobs.plan import Shard

ShardFn = Callable[[Shard, Any], Any]


class Backend(Protocol):
    name: str
    workers: int

    def run(
        self, fn: ShardFn, shards: Sequence[Shard], shared: Any, payload: tuple[str, bytes] | None
    ) -> Iterator[tuple[int, Any]]:
        """Yield ``(position in shards, result)`` as shards complete; ``payload`` is ``shared`` pickled (key, bytes)."""
        ...


def free_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class InProcess:
    name = "inprocess"
    workers = 1

    def run(
        self, fn: ShardFn, shards: Sequence[Shard], shared: Any, payload: tuple[str, bytes] | None
    ) -> Iterator[tuple[int, Any]]:
        for position, shard in enumerate(shards):
            yield position, fn(shard, shared)


def _pool_task(fn: ShardFn, shard: Shard, key: str, payload: bytes) -> Any:
    return fn(shard, worker.shared(key, payload))


# Kept pools by worker count, with the settings their workers read from the environment they were spawned with
# (a shared lake's AWS_* variables: a worker of a loop on one stages its shards there): a pool spawned under other
# settings is replaced. (Only those: pytest alone changes PYTEST_CURRENT_TEST at every test.)
_pools: dict[int, tuple[int, ProcessPoolExecutor]] = {}
WORKER_SETTINGS_PREFIX: Final = "AWS_"


def _environment() -> int:
    return hash(frozenset((k, v) for k, v in os.environ.items() if k.startswith(WORKER_SETTINGS_PREFIX)))


def close_pools() -> None:
    """Shut down every kept process pool and wait for its workers to exit (a later pool job starts new ones)."""
    while _pools:
        _, (_, pool) = _pools.popitem()
        pool.shutdown(wait=True, cancel_futures=True)


class Pool:
    """A local process pool of ``workers`` processes, rebuilt when a worker dies."""

    name = "pool"

    def __init__(self, workers: int, retries: int) -> None:
        self.workers, self.retries = workers, retries

    def _executor(self) -> ProcessPoolExecutor:
        environment = _environment()
        kept = _pools.get(self.workers)
        if kept is not None and kept[0] == environment:
            return kept[1]
        self._discard()
        pool = ProcessPoolExecutor(
            self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=worker.one_thread
        )
        _pools[self.workers] = (environment, pool)
        return pool

    def _discard(self) -> None:
        kept = _pools.pop(self.workers, None)
        if kept is not None:
            kept[1].shutdown(wait=False, cancel_futures=True)

    def run(
        self, fn: ShardFn, shards: Sequence[Shard], shared: Any, payload: tuple[str, bytes] | None
    ) -> Iterator[tuple[int, Any]]:
        assert payload is not None
        key, data = payload
        left = set(range(len(shards)))
        attempts = dict.fromkeys(left, 0)
        while left:
            try:
                pool = self._executor()
                futures: dict[Future[Any], int] = {
                    pool.submit(_pool_task, fn, shards[i], key, data): i for i in sorted(left)
                }
            except BrokenProcessPool:
                self._discard()
                continue
            broken = False
            while futures:
                done, _ = wait(futures, return_when=FIRST_COMPLETED)
                for future in done:
                    i = futures.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        broken = True
                        continue
                    except BaseException:
                        for other in futures:
                            other.cancel()
                        raise
                    left.discard(i)
                    yield i, result
            if broken:
                self._discard()
                for i in left:
                    attempts[i] += 1
                    if attempts[i] > self.retries:
                        raise JobError(
                            f"shard {shards[i].name} lost its worker {attempts[i]} times",
                            hint="a worker process died: out of memory (give fewer --workers or smaller shards), "
                            "or a script that starts game jobs without `if __name__ == '__main__':`",
                        )


def _ray_task(fn: ShardFn, shard: Shard, key: str, payload: bytes) -> Any:
    worker.one_thread()
    return fn(shard, worker.shared(key, payload))


class Ray:
    """Ray tasks on a local Ray (started on first use) or on the cluster at ``address``."""

    name = "ray"

    def __init__(self, address: str | None, workers: int | None, retries: int, object_store_mb: int) -> None:
        try:
            import ray
        except ImportError:
            raise JobError(
                "the Ray back end needs Ray", hint="pip install 'distill[ray]' (or choose --backend pool)"
            ) from None
        self.ray = ray
        self.retries = retries
        if not ray.is_initialized():
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # offline: no usage reporting
            common: dict[str, Any] = dict(log_to_driver=False, logging_level="WARNING")
            try:
                if address:
                    _check_reachable(address)
                    ray.init(address=address, **common)
                else:
                    ray.init(
                        num_cpus=workers or free_cores(),
                        include_dashboard=False,
                        object_store_memory=object_store_mb * 2**20,
                        **common,
                    )
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise JobError(
                    f"cannot start or reach Ray{f' at {address}' if address else ''}: {error}",
                    hint="check the address (ray status), and that RAY_AUTH_MODE matches the cluster's",
                ) from None
            _ray_notices_to_stderr()
        self.workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))

    def run(
        self, fn: ShardFn, shards: Sequence[Shard], shared: Any, payload: tuple[str, bytes] | None
    ) -> Iterator[tuple[int, Any]]:
        assert payload is not None
        ray = self.ray
        key, data = payload
        task = ray.remote(num_cpus=1, max_retries=self.retries, retry_exceptions=False)(_ray_task)
        blob = ray.put(data)
        refs = {task.remote(fn, shard, key, blob): i for i, shard in enumerate(shards)}
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayTaskError as error:  # what the shard raised, as it raised it
                        if isinstance(error.cause, BaseException):
                            raise error.cause from None
                        raise JobError(f"shard {shards[refs[ref]].name} failed on Ray: {error}") from None
                    except ray.exceptions.RayError as error:
                        raise JobError(
                            f"shard {shards[refs[ref]].name} failed on Ray after {self.retries} retries: "
                            f"{type(error).__name__}",
                            hint="see `ray status`; a node or worker died more often than --retries allows",
                        ) from None
                    yield refs[ref], result
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)


def _check_reachable(address: str) -> None:
    """Fail at once on a cluster address nothing answers at (Ray itself retries for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "auto" and other forms Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as error:
        raise JobError(
            f"no Ray cluster answers at {address}: {error.strerror or error}",
            hint="start one (ray start --head) or give its address (ray status shows it)",
        ) from None


def _ray_notices_to_stderr() -> None:
    """Ray prints the cluster's notices (a worker died, a task is retried) on the driver's stdout, where
    ``--json`` writes its document: send them to stderr with every other diagnostic."""
    import ray._private.worker as ray_worker

    printer = getattr(ray_worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "distill_stderr", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        printer({**data, "is_err": True}, ignore_prefix)

    to_stderr.distill_stderr = True  # type: ignore[attr-defined]
    ray_worker.print_to_stdstream = to_stderr


def make_backend(
    kind: str, *, shards: int, workers: int | None, address: str | None, retries: int, object_store_mb: int
) -> Backend:
    """The back end ``kind`` names (``auto``: in-process for one shard or one free core, else the pool)."""
    if kind == "auto":
        cores = workers or free_cores()
        kind = "pool" if shards > 1 and cores > 1 else "inprocess"
    if kind == "inprocess":
        return InProcess()
    if kind == "pool":
        return Pool(workers or free_cores(), retries)
    if kind == "ray":
        return Ray(address, workers, retries, object_store_mb)
    raise JobError(f"unknown back end {kind!r}", hint="choose auto, inprocess, pool or ray")
