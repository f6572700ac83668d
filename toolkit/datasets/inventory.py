"""Every build of the data root, listed without failing: what ``distill datasets list`` shows.

A build folder can vanish (removed by hand, or by ``distill datasets rm`` in
another process), a ``LATEST`` pointer can name a build that is gone, and a
manifest can be unreadable. Listing reports each of these as a warning and
lists the rest.

Which promoted models name a build is read from loop runs and checkpoint
cards, layers above this one: the caller gathers them as :class:`ModelRef`
records and passes them in.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from toolkit.datasets.dataset import (
    HOLDOUT,
    TRAIN,
    Dataset,
    Manifest,
    Share,
    build_fingerprints,
    built_at,
    list_names,
    read_latest,
    read_manifest,
)
from toolkit.errors import BuildError
from toolkit.layout import Layout


class ModelRef(BaseModel):
    """A promoted model whose checkpoint card names a build (``dataset`` and ``fingerprint``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    fingerprint: str
    run: str = Field(description="The loop run that promoted it.")
    model: str = Field(description="Its name in the run, e.g. gen-002-student.")

    @property
    def label(self) -> str:
        return f"{self.run}/{self.model}"


def models_by_build(models: Iterable[ModelRef]) -> dict[tuple[str, str], list[str]]:
    """(dataset, fingerprint) -> the labels (``run/model``) of the promoted models naming it, sorted."""
    found: dict[tuple[str, str], set[str]] = {}
    for ref in models:
        found.setdefault((ref.dataset, ref.fingerprint), set()).add(ref.label)
    return {key: sorted(labels) for key, labels in found.items()}


class SplitCount(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rows: int
    games: int


class BuildEntry(BaseModel):
    """One published build as listed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    fingerprint: str
    path: str
    latest: bool = Field(description="builds/<name>/LATEST names it.")
    created_at: dt.datetime = Field(description="When it was published (UTC).")
    created_recorded: bool = Field(
        description="False: the manifest predates created_at, and the folder's modification time stands in."
    )
    lake_version: int | None
    distill_version: str
    train: SplitCount
    holdout: SplitCount
    shares: dict[str, Share]
    duplicates: int
    models: list[str] = Field(description="The promoted models whose cards name it (run/model).")

    @classmethod
    def of(cls, dataset: Dataset, *, latest: bool, models: Sequence[str]) -> BuildEntry:
        manifest = dataset.manifest
        train, holdout = manifest.splits[TRAIN], manifest.splits[HOLDOUT]
        return cls(
            name=manifest.name,
            fingerprint=manifest.fingerprint,
            path=str(dataset.root),
            latest=latest,
            created_at=built_at(dataset),
            created_recorded=manifest.created_at is not None,
            lake_version=manifest.lake_version,
            distill_version=manifest.distill_version,
            train=SplitCount(rows=train.rows, games=train.games),
            holdout=SplitCount(rows=holdout.rows, games=holdout.games),
            shares=manifest.shares,
            duplicates=manifest.duplicates,
            models=list(models),
        )


class Inventory(BaseModel):
    """Builds (by name, newest first) and what could not be listed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    builds: list[BuildEntry]
    warnings: list[str] = Field(default_factory=list, description="Vanished or unreadable builds, stale pointers.")

    def of(self, name: str) -> list[BuildEntry]:
        return [entry for entry in self.builds if entry.name == name]


def list_inventory(
    layout: Layout,
    *,
    names: Sequence[str] | None = None,
    every: bool = True,
    models: Iterable[ModelRef] = (),
) -> Inventory:
    """The builds of ``names`` (default: every name), or only each name's latest one when ``every`` is false.

    Never raises for one build: a folder that vanished, an unreadable manifest or
    a ``LATEST`` naming a missing build become warnings.
    """
    named = models_by_build(models)
    entries: list[BuildEntry] = []
    warnings: list[str] = []
    for name in list_names(layout) if names is None else names:
        found, problems = _builds_of(layout, name, named)
        entries += found if every else [entry for entry in found if entry.latest]
        warnings += problems
    return Inventory(builds=entries, warnings=warnings)


def _builds_of(
    layout: Layout, name: str, named: Mapping[tuple[str, str], list[str]]
) -> tuple[list[BuildEntry], list[str]]:
    latest = read_latest(layout, name)
    entries, warnings = [], []
    for fingerprint in build_fingerprints(layout, name):
        root = layout.build_dir(name, fingerprint)
        try:
            dataset = Dataset(root, read_manifest(root))
        except BuildError as error:
            if root.is_dir():  # else it was removed while we listed
                warnings.append(f"skipped build {fingerprint} of {name!r}: {error.message}")
            continue
        models = named.get((name, fingerprint), [])
        entries.append(BuildEntry.of(dataset, latest=fingerprint == latest, models=models))
    if latest is not None and not any(entry.latest for entry in entries):
        present = ", ".join(entry.fingerprint for entry in entries) or "none"
        warnings.append(
            f"the latest build of {name!r}, {latest} (named by {layout.latest_pointer(name)}), is gone or unreadable; "
            f"builds of {name!r} left: {present} (see `distill datasets list --all`; `distill build --name {name}` "
            "makes a new latest)"
        )
    entries.sort(key=lambda entry: (entry.created_at, entry.fingerprint), reverse=True)
    return entries, warnings


class RetiredInput(BaseModel):
    """A batch a build read that has been retired from the lake since."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    batch_id: str
    reason: str | None


def retired_inputs(layout: Layout, manifest: Manifest) -> list[RetiredInput]:
    """The batches ``manifest``'s build read that the lake has retired since (none without a catalog)."""
    from toolkit.catalog.lake import Lake
    from toolkit.errors import CatalogError

    read = {i.batch_id for i in manifest.inputs}
    try:
        with Lake.open(layout).at() as catalog:
            batches = catalog.batches()
    except CatalogError:
        return []
    return [
        RetiredInput(batch_id=b.batch_id, reason=b.retired_reason) for b in batches if b.retired and b.batch_id in read
    ]
