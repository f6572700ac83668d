"""The build stage: config -> DuckDB over the lake -> train/holdout Parquet + manifest, published atomically.

Steps: select the input batches, register their rows without duplicates,
summarise episodes, plan (filters, holdout, sampling), write both splits in
one pass, write the manifest and its fingerprint, check for leakage, then
publish the staged folder with one rename and point ``LATEST`` at it.

A build is a pure function of its inputs: the same lake batches and the same
config give the same fingerprint and byte-identical files. ``input_key``
names (config, input batches, code and format versions), so a second build
of the same inputs finds the first and reuses it instead of redoing it, as it was:
its ``created_at`` and lake version are those of the first build. Neither is
part of the fingerprint (:data:`toolkit.datasets.dataset.UNFINGERPRINTED`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import duckdb
import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from toolkit import __version__
from toolkit.datasets.config import BuildConfig
from toolkit.datasets.dataset import (
    HOLDOUT,
    MANIFEST_FILE,
    SCHEMA,
    Dataset,
    HoldoutRecord,
    LabelScoresUsed,
    Manifest,
    SplitSummary,
    list_builds,
    read_manifest,
)
from toolkit.datasets.leakage import check_leakage
from toolkit.datasets.plan import Plan, make_plan
from toolkit.datasets.scores import dropped_rows, rule_text, scored_build, scores_path
from toolkit.datasets.select import LakeInputs, episode_summary, lake_relation, register_rows, select_inputs
from toolkit.datasets.write import LabelDrop, write_splits
from toolkit.errors import BuildError
from toolkit.features import feature_spec
from toolkit.holdout import RULE
from toolkit.layout import MANIFEST_FORMAT_VERSION, Layout
from toolkit.progress import ProgressFn
from toolkit.schema.vocab import MACRO_ACTIONS, SCHEMA_VERSION
from toolkit.storage import LockHeldError, exclusive_lock, write_text_atomic

MEMORY_LIMIT: Final = "1GB"
FINGERPRINT_CHARS: Final = 16


class BuildInfo(BaseModel):
    """What a build produced: the published dataset, and whether an identical earlier build was reused."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    dataset: Dataset
    reused: bool
    seconds: float
    latest: bool = True  # the name's LATEST now names it (a build --as-of reads the past: it never moves LATEST)

    @property
    def manifest(self) -> Manifest:
        return self.dataset.manifest


def build_dataset(
    layout: Layout, config: BuildConfig, *, progress: ProgressFn | None = None, as_of: int | str | None = None
) -> BuildInfo:
    """Build (or reuse) the dataset ``config`` describes and publish it under ``layout.builds``.

    Args:
        layout: the data root.
        config: what to build.
        progress: told the lake rows scanned so far, as the final pass goes.
        as_of: read the lake as it was at this version (or time): the same
            rows, so the same fingerprint and bytes, as a build made then. The
            manifest records the version read (not in the fingerprint). Such a
            build never moves the name's ``LATEST``: open it by fingerprint.

    Raises:
        ConfigError: for a selection the lake cannot satisfy (unknown source, batch...).
        BuildError: for an empty selection or training set, or a weighted source left empty.
        LeakageError: if the written splits share a game (a bug: nothing is published).
    """
    started = time.perf_counter()
    with build_lock(layout, config.name):
        inputs = select_inputs(layout, config, as_of)
        cleaning = _label_cleaning(layout, config)
        key = input_key(config, inputs, cleaning[0] if cleaning else None)
        reused = _find_build(layout, config.name, key)
        if reused is not None:
            if as_of is None:
                _point_latest(layout, reused)
            return BuildInfo(dataset=reused, reused=True, seconds=time.perf_counter() - started, latest=as_of is None)
        staging_root = layout.build_staging_for(config.name)
        shutil.rmtree(staging_root, ignore_errors=True)  # half-written by a crash: this name's lock is ours
        staging = staging_root / uuid.uuid4().hex[:12]
        staging.mkdir(parents=True)
        try:
            with _connect(staging) as con:
                input_rows = count_rows(con, inputs)
                duplicates = register_rows(con, inputs)
                plan = make_plan(episode_summary(con, config), config)
                drop = None if cleaning is None else LabelDrop(cleaning[1])
                splits = write_splits(con, inputs, plan, config, staging, progress, drop)
            used = (
                None
                if cleaning is None or drop is None
                else cleaning[0].model_copy(update={"rows_dropped": drop.rows_dropped})
            )
            manifest = _manifest(config, key, inputs, input_rows, plan, duplicates, splits, used).model_copy(
                update={"created_at": dt.datetime.now(dt.UTC), "lake_version": inputs.version}
            )
            (staging / MANIFEST_FILE).write_text(_dumps(manifest.model_dump(mode="json")), encoding="utf-8")
            shutil.rmtree(staging / "spill", ignore_errors=True)
            check_leakage(Dataset(staging, manifest))
            published = _publish(layout, staging, manifest)
        finally:
            shutil.rmtree(staging_root, ignore_errors=True)
        if as_of is None:  # reading the past never changes what is current
            _point_latest(layout, published)
    return BuildInfo(dataset=published, reused=False, seconds=time.perf_counter() - started, latest=as_of is None)


