"""Where the batched core's time goes: cProfile of the game loop, then statement-level timing of its hot functions.

Run: ``PYTHONPATH=. .venv/bin/python bench/profile_game.py [--games 8192] [--top 25]``.

Part 1 profiles ``core.play`` with 4 heuristics, 4,096 games at once (the
``bench_game`` line) under cProfile and prints the functions by own time.
Part 2 captures a mid-game state of 4,096 games (after ``--steps`` steps),
then times every top-level statement of each hot function on it, one at a
time in order (functions without branches at the top level are timed
faithfully this way), and prints each statement's share of its function.
"""

from __future__ import annotations

import argparse
import ast
import cProfile
import inspect
import pstats
import textwrap
import time

import numpy as np

from toolkit.game import core, players, rules
from toolkit.game.players import DecisionBatch, HeuristicPlayer


def profile_loop(games: int, top: int) -> None:
    heuristics = [HeuristicPlayer()] * 4
    profiler = cProfile.Profile()
    wall, cpu = time.perf_counter(), time.process_time()
    profiler.enable()
    decisions = sum(int(f.decisions.sum()) for f in core.play(heuristics, games, seed=0, batch_size=4096))
    profiler.disable()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{decisions:,} decisions in {wall:.2f} s wall, {cpu:.2f} s CPU (under cProfile)")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def mid_game(steps: int) -> tuple[rules.GameState, np.ndarray, np.ndarray, np.ndarray]:
    """4,096 games of 4 heuristics after ``steps`` steps: the state, the live games, their seats and masks."""
    heuristic = HeuristicPlayer()
    state = rules.new_state(4096, rules.RulesConfig())
    rules.deal(state, np.arange(4096), [np.random.default_rng([0, k]) for k in range(4096)], rules.RulesConfig())
    rng = np.random.default_rng(0)
    for _ in range(steps):
        g = np.flatnonzero(~state.done)
        mask = rules.legal_mask(state, g)
        actions, targets = heuristic.act(DecisionBatch(state, g, state.seat[g].astype(np.intp), mask, rng))
        rules.apply(state, g, actions, targets, mask)
    g = np.flatnonzero(~state.done)
    return state, g, state.seat[g].astype(np.intp), rules.legal_mask(state, g)


def time_statements(function, namespace: dict, repeat: int) -> None:
    """Run the top-level statements of ``function``'s body one by one in ``namespace``; print each one's time."""
    source = textwrap.dedent(inspect.getsource(function))
    body = ast.parse(source).body[0].body
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    glob = {**vars(inspect.getmodule(function))}
    times = []
    for statement in body:
        if isinstance(statement, ast.Return):
            statement = ast.Assign(targets=[ast.Name("_returned", ast.Store())], value=statement.value, lineno=0)
        code = compile(ast.fix_missing_locations(ast.Module([statement], [])), "<stmt>", "exec")
        best = float("inf")
        for _ in range(repeat):
            local = dict(namespace)
            start = time.perf_counter()
            exec(code, glob, local)
            best = min(best, time.perf_counter() - start)
        namespace.update(local)
        times.append((best, ast.unparse(statement).splitlines()[0][:100]))
    total = sum(t for t, _ in times)
    print(f"\n{function.__qualname__}: {total * 1e3:.2f} ms per call (statements timed one by one, best of {repeat})")
    for t, text in times:
        print(f"  {t * 1e3:7.2f} ms {t / total:5.1%}  {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8192)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    profile_loop(args.games, args.top)
    state, g, s, mask = mid_game(args.steps)
    attackers = int(mask[:, rules.ATTACK].sum())
    print(f"mid-game state: {len(g)} live games after {args.steps} steps, {attackers} may attack")
    heuristic = HeuristicPlayer()
    can = np.flatnonzero(mask[:, rules.ATTACK])
    base = {"state": state, "st": state, "g": g, "s": s, "mask": mask}
    time_statements(rules.legal_mask, {"state": state, "g": g}, args.repeat)
    time_statements(
        HeuristicPlayer.act,
        {"self": heuristic, "batch": DecisionBatch(state, g, s, mask, np.random.default_rng(0))},
        args.repeat,
    )
    time_statements(players.attack_values, {**base, "g": g[can], "s": s[can]}, args.repeat)
    if hasattr(rules, "resolve_combat"):
        n = state.n_seats
        gg, ss = np.repeat(g[can], n), np.repeat(s[can], n)
        time_statements(
            rules.resolve_combat,
            {"state": state, "g": gg, "a": ss, "d": np.tile(np.arange(n), len(can)), "attacking": None},
            args.repeat,
        )
    time_statements(rules.strongest_threat, base, args.repeat)
    time_statements(
        rules.apply, {**base, "action": heuristic.act(DecisionBatch(state, g, s, mask, None))[0], "target": None}, 1
    )


if __name__ == "__main__":
    main()
