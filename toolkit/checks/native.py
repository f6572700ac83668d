"""Native checks: set-level invariants a suite can name, run in DuckDB (or Arrow for wide columns).

Each check is registered by name with the targets it applies to (``lake``,
``dataset``) and receives a :class:`CheckContext`: a DuckDB connection where
the gate registered the rows in scope as :data:`ROWS` (a dataset's rows carry
a ``split`` column), the Parquet files behind them, the built dataset when
there is one, and the metrics. Checks return an :class:`CheckOutcome`; the gate
turns it into an :class:`~toolkit.checks.report.ExpectationResult`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from toolkit.checks.metrics import ALL, MAX_ENTROPY_BITS
from toolkit.checks.report import GroupMetrics
from toolkit.datasets.dataset import (
    FEATURES,
    HOLDOUT,
    LABEL,
    LABEL_SOURCE,
    LEGAL_MASK,
    SAMPLE_WEIGHT,
    SPLITS,
    TRAIN,
    Dataset,
)
from toolkit.datasets.dataset import SCHEMA as DATASET_SCHEMA
from toolkit.schema import columns as col
from toolkit.schema import scores as sc
from toolkit.schema.arrow import lake_schema
from toolkit.schema.vocab import INFERRED_LABEL_SOURCES, MACRO_ACTIONS, N_ACTIONS
from toolkit.stats import entropy_upper_bound, wilson_interval

ROWS: Final = "rows_in_scope"
SPLIT: Final = "split"


@dataclass
class CheckContext:
    """What a native check may look at."""

    target: str
    con: duckdb.DuckDBPyConnection
    files: list[Path]
    key_columns: list[str]
    sample_rows: int = 5
    dataset: Dataset | None = None
    metrics: list[GroupMetrics] = field(default_factory=list)
    label_scores: list[Path] = field(default_factory=list)  # label-scores tables in scope, oldest first
    rows_sql: str = ""  # the query :data:`ROWS` is a view of (see :meth:`reader`)

    def reader(self) -> duckdb.DuckDBPyConnection:
        """A second connection to the same database where :data:`ROWS` reads the same rows, for a thread of its
        own (a DuckDB connection runs one query at a time; temporary views belong to their connection)."""
        cursor = self.con.cursor()
        cursor.execute(f"CREATE TEMP VIEW {ROWS} AS {self.rows_sql}")
        return cursor

    def sample(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        """The first ``sample_rows`` rows of ``sql`` as dicts."""
        cursor = self.con.execute(f"SELECT * FROM ({sql}) LIMIT {self.sample_rows}", params or [])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def scalar(self, sql: str, params: list[Any] | None = None) -> Any:
        return self.con.execute(sql, params or []).fetchone()[0]  # type: ignore[index]


@dataclass
class CheckOutcome:
    """What a native check found."""

    success: bool
    observed: Any
    element_count: int | None = None
    unexpected_count: int | None = None
    sample: list[dict[str, Any]] = field(default_factory=list)
    caveat: str | None = None  # a passing check that could not decide everything says so


CheckFn = Callable[[CheckContext, dict[str, Any]], CheckOutcome]


@dataclass(frozen=True)
class NativeCheck:
    name: str
    targets: tuple[str, ...]
    engine: str
    run: CheckFn


NATIVE_CHECKS: dict[str, NativeCheck] = {}


def native(name: str, targets: tuple[str, ...], engine: str = "duckdb") -> Callable[[CheckFn], CheckFn]:
    """Register a native check under ``name`` for ``targets``.

    ``engine``: ``duckdb`` checks query ``ctx.con``; ``arrow`` checks read ``ctx.files`` and never touch the
    connection (the gate runs them on a thread of their own, beside the DuckDB ones).
    """

    def register(fn: CheckFn) -> CheckFn:
        NATIVE_CHECKS[name] = NativeCheck(name, targets, engine, fn)
        return fn

    return register


def _offenders(ctx: CheckContext, condition: str, total_sql: str = f"SELECT count(*) FROM {ROWS}") -> CheckOutcome:
    """A row-level condition: rows where ``condition`` holds are offending."""
    bad = ctx.scalar(f"SELECT count(*) FROM {ROWS} WHERE {condition}")
    keys = ", ".join(ctx.key_columns)
    return CheckOutcome(
        bad == 0,
        {"offending_rows": bad},
        ctx.scalar(total_sql),
        bad,
        ctx.sample(f"SELECT {keys} FROM {ROWS} WHERE {condition}") if bad else [],
    )


# -- shared by the lake and datasets --------------------------------------------------------


@native("parquet_schema_matches_contract", ("lake", "dataset"), engine="arrow")
def _schema_matches(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """Every Parquet file has the contract's columns with the contract's types (footers only). A lake file
    written before contract version 2 may lack the columns version 2 added: they read as null."""
    expected = lake_schema() if ctx.target == "lake" else DATASET_SCHEMA
    evolved = set(col.V2_COLUMNS) if ctx.target == "lake" else set()
    problems = []
    for path in ctx.files:
        found = pq.read_schema(path)
        diffs = [
            f"{f.name}: expected {f.type}, found {found.field(f.name).type if f.name in found.names else 'nothing'}"
            for f in expected
            if (f.name not in found.names and f.name not in evolved)
            or (f.name in found.names and not _same_type(found.field(f.name).type, f.type))
        ]
        diffs += [f"{name}: not in the contract" for name in found.names if name not in expected.names]
        if diffs:
            problems.append({"file": str(path), "problems": diffs[:5]})
    return CheckOutcome(
        not problems,
        {"files": len(ctx.files), "files_off_contract": len(problems)},
        len(ctx.files),
        len(problems),
        problems[: ctx.sample_rows],
    )


def _same_type(found: pa.DataType, expected: pa.DataType) -> bool:
    """Type equality that ignores the names and nullability of list items."""
    if pa.types.is_fixed_size_list(expected):
        return (
            pa.types.is_fixed_size_list(found)
            and found.list_size == expected.list_size
            and _same_type(found.value_type, expected.value_type)
        )
    if pa.types.is_list(expected):
        return pa.types.is_list(found) and _same_type(found.value_type, expected.value_type)
    if pa.types.is_struct(expected):
        return (
            pa.types.is_struct(found)
            and [f.name for f in found] == [f.name for f in expected]
            and all(_same_type(a.type, b.type) for a, b in zip(found, expected, strict=True))
        )
    return found.equals(expected)


@native("decision_key_unique", ("lake", "dataset"))
def _key_unique(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """No two rows share (game, seat, decision index)."""
    keys = ", ".join(col.DECISION_KEY)
    dupes = f"SELECT {keys}, count(*) AS copies FROM {ROWS} GROUP BY {keys} HAVING count(*) > 1"
    bad = ctx.scalar(f"SELECT count(*) FROM ({dupes})")
    return CheckOutcome(
        bad == 0,
        {"duplicated_keys": bad},
        ctx.scalar(f"SELECT count(*) FROM {ROWS}"),
        bad,
        ctx.sample(dupes + f" ORDER BY {keys}") if bad else [],
    )


# Out-of-range actions are the range expectations' to report, so each break fails exactly one check.
_CHOSEN: Final = {
    "lake": f"{col.LEGAL_ACTIONS} IS NOT NULL AND {col.ACTION}.{col.ACTION_INDEX} BETWEEN 0 AND {N_ACTIONS - 1} "
    f"AND NOT coalesce({col.LEGAL_ACTIONS}[{col.ACTION}.{col.ACTION_INDEX} + 1], false)",
    "dataset": f"{LABEL} BETWEEN 0 AND {N_ACTIONS - 1} AND NOT coalesce({LEGAL_MASK}[{LABEL} + 1], false)",
}


@native("chosen_action_legal", ("lake", "dataset"))
def _chosen_legal(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """The chosen action is legal wherever a legal-action mask exists."""
    return _offenders(ctx, _CHOSEN[ctx.target])


@native("action_entropy_at_least", ("lake", "dataset"))
def _entropy_floor(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """Each group's action entropy, as a ratio to log2(8), is at least ``min_ratio`` (collapse otherwise), by evidence.

    A group fails when even the upper 95% bound of its entropy
    (:func:`stats.entropy_upper_bound`) is under the floor, whatever its size.
    A lake group below the floor without that evidence is judged again
    pooled with every committed batch of its source and generation (so a
    collapsed run split into many small batches cannot pass one by one);
    one still too small to tell passes with a caveat the gate shows.
    kwargs: min_ratio; sources (only these) or exclude_sources.
    """
    floor = float(kwargs["min_ratio"])
    groups = _metric_groups(ctx, kwargs)
    low, unclear, upper = [], [], {}
    for m in groups:
        upper[m.key] = entropy_upper_bound(list(m.actions.values())) / MAX_ENTROPY_BITS
        if upper[m.key] < floor:
            low.append((m, "its own rows"))
        elif m.entropy_ratio < floor:
            pooled = _pooled_actions(ctx, m) if ctx.target == "lake" else None
            if pooled is not None and entropy_upper_bound(pooled) / MAX_ENTROPY_BITS < floor:
                low.append((m, f"pooled with every committed batch of {m.key} ({sum(pooled):,} rows)"))
            else:
                unclear.append(m)
    observed = {
        "min_ratio": floor,
        "ratios": {m.key: round(m.entropy_ratio, 4) for m in groups},
        "upper_95": {k: round(v, 4) for k, v in upper.items()},
        "too_small_to_tell": [m.key for m in unclear],
    }
    sample = [
        {
            "group": m.key,
            "entropy_bits": round(m.entropy_bits, 4),
            "ratio": round(m.entropy_ratio, 4),
            "evidence": evidence,
            "actions": m.actions,
        }
        for m, evidence in low
    ]
    caveat = None
    if unclear:
        caveat = "too few rows to tell whether the action entropy collapsed: " + ", ".join(
            f"{m.key} ({m.rows:,} rows, ratio {m.entropy_ratio:.2f} < {floor})" for m in unclear
        )
    return CheckOutcome(not low, observed, len(groups), len(low), sample[: ctx.sample_rows], caveat)


def _pooled_actions(ctx: CheckContext, group: GroupMetrics) -> list[int] | None:
    """Action counts of every committed lake row of the group's source and generation (None: no lake to pool)."""
    try:
        rows = ctx.con.execute(
            f"SELECT {col.ACTION}.{col.ACTION_INDEX}, count(*) FROM decisions WHERE {col.SOURCE} = ? AND "
            f"{col.GENERATION} IS NOT DISTINCT FROM ? AND {col.ACTION}.{col.ACTION_INDEX} BETWEEN 0 AND "
            f"{N_ACTIONS - 1} "
            f"AND {col.BATCH_ID} IN (SELECT batch_id FROM batches WHERE status != 'rejected') GROUP BY 1",
            [group.source, group.generation],
        ).fetchall()
    except duckdb.CatalogException:
        return None
    counts = [0] * N_ACTIONS
    for action, n in rows:
        counts[int(action)] = int(n)
    return counts


