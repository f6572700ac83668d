"""The loop's gates: head to head and the scripted floor on paired deals, the export floor, the accuracy guard.

Head to head decides promotion (:func:`head_to_head_gate`). The candidate
(a PPO model or a student) must beat the previous promoted model of its kind
in the pod itself. The tables are three copies of the previous model, and
mixed tables (the previous model and two copies of one of the league's
other past models). Paired means: each deal is played at every table twice
per seat, once with the candidate in that seat and once with the previous
model in that same seat, the other seats unchanged (same models, same
cards). A deal's unit is the candidate's wins minus the previous model's
over those games, averaged over seats and tables (in [-1, 1]); a game that
ends at the turn limit is nobody's win. "Beats" means: a GSPRT on the units
(``stats.MeanSPRT``; H0 mean ``delta0`` = 0, no better; H1 mean ``delta1``,
3 points by default) accepts H1, in rounds of deals, after ``min_deals`` and
at most at ``max_deals`` (undecided fails: no evidence it is better). At the
table of three previous models the previous model's own games are a table of
four identical players, whose seat wins a quarter of the decided games: the
candidate passes there by winning more than that quarter (ending games the
previous model leaves at the turn limit counts).

The scripted floor (:func:`strength_gate`) pairs the two the same way
against a scripted table; by default it is a non-inferiority test (H0: 3
points worse, H1: no worse), so a candidate cannot trade the scripts away.
Both verdicts report the mean paired difference with its 95% interval, and
their rounds: each round's paired results and the LLR after it (the trace
the dashboard's gate report draws).

The export floor is the seed's absolute rule for merging PPO's export: its
win rate in a fixed-size evaluation against three heuristics must exceed 30%.

The accuracy guard measures the new student and the previous promoted one
on the same FIXED Forge holdout: a floor and a largest drop. It is a guard
against a student that lost the game's basics, not what decides promotion:
a student that learns a stronger teacher imitates the heuristic less.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from toolkit.datasets.dataset import HOLDOUT, Dataset
from toolkit.engine.config import EngineConfig
from toolkit.game.players import Player
from toolkit.jobs.config import BackendConfig
from toolkit.loop.config import (
    AccuracyGuardConfig,
    FloorConfig,
    HeadToHeadConfig,
    SequentialConfig,
    StrengthGateConfig,
)
from toolkit.stats import Z95, MeanSPRT
from toolkit.train.agents import PlayerRef, PolicyBlob
from toolkit.train.config import EvaluateConfig
from toolkit.train.evaluate import EvaluationResult, evaluate


class GateRound(BaseModel):
    """One round of the strength gate: its batch of paired deals and the GSPRT after it."""

    round: int = Field(description="0, 1, ... in the order played.")
    deals: int = Field(description="Paired deals of this round fed to the test (a decision can stop a round early).")
    candidate_wins: int = Field(description="The candidate's wins on these deals, every seat.")
    baseline_wins: int = Field(description="The baseline's wins on the same deals, every seat.")
    diff: float = Field(description="Mean paired win difference per game over this round's deals.")
    llr: float = Field(description="The GSPRT's log-likelihood ratio after this round (bounds: the verdict's).")


class _SequentialTest(BaseModel):
    """What every paired GSPRT gate reports after its verdict fields: the paired difference, the test, its rounds."""

    diff: float = Field(description="Mean paired win difference per game, candidate minus baseline.")
    diff_low: float = Field(description="95% interval of the mean paired difference.")
    diff_high: float
    llr: float
    lower: float
    upper: float
    delta0: float
    delta1: float
    rounds: list[GateRound] = Field(
        default_factory=list,
        description="Each round's paired results (summed over the tables head to head) and the LLR after it "
        "(empty in older runs).",
    )


class StrengthVerdict(_SequentialTest):
    """What the strength gate saw and decided."""

    passed: bool
    decision: str = Field(description="accept_h1 (better), accept_h0 (no better) or undecided.")
    reason: str
    opponents: list[str]
    deals: int = Field(description="Deals fed to the test (each played in every seat by both).")
    games: int = Field(description="Games each model played.")
    candidate_win_rate: float
    baseline_win_rate: float


def deal_wins(result: EvaluationResult) -> np.ndarray:
    """Wins per deal (in deal order), summed over the seats: [deals]."""
    pods = len(result.per_seat)
    return np.array([o.won for o in result.outcomes], float).reshape(-1, pods).sum(1)  # outcomes sorted (deal, seat)


def play_sequential(
    next_units: Callable[[int, int], np.ndarray],
    config: SequentialConfig,
    trace: list[tuple[int, float]] | None = None,
) -> tuple[MeanSPRT, str, int]:
    """Feed paired units round by round to a GSPRT until it decides (after ``min_deals``) or ``max_deals`` are used.

    Args:
        next_units: ``(round, deals) -> units`` of that many new deals, each in [-1, 1].
        config: hypotheses, error rates and budget.
        trace: when given, gets each round's (units fed to the test, LLR after them).

    Returns:
        The test, its decision (``accept_h1``, ``accept_h0`` or ``undecided``) and how many units it used.
    """
    sprt = MeanSPRT(config.delta0, config.delta1, config.alpha, config.beta, low=-1.0, high=1.0)
    used, rounds = 0, 0
    while used < config.max_deals:
        units = next_units(rounds, min(config.deals_per_round, config.max_deals - used))
        rounds += 1
        fed = 0
        for unit in units.tolist():
            used, fed = used + 1, fed + 1
            sprt.update(unit)
            if used >= config.min_deals and sprt.decision is not None:
                break
        if trace is not None:
            trace.append((fed, sprt.llr))
        if used >= config.min_deals and sprt.decision is not None:
            return sprt, sprt.decision, used
    return sprt, "undecided", used


def strength_gate(
    candidate: Callable[[], Player] | PlayerRef,
    baseline: Callable[[], Player] | PlayerRef,
    config: StrengthGateConfig,
    *,
    seed: int,
    max_rounds: int,
    backend: BackendConfig | None = None,
    engine: EngineConfig | None = None,
) -> StrengthVerdict:
    """Play both on the same deals against ``config.opponents``, round by round, until the GSPRT decides."""
    pods = len(config.opponents) + 1
    played_c: list[np.ndarray] = []
    played_b: list[np.ndarray] = []

    def next_units(round_: int, deals: int) -> np.ndarray:
        wins_c, wins_b = (
            deal_wins(
                evaluate(
                    make,
                    EvaluateConfig(
                        opponents=config.opponents,
                        games=deals * pods,
                        seed=seed * 10_007 + round_,
                        max_rounds=max_rounds,
                    ),
                    backend=backend,
                    engine=engine,
                )
            )
            for make in (candidate, baseline)
        )
        played_c.append(wins_c)
        played_b.append(wins_b)
        return (wins_c - wins_b) / pods

    trace: list[tuple[int, float]] = []
    sprt, decision, used = play_sequential(next_units, config, trace)
    wins_c, wins_b = np.concatenate(played_c)[:used], np.concatenate(played_b)[:used]
    verdict = _verdict(sprt, decision, wins_c, wins_b, config)
    return verdict.model_copy(update={"rounds": _rounds(trace, wins_c, wins_b, pods)})


def _rounds(trace: list[tuple[int, float]], wins_c: np.ndarray, wins_b: np.ndarray, pods: int) -> list[GateRound]:
    """Each round's paired results (``trace``: the units each round fed the test, the LLR after it)."""
    rounds, start = [], 0
    for index, (used, llr) in enumerate(trace):
        c, b = wins_c[start : start + used], wins_b[start : start + used]
        start += used
        rounds.append(
            GateRound(
                round=index,
                deals=used,
                candidate_wins=int(c.sum()),
                baseline_wins=int(b.sum()),
                diff=round(float((c - b).sum()) / (used * pods), 4) if used else 0.0,
                llr=round(llr, 4),
            )
        )
    return rounds


