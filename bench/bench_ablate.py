"""``distill ablate`` of 3 variants on the demo's lake, timed against its target (10 minutes on 2 cores).

Run: ``.venv/bin/python bench/bench_ablate.py [--home DIR] [--games 1000] [--backend auto]``.

1. The demo's data root: ``--home`` when it holds the loop run ``demo``
   (``make demo`` leaves one in ``./datasets``), else a fresh one made the
   way ``make demo`` makes it (``distill loop run --name demo`` on the
   embedded defaults), not timed.
2. From scratch (the ablation's folder and builds removed first), times
   ``distill ablate --loop demo`` of the question the project first answered
   by hand: the Forge-role share of the student's rows, 0% / 5% / 30%
   (``--vary data.weights.forge=0,0.05,0.3 --vary data.weights.ppo=1,0.95,0.7
   --zip``): 3 builds, 3 students trained with the same seed, each evaluated
   on ``--games`` games against three heuristics and three tuned
   heuristics on the same deals.
3. Prints the table and the target met or not (PASS/FAIL), and writes the
   ablation's own JSON and HTML under ``ablations/bench-forge-share/``.

The machine is shared: run it under ``nice``; the figure is the wall time.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from toolkit.ablate.config import AblateConfig, Vary
from toolkit.ablate.report import interval, percent
from toolkit.ablate.run import run_ablation
from toolkit.jobs.config import BackendConfig
from toolkit.layout import Layout
from toolkit.loop.config import LoopConfig
from toolkit.loop.run import run_loop
from toolkit.loop.state import RunFolder

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import verdict  # noqa: E402

TARGET_S = 600.0
NAME = "bench-forge-share"
RUN = "demo"


def demo_root(home: Path | None) -> Layout:
    """A data root holding the demo's loop run (``home`` when it has one, else a fresh ``make demo`` run)."""
    if home is not None and RunFolder(Layout.at(home), RUN).exists():
        return Layout.at(home)
    layout = Layout.at(home or Path(tempfile.mkdtemp(prefix="bench-ablate-")) / "datasets")
    print(f"making the demo's data root in {layout.home} (distill loop run --name {RUN}) ...", flush=True)
    state = run_loop(layout, LoopConfig(name=RUN))
    if state.status != "finished":
        raise SystemExit(f"the demo loop did not finish: {state.message}")
    return layout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, help="a data root with the demo's loop run (default: make one)")
    parser.add_argument("--games", type=int, default=1000, help="games per student and table")
    parser.add_argument("--backend", default="auto", help="where the variants run: auto, inprocess, pool, ray")
    args = parser.parse_args()
    layout = demo_root(args.home)
    shutil.rmtree(layout.ablation_dir(NAME), ignore_errors=True)  # from scratch: nothing resumed...
    shutil.rmtree(layout.builds / f"ablate-{NAME}", ignore_errors=True)  # ...and no build reused
    config = AblateConfig(
        name=NAME,
        loop=RUN,
        vary=[
            Vary(field="data.weights.forge", values=[0, 0.05, 0.3]),
            Vary(field="data.weights.ppo", values=[1, 0.95, 0.7]),
        ],
        zip=True,
        games=args.games,
        backend=BackendConfig(kind=args.backend),
    )
    started = time.perf_counter()
    result = run_ablation(layout, config)
    wall = time.perf_counter() - started
    for table in result.tables:
        print(f"\nvs {table} ({args.games} games each, paired with the first variant):")
        for v in result.variants:
            s = v.tables[table]
            diff = (
                f"{percent(s.diff, signed=True)} {interval(s.diff_low, s.diff_high, signed=True)}" if v.index else "-"
            )
            shares = ", ".join(f"{k} {x:.1%}" for k, x in sorted(v.shares.items()) if x > 0)
            print(
                f"  {v.label:<45} {percent(s.win_rate)} {interval(s.win_low, s.win_high):<14} {diff:<22} "
                f"acc {v.holdout_accuracy:.3f}  rows {v.train_rows:,} ({shares})"
            )
    judged = verdict(f"ablate of {len(result.variants)} variants, from scratch", wall, TARGET_S, at_most=True, unit="s")
    target = f"target <= {TARGET_S:.0f} s"
    print(f"\nablate of {len(result.variants)} variants on the demo's lake: {wall:.0f} s ({target}) {judged}")
    print(f"report: {layout.home / result.paths['html']}")


if __name__ == "__main__":
    main()