@contextlib.contextmanager
def build_lock(layout: Layout, name: str) -> Iterator[None]:
    """Hold the build of ``name`` in this data root: builds of other names run beside it, one of the same name
    is refused (and so is a removal of its builds: :mod:`toolkit.datasets.remove` holds the same lock).

    The lock is an OS file lock (``flock``): a build that crashes or is
    killed releases it, and its half-written staging folder is cleared by
    the next build of the same name.

    Raises:
        BuildError: another process is building ``name`` in this data root.
    """
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(exclusive_lock(layout.build_lock(name)))
        except LockHeldError:
            raise BuildError(
                f"a build named {name!r} is being written by another process in {layout.home} "
                "(a build, or a removal of its builds)",
                hint="wait for it to finish, or build under another --name",
            ) from None
        yield


def _label_cleaning(layout: Layout, config: BuildConfig) -> tuple[LabelScoresUsed, pa.Table] | None:
    """The scores a cleaning build reads (rows_dropped still 0) and the lake rows they drop; None: no cleaning."""
    rule = config.label_issues
    if rule is None:
        return None
    dataset, info = scored_build(layout, config.name, rule.scores)
    drop = dropped_rows(layout, dataset, rule)
    used = LabelScoresUsed(
        dataset=dataset.name,
        fingerprint=dataset.fingerprint,
        path=layout.stored(scores_path(layout, dataset)),
        scores_sha256=info.scores_sha256,
        rule=rule_text(rule),
        rows_dropped=0,
    )
    return used, drop


def input_key(config: BuildConfig, inputs: LakeInputs, scores: LabelScoresUsed | None = None) -> str:
    """The identity of a build's inputs: config, batches (with content hashes and the partitions selected), code
    and format versions; not the lake's version or its files, so a compaction or an unrelated ingest changes
    nothing."""
    body = {
        "format_version": MANIFEST_FORMAT_VERSION,
        "code_version": __version__,
        "features": feature_spec().version,
        # what a row is: a build of other columns or another contract is a new build, not a reuse
        "contract_version": SCHEMA_VERSION,
        "columns": [f"{f.name}: {f.type}{'' if f.nullable else ' not null'}" for f in SCHEMA],
        "config": config.model_dump(mode="json"),
        "inputs": [[b.batch_id, b.file_sha256, [list(p) for p in b.partitions]] for b in inputs.batches],
    }
    if scores is not None:  # a cleaned build reads these scores too: other scores, another build
        body["label_scores"] = scores.scores_sha256
    return hashlib.sha256(_dumps(body).encode()).hexdigest()


def count_rows(con: duckdb.DuckDBPyConnection, inputs: LakeInputs) -> dict[str, int]:
    """Selected lake rows per batch (duplicates included)."""
    rows = con.execute(f"SELECT batch_id, count(*) FROM {lake_relation(con, inputs)} GROUP BY ALL").fetchall()
    return {batch: int(count) for batch, count in rows}


def _connect(staging: Path) -> duckdb.DuckDBPyConnection:
    spill = staging / "spill"
    spill.mkdir()
    return duckdb.connect(
        config={"memory_limit": MEMORY_LIMIT, "temp_directory": str(spill), "preserve_insertion_order": True}
    )


def _manifest(
    config: BuildConfig,
    key: str,
    inputs: LakeInputs,
    input_rows: dict[str, int],
    plan: Plan,
    duplicates: int,
    splits: dict[str, SplitSummary],
    label_scores: LabelScoresUsed | None = None,
) -> Manifest:
    holdout = splits[HOLDOUT]
    manifest = Manifest(
        format_version=MANIFEST_FORMAT_VERSION,
        name=config.name,
        fingerprint="",
        input_key=key,
        code_version=__version__,
        contract_version=SCHEMA_VERSION,
        config=config,
        inputs=[b.describe(input_rows.get(b.batch_id, 0)) for b in inputs.batches],
        filters=plan.filters,
        shares=plan.shares,
        duplicates=duplicates,
        holdout=HoldoutRecord(
            **config.holdout.model_dump(),
            rule=RULE,
            games=holdout.games,
            rows=holdout.rows,
            content=_content_hash(holdout),
        ),
        features=feature_spec(),
        splits=splits,
        actions=list(MACRO_ACTIONS),
        label_scores=label_scores,
    )
    fingerprint = hashlib.sha256(_dumps(manifest.fingerprint_body()).encode()).hexdigest()[:FINGERPRINT_CHARS]
    return manifest.model_copy(update={"fingerprint": fingerprint})


def _content_hash(split: SplitSummary) -> str:
    """Hash of a split's files: two builds hold out the same decisions exactly when these match."""
    return hashlib.sha256("".join(part.sha256 for part in split.files).encode()).hexdigest()


def _publish(layout: Layout, staging: Path, manifest: Manifest) -> Dataset:
    target = layout.build_dir(manifest.name, manifest.fingerprint)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(target)  # the one step that makes the build visible
    return Dataset(target, read_manifest(target))


def _point_latest(layout: Layout, dataset: Dataset) -> None:
    write_text_atomic(layout.latest_pointer(dataset.name), dataset.fingerprint + "\n")


def _find_build(layout: Layout, name: str, key: str) -> Dataset | None:
    for dataset in reversed(list_builds(layout, name)):
        if dataset.manifest.input_key == key:
            return dataset
    return None


def _dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
