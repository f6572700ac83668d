"""Where ``distill check dataset`` spends its time: CPU and wall seconds of each part, run one after another.

Usage::

    .venv/bin/python bench/profile_check.py [HOME] [--chunk-rows N]

HOME defaults to bench_build's 5M-decision lake (``bench/out/build-lake``,
holding the dataset ``bench-check`` that bench_check builds). The gate runs
its parts on three threads at once; here they run in turn on one (the pool is
swapped for one that runs each job when it is submitted), so each part's
process CPU is its own, DuckDB's and Arrow's worker threads included. The GX
import is excluded. Then the same check runs as shipped, and the CPU of each
thread that did work is listed (from ``/proc/self/task``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_build import OUT  # noqa: E402
from bench_check import NAME  # noqa: E402

Parts = dict[str, list[float]]


class _InTurn:
    """A stand-in for the gate's thread pool that runs each job as it is submitted."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> _InTurn:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        future: Future = Future()
        future.set_result(fn(*args))
        return future


def _timed(parts: Parts, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent = parts.setdefault(name, [0.0, 0.0])
            spent[0] += time.process_time() - cpu
            spent[1] += time.perf_counter() - wall

    return run


def _thread_cpu() -> dict[str, float]:
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[task.name] = (int(fields[11]) + int(fields[12])) / ticks
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("home", nargs="?", default=str(OUT / "build-lake"))
    parser.add_argument("--chunk-rows", type=int, default=None)
    args = parser.parse_args()

    import toolkit.checks.gate as gate
    from toolkit.checks.gx import _gx
    from toolkit.layout import Layout

    _gx()
    config = gate.CheckConfig(write=False, **({"chunk_rows": args.chunk_rows} if args.chunk_rows else {}))
    layout = Layout.at(args.home)
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; chunk rows {config.chunk_rows:,}")

    shipped = gate.ThreadPoolExecutor, gate.qm.compute_metrics, gate._run_gx_frames, dict(gate.NATIVE_CHECKS)
    parts: Parts = {}
    gate.ThreadPoolExecutor = _InTurn  # type: ignore[misc,assignment]
    gate.qm.compute_metrics = _timed(parts, "metrics (DuckDB)", gate.qm.compute_metrics)
    gate._run_gx_frames = _timed(parts, "GX expectations", gate._run_gx_frames)
    for name, check in shipped[3].items():
        gate.NATIVE_CHECKS[name] = type(check)(name, check.targets, check.engine, _timed(parts, name, check.run))
    cpu, wall = time.process_time(), time.perf_counter()
    gate.check_dataset(layout, NAME, config)
    print(f"in turn: CPU {time.process_time() - cpu:.2f}s, wall {time.perf_counter() - wall:.2f}s")
    for name, (part_cpu, part_wall) in sorted(parts.items(), key=lambda kv: -kv[1][0]):
        if part_cpu >= 0.05:
            print(f"  {name:34s} CPU {part_cpu:6.2f}s  wall {part_wall:6.2f}s")

    gate.ThreadPoolExecutor, gate.qm.compute_metrics, gate._run_gx_frames = shipped[:3]  # type: ignore[misc]
    gate.NATIVE_CHECKS.update(shipped[3])
    before = _thread_cpu()
    cpu, wall = time.process_time(), time.perf_counter()
    report = gate.check_dataset(layout, NAME, config)
    print(
        f"as shipped: CPU {time.process_time() - cpu:.2f}s, wall {time.perf_counter() - wall:.2f}s; timings "
        + ", ".join(f"{k} {v:.2f}s" for k, v in report.timings.items())
    )
    after = _thread_cpu()
    busy = {tid: after[tid] - before.get(tid, 0.0) for tid in after}
    print(
        "  CPU of the threads still alive (the pool's have ended): "
        + ", ".join(f"{'main' if tid == str(os.getpid()) else tid} {s:.2f}s" for tid, s in busy.items() if s >= 0.05)
    )


if __name__ == "__main__":
    main()
