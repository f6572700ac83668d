"""The loop's two model gates: the PPO agent's win rate in 4-player pods, and BC accuracy on the FIXED holdout.

The win-rate gate plays rounds of seat-rotated games (every deal in every
seat) against the gate's table and feeds each game to a sequential
probability ratio test until it decides or runs out of games; an undecided
test fails (the agent did not show it is better). The threshold mode is the
origin lab's rule (win rate >= 30% over >= 20 games), kept for comparison.

The regression gate measures the new BC model and the previous generation's
model on the same holdout split, so a drop is the model's, not the data's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from toolkit.build.dataset import HOLDOUT, Dataset
from toolkit.game.players import Player
from toolkit.loop.config import RegressionGateConfig, WinRateGateConfig
from toolkit.stats import BernoulliSPRT, ScoreSPRT, wilson_interval
from toolkit.train.evaluate import EvaluateConfig, evaluate


class WinRateVerdict(BaseModel):
    """What the win-rate gate saw and decided."""

    passed: bool
    decision: str = Field(description="accept_h1 / accept_h0 / undecided (SPRT), pass / fail (threshold).")
    reason: str
    mode: str
    score: str
    p0: float
    p1: float
    llr: float
    lower: float
    upper: float
    games: int
    wins: int
    win_rate: float
    win_low: float
    win_high: float
    placement_score: float
    rounds: int


def win_rate_gate(make: Callable[[], Player], config: WinRateGateConfig, *, seed: int, max_rounds: int) -> WinRateVerdict:
    """Play the agent (``make`` gives a fresh player) against the gate's table until the test decides."""
    p0, p1 = config.hypotheses()
    sprt: BernoulliSPRT | ScoreSPRT = (
        ScoreSPRT(p0, p1, config.alpha, config.beta) if config.score == "placement" else BernoulliSPRT(p0, p1, config.alpha, config.beta)
    )
    games = wins = rounds = 0
    score_sum = 0.0
    decision: str | None = None
    limit = config.max_games if config.mode == "sprt" else max(config.threshold_games, config.games_per_round)
    while games < limit and decision is None:
        played = evaluate(make, EvaluateConfig(opponents=config.opponents, games=config.games_per_round,
                                               seed=seed * 10_007 + rounds, max_rounds=max_rounds))
        rounds += 1
        for outcome in played.outcomes:
            games += 1
            wins += outcome.won
            score_sum += outcome.score
            sprt.update(outcome.score if config.score == "placement" else outcome.won)  # type: ignore[arg-type]
            if config.mode == "sprt" and games >= config.min_games and sprt.decision is not None:
                decision = sprt.decision
                break
    low, high = wilson_interval(wins, games)
    win_rate = wins / games
    if config.mode == "threshold":
        passed = games >= config.threshold_games and win_rate >= config.threshold
        decision = "pass" if passed else "fail"
        reason = f"win rate {win_rate:.1%} over {games} games {'>=' if passed else '<'} {config.threshold:.0%}"
    else:
        decision = decision or "undecided"
        passed = decision == "accept_h1"
        what = "placement score" if config.score == "placement" else "win rate"
        reason = {
            "accept_h1": f"SPRT accepted H1 ({what} {p1}) after {games} games",
            "accept_h0": f"SPRT accepted H0 ({what} {p0}) after {games} games: no better than the table",
            "undecided": f"SPRT undecided after {games} games (llr {sprt.llr:.2f} within [{sprt.lower:.2f}, {sprt.upper:.2f}])",
        }[decision]
    return WinRateVerdict(
        passed=passed, decision=decision, reason=reason, mode=config.mode, score=config.score, p0=p0, p1=p1,
        llr=round(sprt.llr, 4), lower=round(sprt.lower, 4), upper=round(sprt.upper, 4), games=games, wins=wins,
        win_rate=round(win_rate, 4), win_low=round(low, 4), win_high=round(high, 4),
        placement_score=round(score_sum / games, 4), rounds=rounds,
    )


class RegressionVerdict(BaseModel):
    """What the regression gate compared and decided."""

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


def regression_gate(
    card: Path, previous: Path | None, dataset: Dataset, config: RegressionGateConfig
) -> RegressionVerdict:
    """The new model must reach the floor and stay within the margin of the previous one, on the same holdout."""
    accuracy = holdout_accuracy(card, dataset)
    before = holdout_accuracy(previous, dataset) if previous is not None else None
    problems = []
    if accuracy < config.floor:
        problems.append(f"holdout accuracy {accuracy:.3f} is below the floor {config.floor:.3f}")
    if before is not None and accuracy < before - config.margin:
        problems.append(f"holdout accuracy {accuracy:.3f} dropped more than {config.margin:.3f} below {before:.3f}")
    compared = f" (previous model {before:.3f})" if before is not None else ""
    reason = "; ".join(problems) or f"holdout accuracy {accuracy:.3f}{compared}"
    return RegressionVerdict(
        passed=not problems, reason=reason, accuracy=round(accuracy, 4),
        previous_accuracy=None if before is None else round(before, 4), floor=config.floor, margin=config.margin,
        holdout_rows=dataset.manifest.splits[HOLDOUT].rows, holdout_content=dataset.manifest.holdout["content"],
    )
