"""``distill validate``, ``distill ingest`` and ``distill sql``: thin wrappers over the data stages."""

from __future__ import annotations

import csv
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.text import Text

from toolkit.catalog.sandbox import SandboxLimits
from toolkit.cli.app import (
    AsOfOpt,
    JsonOpt,
    Table,
    app,
    console,
    err_console,
    flags_given,
    layout,
    model_option,
    print_json,
    progress_bar,
)
from toolkit.errors import ConfigError, UsageError
from toolkit.ingest.config import ReadOptions
from toolkit.limits import MAX_ERRORS, MAX_ROWS

if TYPE_CHECKING:  # for annotations only: the CLI imports stages when a command runs
    from toolkit.catalog.query import QueryResult
    from toolkit.catalog.store import Catalog

PathsArg = Annotated[
    list[Path],
    typer.Argument(
        help="Regular files or folders (.jsonl, .jsonl.gz, .jsonl.zst), or - for standard input (read once). "
        "Pipes and devices given as paths are refused; in folders they are skipped and reported.",
        show_default=False,
    ),
]
DialectOpt = Annotated[str | None, model_option(ReadOptions, "dialect", "--dialect")]
SourceOpt = Annotated[str | None, model_option(ReadOptions, "source", "--source")]
MaxLineOpt = Annotated[int | None, model_option(ReadOptions, "max_line_bytes", "--max-line-bytes")]


def _read_options(dialect: str | None, source: str | None, max_line_bytes: int | None) -> ReadOptions:
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


