"""Does the loop make the student stronger, generation after generation? A full default run, then honest evaluations.

Run: ``.venv/bin/python bench/bench_learning.py [--generations 4] [--games 2000] [--seed 0] [--out DIR]``.

1. Runs ``distill loop run`` with the default settings and ``--generations``
   generations in a fresh data root, timed (target: >= 4 generations in
   <= 45 minutes on 2 cores).
2. Evaluates every generation's student and PPO model (the ones each
   generation trained, promoted or not) on ``--games`` games against three
   heuristics and against three tuned heuristics, seats rotated, on the same
   deals for every model (a seed the loop never used), with 95% intervals;
   and the final student minus the generation-0 student on those paired
   deals, with its 95% interval over deal units.
3. Prints one table with holdout accuracy (the FIXED Forge holdout), data
   composition and rating per generation, the accuracy-vs-strength
   correlation, and each target met or not; writes it all as JSON
   (``<out>/learning.json``).

Targets (the learning issue): the final student >= 45% vs 3 heuristics and
>= 33% vs 3 tuned; the final student beats the generation-0 student with the
interval above zero; the final PPO model >= 40% vs 3 tuned.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np
import torch

from toolkit.layout import Layout
from toolkit.loop.config import LoopConfig
from toolkit.loop.run import run_loop
from toolkit.loop.state import RunFolder
from toolkit.train.agents import policy_blob
from toolkit.train.evaluate import EvaluateConfig, EvaluationResult, compare, evaluate

TABLES = {"heuristic": ("heuristic",) * 3, "tuned": ("tuned",) * 3}
EVAL_SEED = 911_911  # deals the loop never played
MINUTES_TARGET = 45.0


def _score(result: EvaluationResult) -> dict[str, float]:
    return {"win_rate": result.win_rate, "low": result.win_low, "high": result.win_high, "games": result.games}


def evaluate_models(records: list[dict], games: int) -> list[dict]:
    """Every generation's trained student and PPO model on the same deals, one row per generation."""
    rows = []
    for record in records:
        g = record["generation"]
        steps = record["attempts"][-1]["steps"]
        models = {
            "student": (steps.get("train_student") or {}).get("checkpoint"),
            "ppo": (steps.get("selfplay") or {}).get("final"),
        }
        row = {
            "generation": g,
            "outcome": record["outcome"],
            "student_promoted": record["student_promoted"],
            "teacher_promoted": record["teacher_promoted"],
            "holdout_accuracy": record["holdout_accuracy"],
            "rows_by_source": record["rows_by_source"],
            "seconds": record["seconds"],
        }
        for kind, card in models.items():
            if card is None:
                continue
            policy = policy_blob(Path(card))  # a checkpoint: its games run on the pool when cores are free
            for table, opponents in TABLES.items():
                result = evaluate(policy, EvaluateConfig(opponents=opponents, games=games, seed=EVAL_SEED))
                row[f"{kind}_vs_{table}"] = _score(result)
        rows.append(row)
    return rows


def ratings_by_name(records: list[dict]) -> dict[str, float]:
    return {s["name"]: s["elo"] for s in (records[-1].get("ratings") or [])}


