"""Which back end runs a job's shards, and how big a shard is."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.limits import MAX_MB, MAX_WORKERS

BackendKind = Literal["auto", "inprocess", "pool", "ray"]


class BackendConfig(BaseModel):
    """Where game jobs run (``--backend``, ``--workers``, ``--address``; ``backend:`` in a loop config).

    ``auto`` runs a job of one shard in-process and a bigger one on a local
    process pool when more than one core is free. Results never depend on
    the choice: the shard plan is fixed by ``shard_games`` alone.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: BackendKind = Field(
        "auto",
        description="Where the games run: auto (a process pool when the job has several shards and cores are "
        "free), inprocess, pool, or ray (needs Distill's ray extra); the results are the same on each (--backend).",
    )
    workers: int | None = Field(
        None,
        ge=1,
        le=MAX_WORKERS,
        description="Pool processes, or Ray tasks in flight; default: the free cores (--workers).",
    )
    address: str | None = Field(
        None,
        description="Ray: the address of an existing cluster (host:port or ray://host:port); "
        "none starts a local Ray on this machine (--address).",
    )
    shard_games: int = Field(
        1024,
        ge=1,
        le=1_000_000,
        description="Games per shard: the unit a worker plays, retries and writes (--shard-games).",
    )
    retries: int = Field(3, ge=0, le=100, description="Times a shard is re-run after its worker died.")
    object_store_mb: int = Field(
        256, ge=64, le=MAX_MB, description="Ray's object store for a local Ray (a small machine's size)."
    )
