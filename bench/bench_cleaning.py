"""Does cleaning help? Students trained on noisy builds, with and without the flagged rows dropped.

Usage::

    .venv/bin/python bench/bench_cleaning.py                          # 600 games, 0% / 5% / 20% flips
    .venv/bin/python bench/bench_cleaning.py --games 2000 --eval-games 2000

The heuristic's own games (``simulate``, one seed for every rate) get 0%, 5% and
20% of their decisions with a choice relabelled to another legal action at random
(:mod:`toolkit.quality.noise`). For each rate: ingest, build ``noisy``, score it
(``check_labels``, default settings), build ``clean`` (``--drop-label-issues``), and
train a BC student on each (same seed, same config). Every student is then
measured on the same things:

- holdout accuracy against the TRUE labels (the 0% build's holdout: the same
  decisions, unflipped);
- strength: ``evaluate`` against three heuristics on the same deals (seats
  rotated) for every student, win rate with its 95% interval, and the cleaned
  student minus the noisy one on those paired deals with its interval.

Prints a Markdown table and writes it to ``bench/out/cleaning/bench_cleaning.txt``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Tee  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "cleaning"
RATES = (0.0, 0.05, 0.2)


def prepare(games: int, rate: float, seed: int):  # noqa: ANN201 - (Layout, LabelCheckResult)
    """A data root with ``noisy`` (scored) and ``clean`` (its flagged train rows dropped)."""
    from toolkit.datasets.build import build_dataset
    from toolkit.datasets.config import BuildConfig
    from toolkit.game.config import SimulateConfig
    from toolkit.game.simulate import simulate
    from toolkit.ingest.ingest import ingest_paths
    from toolkit.layout import Layout
    from toolkit.quality.labels import check_labels
    from toolkit.quality.noise import flip_files

    root = OUT / f"rate-{rate}"
    shutil.rmtree(root, ignore_errors=True)
    logs = simulate(SimulateConfig(games=games, seed=seed, out=root / "logs"))
    files, flipped = flip_files(logs.files, root / "noisy-logs", rate, seed)
    layout = Layout.at(root / "home")
    ingest_paths(files, layout)
    shutil.rmtree(root / "logs")
    shutil.rmtree(root / "noisy-logs")
    build_dataset(layout, BuildConfig(name="noisy"))
    scored = check_labels(layout, "noisy")
    build_dataset(layout, BuildConfig(name="clean", label_issues={"drop_flagged": True, "scores": "noisy"}))
    return layout, scored, flipped


def precision(layout, scored, flipped: set) -> str:  # noqa: ANN001
    """Flagged decisions and the share of them that were flipped."""
    from toolkit.datasets.dataset import open_dataset
    from toolkit.datasets.scores import read_scores

    rows = read_scores(layout, open_dataset(layout, "noisy")).to_pylist()
    flagged = {(r["game_id"], r["seat"], r["decision_index"]) for r in rows if r["flagged"]}
    share = f"{len(flagged & flipped) / len(flagged):.0%}" if flagged and flipped else "-"
    return f"{scored.flagged:,} ({share})"


def student(layout, name: str, epochs: int) -> Path:  # noqa: ANN001
    from toolkit.train.bc import train_bc
    from toolkit.train.config import BCConfig

    return train_bc(layout, BCConfig(dataset=name, epochs=epochs, seed=0, run_id=f"bench-{name}")).checkpoint


def holdout_accuracy(card: Path, truth) -> float:  # noqa: ANN001
    import numpy as np

    from toolkit.train.agents import load_agent
    from toolkit.train.policy import greedy_policy

    features, labels, masks, _ = truth
    act = greedy_policy(load_agent(card).actor)
    return float(np.mean(act(features, masks) == labels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=600, help="heuristic games simulated (the same for every rate)")
    parser.add_argument("--epochs", type=int, default=10, help="BC epochs of every student")
    parser.add_argument("--eval-games", type=int, default=1000, help="games per student against three heuristics")
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()

    import torch

    from toolkit.datasets.dataset import HOLDOUT, open_dataset
    from toolkit.train.agents import policy_blob
    from toolkit.train.bc import read_split
    from toolkit.train.config import EvaluateConfig
    from toolkit.train.evaluate import compare, evaluate

    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True)
    out = Tee()
    deals = EvaluateConfig(games=args.eval_games, seed=2026)
    out(
        f"{args.games} heuristic games; students: BC {args.epochs} epochs, seed 0; {deals.games} games each vs 3 "
        "heuristics on the same deals; holdout accuracy against the true (unflipped) labels"
    )
    out(
        "| flipped | build | train rows | dropped | flagged (precision) | holdout acc | win rate vs 3 heuristics "
        "| cleaned - noisy (paired) |"
    )
    out("|---|---|---|---|---|---|---|---|")
    truth = None
    for rate in RATES:
        layout, scored, flipped = prepare(args.games, rate, args.seed)
        found = precision(layout, scored, flipped)
        if truth is None:  # the 0% build: the same holdout decisions with their true labels
            truth = read_split(open_dataset(layout, "noisy"), HOLDOUT)
        results = {}
        for name in ("noisy", "clean"):
            card = student(layout, name, args.epochs)
            dataset = open_dataset(layout, name)
            ev = evaluate(policy_blob(card), deals)
            results[name] = (dataset, holdout_accuracy(card, truth), ev)
        diff = compare(results["clean"][2], results["noisy"][2])
        for name, (dataset, accuracy, ev) in results.items():
            used = dataset.manifest.label_scores
            paired = (
                f"{100 * diff.win_rate_diff:+.1f} [{100 * diff.win_rate_diff_low:+.1f}, "
                f"{100 * diff.win_rate_diff_high:+.1f}]"
                if name == "clean"
                else ""
            )
            out(
                f"| {rate:.0%} | {name} | {dataset.manifest.splits['train'].rows:,} | "
                f"{used.rows_dropped if used else 0:,} | {found} | {accuracy:.3f} | "
                f"{100 * ev.win_rate:.1f}% [{100 * ev.win_low:.1f}, {100 * ev.win_high:.1f}] | {paired} |"
            )
    out.write(OUT / "bench_cleaning.txt")


if __name__ == "__main__":
    main()
