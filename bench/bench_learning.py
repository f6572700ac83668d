"""Does the loop keep discovering? A long default run, then every promoted student measured head to head.

Run: ``.venv/bin/python bench/bench_learning.py [--generations 8] [--seed 0] [--out DIR]`` (the issue's size: about
60 minutes on a quiet 2-core machine). Smaller runs to try it: ``--ppo-steps``, ``--exploiter-steps``,
``--games-per-pairing``, ``--eval-games``, ``--bootstrap-games``, ``--export-games``, ``--gate-max-deals``; and
``--turn-limit-reward`` and ``--mirror`` to try the decisive-play settings (a stall costing PPO more than a loss;
the share of training games against three copies of one opponent); ``--set KEY=VALUE`` for any other field of the
loop config (e.g. ``--set ppo.league.past=2 --set ppo.league.older_models=20``).

1. Runs the closed loop with the default settings (the convergence rule off, so every generation runs; the
   exploiter probe at ``--exploiter-steps``, 1M by default) and ``--generations`` generations in a fresh data root,
   timed.
2. Per generation: the promoted student's strength against the scripted tables (the loop's fixed-size evaluation,
   the same deals every generation), its exploitability (the loop's exploiter probe), and, head to head, a full
   round robin of the promoted students: each later one in one seat against three copies of each earlier one,
   ``--games-per-pairing`` games (1,068 by default: a 95% interval of +/- 3 points on a win share), seats rotated,
   on deals the loop never played. Each pairing reports the new student's share of the decided games (25% is
   even) with its Wilson interval, its win rate, and the share of games that ended at the turn limit.
3. Elo of the promoted students from those head-to-head games alone (``toolkit.ratings.fit_ratings``: winner vs
   rest, a game at the turn limit a loss for all, relative to the pool's mean, with standard errors).
4. PASS/FAIL per target of the issue's "Numbers", printed and written to ``<out>/learning.json``.

Targets (issue 27):
- every promoted generation beats the previous promoted one head to head (1 new against 3 previous: more than a
  quarter of the decided games, interval above) for at least 6 generations in a row;
- decisive play: in pods of the last student against three of an earlier one, under 10% of games at the turn limit;
- the last student >= +150 Elo over the gen-1 student, rated from head-to-head games only;
- the final student's exploitability under 20%, and lower than gen 1's;
- the final student >= 80% against three heuristics;
- the whole run (loop and measurements) within 60 minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import torch
import yaml

from toolkit.ablate.config import Vary
from toolkit.ablate.grid import check_field, set_field
from toolkit.layout import Layout
from toolkit.loop.config import LoopConfig
from toolkit.loop.run import run_loop
from toolkit.loop.state import RunFolder
from toolkit.ratings import RatedGame, fit_ratings
from toolkit.stats import wilson_interval
from toolkit.train.agents import policy_blob
from toolkit.train.config import EvaluateConfig
from toolkit.train.evaluate import EvaluationResult, evaluate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import judged  # noqa: E402

EVAL_SEED = 2_727_027  # deals the loop never played
MINUTES_TARGET = 60.0
POD = 4


def loop_config(args: argparse.Namespace) -> LoopConfig:
    """The default loop, every generation run (no convergence stop), with the sizes the flags override."""
    config = LoopConfig(name="learning", max_generations=args.generations, seed=args.seed)
    data = config.model_dump()
    data["convergence"]["window"] = args.generations + 2  # never plateaus: the bench measures every generation
    data["exploiter"]["total_steps"] = args.exploiter_steps
    for flag, field in (
        ("ppo_steps", "ppo.total_steps"),
        ("export_games", "ppo.export_games"),
        ("bootstrap_games", "bootstrap.games"),
        ("eval_games", "evaluation.games"),
        ("gate_max_deals", "head_to_head.max_deals"),
        ("gate_max_deals", "strength_gate.max_deals"),
        ("turn_limit_reward", "ppo.turn_limit_reward"),
        ("mirror", "ppo.league.mirror"),
    ):
        if (value := getattr(args, flag)) is not None:
            set_field(data, field, value)
    for item in args.set:
        field, _, raw = item.partition("=")
        vary = Vary(field=field, values=[yaml.safe_load(raw)])  # read as `distill ablate --vary` reads a value
        if problem := check_field(LoopConfig, vary, flag="--set"):
            raise SystemExit(problem)
        set_field(data, field, vary.values[0])
    if args.gate_max_deals is not None:
        for gate in ("head_to_head", "strength_gate"):
            data[gate]["min_deals"] = min(data[gate]["min_deals"], args.gate_max_deals)
            data[gate]["deals_per_round"] = min(data[gate]["deals_per_round"], args.gate_max_deals)
    return LoopConfig.model_validate(data)


def promoted_students(records: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """(generation, card) of each student promoted, in order (a generation that kept its student adds none)."""
    found: list[tuple[int, str]] = []
    for record in records:
        if record["student"] and (not found or found[-1][1] != record["student"]):
            found.append((record["generation"], record["student"]))
    return found


def pairing(new: str, old: str, layout: Layout, games: int, max_rounds: int) -> EvaluationResult:
    """The ``new`` student in one seat against three copies of ``old``, seats rotated."""
    return evaluate(
        policy_blob(layout.resolve(new)),
        EvaluateConfig(games=games, seed=EVAL_SEED, max_rounds=max_rounds),
        opponents=[policy_blob(layout.resolve(old))] * 3,
    )


def pairing_summary(result: EvaluationResult) -> dict[str, float | int]:
    decided = result.games - result.truncations
    low, high = wilson_interval(result.wins, decided)
    return {
        "games": result.games,
        "wins": result.wins,
        "win_rate": result.win_rate,
        "decided": decided,
        "decided_share": round(result.wins / decided, 4) if decided else float("nan"),
        "decided_low": round(low, 4),
        "decided_high": round(high, 4),
        "turn_limit_share": round(result.truncations / result.games, 4),
    }


def rated_games(result: EvaluationResult, new: str, old: str) -> list[RatedGame]:
    """The pairing's games as the rating pool keeps them: the new student at its seat, the old one elsewhere."""
    games = []
    for o in result.outcomes:
        players = [old] * POD
        players[o.seat] = new
        winner = -1 if o.truncated else o.seat if o.won else (o.seat + 1) % POD  # any copy of old: same player
        games.append(RatedGame(tournament="head-to-head", players=players, winner=winner))
    return games


