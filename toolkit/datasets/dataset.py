"""A built dataset on disk: its columns, its manifest, and the reader training and checks use.

A build is a folder ``builds/<name>/<fingerprint>/`` holding ``manifest.json``
and two splits, ``train/`` and ``holdout/``, of Parquet parts with one row per
decision (:data:`COLUMNS`). ``features`` is the fixed-length vector of
:mod:`toolkit.features` (its spec is in the manifest), ``label`` the chosen
macro action's index (the manifest's ``actions`` name them; Hugging Face
``datasets`` reads it as a ``ClassLabel``: :mod:`toolkit.datasets.hf`),
``legal_mask`` the legal actions (all True where the record had no mask),
``sample_weight`` how much the row counts (a game drawn k times by
oversampling is stored once with weight k). Lineage columns point
back at the lake row (batch and line).

The manifest is versioned (:data:`toolkit.layout.MANIFEST_FORMAT_VERSION`); a reader refuses a
version it does not know, naming the command that fixes it. It also records when the build was
published (``created_at``) and the lake version it read: :data:`UNFINGERPRINTED` fields, left out of the
fingerprint, so the same inputs and config name the same build whenever it is made. Manifests written
before these fields were recorded read as ``None``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_validator, model_serializer

from toolkit.datasets.config import BuildConfig
from toolkit.errors import BuildError
from toolkit.features import FEATURE_SIZE, FeatureSpec
from toolkit.layout import (
    FILE_NAME_PATTERN,
    FINGERPRINT_PATTERN,
    MANIFEST_FORMAT_VERSION,
    NAME_PATTERN,
    Layout,
    lies_within,
)
from toolkit.schema import columns as col
from toolkit.schema.vocab import N_ACTIONS
from toolkit.storage import read_versioned

MANIFEST_FILE: Final = "manifest.json"
TRAIN: Final = "train"
HOLDOUT: Final = "holdout"
SPLITS: Final = (TRAIN, HOLDOUT)
# Manifest fields that say when and from which lake state a build was made, not what it holds: the fingerprint
# leaves them out, so it stays a function of the inputs and the config.
UNFINGERPRINTED: Final = frozenset({"created_at", "lake_version"})

# Columns of a dataset row (in file order).
FEATURES: Final = "features"
LABEL: Final = "label"
LEGAL_MASK: Final = "legal_mask"
SAMPLE_WEIGHT: Final = "sample_weight"
LABEL_SOURCE: Final = "label_source"

SCHEMA: Final = pa.schema(
    [
        pa.field(col.GAME_ID, pa.string(), nullable=False),
        pa.field(col.SEAT, pa.int32(), nullable=False),
        pa.field(col.DECISION_INDEX, pa.int32(), nullable=False),
        pa.field(col.SOURCE, pa.string(), nullable=False),
        pa.field(col.GENERATION, pa.int32()),
        pa.field(FEATURES, pa.list_(pa.field("item", pa.float32(), nullable=False), FEATURE_SIZE), nullable=False),
        pa.field(LABEL, pa.int64()),  # ClassLabel's Arrow field (never null): see toolkit.datasets.hf
        pa.field(LEGAL_MASK, pa.list_(pa.field("item", pa.bool_(), nullable=False), N_ACTIONS), nullable=False),
        pa.field(SAMPLE_WEIGHT, pa.float32(), nullable=False),
        pa.field(LABEL_SOURCE, pa.string(), nullable=False),
        pa.field(col.REWARD, pa.float64()),
        pa.field(col.EPISODE_RETURN, pa.float64()),
        pa.field(col.SEAT_WON, pa.bool_()),
        pa.field(col.BATCH_ID, pa.string(), nullable=False),
        pa.field(col.SOURCE_LINE, pa.int64(), nullable=False),
    ]
)
COLUMNS: Final[tuple[str, ...]] = tuple(SCHEMA.names)

# A part's path in its build folder: ``<split>/<file name>``, never a climb or an absolute path.
PART_PATH_PATTERN: Final = "^[a-z]+/" + FILE_NAME_PATTERN.removeprefix("^")


class PartFile(BaseModel):
    """One Parquet part of a split."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(pattern=PART_PATH_PATTERN, description="Relative to the build folder (``<split>/<file>``).")
    rows: int
    sha256: str


