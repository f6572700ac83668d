"""Removing builds: one (``distill datasets rm``), or all but the newest (``distill datasets prune``).

What makes it safe:

- A build that a promoted model's card names is never removed unless forced.
  The caller passes those references (:class:`~toolkit.datasets.inventory.ModelRef`):
  loop runs and cards sit in layers above this one. Refusing changes nothing.
- The name's build lock is held throughout, so no build of the name is being
  written meanwhile (a removal is refused while one is, and a build while a
  removal runs). Builds of other names are untouched.
- ``LATEST`` moves first (to the newest build left, or goes when none is
  left); then each build folder is renamed into ``builds/.staging/<name>/``
  and deleted there. A crash leaves every build whole or gone from view, and
  the next build or removal of the name clears what it left in staging.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from toolkit.datasets.build import build_lock
from toolkit.datasets.dataset import build_fingerprints, other_builds_hint, read_latest
from toolkit.datasets.inventory import BuildEntry, Inventory, ModelRef, list_inventory, models_by_build
from toolkit.errors import BuildError, UsageError
from toolkit.layout import Layout, checked_fingerprint, checked_name
from toolkit.storage import write_text_atomic


class ProtectedBuildError(BuildError):
    """Builds asked to be removed are named by promoted models' cards; nothing was removed."""

    def __init__(self, message: str, *, models: dict[str, list[str]], hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.models = models


class Removal(BaseModel):
    """What a removal did (or, for a dry run, would do) to the builds of one name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    dry_run: bool
    removed: list[str] = Field(description="Fingerprints removed (a dry run: that would be).")
    forced: dict[str, list[str]] = Field(
        description="Removed builds that promoted models name (only with force): fingerprint -> run/model."
    )
    kept: list[str] = Field(description="Fingerprints left, newest first.")
    protected: dict[str, list[str]] = Field(
        description="Builds kept only because promoted models name them: fingerprint -> run/model."
    )
    latest: str | None = Field(description="The fingerprint LATEST names afterwards (None: no pointer).")
    warnings: list[str] = Field(default_factory=list)


def remove_build(
    layout: Layout,
    name: str,
    fingerprint: str,
    *,
    models: Iterable[ModelRef] = (),
    force: bool = False,
    dry_run: bool = False,
) -> Removal:
    """Remove the build ``fingerprint`` of ``name`` (one whose manifest is unreadable too).

    Raises:
        UsageError: ``name`` or ``fingerprint`` is malformed.
        BuildError: there is no such build, or a build or removal of ``name`` runs in another process.
        ProtectedBuildError: promoted models name it and ``force`` is false (nothing changed).
    """
    _check_names(name, fingerprint)
    refs = list(models)
    with build_lock(layout, name):
        if fingerprint not in build_fingerprints(layout, name):
            raise BuildError(f"no build {fingerprint} of dataset {name!r}", hint=other_builds_hint(layout, name))
        naming = _naming(refs, name)
        if fingerprint in naming and not force:
            raise ProtectedBuildError(
                f"build {fingerprint} of dataset {name!r} is named by promoted models: "
                f"{', '.join(naming[fingerprint])}; nothing was removed",
                models={fingerprint: naming[fingerprint]},
                hint=f"keep it, or remove it anyway with `distill datasets rm {name} {fingerprint} --force`",
            )
        listed = list_inventory(layout, names=[name], models=refs)
        return _remove(layout, listed, name, {fingerprint}, naming if force else {}, protected={}, dry_run=dry_run)


def prune_builds(
    layout: Layout,
    name: str,
    *,
    keep: int,
    models: Iterable[ModelRef] = (),
    force: bool = False,
    dry_run: bool = False,
) -> Removal:
    """Remove every build of ``name`` but the ``keep`` newest (by ``created_at``, else folder time), keeping the
    ones promoted models name unless ``force``. Builds whose manifest is unreadable are left alone (warned).

    Raises:
        UsageError: ``name`` is malformed or ``keep`` is negative.
        BuildError: no build of ``name`` exists, or a build or removal of it runs in another process.
    """
    _check_names(name)
    if keep < 0:
        raise UsageError(f"--keep {keep}: the number of builds to keep must be 0 or more", hint="e.g. --keep 3")
    refs = list(models)
    with build_lock(layout, name):
        listed = list_inventory(layout, names=[name], models=refs)
        if not build_fingerprints(layout, name):
            raise BuildError(f"no build of dataset {name!r}", hint=other_builds_hint(layout, name))
        older = listed.builds[keep:]
        protected = {e.fingerprint: e.models for e in older if e.models and not force}
        doomed = {e.fingerprint for e in older if e.fingerprint not in protected}
        forced = _naming(refs, name) if force else {}
        return _remove(layout, listed, name, doomed, forced, protected=protected, dry_run=dry_run)


def _remove(
    layout: Layout,
    listed: Inventory,
    name: str,
    doomed: set[str],
    forced: dict[str, list[str]],
    *,
    protected: dict[str, list[str]],
    dry_run: bool,
) -> Removal:
    """Move ``LATEST`` off the doomed builds, then remove them (the caller holds the name's lock)."""
    left = [e for e in listed.builds if e.fingerprint not in doomed]
    latest = _next_latest(read_latest(layout, name), doomed, left, build_fingerprints(layout, name))
    ordered = sorted(doomed)
    if not dry_run:
        _point_latest(layout, name, latest)
        for fingerprint in ordered:
            _discard(layout, name, fingerprint)
        _tidy(layout, name)
    return Removal(
        name=name,
        dry_run=dry_run,
        removed=ordered,
        forced={fp: forced[fp] for fp in ordered if fp in forced},
        kept=[e.fingerprint for e in left],
        protected=protected,
        latest=latest,
        warnings=listed.warnings,
    )


def _naming(refs: list[ModelRef], name: str) -> dict[str, list[str]]:
    """Fingerprint -> the promoted models naming that build of ``name``."""
    return {fingerprint: labels for (dataset, fingerprint), labels in models_by_build(refs).items() if dataset == name}


def _next_latest(current: str | None, doomed: set[str], left: list[BuildEntry], on_disk: list[str]) -> str | None:
    """The pointer stays unless its build goes (or is already gone): then the newest build left, or none."""
    if current is None or (current not in doomed and current in on_disk):
        return current
    return left[0].fingerprint if left else None


def _point_latest(layout: Layout, name: str, latest: str | None) -> None:
    pointer = layout.latest_pointer(name)
    if latest is None:
        pointer.unlink(missing_ok=True)
    elif read_latest(layout, name) != latest:
        write_text_atomic(pointer, latest + "\n")


def _discard(layout: Layout, name: str, fingerprint: str) -> None:
    """Rename the build out of view in one step, then delete it."""
    aside = _staging(layout, name) / f"removing-{fingerprint}-{uuid.uuid4().hex[:8]}"
    aside.parent.mkdir(parents=True, exist_ok=True)
    os.rename(layout.build_dir(name, fingerprint), aside)
    shutil.rmtree(aside)


def _tidy(layout: Layout, name: str) -> None:
    """Clear the name's staging (ours: we hold its lock), and its folder once nothing is left in it."""
    shutil.rmtree(_staging(layout, name), ignore_errors=True)
    try:
        layout.build_root(name).rmdir()
    except OSError:
        pass  # not empty: builds (or a pointer) are left


def _staging(layout: Layout, name: str) -> Path:
    return layout.build_staging_for(name)


def _check_names(name: str, fingerprint: str | None = None) -> None:
    checked_name(name, "dataset name")
    if fingerprint is not None:
        checked_fingerprint(fingerprint)
