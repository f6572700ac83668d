"""Data-quality metrics per source and generation, computed in DuckDB.

The input is a relation with the columns of :data:`METRIC_COLUMNS` (the gate
aliases lake and dataset columns to them): one row per decision. An episode
is one seat's decisions in one game; its return and result are read at its
last decision. Each group is a (source, generation) pair; one extra group,
source ``*``, covers everything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import duckdb

from toolkit.checks.report import Distribution, Drift, GroupMetrics
from toolkit.schema import columns as col
from toolkit.schema.vocab import MACRO_ACTIONS, N_ACTIONS
from toolkit.stats import entropy_bits, js_divergence, wilson_interval

ACTION: Final = "action_index"
METRIC_COLUMNS: Final = (
    col.SOURCE,
    col.GENERATION,
    ACTION,
    col.REWARD,
    col.EPISODE_RETURN,
    col.SEAT_WON,
    col.GAME_ID,
    col.SEAT,
    col.DECISION_INDEX,
)
ALL: Final = "*"
MAX_ENTROPY_BITS: Final = math.log2(N_ACTIONS)
_QUANTILES: Final = "[0.05, 0.25, 0.5, 0.75, 0.95]"
_GROUPS: Final = f"GROUPING SETS (({col.SOURCE}, {col.GENERATION}), ())"

GroupKey = tuple[str, int | None]


def _stats(expr: str) -> str:
    return (
        f"count({expr}), avg({expr}), stddev_samp({expr}), min({expr}), "
        f"quantile_cont({expr}, {_QUANTILES}), max({expr})"
    )


def _distribution(values: Sequence[Any]) -> Distribution:
    count, mean, std, low, quantiles, high = values
    q = list(quantiles) if quantiles is not None else [None] * 5
    return Distribution(
        count=count, mean=mean, std=std, min=low, p05=q[0], p25=q[1], p50=q[2], p75=q[3], p95=q[4], max=high
    )


def _key(grouping: int, source: str, generation: int | None) -> GroupKey:
    return (ALL, None) if grouping else (source, generation)


def action_counts(con: duckdb.DuckDBPyConnection, relation: str) -> dict[GroupKey, list[int]]:
    """Decisions per action index (a list of 8) for each group of ``relation``."""
    rows = con.execute(
        f"SELECT grouping({col.SOURCE}, {col.GENERATION}), {col.SOURCE}, {col.GENERATION}, {ACTION}, count(*) "
        f"FROM {relation} GROUP BY GROUPING SETS (({col.SOURCE}, {col.GENERATION}, {ACTION}), ({ACTION}))"
    ).fetchall()
    counts: dict[GroupKey, list[int]] = {}
    for grouping, source, generation, action, n in rows:
        bucket = counts.setdefault(_key(grouping, source, generation), [0] * N_ACTIONS)
        if action is not None and 0 <= action < N_ACTIONS:
            bucket[action] += n
    return counts


def compute_metrics(con: duckdb.DuckDBPyConnection, relation: str) -> list[GroupMetrics]:
    """The metrics of every (source, generation) group of ``relation``, then the ``*`` group."""
    counts = action_counts(con, relation)
    rewards = {
        _key(r[0], r[1], r[2]): r[3:]
        for r in con.execute(
            f"SELECT grouping({col.SOURCE}, {col.GENERATION}), {col.SOURCE}, {col.GENERATION}, count(*), "
            f"{_stats(col.REWARD)} FROM {relation} GROUP BY {_GROUPS}"
        ).fetchall()
    }
    episodes = {
        _key(r[0], r[1], r[2]): r[3:]
        for r in con.execute(
            f"""WITH e AS (
                  SELECT {col.SOURCE}, {col.GENERATION}, {col.GAME_ID}, count(*) AS n,
                         arg_max_null({col.EPISODE_RETURN}, {col.DECISION_INDEX}) AS ret,
                         arg_max_null({col.SEAT_WON}, {col.DECISION_INDEX}) AS won
                  FROM {relation} GROUP BY {col.SOURCE}, {col.GENERATION}, {col.GAME_ID}, {col.SEAT})
                SELECT grouping({col.SOURCE}, {col.GENERATION}), {col.SOURCE}, {col.GENERATION},
                       count(*), count(DISTINCT {col.GAME_ID}), count(won), coalesce(sum(won::INT), 0),
                       {_stats("ret")}, {_stats("n")}
                FROM e GROUP BY {_GROUPS}"""
        ).fetchall()
    }
    groups = sorted((k for k in rewards if k[0] != ALL), key=lambda k: (k[0], -1 if k[1] is None else k[1]))
    return [
        _group(key, counts.get(key, [0] * N_ACTIONS), rewards[key], episodes[key])
        for key in [*groups, (ALL, None)]
        if key in rewards
    ]


def _group(key: GroupKey, counts: list[int], reward: Sequence[Any], episode: Sequence[Any]) -> GroupMetrics:
    rows, *reward_stats = reward
    n_episodes, games, with_result, wins, *rest = episode
    bits = entropy_bits(counts)
    return GroupMetrics(
        source=key[0],
        generation=key[1],
        rows=rows,
        actions=dict(zip(MACRO_ACTIONS, counts, strict=True)),
        entropy_bits=bits,
        entropy_ratio=bits / MAX_ENTROPY_BITS,
        reward=_distribution(reward_stats),
        episode_return=_distribution(rest[:6]),
        episode_decisions=_distribution(rest[6:]),
        games=games,
        episodes=n_episodes,
        wins=wins,
        episodes_with_result=with_result,
        win_rate=wins / with_result if with_result else None,
        win_rate_interval=wilson_interval(wins, with_result),
    )


def attach_drift(
    metrics: list[GroupMetrics], references: Mapping[GroupKey, tuple[str, list[int]]]
) -> list[GroupMetrics]:
    """Metrics with ``drift`` set wherever ``references`` has counts for the same group."""
    out = []
    for m in metrics:
        ref = references.get((m.source, m.generation))
        counts = list(m.actions.values())
        if ref is not None and sum(ref[1]) > 0 and sum(counts) > 0:
            m = m.model_copy(update={"drift": Drift(reference=ref[0], js_bits=js_divergence(counts, ref[1]))})
        out.append(m)
    return out
