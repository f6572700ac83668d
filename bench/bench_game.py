"""Speed and balance of the Distill game; prints the figures and ratios.

Run: ``.venv/bin/python bench/bench_game.py [--games 20000] [--quick]``.

Speed: decisions/s of 4 heuristics with the batched core (4,096 games at
once) against the same engine one game at a time (batch of 1) in the same
run; the Gymnasium wrapper with a random agent; ``distill simulate`` end to
end writing JSONL. Balance over ``--games`` games: fair seats, heuristic vs 3
random, tuned vs 3 default heuristics (seat rotated), draws and truncations.

Last run (2 shared cores, other jobs running; 20,000 games per property):
  batched core 196,877 decisions/s (62x the origin), one game at a time 2,431/s
  (batched 81x), gym wrapper 617 agent steps/s (each also plays ~3 opponent
  decisions), distill simulate end to end 59,877 decisions/s writing ~2.3 KB
  JSONL rows (24.6x the one-game loop; target 50,000 met; it was 14,794, then
  ~20,000, when rows were built as dicts one by one: rows are now assembled
  from precomputed byte pieces, ~7 us/row, and written on a background
  thread); fair seats 24.8/24.7/25.0/24.7%, draws+truncations 0.80%,
  heuristic vs 3 random 53.7%, tuned vs 3 defaults 39.1% (balance figures
  from the run before the logger change; rules and players unchanged).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from toolkit.game import core
from toolkit.game.env import CommanderEnv
from toolkit.game.players import HeuristicPlayer, RandomPlayer, make_player
from toolkit.game.simulate import SimulateConfig, simulate

ORIGIN_DECISIONS_PER_S = 3_200  # the origin lab's simulator (field notes)
SIMULATE_TARGET = 50_000  # decisions/s written by distill simulate, 4 heuristics, default settings


def _rate(players: list, games: int, batch: int, seed: int = 0) -> tuple[float, int]:
    start = time.perf_counter()
    decisions = sum(int(f.decisions.sum()) for f in core.play(players, games, seed=seed, batch_size=batch))
    return decisions / (time.perf_counter() - start), decisions


def _gym_rate(seconds: float = 5.0) -> float:
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


def _results(players: list, games: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    finished = list(core.play(players, games, seed=seed, batch_size=4096))
    return np.concatenate([f.winner for f in finished]), np.concatenate([f.truncated for f in finished])


def speed(quick: bool) -> None:
    """Print decisions/s of the batched core, one game at a time, the gym wrapper and simulate."""
    heuristics = [HeuristicPlayer()] * 4
    batched, _ = _rate(heuristics, 4096 if quick else 12288, 4096)
    single, _ = _rate(heuristics, 10 if quick else 40, 1)
    gym = _gym_rate(2.0 if quick else 5.0)
    with tempfile.TemporaryDirectory() as tmp:
        result = simulate(SimulateConfig(games=1000 if quick else 4000, out=Path(tmp)))
    print(f"batched core, 4 heuristics, 4096 games at once : {batched:>10,.0f} decisions/s "
          f"({batched / ORIGIN_DECISIONS_PER_S:.0f}x the origin's ~3,200/s, target 160,000)")
    print(f"same engine, one game at a time               : {single:>10,.0f} decisions/s "
          f"(batched is {batched / single:.0f}x)")
    print(f"gym wrapper, random agent vs 3 heuristics      : {gym:>10,.0f} agent steps/s")
    met = "met" if result.decisions_per_second >= SIMULATE_TARGET else "BELOW"
    print(f"distill simulate end to end, writing JSONL     : {result.decisions_per_second:>10,.0f} decisions/s "
          f"({result.decisions_per_second / single:.1f}x the one-game loop, target {SIMULATE_TARGET:,}: {met})")


def balance(games: int) -> None:
    """Print the four balance properties over ``games`` games each."""
    winners, truncated = _results([HeuristicPlayer()] * 4, games, seed=1)
    rates = [(winners == s).mean() for s in range(4)]
    print(f"fair seats, 4 heuristics ({games} games)        : " + " ".join(f"{r:.1%}" for r in rates)
          + "  (target 25% +/- 2)")
    print(f"draws + truncations, 4 heuristics              : {((winners < 0) | truncated).mean():.2%} (target < 2%)")
    wins = 0
    for seat in range(4):  # rotate the measured seat so seat effects cancel
        players = [RandomPlayer()] * 4
        players[seat] = HeuristicPlayer()
        w, t = _results(players, games // 4, seed=10 + seat)
        wins += (w == seat).sum()
    print(f"heuristic vs 3 random                          : {wins / (games // 4 * 4):.1%} (target >= 45%)")
    wins, trunc = 0, 0
    for seat in range(4):
        players: list = [HeuristicPlayer()] * 4
        players[seat] = make_player("tuned")
        w, t = _results(players, games // 4, seed=20 + seat)
        wins += (w == seat).sum()
        trunc += t.sum()
    print(f"tuned heuristic vs 3 defaults                  : {wins / (games // 4 * 4):.1%} (target >= 35%), "
          f"truncations {trunc / (games // 4 * 4):.2%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20_000, help="games per balance property")
    parser.add_argument("--quick", action="store_true", help="smaller runs (a smoke test of the bench)")
    parser.add_argument("--skip-balance", action="store_true")
    args = parser.parse_args()
    speed(args.quick)
    if not args.skip_balance:
        balance(2_000 if args.quick else args.games)


if __name__ == "__main__":
    main()
