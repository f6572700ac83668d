"""Where training's CPU goes: PPO with the defaults by component, BC's epochs by thread (issue 26's profile).

Run: ``.venv/bin/python bench/profile_train.py [--steps 65536] [--bc]``.

PPO: ``train_ppo`` with the defaults (no export, 4 evaluation games), each
component wrapped by a stack of thread-CPU timers, so a callee's time is not
its caller's (exclusive times); torch runs with one thread, so the process's
work during ``learn`` is this thread's. Components missing from an older
checkout are skipped, so the same script profiles a before and an after.
BC: the bench's dataset (1,000 simulated games), three epochs, the CPU of
each thread of the process per epoch (``/proc/self/task/*/stat``).
"""

from __future__ import annotations

import argparse
import functools
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

_exclusive: dict[str, float] = defaultdict(float)
_stack: list[list[Any]] = []  # [component, thread time when it last resumed]


def _timed(function: Callable[..., Any], key: str) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        now = time.thread_time()
        if _stack:
            _exclusive[_stack[-1][0]] += now - _stack[-1][1]
        _stack.append([key, now])
        try:
            return function(*args, **kwargs)
        finally:
            now = time.thread_time()
            component, resumed = _stack.pop()
            _exclusive[component] += now - resumed
            if _stack:
                _stack[-1][1] = now

    return wrapper


def _wrap(owner: Any, name: str, key: str) -> None:
    if owner is not None and hasattr(owner, name):
        setattr(owner, name, _timed(getattr(owner, name), key))


def profile_ppo(steps: int) -> None:
    import sb3_contrib.common.maskable.policies as policies
    import sb3_contrib.ppo_mask.ppo_mask as ppo_mask
    from sb3_contrib.common.maskable.buffers import MaskableRolloutBuffer

    from toolkit import features
    from toolkit.game import core, observation, players, rules, vec_env
    from toolkit.train import ppo
    from toolkit.train.config import ExportConfig

    for owner, name, key in [
        (ppo_mask.MaskablePPO, "learn", "sb3: learn loop"),
        (ppo_mask.MaskablePPO, "collect_rollouts", "sb3: collect_rollouts (own)"),
        (ppo_mask.MaskablePPO, "train", "sb3: update"),
        (policies.MaskableActorCriticPolicy, "forward", "sb3: learner forward"),
        (ppo_mask, "get_action_masks", "sb3: get_action_masks"),
        (MaskableRolloutBuffer, "add", "sb3: buffer add"),
        (ppo._RunCallback, "_on_step", "ours: callback on_step"),
        (ppo._RunCallback, "_on_rollout_start", "ours: callback rollout_start (update log)"),
        (ppo, "_evaluate", "ours: evaluations"),
        (vec_env.CommanderVecEnv, "step_wait", "ours: vec env wrapper (step, loop, close)"),
        (vec_env.CommanderVecEnv, "_start", "ours: episode draws"),
        (core.Seating, "ask", "ours: Seating.ask"),
        (players.PolicyPlayer, "act", "ours: PolicyPlayer.act"),
        (getattr(vec_env, "_Heuristics", None), "act", "ours: merged heuristics' parameters"),
        (players.HeuristicPlayer, "act", "core: HeuristicPlayer.act"),
        (players, "attack_target", "core: attack_target"),
        (rules, "apply", "core: rules.apply"),
        (rules, "legal_mask", "core: rules.legal_mask"),
        (rules, "deal", "core: rules.deal"),
        (observation, "seat_features", "core: seat_features"),
        (features, "encode", "shared: features.encode"),
    ]:
        _wrap(owner, name, key)
    greedy = ppo.sb3_greedy_policy
    ppo.sb3_greedy_policy = lambda policy: _timed(greedy(policy), "self opponent: torch forward")  # type: ignore
    torch.set_num_threads(1)
    config = ppo.PPOConfig(total_steps=steps, eval_every=0, eval_games=4, run_id="p", export=ExportConfig(games=0))
    with tempfile.TemporaryDirectory() as tmp:
        start, cpu = time.perf_counter(), time.thread_time()
        ppo.train_ppo(config, Path(tmp))
        wall, total = time.perf_counter() - start, time.thread_time() - cpu
    print(f"PPO, {steps:,} steps: wall {wall:.2f} s, thread CPU {total:.2f} s, load {os.getloadavg()[0]:.1f}")
    for key, seconds in sorted(_exclusive.items(), key=lambda kv: -kv[1]):
        print(f"  {key:48s} {seconds:7.3f} s {100 * seconds / total:5.1f}%")
    print(f"  {'(outside: set-up, saving)':48s} {total - sum(_exclusive.values()):7.3f} s")


def _cpu_by_thread() -> dict[str, float]:
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for task in os.listdir("/proc/self/task"):
        try:
            stat = Path(f"/proc/self/task/{task}/stat").read_text().rsplit(")", 1)[1].split()
            name = Path(f"/proc/self/task/{task}/comm").read_text().strip()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        out[f"{name}:{task}"] = (int(stat[11]) + int(stat[12])) / tick
    return out


def profile_bc() -> None:
    from toolkit.datasets.build import build_dataset
    from toolkit.datasets.config import BuildConfig
    from toolkit.game.config import SimulateConfig
    from toolkit.game.simulate import simulate
    from toolkit.ingest.ingest import ingest_paths
    from toolkit.layout import Layout
    from toolkit.train import bc

    epoch = bc._train_epoch

    def timed_epoch(*args: Any, **kwargs: Any) -> Any:
        before, start = _cpu_by_thread(), time.perf_counter()
        result = epoch(*args, **kwargs)
        after = _cpu_by_thread()
        spent = {k: round(v - before.get(k, 0.0), 2) for k, v in after.items() if v - before.get(k, 0.0) > 0.005}
        print(f"  epoch {args[-1]}: wall {time.perf_counter() - start:.2f} s, CPU by thread {spent}")
        return result

    bc._train_epoch = timed_epoch  # type: ignore[assignment]
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        layout = Layout.at(Path(tmp) / "home")
        ingest_paths(simulate(SimulateConfig(games=1000, seed=1, out=Path(tmp) / "logs")).files, layout)
        build_dataset(layout, BuildConfig(name="bench", sources=["forge"]))
        for run in range(2):
            print(f"BC run {run + 1} (load {os.getloadavg()[0]:.1f}):")
            bc.train_bc(layout, bc.BCConfig(dataset="bench", epochs=3, run_id=f"p{run}"), out=Path(tmp) / "bc")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=65_536, help="PPO steps")
    parser.add_argument("--bc", action="store_true", help="profile BC's epochs instead")
    args = parser.parse_args()
    if args.bc:
        profile_bc()
    else:
        profile_ppo(args.steps)


if __name__ == "__main__":
    main()