def _verdict(
    sprt: MeanSPRT, decision: str, wins_c: np.ndarray, wins_b: np.ndarray, config: StrengthGateConfig
) -> StrengthVerdict:
    pods = len(config.opponents) + 1
    deals = len(wins_c)
    mean, half = _mean_interval((wins_c - wins_b) / pods)
    shown = f"{100 * mean:+.1f} points of win rate over {deals} paired deals"
    h1, h0 = _hypotheses(config)
    reason = {
        "accept_h1": f"{h1}: {shown} (GSPRT)",
        "accept_h0": f"{h0}: {shown} (GSPRT)",
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
        **_test_fields(sprt, mean, half, config),
    )


def _mean_interval(units: np.ndarray) -> tuple[float, float]:
    """The mean paired unit and the half-width of its normal 95% interval (1.0, all of [-1, 1], for one unit)."""
    mean = float(units.mean())
    return mean, Z95 * float(units.std(ddof=1)) / math.sqrt(len(units)) if len(units) > 1 else 1.0


def _test_fields(sprt: MeanSPRT, mean: float, half: float, config: SequentialConfig) -> dict[str, float]:
    """What every paired GSPRT verdict reports (:class:`_SequentialTest`, its rounds aside)."""
    return {
        "diff": round(mean, 4),
        "diff_low": round(mean - half, 4),
        "diff_high": round(mean + half, 4),
        "llr": round(sprt.llr, 4),
        "lower": round(sprt.lower, 4),
        "upper": round(sprt.upper, 4),
        "delta0": config.delta0,
        "delta1": config.delta1,
    }