@native("action_drift_at_most", ("lake", "dataset"))
def _drift(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """Jensen-Shannon divergence of each group's actions from its reference is at most ``max_js`` bits."""
    limit = float(kwargs["max_js"])
    with_ref = [m for m in _metric_groups(ctx, kwargs, keep_all=True) if m.drift is not None]
    high = [m for m in with_ref if m.drift.js_bits > limit]  # type: ignore[union-attr]
    observed = {"max_js": limit, "js_bits": {m.key: round(m.drift.js_bits, 5) for m in with_ref}}  # type: ignore[union-attr]
    if not with_ref:
        observed["note"] = "no reference to compare with (no previous build, generation or baseline report)"
    sample = [{"group": m.key, "js_bits": m.drift.js_bits, "reference": m.drift.reference} for m in high]  # type: ignore[union-attr]
    return CheckOutcome(not high, observed, len(with_ref), len(high), sample[: ctx.sample_rows])


def _metric_groups(ctx: CheckContext, kwargs: dict[str, Any], keep_all: bool = False) -> list[GroupMetrics]:
    only, skip = kwargs.get("sources"), set(kwargs.get("exclude_sources", []))
    return [
        m
        for m in ctx.metrics
        if (keep_all or m.source != ALL) and m.source not in skip and (only is None or m.source in only)
    ]


# -- the lake ---------------------------------------------------------------------------------


@native("action_index_matches_macro", ("lake",))
def _index_matches(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """action.index is the position of action.macro in the shared vocabulary (unknown macros and
    out-of-range indexes are left to the allowed-set and range expectations)."""
    names = ", ".join(f"'{name}'" for name in MACRO_ACTIONS)
    index = f"{col.ACTION}.{col.ACTION_INDEX}"
    position = f"list_position([{names}], {col.ACTION}.{col.ACTION_MACRO})"
    return _offenders(
        ctx, f"{position} IS NOT NULL AND {index} BETWEEN 0 AND {N_ACTIONS - 1} AND {index} <> {position} - 1"
    )


@native("players_match_pod", ("lake",))
def _players_match(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """Every row has one players entry per seat of its pod (a missing list counts as a mismatch)."""
    return _offenders(ctx, f"len({col.PLAYERS}) IS DISTINCT FROM {col.POD_SIZE}")


@native("one_episode_end_per_seat", ("lake",))
def _one_end(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """In every complete game, each seat that acted has exactly one terminal-or-truncated decision.

    A game is complete when its end is in the log: a terminal or truncated
    decision, or a known result (winner, draw, timeout) on any row. Seats
    outside the pod are the pod expectation's to report.
    """
    end = f"({col.IS_TERMINAL} OR {col.TRUNCATED})"
    episodes = f"""
        WITH complete AS (
          SELECT {col.GAME_ID} FROM {ROWS} GROUP BY {col.GAME_ID}
          HAVING bool_or({end}) OR bool_or({col.WINNER_SEAT} IS NOT NULL OR {col.IS_DRAW} OR {col.TIMED_OUT}))
        SELECT {col.GAME_ID}, {col.SEAT}, sum({end}::INT) AS episode_ends, count(*) AS decisions
        FROM {ROWS} WHERE {col.GAME_ID} IN (SELECT {col.GAME_ID} FROM complete) AND {col.SEAT} < {col.POD_SIZE}
        GROUP BY {col.GAME_ID}, {col.SEAT}"""
    bad_sql = f"SELECT * FROM ({episodes}) WHERE episode_ends <> 1 ORDER BY {col.GAME_ID}, {col.SEAT}"
    total, bad = ctx.con.execute(f"SELECT count(*), count(*) FILTER (episode_ends <> 1) FROM ({episodes})").fetchone()  # type: ignore[misc]
    return CheckOutcome(
        bad == 0, {"episodes": total, "episodes_without_one_end": bad}, total, bad, ctx.sample(bad_sql) if bad else []
    )


# -- built datasets -------------------------------------------------------------------------


def _dataset(ctx: CheckContext) -> Dataset:
    assert ctx.dataset is not None, "dataset checks run with a dataset"  # the gate guarantees it
    return ctx.dataset


@native("splits_disjoint_by_game", ("dataset",))
def _disjoint(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """No game has rows in both train and holdout."""
    both = (
        f"SELECT {col.GAME_ID} FROM {ROWS} WHERE {SPLIT} = '{TRAIN}' INTERSECT "
        f"SELECT {col.GAME_ID} FROM {ROWS} WHERE {SPLIT} = '{HOLDOUT}'"
    )
    bad = ctx.scalar(f"SELECT count(*) FROM ({both})")
    games = ctx.scalar(f"SELECT count(DISTINCT {col.GAME_ID}) FROM {ROWS}")
    return CheckOutcome(
        bad == 0,
        {"games_in_both_splits": bad},
        games,
        bad,
        ctx.sample(both + f" ORDER BY {col.GAME_ID}") if bad else [],
    )


def _train_weights(ctx: CheckContext) -> dict[str, tuple[int, float]]:
    rows = ctx.con.execute(
        f"SELECT {col.SOURCE}, count(*), sum({SAMPLE_WEIGHT}) FROM {ROWS} "
        f"WHERE {SPLIT} = '{TRAIN}' GROUP BY {col.SOURCE}"
    ).fetchall()
    return {source: (n, float(weight or 0.0)) for source, n, weight in rows}


def _targets(ctx: CheckContext) -> dict[str, float]:
    return {s: v.target for s, v in _dataset(ctx).manifest.shares.items() if v.target is not None}


@native("source_shares_within_tolerance", ("dataset",))
def _shares(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """Each source's share of the weighted train rows is within ``tolerance`` of its configured target."""
    tolerance = float(kwargs["tolerance"])
    weights = _train_weights(ctx)
    total = sum(w for _, w in weights.values()) or 1.0
    targets = _targets(ctx)
    observed = {s: {"target": t, "measured": round(weights.get(s, (0, 0.0))[1] / total, 6)} for s, t in targets.items()}
    off = [{"source": s, **v} for s, v in observed.items() if abs(v["measured"] - v["target"]) > tolerance]
    return CheckOutcome(
        not off, observed or {"note": "the build set no share targets"}, len(targets), len(off), off[: ctx.sample_rows]
    )


@native("weighted_sources_nonempty", ("dataset",))
def _nonempty(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """Every source given a positive share (share mode) or a positive weight (ratio mode) has train rows."""
    weights = _train_weights(ctx)
    config = _dataset(ctx).manifest.config
    ratio_weights = config.weights if config.weight_mode == "ratio" else {}
    wanted = sorted({s for s, t in _targets(ctx).items() if t > 0} | {s for s, w in ratio_weights.items() if w > 0})
    empty = [s for s in wanted if weights.get(s, (0, 0.0))[0] == 0]
    observed = {s: weights.get(s, (0, 0.0))[0] for s in wanted}
    return CheckOutcome(not empty, observed, len(wanted), len(empty), [{"source": s, "train_rows": 0} for s in empty])


@native("holdout_nonempty", ("dataset",))
def _holdout_nonempty(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """The holdout has rows: the accuracy gate and BC's early stopping read it. It holds out games of the reference
    sources only (the manifest's ``holdout.sources``), so a build without one of their games has none."""
    rows, games = ctx.con.execute(
        f"SELECT count(*), count(DISTINCT {col.GAME_ID}) FROM {ROWS} WHERE {SPLIT} = '{HOLDOUT}'"
    ).fetchone()  # type: ignore[misc]
    sources = list(_dataset(ctx).manifest.holdout.sources)
    found = dict(ctx.con.execute(f"SELECT {col.SOURCE}, count(*) FROM {ROWS} GROUP BY ALL").fetchall())
    observed = {
        "holdout_rows": rows,
        "holdout_games": games,
        "reference_sources": sources,
        "reference_source_rows": {s: int(found.get(s, 0)) for s in sources},
    }
    why = [
        {
            "holdout_rows": 0,
            "reference_sources": ", ".join(sources) or "none",
            "sources_in_build": ", ".join(sorted(found)) or "none",
        }
    ]
    return CheckOutcome(rows > 0, observed, 1, 0 if rows else 1, [] if rows else why)


@native("inferred_label_share_at_most", ("dataset",))
def _inferred(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """The share of train rows whose label was inferred (card role, default, mana rule) is at most ``max_share``."""
    limit = float(kwargs["max_share"])
    inferred = ", ".join(f"'{s}'" for s in sorted(INFERRED_LABEL_SOURCES))
    rows = ctx.con.execute(
        f"SELECT grouping({col.SOURCE}), {col.SOURCE}, count(*), count(*) FILTER ({LABEL_SOURCE} IN ({inferred})) "
        f"FROM {ROWS} WHERE {SPLIT} = '{TRAIN}' GROUP BY ROLLUP ({col.SOURCE})"
    ).fetchall()
    shares = {str(source): (k / n if n else 0.0) for total_row, source, n, k in rows if not total_row}
    total, overall = next(((n, k / n if n else 0.0) for total_row, _, n, k in rows if total_row), (0, 0.0))
    bad = overall > limit
    return CheckOutcome(
        not bad,
        {"max_share": limit, "share": round(overall, 6), "by_source": {s: round(v, 6) for s, v in shares.items()}},
        total,
        int(bad),
        [{"source": s, "inferred_share": v} for s, v in shares.items() if v > limit][: ctx.sample_rows],
    )


@native("row_counts_match_manifest", ("dataset",))
def _counts(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """Rows and games per split, and rows per part file, equal what the manifest declares."""
    manifest = _dataset(ctx).manifest
    found = {s: (0, 0) for s in SPLITS}
    for split, rows, games in ctx.con.execute(
        f"SELECT {SPLIT}, count(*), count(DISTINCT {col.GAME_ID}) FROM {ROWS} GROUP BY {SPLIT}"
    ).fetchall():
        found[split] = (rows, games)
    off = [
        {
            "split": s,
            "manifest_rows": manifest.splits[s].rows,
            "rows": found[s][0],
            "manifest_games": manifest.splits[s].games,
            "games": found[s][1],
        }
        for s in SPLITS
        if (manifest.splits[s].rows, manifest.splits[s].games) != found[s]
    ]
    for split in SPLITS:
        for part in manifest.splits[split].files:
            rows = pq.ParquetFile(_dataset(ctx).root / part.path).metadata.num_rows
            if rows != part.rows:
                off.append({"file": part.path, "manifest_rows": part.rows, "rows": rows})
    observed = {s: {"rows": found[s][0], "games": found[s][1]} for s in SPLITS}
    return CheckOutcome(not off, observed, len(SPLITS), len(off), off[: ctx.sample_rows])


@native("features_sized_and_finite", ("dataset",), engine="arrow")
def _features(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """Feature vectors have the manifest's declared length and only finite values (streamed, never all in memory)."""
    declared = _dataset(ctx).manifest.features.size
    bad, total, sample, wrong_size = 0, 0, [], []
    for path in ctx.files:
        parquet = pq.ParquetFile(path)
        kind = parquet.schema_arrow.field(FEATURES).type
        if not pa.types.is_fixed_size_list(kind) or kind.list_size != declared:
            wrong_size.append({"file": str(path), "type": str(kind), "declared_size": declared})
            continue
        offset, offenders = 0, []  # the rows (in this file) of the offenders to sample
        for batch in parquet.iter_batches(batch_size=131_072, columns=[FEATURES]):
            values = batch.column(FEATURES).flatten().to_numpy(zero_copy_only=False)
            total += batch.num_rows
            if values.size and np.isfinite(values.min()) and np.isfinite(values.max()):  # NaN and inf show there
                offset += batch.num_rows
                continue
            rows_bad = ~np.isfinite(values.reshape(-1, declared)).all(axis=1)
            n_bad = int(rows_bad.sum())
            if n_bad:
                bad += n_bad
                room = ctx.sample_rows - len(sample) - len(offenders)
                offenders.extend((offset + np.flatnonzero(rows_bad)[: max(room, 0)]).tolist())
            offset += batch.num_rows
        if offenders:  # the keys are read only where there is something to show (a third of the read otherwise)
            sample.extend(parquet.read(columns=list(col.DECISION_KEY)).take(offenders).to_pylist())
    observed = {"declared_size": declared, "rows_with_non_finite": bad, "files_of_wrong_size": len(wrong_size)}
    return CheckOutcome(
        bad == 0 and not wrong_size, observed, total, bad + len(wrong_size), (wrong_size + sample)[: ctx.sample_rows]
    )


@native("label_issue_rate_at_most", ("lake", "dataset"))
def _label_issue_rate(ctx: CheckContext, kwargs: dict[str, Any]) -> CheckOutcome:
    """At most ``max_rate`` of the scored decisions in scope are label issues (``distill check labels``).

    A dataset is judged by its own scores; the lake by the scores of every
    build that read its rows (a row scored by several builds counts as the
    newest scoring says). Without scores it passes (nothing to judge).
    kwargs: max_rate.
    """
    limit = float(kwargs["max_rate"])
    if not ctx.label_scores:  # nothing scored yet: nothing to judge (the observed value says how to score it)
        name = ctx.dataset.name if ctx.dataset is not None else "NAME"
        return CheckOutcome(True, {"max_rate": limit, "scored": 0, "score_with": f"distill check labels {name}"})
    ranks = ", ".join(f"('{str(p).replace(chr(39), chr(39) * 2)}', {i})" for i, p in enumerate(ctx.label_scores))
    files = "[" + ", ".join(f"'{str(p).replace(chr(39), chr(39) * 2)}'" for p in ctx.label_scores) + "]"
    newest = (
        f"SELECT s.{col.BATCH_ID}, s.{col.SOURCE_LINE}, max_by(s.{sc.FLAGGED}, r.rank) AS flagged "
        f"FROM read_parquet({files}, filename = true) s JOIN (VALUES {ranks}) r(file, rank) ON s.filename = r.file "
        f"WHERE s.{sc.SCORED} GROUP BY ALL"
    )
    scored, flagged = ctx.con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE n.flagged) FROM ({newest}) n "
        f"SEMI JOIN (SELECT {col.BATCH_ID}, {col.SOURCE_LINE} FROM {ROWS}) r USING ({col.BATCH_ID}, {col.SOURCE_LINE})"
    ).fetchone()
    rate = flagged / scored if scored else 0.0
    low, high = wilson_interval(flagged, scored)
    observed = {
        "max_rate": limit,
        "scored": scored,
        "flagged": flagged,
        "rate": round(rate, 6),
        "interval_95": [round(low, 6), round(high, 6)],
        "scores": len(ctx.label_scores),
    }
    return CheckOutcome(rate <= limit, observed, scored, flagged)
