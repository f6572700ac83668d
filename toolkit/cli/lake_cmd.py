"""``distill lake ...``: the lake's versions and lifecycle (history, retire, restore, compact, vacuum, reindex,
migrate), each through :class:`~toolkit.catalog.lake.Lake`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from toolkit.cli.app import JsonOpt, Table, app, console, layout, print_json
from toolkit.limits import DEFAULT_TARGET_MB, MAX_GENERATION, MAX_MB, MAX_RETAIN_DAYS

if TYPE_CHECKING:  # for annotations only: the CLI imports stages when a command runs
    from toolkit.catalog.records import VersionRecord

lake_app = typer.Typer(
    help="The lake's versions and lifecycle: history, retire and restore batches, compact, vacuum, reindex, migrate.",
    no_args_is_help=True,
)
app.add_typer(lake_app, name="lake")

BatchesArg = Annotated[list[str] | None, typer.Argument(help="Batch ids.", show_default=False)]
FileOpt = Annotated[
    list[Path] | None, typer.Option("--file", help="A log file that was ingested (by its content, or its path).")
]
SourceOpt = Annotated[str | None, typer.Option("--source", help="Every batch holding rows of this source.")]
GenerationOpt = Annotated[
    int | None, typer.Option("--generation", max=MAX_GENERATION, help="... of this generation (with --source).")
]


@lake_app.command("history")
def lake_history_command(as_json: JsonOpt = False) -> None:
    """Every version of the lake: when, what changed it, which batches, why."""
    from toolkit.catalog.lake import Lake

    with Lake.open(layout()) as lake:
        versions, horizon = lake.history(), lake.horizon
    if as_json:
        print_json([v.model_dump(mode="json") for v in versions])
        return
    table = Table(title=f"lake versions under {layout().lake}", title_justify="left")
    for name in ("version", "committed (UTC)", "operation", "batches", "rows +/-", "files +/-", "reason"):
        table.add_column(name, justify="right" if name in ("version", "rows +/-", "files +/-") else "left")
    for v in versions:
        table.add_row(
            str(v.version),
            v.committed_at.isoformat(timespec="seconds"),
            v.operation,
            _batches(v.batches),
            f"+{v.rows_added:,}/-{v.rows_removed:,}",
            f"+{v.files_added}/-{v.files_removed}",
            v.reason or "",
        )
    console.print(table)
    if horizon:
        console.print(f"versions before {horizon} were vacuumed: they can no longer be read (--as-of)")


@lake_app.command("retire")
def lake_retire_command(
    batches: BatchesArg = None,
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in the lake's history and shown by builds).")] = "",
    files: FileOpt = None,
    source: SourceOpt = None,
    generation: GenerationOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Retire batches: from the next version on, their rows are in no view, build, gate, export or dashboard."""
    from toolkit.catalog.lake import Lake

    with Lake.open(layout(), write=True) as lake:
        chosen = lake.select_batches(batches or [], files=files or [], source=source, generation=generation)
        record = lake.retire(chosen, reason)
    _print_version(record, as_json, "retired")


@lake_app.command("restore")
def lake_restore_command(
    batches: BatchesArg = None,
    reason: Annotated[str | None, typer.Option("--reason", help="Why (kept in the lake's history).")] = None,
    files: FileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Bring retired batches back, from the next version on."""
    from toolkit.catalog.lake import Lake

    with Lake.open(layout(), write=True) as lake:
        record = lake.restore(lake.select_batches(batches or [], files=files or []), reason)
    _print_version(record, as_json, "restored")


@lake_app.command("compact")
def lake_compact_command(
    target_mb: Annotated[
        float, typer.Option("--target-mb", max=MAX_MB, help="Size of the merged files.")
    ] = DEFAULT_TARGET_MB,
    as_json: JsonOpt = False,
) -> None:
    """Merge small neighbouring files (of one source and generation) into files of about --target-mb."""
    from toolkit.catalog.lake import Lake

    with Lake.open(layout(), write=True) as lake:
        record = lake.compact(target_mb)
    if record is None:
        if as_json:
            print_json(None)
        else:
            console.print("nothing to compact: no two neighbouring small files")
        return
    _print_version(record, as_json, "compacted")


@lake_app.command("vacuum")
def lake_vacuum_command(
    retain: Annotated[
        float,
        typer.Option(
            "--retain", max=MAX_RETAIN_DAYS, help="Days of versions that stay readable (--as-of); older files go."
        ),
    ] = 7,
    as_json: JsonOpt = False,
) -> None:
    """Delete the files no version of the last --retain days needs (retired, compacted, or never committed)."""
    from toolkit.catalog.lake import Lake

    with Lake.open(layout(), write=True) as lake:
        result = lake.vacuum(retain)
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    if result.version is None:
        console.print("nothing to vacuum")
        return
    console.print(
        f"version {result.version.version}: deleted {result.files_deleted} files "
        f"({result.bytes_deleted / 1e6:,.1f} MB); versions from {result.horizon} on can be read"
    )


@lake_app.command("reindex")
def lake_reindex_command(as_json: JsonOpt = False) -> None:
    """Rebuild the catalog (the lake's index) from the Delta log alone, and say what the catalog was before.

    Distill does this by itself whenever the catalog is missing, behind, corrupt or of another log; this command
    does it on demand (after restoring or copying a lake, say).
    """
    from toolkit.catalog.lake import reindex

    result = reindex(layout())
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    console.print(
        f"the catalog was {result.found}; rebuilt from the log in {result.seconds:.2f} s: versions 0 to "
        f"{result.version}, {result.batches} batches, {result.live_files} live files holding {result.live_rows:,} "
        f"rows" + (f"; versions before {result.horizon} were vacuumed" if result.horizon else "")
    )


@lake_app.command("migrate")
def lake_migrate_command(as_json: JsonOpt = False) -> None:
    """Move a data root written by an older Distill onto lake format 3 (the log holds every fact; partitions
    declared): format 2 by one commit amending the log, format 1 (plain Parquet) into a new table; no file is
    rewritten."""
    from toolkit.catalog.migrate import migrate

    result = migrate(layout())
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    console.print(result.message)


def _batches(batches: list[str]) -> str:
    return ", ".join(batches) if len(batches) <= 2 else f"{batches[0]}, ... ({len(batches)})"


def _print_version(record: VersionRecord, as_json: bool, verb: str) -> None:
    if as_json:
        print_json(record.model_dump(mode="json"))
        return
    console.print(
        f"version {record.version}: {verb} {len(record.batches)} batch(es) ({', '.join(record.batches)}); "
        f"rows -{record.rows_removed:,} +{record.rows_added:,}, files -{record.files_removed} +{record.files_added}"
    )
