"""Deciding a build on the episode summary: filters, the holdout, and game-level sampling.

Everything here is a pure function of the episode summary and the config, so
a plan can be tested on a few hand-written episodes. Sampling draws *games of
a source* (the episodes a source played in one game), from a uniform number
that is a pure function of (seed, source, game id): adding data never changes
whether an existing game is drawn, and the order of the lake does not matter.

- ratio weight w < 1: a game is kept when its number is below w (each game
  independently, without replacement);
- ratio weight w > 1: a game is drawn Poisson(w) times (the streaming form of
  drawing with replacement; its number is the quantile), stored once with
  that multiplicity as its sample weight;
- share mode: each source keeps the fraction of its games that makes the
  largest dataset meeting the target shares without oversampling.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from toolkit.datasets.config import BuildConfig
from toolkit.datasets.dataset import FilterStep, Share
from toolkit.errors import BuildError

_UNIFORM_DIGITS = 15


@dataclass(frozen=True)
class Episodes:
    """Episodes (source, game, seat) of one split, with each one's sample weight."""

    source: np.ndarray
    game_id: np.ndarray
    seat: np.ndarray
    weight: np.ndarray

    def __len__(self) -> int:
        return len(self.seat)


@dataclass(frozen=True)
class Plan:
    """What the final pass keeps: the episodes of each split with their weights, and the accounting."""

    train: Episodes
    holdout: Episodes
    filters: dict[str, list[FilterStep]]
    shares: dict[str, Share]


def uniform(seed: int, source: str, game_id: str) -> float:
    """A number in [0, 1) drawn for one game of one source; a pure function of its arguments."""
    digest = hashlib.md5(f"{seed}:{source}:{game_id}".encode(), usedforsecurity=False).hexdigest()
    return int(digest[:_UNIFORM_DIGITS], 16) / 16**_UNIFORM_DIGITS


def poisson_quantile(u: float, mean: float) -> int:
    """The smallest k with P(Poisson(mean) <= k) > u."""
    k, term = 0, math.exp(-mean)
    cumulative = term
    while cumulative <= u and k < 10_000:
        k += 1
        term *= mean / k
        cumulative += term
    return k


def make_plan(episodes: pa.Table, config: BuildConfig) -> Plan:
    """Apply the filters, split off the holdout and sample games (see the module docstring).

    Raises:
        BuildError: when a weighted source keeps no game, or the training set would be empty.
    """
    ep = {name: episodes.column(name).to_numpy(zero_copy_only=False) for name in episodes.column_names}
    sources = sorted(set(ep["source"].tolist()))
    held = ep["holdout"].astype(bool) & np.isin(ep["source"], config.holdout.sources)
    holdout = _episodes(ep, held, np.ones(len(held), np.float32))
    keep = ~ep["holdout"].astype(bool)
    steps: dict[str, list[tuple[str, np.ndarray]]] = {}
    for source in sources:
        mine = ep["source"] == source
        trail = [("selected", mine), ("after_holdout", mine & keep)]
        current = mine & keep
        for step, passed in _filters(ep, source, config):
            current = current & passed
            trail.append((step, current))
        steps[source] = trail
    kept = np.zeros(len(ep["source"]), bool)
    for trail in steps.values():
        kept |= trail[-1][1]
    rows = np.where(kept, ep["label_rows"], 0)
    game_weight = _sample(ep, kept, rows, sources, config)
    weights = np.array([game_weight.get((s, g), 0.0) for s, g in zip(ep["source"], ep["game_id"], strict=True)])
    weights[~kept] = 0.0
    if config.generation_decay is not None:
        weights = decay_by_generation(ep, weights * rows, sources, config.generation_decay) * weights
    train = _episodes(ep, (weights > 0) & (rows > 0), weights)
    if not len(train):
        raise BuildError(
            "the training set is empty after filters and weights",
            hint="loosen --min-reward / --wins-only / --min-length, or check the weights",
        )
    filters = {s: [_count(ep, step, mask) for step, mask in trail] for s, trail in steps.items()}
    for source in sources:
        mine = (ep["source"] == source) & (weights > 0) & (rows > 0)
        filters[source].append(_count(ep, "sampled", mine, weights * rows))
    return Plan(train, holdout, filters, _shares(filters, config))