class SplitSummary(BaseModel):
    """What one split holds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rows: int
    games: int
    weighted_rows: float = Field(description="Sum of sample weights.")
    rows_by_source: dict[str, int]
    games_by_source: dict[str, int]
    weighted_rows_by_source: dict[str, float]
    label_sources: dict[str, int] = Field(description="Rows by label_source (logged, mapped, inferred kinds).")
    files: list[PartFile]


class InputRecord(BaseModel):
    """One lake batch a build read: its identity, review status and the rows selected from it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    batch_id: str
    file_sha256: str
    status: str
    rows: int


class FilterStep(BaseModel):
    """One step of a source's filter trail: what was left after it (``weighted_rows`` on the last, "sampled")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step: str
    rows: int
    games: int
    weighted_rows: float | None = None

    @model_serializer(mode="wrap")
    def _without_absent_weight(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        body = handler(self)
        if body.get("weighted_rows") is None:
            body.pop("weighted_rows", None)
        return body


class Share(BaseModel):
    """A source's share of the training set: asked for (share mode only) and achieved (of the weighted rows)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: float | None
    achieved: float


class HoldoutRecord(BaseModel):
    """The fixed holdout of a build: its rule and settings, and what it holds (``content`` hashes its files)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    salt: str
    fraction: float
    sources: list[str]
    rule: str
    games: int
    rows: int
    content: str


class LabelScoresUsed(BaseModel):
    """The scores a cleaned build used (in its manifest, so in its fingerprint)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    fingerprint: str = Field(description="The scored build's fingerprint.")
    path: str = Field(description="The table, relative to the data root.")
    scores_sha256: str
    rule: str = Field(description="Which rows were dropped: flagged, and / or label_quality below a floor.")
    rows_dropped: int = Field(description="Train rows left out.")


class Manifest(BaseModel):
    """Everything a build did and holds; ``fingerprint`` names its content."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: int
    name: str = Field(pattern=NAME_PATTERN)
    fingerprint: str = Field(  # empty while the build computes it; a published one's equals its folder's name
        pattern=r"^[0-9a-f]{0,64}$", description="sha256 of the manifest body and every part's content."
    )
    input_key: str = Field(description="sha256 of the config and the input batches: same key, same build.")
    code_version: str = Field(description="The Distill version that wrote the build (toolkit.__version__).")
    created_at: dt.datetime | None = Field(
        None, description="When the build was published, UTC (absent in builds written before it was recorded)."
    )
    lake_version: int | None = Field(None, description="The lake version the build read (None: not recorded).")
    contract_version: int | None = Field(
        None,
        description=(
            "The DecisionSnapshot contract version of the rows (absent in builds written before it was recorded)."
        ),
    )
    config: BuildConfig
    inputs: list[InputRecord] = Field(description="Input batches: id, file sha256, review status, rows selected.")
    filters: dict[str, list[FilterStep]] = Field(description="Per source: rows and games after each step.")
    shares: dict[str, Share] = Field(description="Per source: target and achieved share of train.")
    duplicates: int = Field(description="Decisions dropped as duplicates of (game, seat, decision index).")
    holdout: HoldoutRecord = Field(description="The rule, salt, fraction, reference sources, games, rows.")
    features: FeatureSpec = Field(description="The feature spec (toolkit.features.feature_spec).")
    splits: dict[str, SplitSummary]
    actions: list[str] | None = Field(
        None, description="The action names: `label` i is actions[i] (absent in builds written before it was recorded)."
    )
    label_scores: LabelScoresUsed | None = Field(
        None, description="The label scores whose flagged rows the build dropped (--drop-label-issues); absent: none."
    )

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: dt.datetime | None) -> dt.datetime | None:
        """A time without a zone is read as UTC, the zone every manifest is written in."""
        if value is None:
            return None
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)

    @property
    def distill_version(self) -> str:
        """The Distill version that wrote the build (recorded as ``code_version``)."""
        return self.code_version

    def fingerprint_body(self) -> dict[str, Any]:
        """What the fingerprint hashes: the manifest as JSON without its fingerprint's value and without
        :data:`UNFINGERPRINTED` fields (so it is the same body builds written before them hashed)."""
        return {**self.model_dump(mode="json", exclude=set(UNFINGERPRINTED)), "fingerprint": ""}

    @model_serializer(mode="wrap")
    def _without_absent_scores(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A build that dropped nothing by label scores is written (and fingerprinted) as before they existed."""
        body = handler(self)
        if body.get("label_scores", 0) is None:
            body.pop("label_scores")
        return body


