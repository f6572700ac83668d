"""Measure Delta Lake (delta-rs) against Apache Iceberg (pyiceberg) for the lake: ingest, time travel, retiring a batch.

A one-off comparison for the choice of the lake's table format; it is not part of ``make bench`` (its name does
not match ``bench/bench_*.py`` on purpose) and it does not import ``toolkit``. It needs its own venv::

    python3 -m venv /work/venv-cmp
    /work/venv-cmp/bin/pip install pyarrow==26.0.1 duckdb==2.0.1 deltalake==1.6.6 'pyiceberg[sql-sqlite]==0.12.*'

Input: a Distill lake (one Parquet file per batch), e.g. ~1M rows made with::

    python -m toolkit --home /tmp/fmtcmp/home simulate --games 9000 --out /tmp/fmtcmp/logs --shard-games 1000
    python -m toolkit --home /tmp/fmtcmp/home ingest /tmp/fmtcmp/logs

then::

    /work/venv-cmp/bin/python bench/compare_table_formats.py /tmp/fmtcmp/home/lake --work /tmp/fmtcmp/work --reps 3

Each (table, phase) runs in a fresh process (its peak RSS is ``ru_maxrss``, imports included; ``base`` is the RSS
after the imports). Tables:

- ``parquet``: baseline, ``pyarrow.parquet.write_table`` with the lake's options (zstd 1, 64k-row groups, statistics
  on top-level scalar columns), no log; its "versions" are lists of files.
- ``delta_write``: ``write_deltalake(mode="append")`` of each batch's Arrow table (delta-rs encodes; zstd 1).
- ``delta_add``: Distill writes the Parquet file (as ``parquet``) under the table root and commits it with
  ``create_write_transaction([AddAction])`` (stats from the file footer), custom metadata and an app transaction.
- ``ice_append``: pyiceberg ``table.append(arrow_table)`` (zstd 1, 64k-row groups), SQL catalog on sqlite.
- ``ice_add``: Distill writes the Parquet file under the table's ``data/`` and commits it with ``table.add_files``.

Phases: ``ingest`` (one commit per batch), ``read`` (count and GROUP BY source through DuckDB at the current and an
earlier version, two ways each), ``retire`` (drop one batch; reports the bytes of the files it wrote, then reclaims:
Delta ``vacuum``, Iceberg ``expire_snapshots``); then ``--commits`` small commits to see the log grow. Each read and
retire checks its row counts (now and before the retire) and fails loudly when they are wrong.

Last run (2026-12-04; 1,049,338 rows in 9 batches; 3 runs; load average 4.6-6.1 on 2 cores, so CPU seconds are
the steadier figure): ingest CPU s parquet 3.02, delta_write 3.34, delta_add 3.09 (9 commits 0.09 s), ice_append
3.78, ice_add 3.33 (9 add_files 0.65 s); time travel through DuckDB 9-35 ms (Delta) vs 10-69 ms (Iceberg); retire
by RemoveActions 0.023 s, Delta delete 0.28-0.36 s (reads the file, writes none), Iceberg delete 1.17 s with the
default truncate(16) metrics (rewrite path) vs 0.069 s with full metrics on batch_id; 200 small commits: Delta
3 -> 32 ms a commit, 0.55 MiB log; Iceberg 50 -> 288 ms, 19 MiB metadata. Total 270 s.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

KINDS = ("parquet", "delta_write", "delta_add", "ice_append", "ice_add")
ROW_GROUP_ROWS = 65_536
RESULT_PREFIX = "CMP-RESULT "


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    """User + system CPU seconds of this process, all threads (less sensitive than wall time to a busy machine)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def lake_options(schema: pa.Schema) -> dict[str, Any]:
    """The lake's Parquet options (toolkit.ingest.staging.lake_parquet_options)."""
    scalars = [f.name for f in schema if not pa.types.is_nested(f.type)]
    return {"compression": "zstd", "compression_level": 1, "write_statistics": scalars}


def write_lake_file(table: pa.Table, path: Path) -> pq.FileMetaData:
    path.parent.mkdir(parents=True, exist_ok=True)
    collector: list[pq.FileMetaData] = []
    pq.write_table(
        table, path, row_group_size=ROW_GROUP_ROWS, metadata_collector=collector, **lake_options(table.schema)
    )
    return collector[0]