def main() -> None:  # noqa: C901 (a bench reads top to bottom)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--games-per-pairing", type=int, default=1_068, help="games per head-to-head pairing")
    parser.add_argument("--exploiter-steps", type=int, default=1_000_000, help="the exploiter probe's PPO budget")
    parser.add_argument("--ppo-steps", type=int, default=None, help="override ppo.total_steps (default: the loop's)")
    parser.add_argument("--export-games", type=int, default=None, help="override ppo.export_games")
    parser.add_argument("--bootstrap-games", type=int, default=None, help="override bootstrap.games")
    parser.add_argument("--eval-games", type=int, default=None, help="override evaluation.games (scripted tables)")
    parser.add_argument("--gate-max-deals", type=int, default=None, help="override the gates' max_deals")
    parser.add_argument(
        "--turn-limit-reward", type=float, default=None, help="override ppo.turn_limit_reward (e.g. -2: decisive play)"
    )
    parser.add_argument(
        "--mirror", type=float, default=None, help="override ppo.league.mirror (0: every opponent seat drawn alone)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any loop config field by its dotted path, e.g. ppo.league.past=2 (repeatable; a YAML value, "
        "as distill ablate --vary reads it)",
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out" / "learning")
    args = parser.parse_args()
    torch.set_num_threads(1)
    shutil.rmtree(args.out, ignore_errors=True)
    layout = Layout.at(args.out / "home")
    config = loop_config(args)
    start = time.perf_counter()

    def say(message: str) -> None:
        print(f"[{(time.perf_counter() - start) / 60:5.1f} min] {message}", flush=True)

    state = run_loop(layout, config, progress=lambda event: say(event.item))
    loop_minutes = (time.perf_counter() - start) / 60
    records = RunFolder(layout, config.name).records()
    say(f"loop {state.status} ({state.message}) in {loop_minutes:.1f} min")
    students = promoted_students(records)
    by_gen = {r["generation"]: r for r in records}

    pairings: dict[str, dict[str, Any]] = {}
    games: list[RatedGame] = []
    names = {card: f"gen-{g:03d}-student" for g, card in students}
    for i, (g_new, new) in enumerate(students):
        for g_old, old in students[:i]:
            result = pairing(new, old, layout, args.games_per_pairing, config.max_rounds)
            pairings[f"{g_new}v{g_old}"] = {"new": g_new, "old": g_old, **pairing_summary(result)}
            games += rated_games(result, names[new], names[old])
            p = pairings[f"{g_new}v{g_old}"]
            say(
                f"gen {g_new} vs 3x gen {g_old}: {p['decided_share']:.1%} [{p['decided_low']:.1%}, "
                f"{p['decided_high']:.1%}] of {p['decided']} decided games; "
                f"{p['turn_limit_share']:.1%} at the turn limit"
            )
    elo = {r.name: {"elo": r.elo, "se": r.elo_se, "games": r.games, "wins": r.wins} for r in fit_ratings(games)}

    rows = []
    for g, card in students:
        record = by_gen[g]
        heuristic = ((record.get("evaluation") or {}).get("student") or {}).get("heuristic") or {}
        tuned = ((record.get("evaluation") or {}).get("student") or {}).get("tuned") or {}
        earlier = [p for p in pairings.values() if p["new"] == g]
        rows.append(
            {
                "generation": g,
                "student": card,
                "vs_heuristic": heuristic.get("win_rate"),
                "vs_tuned": tuned.get("win_rate"),
                "exploitability": record.get("exploitability"),
                "exploitability_low": record.get("exploitability_low"),
                "exploitability_high": record.get("exploitability_high"),
                "elo": elo.get(names[card], {}).get("elo"),
                "elo_se": elo.get(names[card], {}).get("se"),
                "turn_limit_share": (
                    sum(p["turn_limit_share"] * p["games"] for p in earlier) / sum(p["games"] for p in earlier)
                    if earlier
                    else None
                ),
                "head_to_head": {p["old"]: p for p in earlier},
            }
        )

    def pct(x: float | None) -> str:
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1%}"

    print(
        f"\npromoted students: scripted tables (the loop's evaluation), exploitability ({args.exploiter_steps:,}-step "
        f"exploiter), Elo from {len(games):,} head-to-head games only, turn-limit share of its pods against earlier "
        f"students; head to head: share of the decided games won, 1 new against 3 earlier "
        f"({args.games_per_pairing:,} games per pairing):"
    )
    print(
        f"{'gen':>3}  {'vs 3H':>6}  {'vs 3T':>6}  {'exploit':>20}  {'elo':>11}  {'limit':>6}  head to head vs gen ..."
    )
    for row in rows:
        h2h = ", ".join(
            f"{old}: {pct(p['decided_share'])} [{pct(p['decided_low'])},{pct(p['decided_high'])}]"
            for old, p in row["head_to_head"].items()
        )
        exploit = (
            "-"
            if row["exploitability"] is None
            else f"{pct(row['exploitability'])} [{pct(row['exploitability_low'])},{pct(row['exploitability_high'])}]"
        )
        elo_shown = "-" if row["elo"] is None else f"{row['elo']:.0f}+/-{row['elo_se']:.0f}"
        print(
            f"{row['generation']:>3}  {pct(row['vs_heuristic']):>6}  {pct(row['vs_tuned']):>6}  {exploit:>20}  "
            f"{elo_shown:>11}  {pct(row['turn_limit_share']):>6}  {h2h or '-'}"
        )

    total_minutes = (time.perf_counter() - start) / 60
    checks = _targets(rows, pairings, elo, names, students, total_minutes, args)
    for label, ok, shown in checks:
        print(f"{judged(label, ok, shown, 'as stated')}  {label}: {shown}")
    summary = {
        "loop_minutes": round(loop_minutes, 2),
        "total_minutes": round(total_minutes, 2),
        "status": state.status,
        "generations_run": len(records),
        "promoted_students": [g for g, _ in students],
        "rows": rows,
        "pairings": pairings,
        "elo": elo,
        "targets": {label: {"passed": ok, "shown": shown} for label, ok, shown in checks},
        "args": {k: str(v) for k, v in vars(args).items()},
        "eval_seed": EVAL_SEED,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "learning.json").write_text(json.dumps(summary, indent=1, default=str))
    print(f"wrote {args.out / 'learning.json'}")


