"""Statistics on small known inputs."""

from __future__ import annotations

import random

import pytest

from toolkit.stats import MeanSPRT, entropy_bits, js_divergence, wilson_interval


def test_entropy_of_a_uniform_eight_way_distribution_is_three_bits() -> None:
    assert entropy_bits([5] * 8) == pytest.approx(3.0)
    assert entropy_bits([1, 0, 0]) == 0.0


def test_js_divergence_is_zero_for_equal_and_one_for_disjoint() -> None:
    assert js_divergence([1, 2, 3], [2, 4, 6]) == pytest.approx(0.0)
    assert js_divergence([1, 0], [0, 1]) == pytest.approx(1.0)


def test_wilson_interval_contains_the_estimate_and_narrows_with_data() -> None:
    low, high = wilson_interval(30, 100)
    assert low < 0.3 < high
    assert (high - low) > (lambda lh: lh[1] - lh[0])(wilson_interval(300, 1000))
    assert wilson_interval(0, 0) == (0.0, 1.0)


# Placement scores of a 4-player pod (1, 2/3, 1/3, 0): equal strength has mean 0.5; a stronger player
# finishes higher more often (mean 0.55 here).
_EVEN = [0.25, 0.25, 0.25, 0.25]
_STRONGER = [0.31, 0.27, 0.22, 0.20]


@pytest.mark.parametrize(("places", "expected"), [(_EVEN, "accept_h0"), (_STRONGER, "accept_h1")])
def test_the_mean_sprt_on_placement_scores_keeps_its_error_rates(places: list[float], expected: str) -> None:
    rng = random.Random(5)
    scores = [1.0, 2 / 3, 1 / 3, 0.0]
    wrong, trials = 0, []
    runs = 300
    for _ in range(runs):
        test = MeanSPRT(0.5, 0.55)
        while test.trials < 20_000:  # as the loop's gate: no decision before 40 games
            if test.update(rng.choices(scores, places)[0]) and test.trials >= 40:
                break
        wrong += test.decision != expected
        trials.append(test.trials)
    assert wrong / runs < 0.09
    assert sum(trials) / runs < 350  # placement scores decide sooner than a win/loss test would (~420 games)


def test_the_mean_sprt_refuses_scores_outside_its_range() -> None:
    test = MeanSPRT(0.0, 0.03, low=-1.0, high=1.0)
    test.update(-1.0)
    with pytest.raises(ValueError):
        test.update(1.5)
    with pytest.raises(ValueError):
        MeanSPRT(0.5, 0.4)


def test_an_interval_of_a_difference_says_better_worse_or_no_detectable_difference() -> None:
    from toolkit.stats import interval_verdict

    assert interval_verdict(0.01, 0.2) == "better"
    assert interval_verdict(-0.2, -0.01) == "worse"
    assert interval_verdict(-0.1, 0.1) == interval_verdict(0.0, 0.1) == "no detectable difference"