def file_stats(meta: pq.FileMetaData, schema: pa.Schema) -> dict[str, Any]:
    """Delta ``stats`` JSON of one file from its footer: numRecords, and min/max/nullCount of top-level scalars."""
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    index = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    for field in schema:
        if pa.types.is_nested(field.type) or field.name not in index:
            continue
        col = index[field.name]
        lo = hi = None
        count = 0
        for rg in range(meta.num_row_groups):
            st = meta.row_group(rg).column(col).statistics
            if st is None or not st.has_min_max:
                lo = hi = None
                break
            count += st.null_count or 0
            lo = st.min if lo is None else min(lo, st.min)
            hi = st.max if hi is None else max(hi, st.max)
        if lo is not None and isinstance(lo, (int, float, str, bool)):
            mins[field.name], maxs[field.name], nulls[field.name] = lo, hi, count
    return {"numRecords": meta.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}


def tree_files(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def sizes(root: Path, meta_dirs: tuple[str, ...]) -> dict[str, int]:
    files = tree_files(root)
    meta = sum(s for p, s in files.items() if any(f"/{d}" in p for d in meta_dirs) or p.endswith(".db"))
    return {"bytes_total": sum(files.values()), "bytes_meta": meta, "files": len(files)}


def quiet() -> None:
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)  # "PyArrow statistics missing for column N" per file
    warnings.filterwarnings("ignore", module="pyiceberg")


