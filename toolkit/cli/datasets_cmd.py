"""``distill datasets list | show | rm | prune | diff``: look at built datasets, remove old builds, compare two.

Which builds promoted models name (listed, and protected from ``rm`` and
``prune``) is :func:`toolkit.loop.promoted.promoted_models`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from toolkit.cli.app import BuildArg, FingerprintOpt, JsonOpt, Table, app, console, err_console, layout, print_json
from toolkit.cli.build_cmd import show_manifest
from toolkit.errors import UsageError
from toolkit.layout import FINGERPRINT_PATTERN
from toolkit.limits import MAX_VERSION

if TYPE_CHECKING:  # for annotations only: the CLI imports stages when a command runs
    from toolkit.datasets.diff import BuildDiff
    from toolkit.datasets.inventory import BuildEntry
    from toolkit.datasets.ref import BuildRef
    from toolkit.datasets.remove import Removal

datasets_app = typer.Typer(
    help="List built datasets, show their manifests, remove or prune builds, compare two builds.",
    no_args_is_help=True,
)
app.add_typer(datasets_app, name="datasets")

NameArg = Annotated[str, typer.Argument(help="Dataset name.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Remove builds that promoted models' cards name too.")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Say what would be removed; remove nothing.")]


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        err_console.print(f"[yellow]warning:[/yellow] {escape(warning)}", soft_wrap=True, markup=True)


@datasets_app.command("list")
def datasets_list_command(
    every: Annotated[bool, typer.Option("--all", help="Every build of each name, not only its latest.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Every dataset name with its latest build (--all: every build), and the promoted models that name each.

    A build folder that vanished or a manifest that cannot be read is a warning on stderr, never an error."""
    from toolkit.datasets.inventory import list_inventory
    from toolkit.loop.promoted import promoted_models

    home = layout()
    models, model_warnings = promoted_models(home)
    inventory = list_inventory(home, every=every, models=models)
    _warn(model_warnings + inventory.warnings)
    if as_json:
        print_json([entry.model_dump(mode="json") for entry in inventory.builds])
        return
    if not inventory.builds:
        console.print(
            "no builds to list: see the warnings" if inventory.warnings else "no datasets yet: run `distill build`"
        )
        return
    _list_table(inventory.builds, home.builds, every)


def _list_table(entries: list[BuildEntry], where: Path, every: bool) -> None:
    table = Table(title=f"{'builds' if every else 'datasets'} under {where}" + (" (* latest)" if every else ""))
    for column in ("name", "fingerprint", "created (UTC)"):
        table.add_column(column, no_wrap=True)
    for column in ("train rows", "holdout rows", "lake"):
        table.add_column(column, justify="right")
    table.add_column("promoted models")
    for entry in entries:
        table.add_row(
            entry.name,
            entry.fingerprint + (" *" if every and entry.latest else ""),
            f"{entry.created_at:%Y-%m-%d %H:%M}" + ("" if entry.created_recorded else " ~"),
            f"{entry.train.rows:,}",
            f"{entry.holdout.rows:,}",
            "" if entry.lake_version is None else str(entry.lake_version),
            ", ".join(entry.models),
        )
    console.print(table)
    if any(not entry.created_recorded for entry in entries):
        console.print("~ built before manifests recorded the time: the folder's modification time")


@datasets_app.command("show")
def datasets_show_command(build: BuildArg, fingerprint: FingerprintOpt = None, as_json: JsonOpt = False) -> None:
    """Summarise a build's manifest (``--json`` prints the whole manifest)."""
    from toolkit.datasets.dataset import open_dataset
    from toolkit.datasets.inventory import retired_inputs
    from toolkit.datasets.ref import BuildRef

    name = BuildRef.parse(build, fingerprint).name
    dataset = open_dataset(layout(), build, fingerprint)
    _warn(
        [
            f"batch {r.batch_id}, which this build read, was retired from the lake since ({r.reason}): a build "
            "made now would leave it out"
            for r in retired_inputs(layout(), dataset.manifest)
        ]
    )
    if as_json:
        print_json(dataset.manifest.model_dump(mode="json"))
        return
    created = dataset.manifest.created_at
    when = f", built {created:%Y-%m-%d %H:%M:%S} UTC" if created else ""
    console.print(
        f"[bold]{escape(name)}[/bold] {dataset.fingerprint} at {escape(str(dataset.root))}{when}", markup=True
    )
    show_manifest(dataset.manifest)


