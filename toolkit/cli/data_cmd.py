"""``distill validate``, ``distill ingest`` and ``distill sql``: thin wrappers over the data stages."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from toolkit.cli.app import AsOfOpt, JsonOpt, app, console, err_console, layout, print_json, progress_bar
from toolkit.errors import UsageError

if TYPE_CHECKING:  # for annotations only: the CLI imports stages when a command runs
    from toolkit.ingest.config import ReadOptions

PathsArg = Annotated[
    list[Path],
    typer.Argument(
        help="Regular files or folders (.jsonl, .jsonl.gz, .jsonl.zst), or - for standard input (read once). "
        "Pipes and devices given as paths are refused; in folders they are skipped and reported.",
        show_default=False,
    ),
]
DialectOpt = Annotated[
    str | None, typer.Option("--dialect", help="Force a dialect: canonical, forge, sim, ds, ppo_legacy.")
]
SourceOpt = Annotated[
    str | None, typer.Option("--source", help="Force the source role of every row (e.g. forge, ppo).")
]
MaxLineOpt = Annotated[
    int | None,
    typer.Option(
        "--max-line-bytes",
        min=1024,
        help="Longer lines are rejected unread, only their first 4 KiB quarantined (default 4 MiB).",
        show_default=False,
    ),
]


def _read_options(dialect: str | None, source: str | None, max_line_bytes: int | None) -> ReadOptions:
    from toolkit.ingest.config import ReadOptions

    limits = {} if max_line_bytes is None else {"max_line_bytes": max_line_bytes}
    return ReadOptions(dialect=dialect, source=source, **limits)


def _counts_table(title: str, rows: list[dict[str, Any]], columns: list[str]) -> Table:
    """One row per file; ``columns`` picks among the keys of a ``FileReport``'s or a ``FileIngest``'s JSON."""
    table = Table(title=title, title_justify="left")
    table.add_column("file")
    for name in columns:
        table.add_column(name.replace("_", " "), justify="right" if name in _NUMERIC else "left")
    for row in rows:
        cells = []
        for name in columns:
            value = row.get(name)
            if isinstance(value, dict):
                cells.append(", ".join(f"{k} {v:,}" for k, v in value.items()))
            elif isinstance(value, int) and not isinstance(value, bool):
                cells.append(f"{value:,}")
            else:
                cells.append(str(value or ""))
        table.add_row(Path(row["path"]).name, *cells)
    return table


_NUMERIC = {"lines", "valid", "invalid", "blank", "duplicates"}


@app.command()
def validate(
    paths: PathsArg,
    dialect: DialectOpt = None,
    source: SourceOpt = None,
    max_line_bytes: MaxLineOpt = None,
    as_json: JsonOpt = False,
    errors_out: Annotated[Path | None, typer.Option("--errors-out", help="Write every problem to FILE.")] = None,
    max_errors: Annotated[int, typer.Option("--max-errors", help="Problems shown in the terminal.")] = 30,
) -> None:
    """Check decision logs against the contract; exit 0 if all valid, 1 if not, 2 on usage errors."""
    from toolkit.ingest.dry_run import validate_paths

    with progress_bar("validate", enabled=not as_json) as progress:
        result = validate_paths(paths, _read_options(dialect, source, max_line_bytes), progress)
    if errors_out is not None:
        errors_out.write_text("".join(p.render() + "\n" for p in result.problems), encoding="utf-8")
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        console.print(
            _counts_table(
                "validate",
                [r.model_dump(mode="json") for r in result.reports],
                ["lines", "valid", "invalid", "blank", "dialects", "reasons"],
            )
        )
        for skipped in result.skipped:
            console.print(f"{skipped.path}: {skipped.reason}", markup=False, soft_wrap=True)
        for problem in result.problems[:max_errors]:
            console.print(problem.render(), markup=False, soft_wrap=True)
        hidden = len(result.problems) - max_errors
        if hidden > 0:
            console.print(f"... {hidden:,} more problems: see --json or --errors-out FILE")
        console.print("[green]all valid[/green]" if result.ok else f"[red]{len(result.problems):,} problems[/red]")
    raise typer.Exit(0 if result.ok else 1)


@app.command()
def ingest(
    paths: PathsArg,
    dialect: DialectOpt = None,
    source: SourceOpt = None,
    max_line_bytes: MaxLineOpt = None,
    as_json: JsonOpt = False,
    fail_on_reject: Annotated[bool, typer.Option("--fail-on-reject", help="Exit 1 if any line was rejected.")] = False,
) -> None:
    """Validate logs and add them to the lake: one batch per file, bad lines to quarantine.

    Regular files only; - reads standard input once (plain, gzip or zstd), recorded as <stdin>.
    """
    from toolkit.ingest.config import IngestConfig
    from toolkit.ingest.ingest import ingest_paths

    config = IngestConfig(read=_read_options(dialect, source, max_line_bytes))
    with progress_bar("ingest", enabled=not as_json) as progress:
        result = ingest_paths(paths, layout(), config, progress)
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        rows = [f.model_dump(mode="json") for f in result.files]
        console.print(
            _counts_table(f"ingest into {layout().home}", rows, ["status", "batch_id", "valid", "invalid", "reasons"])
        )
        for file in result.files:
            if file.note and file.status != "failed":
                console.print(f"{Path(file.path).name}: {file.note}", markup=False)
        console.print(
            f"{result.rows_valid:,} rows in {len(result.batches)} new batch(es); "
            f'{result.rows_rejected:,} lines quarantined (distill sql "FROM rejects")'
        )
    for file in result.failed:
        err_console.print(
            f"[red]error:[/red] {escape(file.path)}: {escape(file.note)} (nothing of it was ingested)", soft_wrap=True
        )
    raise typer.Exit(1 if result.failed or (fail_on_reject and result.rows_rejected) else 0)


@app.command()
def sql(
    statement: Annotated[
        str, typer.Argument(help="One SELECT over decisions, games, files, batches, rejects, versions, generations.")
    ],
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV on stdout.")] = False,
    as_json: JsonOpt = False,
    parquet: Annotated[Path | None, typer.Option("--parquet", help="Write the result to a Parquet FILE.")] = None,
    max_rows: Annotated[int, typer.Option("--max-rows", help="Rows shown as a table.")] = 100,
    as_of: AsOfOpt = None,
) -> None:
    """Query the catalog with DuckDB SQL (read-only), as the lake is now or was --as-of a version or time."""
    from toolkit.catalog.query import run_query
    from toolkit.catalog.store import Catalog

    if sum([as_csv, as_json, parquet is not None]) > 1:
        raise UsageError("choose one of --csv, --json, --parquet")
    with Catalog.open(layout(), sandbox=True, as_of=as_of) as catalog:
        result = run_query(catalog, statement)
    if parquet is not None:
        import pyarrow.parquet as pq

        pq.write_table(result, parquet)
        console.print(f"wrote {result.num_rows:,} rows to {parquet}")
    elif as_json:
        print_json([{k: _plain(v) for k, v in row.items()} for row in result.to_pylist()])
    elif as_csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(result.column_names)
        for row in result.to_pylist():
            writer.writerow([_cell(v) for v in row.values()])
    else:
        table = Table(*result.column_names)
        for row in result.slice(0, max_rows).to_pylist():
            table.add_row(*[_cell(v)[:80] for v in row.values()])
        console.print(table)
        if result.num_rows > max_rows:
            console.print(f"({result.num_rows:,} rows, {max_rows} shown: --max-rows, --csv or --json for all)")


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(_plain(value), default=str)
    return str(_plain(value))
