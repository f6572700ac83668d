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
    return max(0.0, -sum((c / total) * math.log2(c / total) for c in counts if c > 0))  # never -0.0


def entropy_upper_bound(counts: Sequence[float], confidence: float = 0.95, draws: int = 4000) -> float:
    """An upper credible bound on the entropy (bits) of the distribution behind ``counts``.

    The Dirichlet posterior under a Jeffreys prior (every category + 0.5),
    sampled with a fixed seed (the bound is a pure function of the counts):
    few rows leave it high (too little evidence of a collapse), many rows of
    one action bring it near the observed entropy.
    """
    import numpy as np

    alpha = np.asarray(counts, float) + 0.5
    samples = np.random.default_rng(0).dirichlet(alpha, size=draws)
    with np.errstate(divide="ignore", invalid="ignore"):
        bits = -np.where(samples > 0, samples * np.log2(samples), 0.0).sum(1)
    return float(np.quantile(bits, confidence))


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


def wald_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's (lower, upper) log-likelihood-ratio bounds for error rates alpha (false H1) and beta (false H0)."""
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


def wald_decision(llr: float, alpha: float, beta: float) -> str | None:
    """``accept_h1`` / ``accept_h0`` once ``llr`` crosses a bound, else None."""
    lower, upper = wald_bounds(alpha, beta)
    return "accept_h1" if llr >= upper else "accept_h0" if llr <= lower else None


class _WaldTest:
    """Wald's bounds and decision for a test with ``alpha``, ``beta`` and a log-likelihood ratio ``llr``."""

    alpha: float
    beta: float
    llr: float

    @property
    def lower(self) -> float:
        return wald_bounds(self.alpha, self.beta)[0]

    @property
    def upper(self) -> float:
        return wald_bounds(self.alpha, self.beta)[1]

    @property
    def decision(self) -> str | None:
        """``accept_h1`` / ``accept_h0`` once the ratio crossed a bound, else None."""
        return wald_decision(self.llr, self.alpha, self.beta)


@dataclass
class MeanSPRT(_WaldTest):
    """A sequential test of the mean of scores in ``[low, high]``: H0 mean = mu0 against H1 mean = mu1.

    The normal approximation fishtest's GSPRT uses: after n scores with sum S
    and sample variance v, ``llr = (mu1 - mu0) / v * (S - n (mu0 + mu1) / 2)``,
    compared with Wald's bounds. It fits any bounded score whose variance is
    estimated as it goes: placement scores in [0, 1], or paired differences
    in [-1, 1] (a candidate's result minus its baseline's on the same deal:
    H0 "no better", mu0 = 0). The variance is floored so the first few
    identical scores cannot decide alone (callers also set a minimum of
    scores).
    """

    mu0: float
    mu1: float
    alpha: float = 0.05
    beta: float = 0.05
    low: float = 0.0
    high: float = 1.0
    trials: int = 0
    total: float = 0.0
    total_sq: float = 0.0
    min_variance: float = 0.001

    def __post_init__(self) -> None:
        if not (self.low <= self.mu0 < self.mu1 <= self.high):
            raise ValueError(f"need {self.low} <= mu0 < mu1 <= {self.high}, got mu0={self.mu0}, mu1={self.mu1}")

    @property
    def variance(self) -> float:
        if self.trials < 2:
            return ((self.high - self.low) / 2) ** 2
        mean = self.total / self.trials
        return max(self.min_variance, self.total_sq / self.trials - mean * mean)

    @property
    def mean(self) -> float:
        return self.total / self.trials if self.trials else math.nan

    @property
    def llr(self) -> float:  # type: ignore[override]
        return (self.mu1 - self.mu0) / self.variance * (self.total - self.trials * (self.mu0 + self.mu1) / 2)

    def update(self, score: float) -> str | None:
        if not self.low <= score <= self.high:
            raise ValueError(f"a score must be in [{self.low}, {self.high}], got {score}")
        self.trials += 1
        self.total += score
        self.total_sq += score * score
        return self.decision


def probability_above_zero(estimate: float, se: float) -> float:
    """The probability that a difference estimated as ``estimate`` with standard error ``se`` is above 0 (normal
    approximation); 1 or 0 where the estimate is exact."""
    if se <= 0:
        return 0.5 if estimate == 0 else float(estimate > 0)
    return 0.5 * (1.0 + math.erf(estimate / (se * math.sqrt(2.0))))


def interval_verdict(low: float, high: float) -> str:
    """What a 95% interval of a difference says, in words: ``better`` (it lies above 0), ``worse`` (below 0), or
    ``no detectable difference`` (it holds 0)."""
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    return "no detectable difference"