@dataclass(frozen=True)
class Dataset:
    """A published build, opened for reading."""

    root: Path
    manifest: Manifest

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def fingerprint(self) -> str:
        return self.manifest.fingerprint

    def files(self, split: str) -> list[Path]:
        """The Parquet parts of ``split`` (train or holdout), in order."""
        if split not in SPLITS:
            raise BuildError(f"unknown split {split!r}", hint=f"use one of {', '.join(SPLITS)}")
        return [self.inside(self.root / part.path) for part in self.manifest.splits[split].files]

    def inside(self, path: Path) -> Path:
        """``path``, a file of this build, once its real location (symlinks followed) is checked to lie inside it.

        Raises:
            BuildError: it leads outside (a symlink), never read.
        """
        if not lies_within(path, self.root):
            raise BuildError(
                f"{path} leads outside its build {self.root} (a symlink): Distill does not read through it",
                hint=f"remove the link, or rebuild the dataset with `distill build --name {self.name}`",
            )
        return path

    def read(self, split: str, columns: list[str] | None = None) -> pa.Table:
        """A whole split as one Arrow table (fine for holdouts and small sets; stream big ones)."""
        files = self.files(split)
        if not files:
            return SCHEMA.empty_table().select(columns or list(COLUMNS))
        return pa.concat_tables(pq.read_table(f, columns=columns) for f in files)

    def iter_batches(
        self, split: str, columns: list[str] | None = None, batch_size: int = 65_536
    ) -> Iterator[pa.RecordBatch]:
        """Stream ``split`` in record batches of at most ``batch_size`` rows, in file order."""
        for path in self.files(split):
            yield from pq.ParquetFile(path).iter_batches(batch_size=batch_size, columns=columns)


def read_manifest(root: Path) -> Manifest:
    """The manifest of the build in ``root``.

    Raises:
        BuildError: when it is missing, unreadable, of an unknown format version, or of another build than the
            folder it is in (``builds/<name>/<fingerprint>/``) names.
    """
    if not lies_within(root / MANIFEST_FILE, root):
        raise BuildError(
            f"{root / MANIFEST_FILE} leads outside its build (a symlink): Distill does not read through it",
            hint=f"remove the link, or remove {root} and rebuild the dataset with `distill build`",
        )
    manifest = read_versioned(
        root / MANIFEST_FILE,
        Manifest,
        MANIFEST_FORMAT_VERSION,
        what="dataset manifest",
        error=BuildError,
        hint="rebuild the dataset with `distill build`",
    )
    if (manifest.name, manifest.fingerprint) != (root.parent.name, root.name):
        raise BuildError(
            f"{root / MANIFEST_FILE} is the manifest of build {manifest.fingerprint} of {manifest.name!r}, not of "
            "the folder it is in",
            hint=f"remove {root}, or rebuild the dataset with `distill build`",
        )
    return manifest


