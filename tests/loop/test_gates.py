"""The gates: head to head and the scripted floor, GSPRTs on paired deals that promote a stronger model and refuse a
copy, at their error rates."""

from __future__ import annotations

import numpy as np
import pytest

from toolkit.game.players import make_player
from toolkit.loop.config import HeadToHeadConfig, StrengthGateConfig
from toolkit.loop.gates import head_to_head_gate, head_to_head_tables, play_sequential, strength_gate
from toolkit.stats import MeanSPRT


def _simulated_test(
    rng: np.random.Generator,
    p_candidate: float,
    config: StrengthGateConfig,
    p_baseline: float = 0.3,
    shared: float = 0.7,
) -> str:
    """One gate on simulated deals: 4 paired games each, the candidate's result tied to the baseline's on a share."""
    sprt = MeanSPRT(config.delta0, config.delta1, config.alpha, config.beta, low=-1.0, high=1.0)
    for deal in range(config.max_deals):
        u = rng.random(4)
        baseline = u < p_baseline
        own = np.where(rng.random(4) < shared, u, rng.random(4))  # same deal, often the same fate
        candidate = own < p_candidate
        sprt.update(float((candidate.astype(float) - baseline).mean()))
        if deal + 1 >= config.min_deals and sprt.decision is not None:
            return sprt.decision
    return "undecided"


@pytest.mark.parametrize(("gain", "wrong_when"), [(0.0, "accept_h1"), (0.03, "not accept_h1")])
def test_the_gate_keeps_its_nominal_error_rates_on_simulated_paired_deals(gain: float, wrong_when: str) -> None:
    config = StrengthGateConfig(delta0=0.0, delta1=0.03)  # H0 no better, H1 +3 points, alpha 0.05, beta 0.1
    rng = np.random.default_rng(2024)
    runs = 400
    decisions = [_simulated_test(rng, 0.3 + gain, config) for _ in range(runs)]
    wrong = sum((d == "accept_h1") if wrong_when == "accept_h1" else (d != "accept_h1") for d in decisions) / runs
    nominal = config.alpha if gain == 0 else config.beta
    assert wrong < nominal + 0.04  # sampling slack on 400 runs


def test_a_copy_of_the_baseline_is_refused_after_the_minimum_of_deals() -> None:
    config = StrengthGateConfig(opponents=("heuristic",) * 3, delta0=0.0, delta1=0.03, min_deals=20, deals_per_round=20)
    verdict = strength_gate(
        lambda: make_player("heuristic"), lambda: make_player("heuristic"), config, seed=3, max_rounds=30
    )
    assert not verdict.passed and verdict.decision == "accept_h0" and verdict.deals == 20
    assert verdict.diff == verdict.diff_low == verdict.diff_high == 0.0  # same deals, same play, same results
    assert verdict.candidate_win_rate == verdict.baseline_win_rate


def test_a_known_stronger_player_is_promoted_and_the_verdict_reports_its_fixed_deals() -> None:
    config = StrengthGateConfig(opponents=("heuristic",) * 3, delta0=0.0, delta1=0.03, deals_per_round=100)
    verdict = strength_gate(
        lambda: make_player("tuned"), lambda: make_player("heuristic"), config, seed=4, max_rounds=30
    )
    assert verdict.passed and verdict.decision == "accept_h1" and verdict.deals >= config.min_deals
    assert verdict.diff_low > 0 and verdict.candidate_win_rate > verdict.baseline_win_rate
    assert verdict.games == verdict.deals * 4
    # the trace: each round's paired results and the LLR after it add up to the verdict
    assert [r.round for r in verdict.rounds] == list(range(len(verdict.rounds)))
    assert sum(r.deals for r in verdict.rounds) == verdict.deals
    assert sum(r.candidate_wins for r in verdict.rounds) / verdict.games == pytest.approx(
        verdict.candidate_win_rate, abs=1e-4
    )
    assert sum(r.baseline_wins for r in verdict.rounds) / verdict.games == pytest.approx(
        verdict.baseline_win_rate, abs=1e-4
    )
    assert verdict.rounds[-1].llr == pytest.approx(verdict.llr, abs=1e-3)
    weaker = strength_gate(
        lambda: make_player("random"), lambda: make_player("heuristic"), config, seed=4, max_rounds=30
    )
    assert not weaker.passed and weaker.decision == "accept_h0" and weaker.diff < 0


def test_the_scripted_floor_by_default_lets_an_equal_model_through_and_stops_a_much_worse_one() -> None:
    config = StrengthGateConfig(opponents=("heuristic",) * 3, min_deals=20, deals_per_round=50)
    same = strength_gate("heuristic", "heuristic", config, seed=3, max_rounds=30)
    assert same.passed and same.diff == 0.0 and "not worse than its baseline by 3%" in same.reason
    worse = strength_gate("random", "heuristic", config, seed=3, max_rounds=30)
    assert (
        not worse.passed and worse.decision == "accept_h0" and "worse than its baseline by 3% or more" in worse.reason
    )


