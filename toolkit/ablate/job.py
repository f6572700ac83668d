"""One variant as a job: its student trained, measured on the FIXED holdout, evaluated on the paired deals.

:func:`run_variant` is the shard function the back ends run (one variant per
shard). It is a pure function of its :class:`VariantJob`: the student's
weights depend on the build and the seed only (one torch thread), the games
on the deals' seed only, so a variant gives the same result in this process,
on the pool or on Ray. A variant writes into a private staging folder and
publishes it with one rename as ``variants/<key>/``: a folder there is
finished, and a later run of the same ablation reuses it.
"""

from __future__ import annotations

import contextlib
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from toolkit.ablate.result import VariantRun
from toolkit.errors import ConfigError
from toolkit.jobs.plan import Shard
from toolkit.layout import ABLATION_FORMAT_VERSION, Layout
from toolkit.storage import read_versioned, write_text_atomic

RESULT_FILE: Final = "result.json"
STAGING: Final = ".staging"


@dataclass(frozen=True)
class VariantJob:
    """Everything a worker needs for one variant (plain data: it is pickled to the workers)."""

    home: str
    folder: str  # variants/<key>, relative to the data root
    key: str
    bc: dict  # a BCConfig as JSON data
    tables: dict[str, tuple[str, ...]]
    games: int
    seed: int
    max_rounds: int
    lake: str | None = None  # the shared lake's location (Layout.lake_uri)


def run_variant(shard: Shard, jobs: list[VariantJob]) -> VariantRun:
    """Train, measure and evaluate the variant ``jobs[shard.start]``; publish its folder; return its run."""
    from toolkit.datasets.dataset import open_dataset
    from toolkit.jobs.config import BackendConfig
    from toolkit.loop.gates import holdout_accuracy
    from toolkit.train.agents import policy_blob
    from toolkit.train.bc import train_bc
    from toolkit.train.config import BCConfig, EvaluateConfig
    from toolkit.train.evaluate import evaluate, write_evaluation

    job = jobs[shard.start]
    started = time.perf_counter()
    layout = Layout(Path(job.home), job.lake)
    folder = layout.resolve(job.folder)
    staging = layout.inside(folder.parent / STAGING / f"{job.key}-{uuid.uuid4().hex[:8]}")
    try:
        config = BCConfig.model_validate(job.bc)
        trained = train_bc(layout, config, staging)
        accuracy = holdout_accuracy(trained.checkpoint, open_dataset(layout, config.dataset, config.fingerprint))
        policy = policy_blob(trained.checkpoint)
        files = {}
        for table, opponents in job.tables.items():
            seats = tuple(str(seat_player(layout, name)) for name in opponents)
            played = evaluate(
                policy,
                EvaluateConfig(opponents=seats, games=job.games, seed=job.seed, max_rounds=job.max_rounds),
                backend=BackendConfig(kind="inprocess"),  # the variant is the unit of parallelism
            )
            files[table] = f"eval-{table}.json"
            write_evaluation(staging / files[table], played)
        run = VariantRun(
            key=job.key,
            checkpoint=trained.checkpoint.name,
            holdout_accuracy=round(accuracy, 4),
            train_rows=trained.train_rows,
            epochs=len(trained.epochs),
            evaluations=files,
            seconds=round(time.perf_counter() - started, 3),
        )
        write_text_atomic(staging / RESULT_FILE, run.model_dump_json(indent=1))
        shutil.rmtree(folder, ignore_errors=True)  # a half-published folder cannot exist; an old one is replaced
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(OSError):  # the staging folder itself, once no variant stages in it
            staging.parent.rmdir()
    return run


def seat_player(layout: Layout, name: str) -> Path | str:
    """A table's seat: a player type as named; a checkpoint as given when it is there, else under the data root
    (``runs/<loop>/...`` as the loop's records name them)."""
    from toolkit.game import PLAYER_TYPES
    from toolkit.train.checkpoints import locate_checkpoint

    return name if name in PLAYER_TYPES else locate_checkpoint(Path(name), lambda: layout)


def finished(folder: Path) -> VariantRun | None:
    """The run published in ``folder``, or None when there is none.

    Raises:
        ConfigError: its ``result.json`` is unreadable or of another format version.
    """
    path = folder / RESULT_FILE
    if not path.exists():
        return None
    return read_versioned(
        path,
        VariantRun,
        ABLATION_FORMAT_VERSION,
        what="ablation variant",
        error=ConfigError,
        hint=f"delete {folder} to run the variant again",
    )