def print_table(rows: list[dict], elo: dict[str, float]) -> None:
    def cell(row: dict, key: str) -> str:
        s = row.get(key)
        return "-" if s is None else f"{s['win_rate']:.1%} [{s['low']:.1%},{s['high']:.1%}]"

    print(
        f"{'gen':>3}  {'student vs 3H':>22}  {'student vs 3T':>22}  {'PPO vs 3H':>22}  {'PPO vs 3T':>22}  "
        f"{'holdout acc':>11}  {'ppo share':>9}  {'elo stud/ppo':>13}  promoted"
    )
    for row in rows:
        g = row["generation"]
        by_source = row["rows_by_source"] or {}
        share = by_source.get("ppo", 0) / max(1, sum(by_source.values()))
        acc = "-" if row["holdout_accuracy"] is None else f"{row['holdout_accuracy']:.3f}"
        ratings = f"{elo.get(f'gen-{g:03d}-student', float('nan')):.0f}/{elo.get(f'gen-{g:03d}-ppo', float('nan')):.0f}"
        promoted = "+".join(k for k in ("teacher", "student") if row[f"{k}_promoted"]) or "-"
        print(
            f"{g:>3}  {cell(row, 'student_vs_heuristic'):>22}  {cell(row, 'student_vs_tuned'):>22}  "
            f"{cell(row, 'ppo_vs_heuristic'):>22}  {cell(row, 'ppo_vs_tuned'):>22}  {acc:>11}  {share:>9.0%}  "
            f"{ratings:>13}  {promoted}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--games", type=int, default=2_000, help="games per model and table")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out" / "learning")
    parser.add_argument(
        "--warm-start",
        choices=("ppo", "student"),
        default=None,
        help="override ppo.warm_start (to compare the two; default: the loop's default)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    shutil.rmtree(args.out, ignore_errors=True)
    layout = Layout.at(args.out / "home")
    config = LoopConfig(name="learning", max_generations=args.generations, seed=args.seed)
    if args.warm_start:
        config = config.model_copy(update={"ppo": config.ppo.model_copy(update={"warm_start": args.warm_start})})
    start = time.perf_counter()
    state = run_loop(
        layout,
        config,
        progress=lambda message: print(f"[{(time.perf_counter() - start) / 60:5.1f} min] {message}", flush=True),
    )
    minutes = (time.perf_counter() - start) / 60
    records = RunFolder(layout, config.name).records()
    print(f"loop {state.status} ({state.message}) in {minutes:.1f} min")
    rows = evaluate_models(records, args.games)
    elo = ratings_by_name(records)
    print(f"\nevery generation's models, {args.games:,} games per table, same deals (seed {EVAL_SEED}), 95% intervals:")
    print_table(rows, elo)
    final_student = Path(records[-1]["student"])
    final_ppo = Path(records[-1]["ppo"]) if records[-1]["ppo"] else None
    first_student = Path(records[0]["student"])
    finals = {}
    for name, card in (("final student", final_student), ("gen-0 student", first_student), ("final ppo", final_ppo)):
        if card is not None:
            policy = policy_blob(card)
            finals[name] = {
                t: evaluate(policy, EvaluateConfig(opponents=o, games=args.games, seed=EVAL_SEED))
                for t, o in TABLES.items()
            }
    gains = {t: compare(finals["final student"][t], finals["gen-0 student"][t]) for t in TABLES}
    trained = [r for r in rows if "student_vs_heuristic" in r and r["holdout_accuracy"] is not None]
    accuracy = [r["holdout_accuracy"] for r in trained]
    strength = [r["student_vs_heuristic"]["win_rate"] for r in trained]
    corr = float(np.corrcoef(accuracy, strength)[0, 1]) if len(trained) > 2 else float("nan")
    print(f"\nfinal student {final_student.name} minus generation-0 student, paired on the same deals:")
    for t, c in gains.items():
        print(
            f"  vs 3 {t:9}: {c.win_rate_diff:+.1%} [{c.win_rate_diff_low:+.1%}, {c.win_rate_diff_high:+.1%}] "
            f"over {c.deals} deals"
        )
    print(
        "accuracy on the Forge holdout vs strength (win rate vs 3 heuristics), per generation: "
        + ", ".join(f"g{r['generation']} {a:.3f}/{s:.1%}" for r, a, s in zip(trained, accuracy, strength, strict=True))
        + f"; correlation {corr:+.2f}"
    )
    fs, fp = finals["final student"], finals.get("final ppo")
    checks = [
        (
            f"loop of up to {args.generations} generations <= {MINUTES_TARGET:.0f} min ({state.status} after "
            f"generation "
            f"{records[-1]['generation']})",
            minutes <= MINUTES_TARGET and args.generations >= 4,
            f"{minutes:.1f} min",
        ),
        ("final student >= 45% vs 3 heuristics", fs["heuristic"].win_rate >= 0.45, f"{fs['heuristic'].win_rate:.1%}"),
        ("final student >= 33% vs 3 tuned", fs["tuned"].win_rate >= 0.33, f"{fs['tuned'].win_rate:.1%}"),
        (
            "final student beats gen-0 (interval above 0, vs 3 heuristics)",
            gains["heuristic"].win_rate_diff_low > 0,
            f"{gains['heuristic'].win_rate_diff_low:+.1%} lower bound",
        ),
        (
            "final PPO >= 40% vs 3 tuned",
            fp is not None and fp["tuned"].win_rate >= 0.40,
            f"{fp['tuned'].win_rate:.1%}" if fp else "no PPO model",
        ),
    ]
    for label, ok, shown in checks:
        print(f"target {label}: {shown}: {'met' if ok else 'NOT MET'}")
    summary = {
        "minutes": round(minutes, 2),
        "status": state.status,
        "generations": rows,
        "elo": elo,
        "finals": {
            n: {t: r.model_dump(exclude={"outcomes", "per_seat"}) for t, r in v.items()} for n, v in finals.items()
        },
        "gains": {t: c.model_dump(exclude={"a", "b"}) for t, c in gains.items()},
        "accuracy_strength_correlation": corr,
        "targets": {label: ok for label, ok, _ in checks},
        "eval_seed": EVAL_SEED,
        "games_per_table": args.games,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "learning.json").write_text(json.dumps(summary, indent=1, default=str))
    print(f"wrote {args.out / 'learning.json'}")


if __name__ == "__main__":
    main()
