"""What a label-issue rate means: against what clean logs give, and the alarm above which it is red."""

from __future__ import annotations

from typing import Final

# Measured by bench/bench_labels.py on 2,000 of the heuristic's own games, no label flipped: 0.49% flagged at
# out-of-sample accuracy 0.959 (the fold models' own mistakes; more on small builds, whose models are weaker).
CLEAN_RATE: Final = 0.0049
ALARM_RATE: Final = 0.05  # above it the verdict is red, and the lake and dataset suites warn


def read_rate(rate: float, interval: tuple[float, float]) -> str:
    """The issue rate in words, against what clean logs give (:data:`CLEAN_RATE`) and the alarm (:data:`ALARM_RATE`)."""
    clean = f"clean logs of a deterministic policy give (about {CLEAN_RATE:.1%}: the fold models' own mistakes)"
    if interval[0] <= 2 * CLEAN_RATE:
        return f"about what {clean}: most flags are likely the models' doubts, not wrong labels"
    if rate <= ALARM_RATE:
        return f"above what {clean}: some labels are likely wrong; look at the worst before training on them"
    return (
        f"far above what {clean}, and above the {ALARM_RATE:.0%} alarm: many labels are likely wrong (a logging "
        "bug, an action mapped wrongly?)"
    )
