"""The strength gate: a GSPRT on paired deals that promotes a stronger model and refuses a copy, at its error rates."""

from __future__ import annotations

import numpy as np
import pytest

from toolkit.game.players import make_player
from toolkit.loop.config import StrengthGateConfig
from toolkit.loop.gates import strength_gate
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
    config = StrengthGateConfig()  # the loop's defaults: H0 no better, H1 +3 points, alpha 0.05, beta 0.1
    rng = np.random.default_rng(2024)
    runs = 400
    decisions = [_simulated_test(rng, 0.3 + gain, config) for _ in range(runs)]
    wrong = sum((d == "accept_h1") if wrong_when == "accept_h1" else (d != "accept_h1") for d in decisions) / runs
    nominal = config.alpha if gain == 0 else config.beta
    assert wrong < nominal + 0.04  # sampling slack on 400 runs


def test_a_copy_of_the_baseline_is_refused_after_the_minimum_of_deals() -> None:
    config = StrengthGateConfig(opponents=("heuristic",) * 3, min_deals=20, deals_per_round=20)
    verdict = strength_gate(
        lambda: make_player("heuristic"), lambda: make_player("heuristic"), config, seed=3, max_rounds=30
    )
    assert not verdict.passed and verdict.decision == "accept_h0" and verdict.deals == 20
    assert verdict.diff == verdict.diff_low == verdict.diff_high == 0.0  # same deals, same play, same results
    assert verdict.candidate_win_rate == verdict.baseline_win_rate


def test_a_known_stronger_player_is_promoted_and_the_verdict_reports_its_fixed_deals() -> None:
    config = StrengthGateConfig(opponents=("heuristic",) * 3, deals_per_round=100)
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