def iceberg_catalog(root: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    root.mkdir(parents=True, exist_ok=True)
    return SqlCatalog("distill", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")


def sql_list(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.removeprefix("file://").replace("'", "''") + "'" for p in paths) + "]"


# -- ingest ---------------------------------------------------------------------------------------------------------


def create(kind: str, root: Path, schema: pa.Schema) -> Any:
    """The empty table (Delta: version 0; Iceberg: no snapshot yet), so that ingest times only the appends."""
    from deltalake import DeltaTable

    if kind.startswith("delta"):
        config = None
        if kind == "delta_add":
            # delta-rs keeps file stats of the first 32 leaf columns only unless told which: batch_id is leaf ~75
            scalars = ",".join(f.name for f in schema if not pa.types.is_nested(f.type))
            config = {"delta.dataSkippingStatsColumns": scalars}
        return DeltaTable.create(str(root), schema, name="decisions", configuration=config)
    if kind.startswith("ice"):
        props = {
            "write.parquet.compression-codec": "zstd",
            "write.parquet.compression-level": "1",
            "write.parquet.row-group-limit": str(ROW_GROUP_ROWS),
        }
        if kind == "ice_add":
            props["write.metadata.metrics.column.batch_id"] = "full"  # the default truncate(16) < its 17 chars
        cat = iceberg_catalog(root)
        cat.create_namespace("lake")
        return cat.create_table("lake.decisions", schema=schema, properties=props)
    root.mkdir(parents=True)
    return None


def ingest(kind: str, inputs: list[str], root: Path) -> dict[str, Any]:
    from deltalake import CommitProperties, DeltaTable, Transaction, WriterProperties, write_deltalake
    from deltalake.transaction import AddAction

    out: dict[str, Any] = {"base_mib": rss_mib(), "batches": [], "rows": [], "versions": [], "files_per_version": []}
    t0 = time.perf_counter()
    handle = create(kind, root, pq.read_schema(inputs[0]))
    out["create_s"] = time.perf_counter() - t0
    wall = cpu = commit = 0.0
    for i, src in enumerate(inputs, start=1):
        table = pq.read_table(src)  # the batch Distill holds in memory; not timed
        bid = table["batch_id"][0].as_py()
        out["batches"].append(bid)
        out["rows"].append(table.num_rows)
        rel = f"batch={bid}/part-00000.parquet"
        txn = CommitProperties(custom_metadata={"distill.batch": bid}, app_transactions=[Transaction("distill", i)])
        t0, cpu0 = time.perf_counter(), cpu_s()
        if kind == "parquet":
            write_lake_file(table, root / rel)
        elif kind == "delta_write":
            writer = WriterProperties(compression="ZSTD", compression_level=1)
            write_deltalake(str(root), table, mode="append", writer_properties=writer, commit_properties=txn)
        elif kind == "delta_add":
            meta = write_lake_file(table, root / rel)
            size = (root / rel).stat().st_size
            add = AddAction(rel, size, {}, int(time.time() * 1000), True, json.dumps(file_stats(meta, table.schema)))
            c0 = time.perf_counter()
            handle.create_write_transaction([add], "append", table.schema, commit_properties=txn)
            handle.update_incremental()  # the object stays at the version it had before its own commit (see notes)
            commit += time.perf_counter() - c0
        elif kind == "ice_append":
            handle.append(table, snapshot_properties={"distill.batch": bid})
        elif kind == "ice_add":
            path = Path(handle.location().removeprefix("file://")) / "data" / rel
            write_lake_file(table, path)
            c0 = time.perf_counter()
            handle.add_files([str(path)], snapshot_properties={"distill.batch": bid})
            commit += time.perf_counter() - c0
        wall += time.perf_counter() - t0
        cpu += cpu_s() - cpu0
        if kind == "parquet":  # a "version" of plain Parquet: the list of files the catalog would hold
            out["versions"].append(i)
            out["files_per_version"].append([str(root / f"batch={b}/part-00000.parquet") for b in out["batches"]])
        elif kind.startswith("delta"):
            latest = DeltaTable(str(root))
            out["versions"].append(latest.version())
            out["files_per_version"].append(latest.file_uris())
        else:
            out["versions"].append(handle.current_snapshot().snapshot_id)
            out["files_per_version"].append([t.file.file_path for t in handle.scan().plan_files()])
        del table
    out["ingest_s"] = wall
    out["ingest_cpu"] = cpu
    out["commit_s"] = commit
    out["peak_mib"] = rss_mib()
    out.update(sizes(root, ("_delta_log", "metadata")))
    return out


# -- read -----------------------------------------------------------------------------------------------------------


def run_queries(con: duckdb.DuckDBPyConnection, relation: Any) -> tuple[int, list[Any]]:
    """count(*) and GROUP BY source of a SQL FROM item, an Arrow dataset, or a callable making a one-shot reader."""
    results = []
    for q in ("SELECT count(*) FROM {}", "SELECT source, count(*) FROM {} GROUP BY source ORDER BY source"):
        if isinstance(relation, str):
            results.append(con.execute(q.format(relation)).fetchall())
        else:
            con.register("v", relation() if callable(relation) else relation)
            results.append(con.execute(q.format("v")).fetchall())
            con.unregister("v")
    return results[0][0][0], results[1]


def read(kind: str, root: Path, state: dict[str, Any]) -> dict[str, Any]:
    from deltalake import DeltaTable

    out: dict[str, Any] = {"base_mib": rss_mib()}
    con = duckdb.connect()
    k = len(state["versions"]) // 2
    points = {"current": len(state["versions"]), "earlier": k}
    for label, n_batches in points.items():
        version = state["versions"][n_batches - 1]
        expected = sum(state["rows"][:n_batches])
        ways: dict[str, Any] = {}
        if kind == "parquet":
            files = state["files_per_version"][n_batches - 1]
            ways["files"] = lambda files=files: f"read_parquet({sql_list(files)}, hive_partitioning=false)"
        elif kind.startswith("delta"):

            def dataset(version: int = version) -> Any:
                return DeltaTable(str(root), version=version).to_pyarrow_dataset()

            def files(version: int = version) -> str:
                uris = DeltaTable(str(root), version=version).file_uris()
                return f"read_parquet({sql_list(uris)}, hive_partitioning=false)"

            ways["dataset"], ways["files"] = dataset, files
        else:
            tbl = iceberg_catalog(root).load_table("lake.decisions")

            def reader(version: int = version) -> Any:
                scan = tbl.scan(snapshot_id=version, selected_fields=("source",))
                return lambda: scan.to_arrow_batch_reader()

            def files(version: int = version) -> str:
                paths = [t.file.file_path for t in tbl.scan(snapshot_id=version).plan_files()]
                return f"read_parquet({sql_list(paths)}, hive_partitioning=false)"

            ways["reader"], ways["files"] = reader, files
        for way, make in ways.items():
            t0 = time.perf_counter()
            n, groups = run_queries(con, make())
            elapsed = time.perf_counter() - t0
            if n != expected or sum(g[1] for g in groups) != expected:
                raise SystemExit(f"{kind} {label} {way}: {n} rows, expected {expected}")
            out[f"{label}_{way}_s"] = elapsed
    out["peak_mib"] = rss_mib()
    return out


# -- retire ---------------------------------------------------------------------------------------------------------


def retire(kind: str, root: Path, state: dict[str, Any]) -> dict[str, Any]:
    """Retire one batch by a delete on batch_id (and, for delta_add, another by RemoveActions), then reclaim."""
    from deltalake import CommitProperties, DeltaTable
    from deltalake.transaction import RemoveAction
    from pyiceberg.expressions import EqualTo

    out: dict[str, Any] = {"base_mib": rss_mib()}
    total = sum(state["rows"])
    gone = 0
    before = tree_files(root)
    victims = {"remove": 2, "delete": 4}  # batch indexes: the 3rd by RemoveActions (delta_add), the 5th by delete
    if kind == "delta_add":
        bid = state["batches"][victims["remove"]]
        t0 = time.perf_counter()
        dt = DeltaTable(str(root))
        # the batch's files, pruned by the log's stats (get_add_actions shows no batch_id stats: see notes)
        uris = dt.file_uris(file_pruning_predicate=f"batch_id = '{bid}'")
        now = int(time.time() * 1000)
        removes = [RemoveAction(os.path.relpath(uri, root), True, now) for uri in uris]
        meta = CommitProperties(custom_metadata={"distill.retire": bid})
        dt.create_write_transaction(removes, "append", dt.schema(), commit_properties=meta)
        out["retire_remove_s"] = time.perf_counter() - t0
        out["remove_files"] = len(removes)
        gone += state["rows"][victims["remove"]]
    bid = state["batches"][victims["delete"]]
    t0 = time.perf_counter()
    if kind.startswith("delta"):
        dt = DeltaTable(str(root))
        out["open_s"] = time.perf_counter() - t0
        meta = CommitProperties(custom_metadata={"distill.retire": bid})
        metrics = dt.delete(f"batch_id = '{bid}'", commit_properties=meta)
        out["retire_delete_s"] = time.perf_counter() - t0
        out["delete_metrics"] = {k: v for k, v in metrics.items() if k.startswith("num_")}
        now_rows = DeltaTable(str(root)).to_pyarrow_dataset().count_rows()
        then_rows = DeltaTable(str(root), version=state["versions"][-1]).to_pyarrow_dataset().count_rows()
    else:
        tbl = iceberg_catalog(root).load_table("lake.decisions")
        out["open_s"] = time.perf_counter() - t0
        tbl.delete(EqualTo("batch_id", bid), snapshot_properties={"distill.retire": bid})
        out["retire_delete_s"] = time.perf_counter() - t0
        summary = tbl.current_snapshot().summary
        out["delete_metrics"] = {"operation": str(summary.operation.value), **summary.additional_properties}
        now_rows = tbl.scan(selected_fields=("batch_id",)).to_arrow().num_rows
        then_rows = tbl.scan(snapshot_id=state["versions"][-1], selected_fields=("batch_id",)).to_arrow().num_rows
    gone += state["rows"][victims["delete"]]
    if now_rows != total - gone or then_rows != total:
        raise SystemExit(f"{kind} retire: {now_rows} rows now, {then_rows} before; expected {total - gone}, {total}")
    after = tree_files(root)
    new = {p: s for p, s in after.items() if p not in before}
    out["written_bytes"] = sum(new.values())
    out["written_data_files"] = sum(1 for p in new if p.endswith(".parquet"))
    # reclaim: Delta's vacuum deletes unreferenced files; pyiceberg's expire_snapshots only edits metadata
    t0 = time.perf_counter()
    if kind.startswith("delta"):
        dt = DeltaTable(str(root))
        v0 = dt.version()
        out["vacuumed_files"] = len(dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False))
        out["vacuum_commits"] = DeltaTable(str(root)).version() - v0
    else:
        keep = tbl.current_snapshot().snapshot_id
        old = [s.snapshot_id for s in tbl.snapshots() if s.snapshot_id != keep]
        tbl.maintenance.expire_snapshots().by_ids(old).commit()
        out["expired_snapshots"] = len(old)
    out["reclaim_s"] = time.perf_counter() - t0
    out["reclaimed_data_files"] = sum(1 for p in after if p.endswith(".parquet") and not Path(p).exists())
    out["peak_mib"] = rss_mib()
    return out


# -- many commits ---------------------------------------------------------------------------------------------------


def many_commits(kind: str, inputs: list[str], root: Path, n: int) -> dict[str, Any]:
    """Commit latency as the log grows: n commits of one small file each (written before the clock starts)."""
    from deltalake import CommitProperties, Transaction
    from deltalake.transaction import AddAction

    table = pq.read_table(inputs[0]).slice(0, 100)
    handle = create(kind, root, table.schema)
    latencies = []
    for i in range(1, n + 1):
        rel = f"batch=c{i:05d}/part-00000.parquet"
        if kind == "delta_add":
            meta = write_lake_file(table, root / rel)
            size = (root / rel).stat().st_size
            add = AddAction(rel, size, {}, int(time.time() * 1000), True, json.dumps(file_stats(meta, table.schema)))
            txn = CommitProperties(custom_metadata={"distill.batch": i}, app_transactions=[Transaction("distill", i)])
            t0 = time.perf_counter()
            handle.create_write_transaction([add], "append", table.schema, commit_properties=txn)
            handle.update_incremental()
        else:
            path = Path(handle.location().removeprefix("file://")) / "data" / rel
            write_lake_file(table, path)
            t0 = time.perf_counter()
            handle.add_files([str(path)], snapshot_properties={"distill.batch": str(i)})
        latencies.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    if kind == "delta_add":
        from deltalake import DeltaTable

        files = len(DeltaTable(str(root), version=n // 2).file_uris())
    else:
        tbl = iceberg_catalog(root).load_table("lake.decisions")
        files = len(list(tbl.scan(snapshot_id=tbl.snapshots()[n // 2 - 1].snapshot_id).plan_files()))
    return {
        "first10_ms": statistics.median(latencies[:10]) * 1000,
        "last10_ms": statistics.median(latencies[-10:]) * 1000,
        "total_s": sum(latencies),
        "open_mid_version_s": time.perf_counter() - t0,
        "mid_version_files": files,
        **sizes(root, ("_delta_log", "metadata")),
    }


# -- driver ---------------------------------------------------------------------------------------------------------


def child(kind: str, phase: str, inputs: list[str], root: Path) -> None:
    import deltalake  # noqa: F401  (imports are not the formats' work: load them before any clock starts)
    import pyiceberg.catalog.sql  # noqa: F401
    import pyiceberg.expressions  # noqa: F401
    import pyiceberg.io.pyarrow  # noqa: F401

    quiet()
    state_file = root.parent / f"{root.name}.state.json"
    if phase.startswith("commits"):
        result = many_commits(kind, inputs, root, int(phase.removeprefix("commits")))
    elif phase == "ingest":
        result = ingest(kind, inputs, root)
        state_file.write_text(json.dumps(result))
        result = {k: v for k, v in result.items() if k not in ("files_per_version", "versions", "batches")}
    else:
        state = json.loads(state_file.read_text())
        result = read(kind, root, state) if phase == "read" else retire(kind, root, state)
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def run_child(args: argparse.Namespace, kind: str, phase: str, root: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, str(args.input), "--work", str(args.work), "--child", kind, phase, str(root)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if proc.returncode != 0 or not lines:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"{kind} {phase} failed ({proc.returncode})")
    return json.loads(lines[-1][len(RESULT_PREFIX) :])


def median(results: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in results if isinstance(r.get(key), (int, float))]
    return statistics.median(values) if values else None


def fmt(value: float | None, scale: float = 1.0, digits: int = 2) -> str:
    return "-" if value is None else f"{value * scale:.{digits}f}"


COLUMNS = (  # (heading, phase, key, scale, digits)
    ("create s", "ingest", "create_s", 1, 3),
    ("ingest s", "ingest", "ingest_s", 1, 2),
    ("ingest CPU s", "ingest", "ingest_cpu", 1, 2),
    ("of it commit s", "ingest", "commit_s", 1, 2),
    ("ingest RSS", "ingest", "peak_mib", 1, 0),
    ("files", "ingest", "files", 1, 0),
    ("MiB on disk", "ingest", "bytes_total", 1 / 2**20, 1),
    ("KiB log", "ingest", "bytes_meta", 1 / 2**10, 0),
    ("read now", "read", "current_{first}_s", 1, 3),
    ("read earlier", "read", "earlier_{first}_s", 1, 3),
    ("read now, file list", "read", "current_files_s", 1, 3),
    ("read earlier, file list", "read", "earlier_files_s", 1, 3),
    ("read RSS", "read", "peak_mib", 1, 0),
    ("retire by Remove s", "retire", "retire_remove_s", 1, 3),
    ("retire by delete s", "retire", "retire_delete_s", 1, 3),
    ("of it open s", "retire", "open_s", 1, 3),
    ("retire wrote KiB", "retire", "written_bytes", 1 / 2**10, 0),
    ("retire RSS", "retire", "peak_mib", 1, 0),
    ("reclaim s", "retire", "reclaim_s", 1, 3),
    ("reclaim deleted data files", "retire", "reclaimed_data_files", 1, 0),
)


def report(runs: dict[tuple[str, str], list[dict[str, Any]]], rows: int, kinds: list[str]) -> str:
    """Medians per table as a Markdown table, columns as rows (it is wide the other way)."""
    reps = max(len(v) for v in runs.values())
    lines = [
        f"{rows:,} rows in {len(runs[(kinds[0], 'ingest')][0]['rows'])} batches; medians of {reps} runs; "
        "RSS: peak MiB of the process, imports included; read now/earlier: Delta dataset / Iceberg batch reader",
        "",
        "| | " + " | ".join(kinds) + " |",
        "|---" * (len(kinds) + 1) + "|",
    ]
    for heading, phase, key, scale, digits in COLUMNS:
        cells = []
        for kind in kinds:
            first = "dataset" if kind.startswith("delta") else "reader"
            value = median(runs.get((kind, phase), []), key.format(first=first))
            cells.append(fmt(value, scale, digits))
        lines.append(f"| {heading} | " + " | ".join(cells) + " |")
    lines.append("")
    for kind in kinds:
        for r in runs.get((kind, "retire"), [])[:1]:
            extra = {k: r[k] for k in ("remove_files", "vacuum_commits", "expired_snapshots") if k in r}
            lines.append(f"{kind} retire: {json.dumps(r.get('delete_metrics'))} {json.dumps(extra)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", type=Path, help="a Distill lake folder (its **/*.parquet, one file per batch)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/fmtcmp/work"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--commits", type=int, default=200, help="then time this many small commits (0: skip)")
    parser.add_argument("--out", type=Path, help="also write the raw results (JSON) here")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "PHASE", "ROOT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    inputs = sorted(str(p) for p in args.input.rglob("*.parquet"))
    if not inputs:
        raise SystemExit(f"no Parquet files under {args.input}")
    if args.child:
        child(args.child[0], args.child[1], inputs, Path(args.child[2]))
        return
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in inputs)
    print(f"{len(inputs)} batches, {rows:,} rows; load: {os.getloadavg()}", flush=True)
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    started = time.perf_counter()
    for rep in range(args.reps):
        work = args.work / f"rep{rep}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        order = args.kinds[rep % len(args.kinds) :] + args.kinds[: rep % len(args.kinds)]  # rotate the order
        for phase in ("ingest", "read", "retire"):
            for kind in order:
                if phase == "retire" and kind == "parquet":
                    continue
                result = run_child(args, kind, phase, work / kind)
                runs.setdefault((kind, phase), []).append(result)
                shown = {k: v for k, v in result.items() if k.endswith(("_s", "_mib"))}
                print(f"rep {rep} {phase:6} {kind:11} " + " ".join(f"{k}={v:.3f}" for k, v in shown.items()))
        shutil.rmtree(work, ignore_errors=True)
    text = report(runs, rows, args.kinds)
    if args.commits:
        work = args.work / "commits"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        text += f"\n\n{args.commits} commits of one 100-row file each (one run):"
        for kind in ("delta_add", "ice_add"):
            result = run_child(args, kind, f"commits{args.commits}", work / kind)
            runs[(kind, "commits")] = [result]
            text += f"\n{kind}: " + ", ".join(
                f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()
            )
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{text}\n\ntotal {time.perf_counter() - started:.0f} s; load after: {os.getloadavg()}")
    if args.out:
        args.out.write_text(json.dumps({f"{k[0]}:{k[1]}": v for k, v in runs.items()}, indent=1))


if __name__ == "__main__":
    main()
