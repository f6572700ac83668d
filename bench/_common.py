"""Helpers for the benchmarks: timing, peak memory, and measuring in a fresh process.

Each measured path runs in its own Python process, so one path's heap, caches
and threads never count against another: the child times only its work
(imports excluded) and reports its own peak RSS (``ru_maxrss``, which covers
every thread of the process) as one JSON line on stdout.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RESULT_PREFIX = "BENCH-RESULT "
VERDICTS_ENV = "DISTILL_BENCH_VERDICTS"  # a JSONL file every verdict is appended to (``make bench`` sets it)


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux: ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Timer:
    """Wall-clock and CPU seconds of a block."""

    wall: float = 0.0
    cpu: float = 0.0


@contextmanager
def timed() -> Iterator[Timer]:
    """Time a block: ``with timed() as t: ...`` then read ``t.wall`` / ``t.cpu``."""
    timer = Timer()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield timer
    finally:
        timer.wall = time.perf_counter() - wall
        timer.cpu = time.process_time() - cpu


def report_child(rows: int, timer: Timer, **extra: Any) -> None:
    """Print the child's result line (parsed by :func:`run_child`)."""
    result = {"rows": rows, "wall_s": timer.wall, "cpu_s": timer.cpu, "peak_rss_mb": peak_rss_mb(), **extra}
    print(RESULT_PREFIX + json.dumps(result), flush=True)


@dataclass
class Measurement:
    """One measured run of one path."""

    name: str
    rows: int
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.rows / self.wall_s if self.wall_s else float("nan")


def run_child(
    name: str, argv: list[str], timeout: float | None = None, env: dict[str, str] | None = None
) -> Measurement:
    """Run ``argv`` (a Python command) in a fresh process (``env`` added to this one's) and parse its result line.

    Raises:
        RuntimeError: the child failed or printed no result.
    """
    env = {**os.environ, "PYTHONHASHSEED": "0", **(env or {})}
    proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=timeout, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{name} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    data = json.loads(lines[-1].removeprefix(RESULT_PREFIX))
    rows, wall, cpu, rss = (data.pop(k) for k in ("rows", "wall_s", "cpu_s", "peak_rss_mb"))
    return Measurement(name, rows, wall, cpu, rss, data)


def best_of(runs: list[Measurement]) -> Measurement:
    """The fastest of repeated runs (noise on a shared machine only ever slows a run),
    with the largest peak RSS seen."""
    best = min(runs, key=lambda m: m.wall_s)
    best.peak_rss_mb = max(m.peak_rss_mb for m in runs)
    return best


def figure(value: float, unit: str = "") -> str:
    """A measured figure as the benchmarks print it: ``1.23x``, ``16.3 s``, ``218,431 decisions/s``, ``4.2%``."""
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "%":
        return f"{value:.1%}"
    if math.isinf(value) or math.isnan(value):
        text = str(value)
    elif abs(value) >= 1000:
        text = f"{value:,.0f}"
    elif abs(value) >= 100 or float(value).is_integer():
        text = f"{value:.0f}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}" if unit else text


def verdict(
    what: str,
    measured: float,
    target: float,
    *,
    at_most: bool = False,
    unit: str = "",
    against: str = "",
) -> str:
    """Judge one numeric target and record it for ``bench/summary.py``; returns ``"PASS"`` or ``"FAIL"``.

    Args:
        what: the figure, as the summary table names it ("ingest / orjson line by line").
        measured: the figure measured in this run (a ratio, seconds, MiB, a rate).
        target: the bound it must reach.
        at_most: the target is an upper bound (a time, a memory, a time ratio); else a lower bound.
        unit: how to print both numbers (see :func:`figure`; ``"x"`` for a ratio, ``"%"`` for a share).
        against: the baseline measured in the same run, when ``measured`` is a ratio to it.
    """
    ok = measured <= target if at_most else measured >= target
    bound = ("<= " if at_most else ">= ") + figure(target, unit)
    return judged(what, ok, figure(measured, unit), bound, against=against)


def ratio(what: str, value: float, against: str) -> None:
    """Record a ratio to a baseline measured in the same run that has no target of its own (it shows where the
    floor is), for ``bench/summary.py``'s table."""
    judged(what, None, figure(value, "x"), "-", against=against)


def judged(what: str, ok: bool | None, measured: str, target: str, *, against: str = "") -> str:
    """Record a target judged by the caller (one that is not a single number against a bound); returns
    ``"PASS"`` or ``"FAIL"``.

    When the environment names a file in ``DISTILL_BENCH_VERDICTS``, the verdict is appended to it as one JSON
    line (the benchmark's script name, ``what``, ``against``, ``measured``, ``target``, ``ok``), so ``make bench``
    can end with one table of every target of every benchmark.
    """
    path = os.environ.get(VERDICTS_ENV)
    if path:
        record = {
            "bench": Path(sys.argv[0]).stem,
            "what": what,
            "against": against,
            "measured": measured,
            "target": target,
            "ok": None if ok is None else bool(ok),
        }
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
    return "-" if ok is None else "PASS" if ok else "FAIL"


class Tee:
    """Print lines and keep them, to write the same text to a file afterwards."""

    def __init__(self, echo: Callable[[str], None] = print) -> None:
        self.lines: list[str] = []
        self.echo = echo

    def __call__(self, line: str = "") -> None:
        self.lines.append(line)
        self.echo(line)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines) + "\n")