def _hypotheses(config: SequentialConfig) -> tuple[str, str]:
    """What accepting H1 and H0 say, in words (a non-inferiority test when delta1 <= 0)."""
    if config.delta1 <= 0:
        return (
            f"not worse than its baseline by {-config.delta0:.0%}",
            f"worse than its baseline by {-config.delta0:.0%} or more",
        )
    return "better than its baseline", "no better than its baseline"


class HeadToHeadTable(BaseModel):
    """One head-to-head table: the candidate's and the previous model's games in the same seats."""

    opponents: list[str] = Field(description="The other seats, in order after the measured seat.")
    games: int = Field(description="Games each model played at this table.")
    candidate_win_rate: float
    baseline_win_rate: float
    candidate_decided_share: float | None = Field(description="The candidate's wins / its games that had a winner.")
    candidate_truncated: float = Field(description="Share of the candidate's games that ended at the turn limit.")
    baseline_truncated: float


class HeadToHeadVerdict(_SequentialTest):
    """What the head-to-head gate saw and decided (see the module docstring for what "beats" means)."""

    passed: bool
    decision: str = Field(description="accept_h1 (beats the previous model), accept_h0 (does not) or undecided.")
    reason: str
    candidate: str
    baseline: str
    tables: list[HeadToHeadTable]
    deals: int = Field(description="Deals fed to the test (each at every table, in every seat, by both).")


def head_to_head_tables(
    baseline: PlayerRef, past: Sequence[PlayerRef], config: HeadToHeadConfig
) -> list[tuple[PlayerRef, ...]]:
    """The opponents of each table: three copies of ``baseline``, then (``baseline``, X, X) for each of the first
    ``config.past_tables`` models X of ``past`` that is not the baseline."""
    others = [p for p in past if _ref_name(p) != _ref_name(baseline)][: config.past_tables]
    return [(baseline,) * 3, *((baseline, x, x) for x in others)]


