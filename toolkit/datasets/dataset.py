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
version it does not know, naming the command that fixes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from toolkit.datasets.config import BuildConfig
from toolkit.errors import BuildError
from toolkit.features import FEATURE_SIZE, FeatureSpec
from toolkit.layout import MANIFEST_FORMAT_VERSION, Layout
from toolkit.schema import columns as col
from toolkit.schema.vocab import N_ACTIONS
from toolkit.storage import read_versioned

MANIFEST_FILE: Final = "manifest.json"
TRAIN: Final = "train"
HOLDOUT: Final = "holdout"
SPLITS: Final = (TRAIN, HOLDOUT)

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


class PartFile(BaseModel):
    """One Parquet part of a split."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(description="Relative to the build folder.")
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


class Manifest(BaseModel):
    """Everything a build did and holds; ``fingerprint`` names its content."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: int
    name: str
    fingerprint: str = Field(description="sha256 of the manifest body and every part's content.")
    input_key: str = Field(description="sha256 of the config and the input batches: same key, same build.")
    code_version: str
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
        return [self.root / part.path for part in self.manifest.splits[split].files]

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
        BuildError: when it is missing, unreadable, or of an unknown format version.
    """
    return read_versioned(
        root / MANIFEST_FILE,
        Manifest,
        MANIFEST_FORMAT_VERSION,
        what="dataset manifest",
        error=BuildError,
        hint="rebuild the dataset with `distill build`",
    )


def open_dataset(layout: Layout, name: str, fingerprint: str | None = None) -> Dataset:
    """The build ``name`` (its latest one, or the one with ``fingerprint``).

    Raises:
        BuildError: when no such build exists.
    """
    if fingerprint is None:
        pointer = layout.latest_pointer(name)
        if not pointer.is_file():
            known = ", ".join(list_names(layout)) or "none yet"
            raise BuildError(
                f"no dataset named {name!r} under {layout.builds}",
                hint=f"build it with `distill build --name {name}` (built: {known})",
            )
        fingerprint = pointer.read_text(encoding="utf-8").strip()
    root = layout.build_dir(name, fingerprint)
    if not root.is_dir():
        raise BuildError(f"no build {fingerprint} of dataset {name!r}", hint=f"see `distill datasets show {name}`")
    return Dataset(root, read_manifest(root))


def list_names(layout: Layout) -> list[str]:
    """Names with at least one published build, sorted."""
    if not layout.builds.is_dir():
        return []
    return sorted(p.parent.name for p in layout.builds.glob("*/LATEST"))


def list_builds(layout: Layout, name: str) -> list[Dataset]:
    """Every published build of ``name``, oldest first."""
    folder = layout.builds / name
    roots = [p.parent for p in folder.glob(f"*/{MANIFEST_FILE}")] if folder.is_dir() else []
    return [Dataset(root, read_manifest(root)) for root in sorted(roots, key=lambda r: r.stat().st_mtime_ns)]
