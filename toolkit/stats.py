"""Small statistics the gates and reports share: intervals, entropy, divergence, SPRT."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (95% by default); (0, 1) for no trials."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def entropy_bits(counts: Sequence[float]) -> float:
    """Shannon entropy, in bits, of the distribution proportional to ``counts``."""
    total = float(sum(counts))
    if total <= 0:
        return 0.0
    return -sum((c / total) * math.log2(c / total) for c in counts if c > 0)


def js_divergence(p: Sequence[float], q: Sequence[float]) -> float:
    """Jensen-Shannon divergence in bits (0 = same, 1 = disjoint) of two count vectors."""
    if len(p) != len(q):
        raise ValueError("distributions must have the same support")
    sp, sq = float(sum(p)), float(sum(q))
    if sp <= 0 or sq <= 0:
        raise ValueError("distributions must have positive mass")
    pn = [x / sp for x in p]
    qn = [x / sq for x in q]
    m = [(a + b) / 2 for a, b in zip(pn, qn, strict=True)]

    def kl(a: list[float]) -> float:
        return sum(x * math.log2(x / y) for x, y in zip(a, m, strict=True) if x > 0)

    return (kl(pn) + kl(qn)) / 2


@dataclass
class BernoulliSPRT:
    """Wald's sequential probability ratio test of H0: p = p0 against H1: p = p1.

    Feed outcomes one by one; :attr:`decision` becomes ``"accept_h1"`` or
    ``"accept_h0"`` once the log-likelihood ratio crosses a bound.
    """

    p0: float
    p1: float
    alpha: float = 0.05
    beta: float = 0.05
    llr: float = 0.0
    trials: int = 0
    successes: float = 0

    def __post_init__(self) -> None:
        if not (0 < self.p0 < self.p1 < 1):
            raise ValueError(f"need 0 < p0 < p1 < 1, got p0={self.p0}, p1={self.p1}")

    @property
    def upper(self) -> float:
        return math.log((1 - self.beta) / self.alpha)

    @property
    def lower(self) -> float:
        return math.log(self.beta / (1 - self.alpha))

    def update(self, success: bool) -> str | None:
        return self.update_score(1.0 if success else 0.0)

    def update_score(self, score: float) -> str | None:
        """Feed an outcome scored in [0, 1] (e.g. a 4-player placement score 1, 2/3, 1/3, 0).

        A fractional score adds the same mix of the success and failure terms
        (the usual treatment of draws in sequential tests of game results);
        0 and 1 are plain Bernoulli outcomes.
        """
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"a score must be in [0, 1], got {score}")
        self.trials += 1
        self.successes += score
        self.llr += score * math.log(self.p1 / self.p0) + (1 - score) * math.log((1 - self.p1) / (1 - self.p0))
        return self.decision

    @property
    def decision(self) -> str | None:
        if self.llr >= self.upper:
            return "accept_h1"
        if self.llr <= self.lower:
            return "accept_h0"
        return None