def open_dataset(layout: Layout, name: str, fingerprint: str | None = None) -> Dataset:
    """The build ``name`` (its latest one, or the one with ``fingerprint``); ``name`` may be ``NAME@FINGERPRINT``
    (:class:`~toolkit.datasets.ref.BuildRef`).

    Raises:
        BuildError: when no such build exists (the hint names the builds of ``name`` that do).
        UsageError: ``name`` and ``fingerprint`` name two builds, or are not a name and a fingerprint.
    """
    from toolkit.datasets.ref import BuildRef

    ref = BuildRef.parse(name, fingerprint)
    name, fingerprint = ref.name, ref.fingerprint
    if fingerprint is None:
        fingerprint = read_latest(layout, name)
        if fingerprint is None:
            known = ", ".join(list_names(layout)) or "none yet"
            raise BuildError(
                f"no dataset named {name!r} under {layout.builds}",
                hint=f"build it with `distill build --name {name}` (built: {known})",
            )
        if not layout.build_dir(name, fingerprint).is_dir():
            raise BuildError(
                f"the latest build of dataset {name!r}, {fingerprint} (named by {layout.latest_pointer(name)}), "
                "is gone",
                hint=other_builds_hint(layout, name),
            )
    root = layout.build_dir(name, fingerprint)
    if not root.is_dir():
        raise BuildError(f"no build {fingerprint} of dataset {name!r}", hint=other_builds_hint(layout, name))
    return Dataset(root, read_manifest(root))


def other_builds_hint(layout: Layout, name: str) -> str:
    """What to do when a build of ``name`` is missing: the fingerprints on disk, or how to build it again."""
    present = build_fingerprints(layout, name)
    if not present:
        return f"no build of {name!r} is left: build it again with `distill build --name {name}`"
    return (
        f"builds of {name!r} on disk: {', '.join(present)}; open one with "
        f"`distill datasets show {name} --fingerprint FP`, or rebuild with `distill build --name {name}`"
    )


def read_latest(layout: Layout, name: str) -> str | None:
    """The fingerprint ``builds/<name>/LATEST`` names (its build may be gone), or None when there is no pointer."""
    pointer = layout.latest_pointer(name)
    if pointer.exists() and not pointer.is_file():
        raise BuildError(f"{pointer} is not a regular file", hint=f"remove it, then `distill build --name {name}`")
    try:
        text = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    if text and not re.fullmatch(FINGERPRINT_PATTERN, text):
        raise BuildError(
            f"{layout.latest_pointer(name)} holds {text[:80]!r}, not a build fingerprint",
            hint=f"rebuild the dataset with `distill build --name {name}` (it rewrites the pointer)",
        )
    return text or None


def build_fingerprints(layout: Layout, name: str) -> list[str]:
    """The fingerprints of ``name``'s build folders that hold a manifest (readable or not), sorted."""
    folder = layout.build_root(name)
    return sorted(p.parent.name for p in folder.glob(f"*/{MANIFEST_FILE}")) if folder.is_dir() else []


def list_names(layout: Layout) -> list[str]:
    """Names with a published build or a ``LATEST`` pointer, sorted (never the work folders ``.staging``,
    ``.locks``)."""
    if not layout.builds.is_dir():
        return []
    names = [d.name for d in layout.builds.iterdir() if d.is_dir() and re.fullmatch(NAME_PATTERN, d.name)]
    return sorted(n for n in names if layout.latest_pointer(n).is_file() or build_fingerprints(layout, n))


def list_builds(layout: Layout, name: str) -> list[Dataset]:
    """Every published build of ``name``, oldest first (by :func:`built_at`); a build removed meanwhile is left out.

    Raises:
        BuildError: a build's manifest is unreadable or of an unknown format version.
    """
    found = []
    for fingerprint in build_fingerprints(layout, name):
        root = layout.build_dir(name, fingerprint)
        try:
            found.append(Dataset(root, read_manifest(root)))
        except BuildError:
            if (root / MANIFEST_FILE).exists():
                raise
    return sorted(found, key=built_at)


def built_at(dataset: Dataset) -> dt.datetime:
    """When a build was published: its manifest's ``created_at``, or for a build written before that was
    recorded, its folder's modification time (the epoch when the folder is gone)."""
    if dataset.manifest.created_at is not None:
        return dataset.manifest.created_at
    try:
        return dt.datetime.fromtimestamp(dataset.root.stat().st_mtime, dt.UTC)
    except FileNotFoundError:
        return dt.datetime.fromtimestamp(0, dt.UTC)