def _targets(
    rows: list[dict[str, Any]],
    pairings: dict[str, dict[str, Any]],
    elo: dict[str, dict[str, Any]],
    names: dict[str, str],
    students: list[tuple[int, str]],
    minutes: float,
    args: argparse.Namespace,
) -> list[tuple[str, bool, str]]:
    """Each of the issue's numbers: (label, met, what was measured)."""
    chain = [pairings[f"{a[0]}v{b[0]}"] for b, a in zip(students, students[1:], strict=False)]
    streak = best = 0
    for p in chain:
        streak = streak + 1 if p["decided_low"] > 0.25 else 0
        best = max(best, streak)
    last = rows[-1]
    earlier = list(last["head_to_head"].values())
    worst_limit = max((p["turn_limit_share"] for p in earlier), default=float("nan"))
    first = next((r for r in rows if r["generation"] >= 1), None)
    elo_gain = (
        last["elo"] - first["elo"] if first is not None and first is not last and last["elo"] is not None else None
    )
    elo_se = math.hypot(last["elo_se"], first["elo_se"]) if elo_gain is not None else None
    exploit_last, exploit_first = last["exploitability"], first["exploitability"] if first else None
    return [
        (
            "every promoted generation beats the previous one head to head, >= 6 in a row",
            best >= 6,
            f"{best} in a row (" + ", ".join(f"{p['new']}v{p['old']} low {p['decided_low']:.1%}" for p in chain) + ")",
        ),
        (
            "the last student against three of an earlier one: < 10% of games at the turn limit",
            bool(earlier) and worst_limit < 0.10,
            f"worst {worst_limit:.1%} over {len(earlier)} earlier generation(s)" if earlier else "no earlier student",
        ),
        (
            "the last student >= +150 Elo over the gen-1 student (head-to-head games only)",
            elo_gain is not None and elo_gain >= 150,
            "no gen-1 and later student" if elo_gain is None else f"{elo_gain:+.0f} +/- {elo_se:.0f}",
        ),
        (
            f"final exploitability < 20% and below gen 1's ({args.exploiter_steps:,}-step exploiter)",
            exploit_last is not None
            and exploit_last < 0.20
            and exploit_first is not None
            and first is not last
            and exploit_last < exploit_first,
            f"final {exploit_last}, gen {first['generation'] if first else '-'} {exploit_first}",
        ),
        (
            "the final student >= 80% against three heuristics",
            last["vs_heuristic"] is not None and last["vs_heuristic"] >= 0.80,
            f"{last['vs_heuristic']}",
        ),
        (
            f"the whole run within {MINUTES_TARGET:.0f} minutes ({args.generations} generations)",
            minutes <= MINUTES_TARGET and args.generations >= 8,
            f"{minutes:.1f} min",
        ),
    ]


if __name__ == "__main__":
    main()