# -- head to head ---------------------------------------------------------------------------------------------


def _simulated_pod_units(
    rng: np.random.Generator, deals: int, gain: float, tables: int = 3, timeout: float = 0.6, shared: float = 0.5
) -> np.ndarray:
    """Paired head-to-head units of ``deals`` simulated deals: at each table and seat, the previous model's game
    (a table of four equal models: it wins a quarter of the decided games) and the candidate's game in the same
    seat, which on a share of deals follows the same fate and otherwise wins with its own chance (+ ``gain``)."""
    shape = (deals, tables, 4)
    fate = rng.random(shape)
    baseline = fate < (1 - timeout) / 4
    own = np.where(rng.random(shape) < shared, fate, rng.random(shape))
    candidate = own < (1 - timeout) / 4 + gain
    return (candidate.astype(float) - baseline).mean(axis=(1, 2))


@pytest.mark.parametrize(("gain", "nominal"), [(0.0, "alpha"), (0.03, "beta")])
def test_head_to_head_keeps_its_nominal_error_rates_on_simulated_paired_pods(gain: float, nominal: str) -> None:
    config = HeadToHeadConfig()  # the loop's defaults: H0 no better, H1 +3 points, alpha 0.05, beta 0.1
    rng = np.random.default_rng(27)
    runs = 300
    decisions = [
        play_sequential(lambda _round, deals: _simulated_pod_units(rng, deals, gain), config)[1] for _ in range(runs)
    ]
    promoted = sum(d == "accept_h1" for d in decisions) / runs
    if nominal == "alpha":  # a model as strong as the previous one, not a copy of it: promoted at most alpha
        assert promoted < config.alpha + 0.04
    else:  # a model 3 points stronger: refused at most beta
        assert 1 - promoted < config.beta + 0.05


def test_head_to_head_refuses_a_copy_of_the_previous_model_after_the_minimum_of_deals() -> None:
    config = HeadToHeadConfig(min_deals=12, deals_per_round=12, past_tables=1)
    verdict = head_to_head_gate("heuristic", "heuristic", ["tuned"], config, seed=5, max_rounds=30)
    assert not verdict.passed and verdict.decision == "accept_h0" and verdict.deals == 12
    assert verdict.diff == verdict.diff_low == verdict.diff_high == 0.0  # same seat, same deal, same game
    assert [t.opponents for t in verdict.tables] == [["heuristic"] * 3, ["heuristic", "tuned", "tuned"]]
    assert all(t.candidate_win_rate == t.baseline_win_rate and t.games == 48 for t in verdict.tables)


def test_head_to_head_promotes_a_player_that_beats_the_previous_one_in_its_own_pod() -> None:
    config = HeadToHeadConfig(deals_per_round=100, past_tables=0)
    verdict = head_to_head_gate("tuned", "heuristic", ["random"], config, seed=6, max_rounds=30)
    assert verdict.passed and verdict.decision == "accept_h1" and verdict.diff_low > 0
    [table] = verdict.tables  # past_tables 0: three copies of the previous model only
    assert table.candidate_win_rate > table.baseline_win_rate and table.candidate_decided_share > 0.25
    weaker = head_to_head_gate("random", "heuristic", [], config, seed=6, max_rounds=30)
    assert not weaker.passed and weaker.decision == "accept_h0" and weaker.diff < 0


def test_the_mixed_tables_seat_the_previous_model_with_the_latest_other_past_models() -> None:
    config = HeadToHeadConfig(past_tables=2)
    assert head_to_head_tables("b", ["b", "x", "y", "z"], config) == [("b", "b", "b"), ("b", "x", "x"), ("b", "y", "y")]
    assert head_to_head_tables("b", [], config) == [("b", "b", "b")]


def test_a_student_gate_saved_before_head_to_head_promotion_still_loads() -> None:
    """Runs recorded before promotion was head to head saved the student gate as its strength verdict: a resumed
    run and the dashboard read it as that verdict, with no head-to-head part."""
    from toolkit.loop.steps.strength import StudentGateResult

    config = StrengthGateConfig(opponents=("heuristic",) * 3, min_deals=8, max_deals=8, deals_per_round=8)
    old = strength_gate("tuned", "random", config, seed=1, max_rounds=30).model_dump(mode="json")
    old.pop("rounds")  # nor did it keep its rounds
    loaded = StudentGateResult.model_validate(old)
    assert loaded.head_to_head is None and loaded.strength is not None
    assert (loaded.passed, loaded.reason) == (old["passed"], old["reason"]) and loaded.strength.deals == 8