@app.command("validate")
def validate_command(
    paths: PathsArg,
    dialect: DialectOpt = None,
    source: SourceOpt = None,
    max_line_bytes: MaxLineOpt = None,
    as_json: JsonOpt = False,
    errors_out: Annotated[Path | None, typer.Option("--errors-out", help="Write every problem to FILE.")] = None,
    max_errors: Annotated[
        int, typer.Option("--max-errors", max=MAX_ERRORS, help="Problems shown in the terminal.")
    ] = 30,
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
        console.print(
            "[green]all valid[/green]" if result.ok else f"[red]{len(result.problems):,} problems[/red]", markup=True
        )
    raise typer.Exit(0 if result.ok else 1)


@app.command("ingest")
def ingest_command(
    paths: PathsArg,
    dialect: DialectOpt = None,
    source: SourceOpt = None,
    max_line_bytes: MaxLineOpt = None,
    as_json: JsonOpt = False,
    fail_on_reject: Annotated[
        bool,
        typer.Option(
            "--strict",
            "--fail-on-reject",
            help="Exit 1 if any line was quarantined (the good lines are ingested all the same).",
        ),
    ] = False,
) -> None:
    """Validate logs and add them to the lake: one batch per file, bad lines to quarantine.

    Regular files only; - reads standard input once (plain, gzip or zstd), recorded as <stdin>. Exit code 0 when
    every file was ingested, quarantined lines or not (they are kept, byte for byte; `distill sql "FROM
    reject_reasons"` counts them by reason); 1 when a file could not be read, or, with --strict, when any line was
    quarantined. `distill validate` checks without ingesting and exits 1 on any bad line.
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
        new = f"{result.rows_valid:,} rows in {len(result.batches)} new batch(es)"
        console.print(f"{new}; {result.rows_rejected:,} lines quarantined")
        if result.rows_rejected:
            console.print(
                'by reason: distill sql "FROM reject_reasons"; line by line: '
                'distill sql "SELECT source_file, source_line, code, line FROM rejects"',
                markup=False,
            )
    for file in result.failed:
        err_console.print(
            f"[red]error:[/red] {escape(file.path)}: {escape(file.note)} (nothing of it was ingested)",
            soft_wrap=True,
            markup=True,
        )
    raise typer.Exit(1 if result.failed or (fail_on_reject and result.rows_rejected) else 0)


@app.command("sql")
def sql_command(
    statement: Annotated[
        str | None,
        typer.Argument(
            help="One read-only query (SELECT, FROM, WITH, PIVOT, DESCRIBE, SUMMARIZE, SHOW, EXPLAIN...) over the "
            "views; with --schema, a view's name.",
            show_default=False,
        ),
    ] = None,
    schema: Annotated[
        bool, typer.Option("--schema", help="List the views, or with a VIEW its columns: types and descriptions.")
    ] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV on stdout (every row, streamed).")] = False,
    as_json: JsonOpt = False,
    parquet: Annotated[Path | None, typer.Option("--parquet", help="Write the result to a Parquet FILE.")] = None,
    max_rows: Annotated[int, typer.Option("--max-rows", max=MAX_ROWS, min=0, help="Rows shown as a table.")] = 100,
    as_of: AsOfOpt = None,
    timeout: Annotated[float | None, model_option(SandboxLimits, "timeout", "--timeout")] = None,
    memory_limit: Annotated[str | None, model_option(SandboxLimits, "memory_limit", "--memory-limit")] = None,
) -> None:
    """Query the catalog with DuckDB SQL (read-only), as the lake is now or was --as-of a version or time.

    Views (distill sql --schema [VIEW] lists their columns, with types and descriptions):
    decisions (one row per decision: the canonical record and its lineage),
    games (one row per game),
    batches (one per ingested batch: review status, retirement),
    files (one per ingested file),
    rejects (one per quarantined line: reason code, text, exact bytes),
    reject_reasons (the quarantine counted by reason code),
    quarantine (the quarantine files as stored),
    versions (the lake's history, one row per version),
    generations (one record per loop generation: evaluations, gains, gates, data, ratings),
    label_scores (one per decision of every build distill check labels scored).

    Tables print whole (long values wrap; too many columns for the terminal: one block per row);
    --csv, --json and --parquet write every row.
    """
    from toolkit.catalog.lake import Lake
    from toolkit.catalog.query import interrupt_on_sigint, start_query

    if sum([as_csv, as_json, parquet is not None]) > 1:
        raise UsageError("choose one of --csv, --json, --parquet")
    if schema and (as_csv or parquet is not None):
        raise UsageError("--schema prints a table, or JSON with --json")
    if statement is None and not schema:
        raise UsageError("give a statement, or --schema to list the views", hint='distill sql "FROM versions"')
    limits = _sandbox_limits(timeout, memory_limit)
    with Lake.open(layout()).at(as_of, sandbox=True, limits=limits) as catalog, interrupt_on_sigint(catalog):
        if schema or statement is None:  # (None only with --schema: refused above otherwise)
            _print_schema(catalog, statement, as_json)
            return
        result = start_query(catalog, statement)
        if parquet is not None:
            console.print(f"wrote {_write_parquet(result, parquet):,} rows to {parquet}", markup=False)
            return
        try:
            if as_json:
                _write_json(result)
            elif as_csv:
                _write_csv(result)
            else:
                _print_table(result, max_rows)
        except BrokenPipeError:  # the reader stopped early (| head): the rest is not wanted
            _silence_stdout()


def _print_schema(catalog: Catalog, view: str | None, as_json: bool) -> None:
    """The views (``view`` None) or one view's columns, as a table (no markup read in them) or JSON."""
    from toolkit.catalog.query import describe_views

    described = describe_views(catalog, view)
    if as_json:
        print_json(described[0].model_dump() if view else [v.model_dump() for v in described])
        return
    if view is None:
        table = Table(title="views (distill sql --schema VIEW lists a view's columns)", title_justify="left")
        for name in ("view", "columns", "ordered by", "description"):
            table.add_column(name, overflow="fold", justify="right" if name == "columns" else "left")
        for one in described:
            order = one.order or "none (use ORDER BY)"
            table.add_row(*map(Text, (one.name, str(len(one.columns)), order, one.description)))
        console.print(table)
        return
    (one,) = described
    order = f"ordered by {one.order}" if one.order else "in no order (use ORDER BY)"
    table = Table(title=Text(f"{one.name}: {one.description} Rows {order}."), title_justify="left")
    for name in ("column", "type", "description"):
        table.add_column(name, overflow="fold")
    for column in one.columns:
        table.add_row(*map(Text, (column.name, column.type, column.description)))
    console.print(table)


def _sandbox_limits(timeout: float | None, memory_limit: str | None) -> SandboxLimits:
    from pydantic import ValidationError

    from toolkit.config import validation_message

    try:
        return SandboxLimits(**flags_given(timeout=timeout, memory_limit=memory_limit))
    except ValidationError as error:
        raise ConfigError(validation_message(error, as_flags=True), hint="see distill sql --help") from None


def _write_parquet(result: QueryResult, path: Path) -> int:
    """Stream the rows into a Parquet file (written whole or not at all); returns how many."""
    import pyarrow.parquet as pq

    result.check_parquet()
    temporary = path.with_name(f".{path.name}.tmp")
    rows, writer = 0, None
    try:
        for batch in result.arrow_batches():
            if writer is None:
                writer = pq.ParquetWriter(temporary, batch.schema)
            writer.write_batch(batch)
            rows += batch.num_rows
        if writer is None:  # no rows: the columns still
            pq.write_table(result.to_arrow_table(), temporary)
        else:
            writer.close()
            writer = None
        temporary.replace(path)
    finally:
        if writer is not None:
            writer.close()
        temporary.unlink(missing_ok=True)
    return rows


def _write_json(result: QueryResult) -> None:
    """One JSON array, one row (an object) a line, written as the rows come."""
    out = sys.stdout
    out.write("[")
    separator = "\n"
    for row in result.json_rows():
        out.write(separator + row)
        separator = ",\n"
    out.write("\n]\n" if separator != "\n" else "]\n")


def _write_csv(result: QueryResult) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(result.columns)
    writer.writerows(result.text_rows())


def _print_table(result: QueryResult, max_rows: int) -> None:
    """The rows as a table whose cells wrap (no value is cut), or, when the terminal is too narrow for one column
    of :data:`_MIN_CELL` characters each, as one block per row (``column  value`` lines)."""
    names = [_terminal_cell(name) for name in result.columns]
    as_blocks = len(names) * (_MIN_CELL + 3) + 1 > console.width
    table = Table() if not as_blocks else None
    for name in names if table is not None else ():
        table.add_column(name, overflow="fold")
    shown = 0
    for row in result.text_rows(max_rows + 1):
        if shown == max_rows:
            if table is not None:
                console.print(table)
            console.print(f"(more than {max_rows:,} rows; --max-rows N, --csv or --json for all)", markup=False)
            return
        cells = [_terminal_cell(value) for value in row]
        if table is not None:
            table.add_row(*cells)
        else:
            console.print(_row_block(shown + 1, names, cells))
        shown += 1
    if table is not None:
        console.print(table)
    elif shown == 0:
        console.print(Text("(no rows) columns: ") + Text(", ").join(names))


_MIN_CELL = 8  # characters a table column needs at least, else rows print as blocks


def _row_block(number: int, names: list[Text], cells: list[Text]) -> Table:
    block = Table(box=None, show_header=False, title=f"row {number}", title_justify="left", pad_edge=False)
    block.add_column(style="bold", no_wrap=True)
    block.add_column(overflow="fold")
    for name, cell in zip(names, cells, strict=True):
        block.add_row(name, cell)
    return block


_CONTROL = {i: f"\\x{i:02x}" for i in (*range(0x20), *range(0x7F, 0xA0))} | {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _terminal_cell(value: str | None) -> Text:
    """A value as a table cell: NULL dimmed, control characters escaped (no terminal sequence gets through), no
    markup read, whole (the table wraps it)."""
    if value is None:
        return Text("NULL", style="dim")
    return Text(value.translate(_CONTROL))


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush of it does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