def decay_by_generation(
    ep: dict[str, np.ndarray], weighted_rows: np.ndarray, sources: list[str], decay: float
) -> np.ndarray:
    """Each episode's weight factor for ``BuildConfig.generation_decay``: decay^(newest - g) within its source,
    scaled so that the source's weighted rows (``weighted_rows`` summed) do not change; 1 where an episode has
    no generation or its source has no weighted rows."""
    generation = ep["generation"].astype(np.float64)  # null -> nan
    factor = np.ones(len(weighted_rows))
    for source in sources:
        mine = (ep["source"] == source) & (weighted_rows > 0) & ~np.isnan(generation)
        if not mine.any():
            continue
        decayed = decay ** (generation[mine].max() - generation[mine])
        factor[mine] = decayed * weighted_rows[mine].sum() / (decayed * weighted_rows[mine]).sum()
    return factor


def _episodes(ep: dict[str, np.ndarray], mask: np.ndarray, weights: np.ndarray) -> Episodes:
    return Episodes(ep["source"][mask], ep["game_id"][mask], ep["seat"][mask], weights[mask].astype(np.float32))


def _filters(ep: dict[str, np.ndarray], source: str, config: BuildConfig) -> list[tuple[str, np.ndarray]]:
    out = []
    if config.pod_sizes is not None:
        out.append(("pod_size", np.isin(ep["pod_size"], config.pod_sizes)))
    if config.min_episode_length > 1:
        out.append(("min_episode_length", ep["rows"] >= config.min_episode_length))
    if config.min_reward is not None and source in config.reward_sources:
        returns = ep["episode_return"].astype(np.float64)  # null -> nan: an unknown return does not pass
        out.append(("min_reward", np.nan_to_num(returns, nan=-np.inf) >= config.min_reward))
    if source in config.wins_only:
        out.append(("wins_only", ep["won"].astype(bool)))
    if config.exclude_label_sources:
        out.append(("label_source", ep["label_rows"] > 0))
    return out


def _sample(
    ep: dict[str, np.ndarray], kept: np.ndarray, rows: np.ndarray, sources: list[str], config: BuildConfig
) -> dict[tuple[str, str], float]:
    """The sample weight of every (source, game) with kept episodes."""
    available = {s: float(rows[(ep["source"] == s) & kept].sum()) for s in sources}
    rates = _rates(available, config)
    out: dict[tuple[str, str], float] = {}
    for source in sources:
        rate = rates.get(source, 0.0)
        if rate <= 0:
            continue
        games = sorted(set(ep["game_id"][(ep["source"] == source) & kept].tolist()))
        for game in games:
            if rate == 1.0:
                draws = 1
            elif config.weight_mode == "ratio" and rate > 1.0:
                draws = poisson_quantile(uniform(config.seed, source, game), rate)
            else:
                draws = int(uniform(config.seed, source, game) < rate)
            if draws:
                out[(source, game)] = float(draws)
    return out


def _rates(available: dict[str, float], config: BuildConfig) -> dict[str, float]:
    """Per source, the ratio weight, or in share mode the keep fraction that meets the target shares."""
    if config.weight_mode == "ratio":
        return {s: config.weights.get(s, 1.0) for s in available}
    targets = {s: w for s, w in config.weights.items() if w > 0}
    total = sum(targets.values())
    for source in targets:
        if available.get(source, 0.0) <= 0:
            raise BuildError(
                f"source {source!r} has a target share but no rows after the filters",
                hint="drop its share, loosen the filters, or ingest data for it",
            )
    size = min(available[s] / (t / total) for s, t in targets.items())  # the largest train set meeting the shares
    return {s: min(1.0, size * (t / total) / available[s]) for s, t in targets.items()}


def _count(ep: dict[str, np.ndarray], step: str, mask: np.ndarray, weighted: np.ndarray | None = None) -> FilterStep:
    counted = ep["label_rows"] if step in ("label_source", "sampled") else ep["rows"]
    return FilterStep(
        step=step,
        rows=int(counted[mask].sum()),
        games=len(set(ep["game_id"][mask].tolist())),
        weighted_rows=None if weighted is None else float(weighted[mask].sum()),
    )


def _shares(filters: dict[str, list[FilterStep]], config: BuildConfig) -> dict[str, Share]:
    weighted = {s: trail[-1].weighted_rows or 0.0 for s, trail in filters.items()}
    total = sum(weighted.values()) or 1.0
    targets: dict[str, float] = {}
    if config.weight_mode == "share":
        norm = sum(config.weights.values())
        targets = {s: w / norm for s, w in config.weights.items()}
    return {
        s: Share(target=round(targets[s], 6) if s in targets else None, achieved=round(w / total, 6))
        for s, w in sorted(weighted.items())
    }