@datasets_app.command("rm")
def datasets_rm_command(
    build: Annotated[str, typer.Argument(help="The build: NAME@FINGERPRINT (`distill datasets list --all`).")],
    fingerprint: Annotated[
        str | None, typer.Argument(help="Its fingerprint, where BUILD is a NAME alone.", show_default=False)
    ] = None,
    force: ForceOpt = False,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove one build. Refused (exit 1, nothing changed) when a promoted model's card names it, unless --force;
    LATEST moves to the newest build left."""
    from toolkit.datasets.ref import BuildRef
    from toolkit.datasets.remove import remove_build
    from toolkit.loop.promoted import promoted_models

    ref = BuildRef.parse(build, fingerprint)
    if ref.fingerprint is None:
        raise UsageError(
            f"{build!r} is not a build to remove: a dataset's name alone names its latest build",
            hint=f"give NAME@FINGERPRINT, e.g. {ref.name}@<fingerprint> (`distill datasets list --all`)",
        )
    name, fingerprint = ref.name, ref.fingerprint
    home = layout()
    models, warnings = promoted_models(home)
    _warn(warnings)
    _show_removal(remove_build(home, name, fingerprint, models=models, force=force, dry_run=dry_run), as_json)


@datasets_app.command("prune")
def datasets_prune_command(
    name: NameArg,
    keep: Annotated[int, typer.Option("--keep", max=MAX_VERSION, min=0, help="How many of the newest builds to keep.")],
    force: ForceOpt = False,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove every build of NAME but the --keep newest; builds a promoted model's card names stay unless --force."""
    from toolkit.datasets.remove import prune_builds
    from toolkit.loop.promoted import promoted_models

    home = layout()
    models, warnings = promoted_models(home)
    _warn(warnings)
    _show_removal(prune_builds(home, name, keep=keep, models=models, force=force, dry_run=dry_run), as_json)


def _show_removal(removal: Removal, as_json: bool) -> None:
    _warn(removal.warnings)
    if as_json:
        print_json(removal.model_dump(mode="json"))
        return
    verb = "would remove" if removal.dry_run else "removed"
    listed = ", ".join(removal.removed) or "nothing"
    console.print(
        f"[bold]{escape(removal.name)}[/bold]: {verb} {len(removal.removed)} build(s): {escape(listed)}", markup=True
    )
    for fingerprint, models in removal.forced.items():
        console.print(f"  {fingerprint} was named by promoted models (--force): {', '.join(models)}")
    for fingerprint, models in removal.protected.items():
        console.print(f"  kept {fingerprint}: named by promoted models {', '.join(models)} (--force removes it)")
    console.print(f"  left: {', '.join(removal.kept) or 'none'}")
    console.print(f"  LATEST: {removal.latest}" if removal.latest else "  no LATEST: no build of it is left")


@datasets_app.command("diff")
def datasets_diff_command(
    before: Annotated[str, typer.Argument(help="The first build: NAME@FINGERPRINT (or NAME, its latest).")],
    after: Annotated[
        str, typer.Argument(help="The second: NAME@FINGERPRINT, NAME, or a FINGERPRINT of the same NAME.")
    ],
    third: Annotated[
        str | None, typer.Argument(help="(NAME BEFORE AFTER: fingerprints of one NAME.)", show_default=False)
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """What changed from one build of a dataset to another: rows by source, generation and batch; labels per
    source; config; versions; whether the holdout is the same."""
    from toolkit.datasets.diff import diff_builds
    from toolkit.datasets.ref import SEPARATOR, BuildRef

    if third is not None:  # NAME FP FP
        before, after = f"{before}{SEPARATOR}{after}", f"{before}{SEPARATOR}{third}"
    first = BuildRef.parse(before)
    second = BuildRef.parse(f"{first.name}{SEPARATOR}{after}" if _is_build_of(first.name, after) else after)
    if first.name != second.name:
        raise UsageError(f"{first} and {second} are builds of two datasets", hint="diff two builds of one name")
    result = diff_builds(layout(), first.name, _fingerprint(first), _fingerprint(second))
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    _show_diff(result)


def _is_build_of(name: str, text: str) -> bool:
    """Whether ``text`` is the fingerprint of a build of ``name`` (else it names a dataset, or NAME@FINGERPRINT)."""
    return re.fullmatch(FINGERPRINT_PATTERN, text) is not None and layout().build_dir(name, text).is_dir()


def _fingerprint(ref: BuildRef) -> str:
    """The build's fingerprint: the one named, or the latest build's."""
    from toolkit.datasets.dataset import open_dataset

    return ref.fingerprint or open_dataset(layout(), ref.name).fingerprint


def _show_diff(result: BuildDiff) -> None:
    console.print(
        f"[bold]{escape(result.name)}[/bold] {result.before} -> {result.after}: {result.rows_before:,} -> "
        f"{result.rows_after:,} rows, +{result.added:,} -{result.removed:,}",
        markup=True,
    )
    if result.rows:
        table = Table(title="rows added and removed (decision and batch)")
        for column in ("split", "source", "generation", "batch", "added", "removed"):
            table.add_column(column, justify="right" if column in ("added", "removed") else "left")
        for row in result.rows:
            generation = "none" if row.generation is None else str(row.generation)
            table.add_row(row.split, row.source, generation, row.batch_id, f"+{row.added:,}", f"-{row.removed:,}")
        console.print(table)
    labels = Table(title="training labels per source (rows, share)")
    for column in ("source", "action", "before", "after", "change"):
        labels.add_column(column, justify="left" if column in ("source", "action") else "right")
    for shift in result.labels:
        labels.add_row(
            shift.source,
            shift.action,
            f"{shift.before:,} ({shift.share_before:.1%})",
            f"{shift.after:,} ({shift.share_after:.1%})",
            f"{shift.share_change * 100:+.1f} pt",
        )
    console.print(labels)
    for title, changes in (("config", result.config), ("versions", result.versions)):
        for change in changes:
            console.print(f"{title}: {change.field}: {change.before!r} -> {change.after!r}")
        if not changes:
            console.print(f"{title}: the same")
    holdout = result.holdout
    same = "identical" if holdout.identical else f"differs (+{holdout.added:,} -{holdout.removed:,} rows)"
    files = "the same files" if holdout.same_files else "other files"
    console.print(f"holdout: {same}, {files}; {holdout.rows_before:,} -> {holdout.rows_after:,} rows")
    for change in holdout.settings:
        console.print(f"holdout: {change.field}: {change.before!r} -> {change.after!r}")
