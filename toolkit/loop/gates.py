"""The loop's gates: strength on paired deals, the absolute floor for export, and the accuracy guard.

Strength decides promotion. A candidate (a PPO model or a student) and the
previous promoted model of its kind play the same deals in every seat
against the same table; a deal's unit is the candidate's wins minus the
baseline's, averaged over the seats (in [-1, 1]), and a GSPRT on the units
(``stats.MeanSPRT``; H0: no better) decides, in rounds of deals, after
``min_deals`` and at most at ``max_deals`` (undecided fails: no evidence
it is better). The verdict also reports the mean paired difference with its
95% interval over the deals played, and each round's paired results with the
LLR after it (the trace the dashboard's gate report draws).

The floor is the seed's absolute rule for merging PPO's export: its win
rate in a fixed-size evaluation against three heuristics must exceed 30%.

The accuracy guard measures the new student and the previous promoted one
on the same FIXED Forge holdout: a floor and a largest drop. It is a guard
against a student that lost the game's basics, not what decides promotion:
a student that learns a stronger teacher imitates the heuristic less.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from toolkit.datasets.dataset import HOLDOUT, Dataset
from toolkit.game.players import Player
from toolkit.jobs.config import BackendConfig
from toolkit.loop.config import AccuracyGuardConfig, FloorConfig, StrengthGateConfig
from toolkit.stats import Z95, MeanSPRT
from toolkit.train.agents import PlayerRef
from toolkit.train.evaluate import EvaluateConfig, EvaluationResult, evaluate


class GateRound(BaseModel):
    """One round of the strength gate: its batch of paired deals and the GSPRT after it."""

    round: int = Field(description="0, 1, ... in the order played.")
    deals: int = Field(description="Paired deals of this round fed to the test (a decision can stop a round early).")
    candidate_wins: int = Field(description="The candidate's wins on these deals, every seat.")
    baseline_wins: int = Field(description="The baseline's wins on the same deals, every seat.")
    diff: float = Field(description="Mean paired win difference per game over this round's deals.")
    llr: float = Field(description="The GSPRT's log-likelihood ratio after this round (bounds: the verdict's).")


class StrengthVerdict(BaseModel):
    """What the strength gate saw and decided."""

    passed: bool
    decision: str = Field(description="accept_h1 (better), accept_h0 (no better) or undecided.")
    reason: str
    opponents: list[str]
    deals: int = Field(description="Deals fed to the test (each played in every seat by both).")
    games: int = Field(description="Games each model played.")
    candidate_win_rate: float
    baseline_win_rate: float
    diff: float = Field(description="Mean paired win difference per game, candidate minus baseline.")
    diff_low: float = Field(description="95% interval of the mean paired difference.")
    diff_high: float
    llr: float
    lower: float
    upper: float
    delta0: float
    delta1: float
    rounds: list[GateRound] = Field(
        default_factory=list, description="Each round's paired results and the LLR after it (empty in older runs)."
    )


def deal_wins(result: EvaluationResult) -> np.ndarray:
    """Wins per deal (in deal order), summed over the seats: [deals]."""
    pods = len(result.per_seat)
    return np.array([o.won for o in result.outcomes], float).reshape(-1, pods).sum(1)  # outcomes sorted (deal, seat)


def strength_gate(
    candidate: Callable[[], Player] | PlayerRef,
    baseline: Callable[[], Player] | PlayerRef,
    config: StrengthGateConfig,
    *,
    seed: int,
    max_rounds: int,
    backend: BackendConfig | None = None,
) -> StrengthVerdict:
    """Play both on the same deals, round by round, until the GSPRT decides or ``max_deals`` are played."""
    sprt = MeanSPRT(config.delta0, config.delta1, config.alpha, config.beta, low=-1.0, high=1.0)
    pods = len(config.opponents) + 1
    used_c: list[float] = []
    used_b: list[float] = []
    decision: str | None = None
    rounds: list[GateRound] = []
    while len(used_c) < config.max_deals and decision is None:
        deals = min(config.deals_per_round, config.max_deals - len(used_c))
        wins_c, wins_b = (
            deal_wins(
                evaluate(
                    make,
                    EvaluateConfig(
                        opponents=config.opponents,
                        games=deals * pods,
                        seed=seed * 10_007 + len(rounds),
                        max_rounds=max_rounds,
                    ),
                    backend=backend,
                )
            )
            for make in (candidate, baseline)
        )
        before = len(used_c)
        for c, b in zip(wins_c.tolist(), wins_b.tolist(), strict=True):
            used_c.append(c)
            used_b.append(b)
            sprt.update((c - b) / pods)
            if len(used_c) >= config.min_deals and sprt.decision is not None:
                decision = sprt.decision
                break
        rounds.append(_round(len(rounds), used_c[before:], used_b[before:], pods, sprt.llr))
    verdict = _verdict(sprt, decision or "undecided", np.array(used_c), np.array(used_b), config)
    return verdict.model_copy(update={"rounds": rounds})


def _round(index: int, wins_c: list[float], wins_b: list[float], pods: int, llr: float) -> GateRound:
    played = len(wins_c)
    return GateRound(
        round=index,
        deals=played,
        candidate_wins=int(sum(wins_c)),
        baseline_wins=int(sum(wins_b)),
        diff=round((sum(wins_c) - sum(wins_b)) / (played * pods), 4) if played else 0.0,
        llr=round(llr, 4),
    )


def _verdict(
    sprt: MeanSPRT, decision: str, wins_c: np.ndarray, wins_b: np.ndarray, config: StrengthGateConfig
) -> StrengthVerdict:
    pods = len(config.opponents) + 1
    deals = len(wins_c)
    units = (wins_c - wins_b) / pods
    mean = float(units.mean())
    half = Z95 * float(units.std(ddof=1)) / math.sqrt(deals) if deals > 1 else 1.0
    shown = f"{mean:+.1%} wins per game over {deals} paired deals"
    reason = {
        "accept_h1": f"better than its baseline: {shown} (GSPRT)",
        "accept_h0": f"no better than its baseline: {shown} (GSPRT)",
        "undecided": f"not shown better: {shown} (llr {sprt.llr:.2f} within [{sprt.lower:.2f}, {sprt.upper:.2f}])",
    }[decision]
    return StrengthVerdict(
        passed=decision == "accept_h1",
        decision=decision,
        reason=reason,
        opponents=list(config.opponents),
        deals=deals,
        games=deals * pods,
        candidate_win_rate=round(float(wins_c.sum()) / (deals * pods), 4),
        baseline_win_rate=round(float(wins_b.sum()) / (deals * pods), 4),
        diff=round(mean, 4),
        diff_low=round(mean - half, 4),
        diff_high=round(mean + half, 4),
        llr=round(sprt.llr, 4),
        lower=round(sprt.lower, 4),
        upper=round(sprt.upper, 4),
        delta0=config.delta0,
        delta1=config.delta1,
    )


class FloorVerdict(BaseModel):
    """The absolute floor: a fixed-size evaluation's win rate against the floor's table."""

    passed: bool
    reason: str
    win_rate: float
    win_low: float
    win_high: float
    games: int
    threshold: float | None


def floor_gate(
    make: Callable[[], Player] | PlayerRef,
    config: FloorConfig,
    *,
    seed: int,
    max_rounds: int,
    backend: BackendConfig | None = None,
) -> FloorVerdict:
    """The model must win more than ``config.win_rate`` of ``config.games`` games against the table."""
    result = evaluate(
        make,
        EvaluateConfig(opponents=config.opponents, games=config.games, seed=seed, max_rounds=max_rounds),
        backend=backend,
    )
    shown = (
        f"win rate {result.win_rate:.1%} [{result.win_low:.1%}, {result.win_high:.1%}] over {result.games} games "
        f"vs {', '.join(config.opponents)}"
    )
    if config.win_rate is None:
        passed, reason = True, f"{shown} (no floor set)"
    else:
        passed = result.win_rate > config.win_rate
        reason = f"{shown} {'>' if passed else '<='} {config.win_rate:.0%}"
    return FloorVerdict(
        passed=passed,
        reason=reason,
        win_rate=result.win_rate,
        win_low=result.win_low,
        win_high=result.win_high,
        games=result.games,
        threshold=config.win_rate,
    )


class GuardVerdict(BaseModel):
    """What the accuracy guard compared and decided."""

    passed: bool
    reason: str
    accuracy: float
    previous_accuracy: float | None
    floor: float
    margin: float
    holdout_rows: int
    holdout_content: str


def holdout_accuracy(card: Path, dataset: Dataset) -> float:
    """Accuracy of a BC/PPO checkpoint's greedy legal action on the dataset's holdout labels."""
    from toolkit.train.agents import load_agent
    from toolkit.train.bc import read_split
    from toolkit.train.policy import greedy_policy

    actor = load_agent(card).actor
    features, labels, masks, _ = read_split(dataset, HOLDOUT)
    if actor is None or not len(labels):
        return 0.0
    return float((greedy_policy(actor)(features, masks) == labels).mean())


def accuracy_guard(card: Path, previous: Path | None, dataset: Dataset, config: AccuracyGuardConfig) -> GuardVerdict:
    """The new student must reach the floor and stay within the margin of the previous one, on the same holdout."""
    accuracy = holdout_accuracy(card, dataset)
    before = holdout_accuracy(previous, dataset) if previous is not None else None
    problems = []
    if accuracy < config.floor:
        problems.append(f"holdout accuracy {accuracy:.3f} is below the floor {config.floor:.3f}")
    if before is not None and accuracy < before - config.margin:
        problems.append(f"holdout accuracy {accuracy:.3f} dropped more than {config.margin:.3f} below {before:.3f}")
    compared = f" (previous student {before:.3f})" if before is not None else ""
    reason = "; ".join(problems) or f"holdout accuracy {accuracy:.3f}{compared}"
    return GuardVerdict(
        passed=not problems,
        reason=reason,
        accuracy=round(accuracy, 4),
        previous_accuracy=None if before is None else round(before, 4),
        floor=config.floor,
        margin=config.margin,
        holdout_rows=dataset.manifest.splits[HOLDOUT].rows,
        holdout_content=dataset.manifest.holdout.content,
    )
