"""The generation's dataset: the bootstrap data (generation 0), then the latest teachers' decisions, with the
FIXED holdout."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from toolkit.catalog.lake import Lake
from toolkit.catalog.store import Catalog
from toolkit.datasets.dataset import Share
from toolkit.errors import OutsideRootError
from toolkit.layout import Layout
from toolkit.loop.config import LoopConfig
from toolkit.loop.steps.base import StepContext

if TYPE_CHECKING:
    from toolkit.datasets.config import BuildConfig


class BuildInput(BaseModel):
    own_batches: list[str]
    leave_out: list[str]


class BuildStepResult(BaseModel):
    name: str
    fingerprint: str
    path: str  # relative to the data root
    reused: bool
    train_rows: int
    holdout_rows: int
    rows_by_source: dict[str, int]
    games_by_source: dict[str, int]
    shares: dict[str, Share]
    duplicates: int
    holdout_content: str
    batches: list[str]


def build_step(ctx: StepContext, step: BuildInput) -> BuildStepResult:
    """Build ``loop-<name>`` from every usable batch: not rejected, not retired, not another run's, not left out."""
    from toolkit.datasets.build import build_dataset

    data = ctx.config.data
    with Lake.open(ctx.layout).at() as catalog:
        foreign = other_runs_batches(ctx.layout, catalog, ctx.config.name) - set(step.own_batches)
        if data.other_runs == "include":
            foreign = set()
        skip = foreign | set(step.leave_out)
        usable = [
            (b.batch_id, b.sources)
            for b in catalog.batches()
            if b.status != "rejected" and not b.retired and b.batch_id not in skip
        ]
    config = dataset_config(ctx.config, ctx.generation, usable, seed=ctx.seed, pin=bool(skip))
    info = build_dataset(ctx.layout, config)
    m = info.manifest
    return BuildStepResult(
        name=m.name,
        fingerprint=m.fingerprint,
        path=ctx.layout.stored(info.dataset.root),
        reused=info.reused,
        train_rows=m.splits["train"].rows,
        holdout_rows=m.splits["holdout"].rows,
        rows_by_source=m.splits["train"].rows_by_source,
        games_by_source=m.splits["train"].games_by_source,
        shares=m.shares,
        duplicates=m.duplicates,
        holdout_content=m.holdout.content,
        batches=[i.batch_id for i in m.inputs],
    )


def dataset_config(
    config: LoopConfig, generation: int, usable: list[tuple[str, list[str]]], *, seed: int, pin: bool
) -> BuildConfig:
    """The build a loop makes in ``generation`` from the ``usable`` batches (id, sources): generation 0 learns
    every source's rows alike, later generations the shares of ``config.data``, restricted to the sources present.

    Args:
        config: the loop's config (its ``data`` section and dataset name).
        generation: the generation building.
        usable: the batches the build may read, with their sources.
        seed: the build's sampling seed.
        pin: name the batches in the build config (when some of the lake's batches are left out).

    Raises:
        pydantic.ValidationError: the data section gives no source present a weight.
    """
    from toolkit.datasets.config import BuildConfig

    data = config.data
    present = {s for _, sources in usable for s in sources}
    if generation == 0:  # the first student learns the bootstrap data, all of it
        weights, mode = {s: 1.0 for s in present}, "ratio"
    else:
        weights, mode = {s: w for s, w in data.weights.items() if s in present}, data.weight_mode
    return BuildConfig(
        name=config.dataset,
        weight_mode=mode,
        weights=weights,
        min_reward=data.min_reward,
        wins_only=[s for s in data.wins_only if s in present],
        holdout=data.holdout,
        seed=seed,
        generation_decay=data.teacher_decay if generation > 0 else None,
        batches=[batch for batch, _ in usable] if pin else None,
    )


def other_runs_batches(layout: Layout, catalog: Catalog, name: str) -> set[str]:
    """Batches of files that other loop runs of this data root wrote (under ``runs/<other>/``).

    Read from the catalog, which records each batch's file in the same
    transaction as the batch; each file is placed where ``Layout.resolve``
    finds it (a path recorded before the data root moved names the same
    place in it).
    """
    runs = layout.runs.resolve()
    found = set()
    for file in catalog.files():
        try:
            path = layout.resolve(file.path)  # stored relative to the data root when inside it
        except OutsideRootError:
            continue  # a user's log outside the data root: no run wrote it
        if path.is_relative_to(runs) and path.relative_to(runs).parts[0] != name:
            found.add(file.batch_id)
    return found
