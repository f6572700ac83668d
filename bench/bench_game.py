"""Speed and balance of the Distill game; prints the figures, the ratios and each target met or not.

Run: ``.venv/bin/python bench/bench_game.py [--games 4000] [--quick]``.

Speed: decisions/s of 4 heuristics with the batched core (4,096 games at
once; the best of three runs, each run's CPU share shown, against the
target of 300,000) against the same engine one game at a time (batch of 1)
in the same run; the single-game Gymnasium env and the vectorised env with a
random agent; ``distill simulate`` end to end writing JSONL.

Native rules: the rules' and the reference heuristic's C loops (``toolkit/game/_rules.c``) against the numpy
rules they follow, 4 heuristics at batches of 1, 32 and 1,024 games, each side in fresh processes (best of 3),
the same games (the decisions counted must agree), the ratio printed; ``--only-native`` runs only this.

Last native-rules runs (7 December, quiet machine, two runs, numpy -> native decisions/s): batch 1 1,254 ->
14,267 and 1,624 -> 13,838 (11.4x, 8.5x); batch 32 19,057 -> 196,095 and 20,251 -> 204,206 (10.3x, 10.1x);
batch 1,024 207,599 -> 598,616 and 213,458 -> 597,636 (2.9x, 2.8x); the same decisions counted each time.

Balance, over ``--games`` games per lineup (seats rotated), against the
targets of the learning issue: the heuristic must not be exploitable by
passivity (random wins <= 12% in heuristic x3 + random; the heuristic wins
>= 70% in random x3 + heuristic), <= 2% games at the turn limit in every
lineup, ``tuned`` >= 35% against three heuristics, and fair seats (each
within 2 points of 25% in heuristic x4).

Last runs of the speed part (issue 26, 14:20-14:24 UTC, 2 cores, load 2-4 from other jobs; three runs, the
old code then the new code back to back): batched core 526,841 / 528,852 / 539,308 decisions/s, each the best
of 3 runs at 96-99% CPU (target 300,000: PASS in all three; 530k-542k per CPU second), 159-161x one game at a
time (3,278-3,340 decisions/s, the old code 2,241-3,440); the old code 195,641 / 122,077 / 190,553 (one run
each). Vectorised env (1,024 games) 35,840 / 36,226 / 38,059 agent steps/s, 1.4x the old code's 26,879 /
18,623 / 25,984 (target 25,000 met); simulate 47,233 / 52,881 / 102,286 decisions/s (the old code 46,116 /
26,268 / 48,194). Where the time goes: ``bench/PROFILES.md``.

Last balance run (4,000 games per lineup; the games are the same since, decision for decision): seats
24.2 / 25.8 / 25.4 / 24.5% (met), random vs 3 heuristics 4.3% (<= 12% met), heuristic vs 3 random 84.0%
(>= 70% met), tuned vs 3 heuristics 42.8% (>= 35% met), turn limit at most 0.95% in every lineup (<= 2% met);
the older leader-targeting heuristic let random win 25.9% with 5.35% at the turn limit.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from toolkit.game import core
from toolkit.game.config import SimulateConfig
from toolkit.game.env import CommanderEnv
from toolkit.game.players import HeuristicParams, HeuristicPlayer, RandomPlayer, make_player
from toolkit.game.simulate import simulate
from toolkit.game.vec_env import CommanderVecEnv

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_of, report_child, run_child, timed, verdict  # noqa: E402

ORIGIN_DECISIONS_PER_S = 3_200  # the origin lab's simulator (field notes)
BATCHED_TARGET = 300_000  # decisions/s of the batched core, 4 heuristics (issue 26; a numpy prototype reached 383k)
SIMULATE_TARGET = 50_000  # decisions/s written by distill simulate, 4 heuristics, default settings
VEC_ENV_TARGET = 25_000  # agent steps/s of the vectorised env with a random agent


def _met(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def _rate(players: list, games: int, batch: int, seed: int = 0) -> float:
    return _timed_rate(players, games, batch, seed)[0]


def _timed_rate(players: list, games: int, batch: int, seed: int = 0) -> tuple[float, float]:
    """Decisions per wall second, and the CPU seconds the process spent per wall second (below 1: load)."""
    start, cpu = time.perf_counter(), time.process_time()
    decisions = sum(int(f.decisions.sum()) for f in core.play(players, games, seed=seed, batch_size=batch))
    wall = time.perf_counter() - start
    return decisions / wall, (time.process_time() - cpu) / wall


def _gym_rate(seconds: float) -> float:
    env = CommanderEnv(opponents=("heuristic", "heuristic", "heuristic"))
    rng, steps, start, episode = np.random.default_rng(0), 0, time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        env.reset(seed=episode)
        episode += 1
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            steps += 1
            done = terminated or truncated
    return steps / (time.perf_counter() - start)


def vec_env_rate(n_envs: int, seconds: float) -> float:
    """Agent steps/s of the vectorised env against 3 heuristics, a random agent choosing."""
    env = CommanderVecEnv(n_envs, ("heuristic",) * 3, seed=0)
    env.reset()
    rng, steps, start = np.random.default_rng(0), 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        masks = env.action_masks()
        env.step((rng.random(masks.shape) + masks).argmax(1))
        steps += n_envs
    return steps / (time.perf_counter() - start)


def speed(quick: bool) -> None:
    """Print decisions/s of the batched core, one game at a time, both envs and simulate."""
    heuristics = [HeuristicPlayer()] * 4
    runs = [_timed_rate(heuristics, 4096 if quick else 12288, 4096) for _ in range(1 if quick else 3)]
    batched = max(rate for rate, _ in runs)  # noise on a shared machine only ever slows a run
    single = _rate(heuristics, 10 if quick else 40, 1)
    gym = _gym_rate(2.0 if quick else 5.0)
    vec = vec_env_rate(1024, 3.0 if quick else 10.0)
    with tempfile.TemporaryDirectory() as tmp:
        result = simulate(SimulateConfig(games=1000 if quick else 4000, out=Path(tmp)))
    print(
        f"batched core, 4 heuristics, 4096 games at once : {batched:>10,.0f} decisions/s "
        f"({batched / ORIGIN_DECISIONS_PER_S:.0f}x the origin's ~3,200/s)"
    )
    print(
        f"same engine, one game at a time               : {single:>10,.0f} decisions/s (batched is "
        f"{batched / single:.0f}x)"
    )
    judged = verdict("batched core, 4 heuristics", batched, BATCHED_TARGET, unit="decisions/s")
    print(
        f"batched core target {BATCHED_TARGET:,} decisions/s        : "
        f"{judged} (best of {len(runs)} run(s): "
        + ", ".join(f"{rate:,.0f} at {cpu:.0%} CPU" for rate, cpu in runs)
        + f"; {max(rate / cpu for rate, cpu in runs):,.0f} per CPU second)"
    )
    print(f"single-game env, random agent vs 3 heuristics  : {gym:>10,.0f} agent steps/s")
    print(
        f"vectorised env (1024 games), same              : {vec:>10,.0f} agent steps/s ({vec / gym:.0f}x the "
        f"single-game env; target {VEC_ENV_TARGET:,}: "
        f"{verdict('vectorised env, random agent', vec, VEC_ENV_TARGET, unit='steps/s')})"
    )
    print(
        f"distill simulate end to end, writing JSONL     : {result.decisions_per_second:>10,.0f} decisions/s "
        f"({result.decisions_per_second / single:.1f}x the one-game loop, target {SIMULATE_TARGET:,}: "
        f"{verdict('distill simulate end to end', result.decisions_per_second, SIMULATE_TARGET, unit='decisions/s')})"
    )


def rotated(focus, others: list, games: int, seed: int) -> tuple[float, float, list[float]]:
    """``focus`` rotated through every seat against ``others``: its win rate, the turn-limit rate, per-seat rates."""
    players = [focus, *others]
    lineups = np.array([[0 if s == seat else 1 + s - (s > seat) for s in range(4)] for seat in range(4)])
    per = games // 4
    table = np.repeat(lineups, per, axis=0)
    wins, limit, seat_wins = 0, 0, np.zeros(4)
    for f in core.play(
        players, len(table), seed=seed, lineups=table, deals=np.tile(np.arange(per), 4), batch_size=4096
    ):
        seat = f.game // per
        won = (f.winner == seat) & ~f.truncated
        wins += int(won.sum())
        limit += int(f.truncated.sum())
        np.add.at(seat_wins, seat, won)
    return wins / len(table), limit / len(table), list(seat_wins / per)


def balance(games: int) -> None:
    """Print every balance property against its target, ``games`` games per lineup."""
    h, t, r = make_player("heuristic"), make_player("tuned"), RandomPlayer()
    print(f"balance, {games:,} games per lineup, seats rotated:")
    seats = [0.0] * 4
    limit4 = 0.0
    for f in core.play([h] * 4, games, seed=1, batch_size=4096):
        for s in range(4):
            seats[s] += float(((f.winner == s) & ~f.truncated).sum())
        limit4 += float(f.truncated.sum())
    seats = [x / games for x in seats]
    fair = max(abs(x - 0.25) for x in seats) <= 0.02
    print(
        f"  fair seats, heuristic x4            : {' '.join(f'{x:.1%}' for x in seats)} (each 25% +/- 2: "
        f"{_met(fair)}), turn limit {limit4 / games:.2%} ({_met(limit4 / games <= 0.02)})"
    )
    rows = [
        ("random vs 3 heuristics", r, [h, h, h], lambda w: w <= 0.12, "<= 12%"),
        ("heuristic vs 3 random", h, [r, r, r], lambda w: w >= 0.70, ">= 70%"),
        ("tuned vs 3 heuristics", t, [h, h, h], lambda w: w >= 0.35, ">= 35%"),
        ("heuristic vs 3 tuned", h, [t, t, t], lambda w: True, "(reference)"),
    ]
    for k, (label, focus, others, target, shown) in enumerate(rows):
        win, limit, _ = rotated(focus, others, games, seed=10 + k)
        print(
            f"  {label:<35}: {win:6.1%} (target {shown}: {_met(target(win))}), turn limit {limit:.2%} "
            f"(<= 2%: {_met(limit <= 0.02)})"
        )
    old = HeuristicPlayer(HeuristicParams(target="leader"))
    win, limit, _ = rotated(r, [old, old, old], games, seed=20)
    print(
        f"  for reference, the older leader-targeting heuristic: random wins {win:.1%} against three of it, "
        f"turn limit {limit:.2%}"
    )


# (batch, games) of the native-rules comparison: one game at a time (the single-game env), the tens of games an
# evaluation, a gate or an engine plays at once, and the batches of simulate and PPO's env.
NATIVE_CASES = ((1, 24), (32, 512), (1024, 8192))


def child_play(batch: int, games: int) -> None:
    """(child) 4 heuristics play ``games`` games ``batch`` at once, with the rules DISTILL_RULES picks."""
    from toolkit.game import rules

    heuristics = [HeuristicPlayer()] * 4
    with timed() as t:
        decisions = sum(int(f.decisions.sum()) for f in core.play(heuristics, games, seed=0, batch_size=batch))
    report_child(decisions, t, native=rules.native is not None)


def native_rules(quick: bool) -> None:
    """The rules' and the heuristic's C loops against the numpy rules they follow: the same games (the same
    decisions, counted), each side in fresh processes, best of three, in this one run."""
    print("native rules (toolkit/game/_rules.c) against the numpy rules, 4 heuristics, same games:")
    for batch, games in NATIVE_CASES:
        games = max(batch, games // 4) if quick else games
        best = {}
        for kind in ("numpy", "native"):
            argv = [__file__, "--child-play", str(batch), str(games)]
            runs = [run_child(f"{kind} {batch}", argv, env={"DISTILL_RULES": kind}) for _ in range(1 if quick else 3)]
            best[kind] = best_of(runs)
            if best[kind].extra["native"] != (kind == "native"):
                raise RuntimeError(f"the {kind} run did not play with the {kind} rules (is _rules.c built?)")
        numpy_run, native_run = best["numpy"], best["native"]
        if numpy_run.rows != native_run.rows:
            raise RuntimeError(f"batch {batch}: {numpy_run.rows} decisions with numpy, {native_run.rows} native")
        print(
            f"  batch {batch:>5,}: {numpy_run.rows:>9,} decisions, numpy {numpy_run.rows / numpy_run.wall_s:>9,.0f}/s,"
            f" native {native_run.rows / native_run.wall_s:>10,.0f}/s: "
            f"{numpy_run.wall_s / native_run.wall_s:.1f}x ({numpy_run.cpu_s / native_run.cpu_s:.1f}x in CPU)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=4_000, help="games per balance lineup")
    parser.add_argument("--quick", action="store_true", help="smaller runs (a smoke test of the bench)")
    parser.add_argument("--skip-balance", action="store_true")
    parser.add_argument("--only-native", action="store_true", help="only the native-rules comparison")
    parser.add_argument("--child-play", nargs=2, type=int, metavar=("BATCH", "GAMES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_play:
        child_play(*args.child_play)
        return
    native_rules(args.quick)
    if args.only_native:
        return
    speed(args.quick)
    if not args.skip_balance:
        balance(1_000 if args.quick else args.games)


if __name__ == "__main__":
    main()