def head_to_head_gate(
    candidate: PlayerRef,
    baseline: PlayerRef,
    past: Sequence[PlayerRef],
    config: HeadToHeadConfig,
    *,
    seed: int,
    max_rounds: int,
    backend: BackendConfig | None = None,
    engine: EngineConfig | None = None,
) -> HeadToHeadVerdict:
    """Does ``candidate`` beat ``baseline`` in the pod? Paired deals at every table, round by round, until the GSPRT
    decides or ``max_deals`` are played.

    Args:
        candidate: the new model (a checkpoint, or a player type).
        baseline: the previous promoted model of its kind.
        past: the league's other past models, latest first (the mixed tables take the first ``past_tables``).
        config: tables, hypotheses, error rates, budget.
        seed: seed of the deals (round ``r`` plays the deals of ``seed * 10_007 + r`` at every table).
        max_rounds: the turn limit.
        backend: where the games run.
        engine: play the games in this engine instead (over the engine protocol).
    """
    tables = head_to_head_tables(baseline, past, config)
    played: list[list[tuple[EvaluationResult, EvaluationResult]]] = [[] for _ in tables]

    def next_units(round_: int, deals: int) -> np.ndarray:
        units = np.zeros(deals)
        for t, table in enumerate(tables):
            pair = tuple(
                evaluate(
                    model,
                    EvaluateConfig(games=deals * POD, seed=seed * 10_007 + round_, max_rounds=max_rounds),
                    opponents=list(table),
                    backend=backend,
                    engine=engine,
                )
                for model in (candidate, baseline)
            )
            played[t].append(pair)  # type: ignore[arg-type]
            units += (deal_wins(pair[0]) - deal_wins(pair[1])) / POD
        return units / len(tables)

    trace: list[tuple[int, float]] = []
    sprt, decision, used = play_sequential(next_units, config, trace)
    scores, units = _table_scores(tables, played, used)
    wins = [
        np.concatenate([sum(deal_wins(pair[k]) for pair in pairs) for pairs in zip(*played, strict=True)])[:used]
        for k in (0, 1)
    ]  # per deal, summed over the tables: the candidate's, the previous model's
    mean, half = _mean_interval(units)
    shown = f"{100 * mean:+.1f} points of win rate over {used} paired deals at {len(tables)} table(s)"
    reason = {
        "accept_h1": f"beats the previous model head to head: {shown} (GSPRT)",
        "accept_h0": f"does not beat the previous model head to head: {shown} (GSPRT)",
        "undecided": f"not shown to beat the previous model: {shown} (llr {sprt.llr:.2f} within "
        f"[{sprt.lower:.2f}, {sprt.upper:.2f}])",
    }[decision]
    return HeadToHeadVerdict(
        passed=decision == "accept_h1",
        decision=decision,
        reason=reason,
        candidate=_ref_name(candidate),
        baseline=_ref_name(baseline),
        tables=scores,
        deals=used,
        **_test_fields(sprt, mean, half, config),
        rounds=_rounds(trace, wins[0], wins[1], POD * len(tables)),
    )


POD = 4


def _ref_name(ref: PlayerRef) -> str:
    return ref.name if isinstance(ref, PolicyBlob) else ref


def _table_scores(
    tables: list[tuple[PlayerRef, ...]], played: list[list[tuple[EvaluationResult, EvaluationResult]]], used: int
) -> tuple[list[HeadToHeadTable], np.ndarray]:
    """Each table's figures over the first ``used`` deals, and the paired unit of each of those deals."""
    scores, units = [], np.zeros(used)
    for table, pairs in zip(tables, played, strict=True):
        games_c = [o for c, _ in pairs for o in c.outcomes][: used * POD]  # outcomes in (deal, seat) order
        games_b = [o for _, b in pairs for o in b.outcomes][: used * POD]
        won_c = np.array([o.won for o in games_c], float)
        won_b = np.array([o.won for o in games_b], float)
        units += (won_c - won_b).reshape(used, POD).mean(1) / len(tables)
        decided = sum(not o.truncated for o in games_c)
        scores.append(
            HeadToHeadTable(
                opponents=[_ref_name(p) for p in table],
                games=len(games_c),
                candidate_win_rate=round(float(won_c.mean()), 4),
                baseline_win_rate=round(float(won_b.mean()), 4),
                candidate_decided_share=round(float(won_c.sum()) / decided, 4) if decided else None,
                candidate_truncated=round(sum(o.truncated for o in games_c) / len(games_c), 4),
                baseline_truncated=round(sum(o.truncated for o in games_b) / len(games_b), 4),
            )
        )
    return scores, units


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
    engine: EngineConfig | None = None,
) -> FloorVerdict:
    """The model must win more than ``config.win_rate`` of ``config.games`` games against the table."""
    result = evaluate(
        make,
        EvaluateConfig(opponents=config.opponents, games=config.games, seed=seed, max_rounds=max_rounds),
        backend=backend,
        engine=engine,
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
