"""Game jobs on each back end: games per second in-process, on the local process pool and on a local Ray,
and what each back end costs beyond the games themselves.

Run: ``.venv/bin/python bench/bench_scale.py [--games 4096] [--shard-games 512]``.

The job is the loop's biggest: the teacher's self-play export (a policy
checkpoint against itself and the heuristics, every teacher decision written
as JSONL), ``--games`` games in shards of ``--shard-games``. In-process is the
baseline, measured in the same run. For the pool and Ray the first job pays
the start (spawning workers, importing torch, starting Ray); then each warm
run is paired with an in-process run just before it (after one untimed
in-process warm-up job), so a pair sees the same moment of a machine whose
speed drifts by ~10% from one minute to the next, and the target is judged on
every pair; the results of all runs are checked equal.

Figures printed per back end: wall seconds, games/s, the ratio to
in-process, and the overhead: ``wall - games x c / workers`` where ``c`` is
the in-process cost of a game, split into a start cost (cold minus warm)
and a cost per shard (warm overhead x workers / shards). The bench also
runs half the games in-process in one fresh process, then in two at once:
what two cores give two independent processes, the pool's ceiling here.

Last run: see the README's "Scaling out" section (2 cores, 4,096 games,
shards of 512).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ratio, verdict  # noqa: E402

POOL_TARGET = 1.8  # the process pool, warm, against in-process on 2 cores (the ideal is 2x)


def _checkpoint(folder: Path) -> Path:
    from toolkit.train import checkpoints
    from toolkit.train.config import PolicySpec
    from toolkit.train.policy import ActorNet

    torch.manual_seed(0)
    actor = ActorNet(PolicySpec())
    return checkpoints.save_checkpoint(
        folder, actor.state_dict(), kind="bc", run_id="bench", tag="final", arch=actor.spec.model_dump(mode="json")
    )


def _job(blob, out: Path, games: int, backend) -> tuple[float, str, int]:  # noqa: ANN001
    from toolkit.train.config import SELF, ExportConfig
    from toolkit.train.export import export_league_games

    start = time.perf_counter()
    counts = export_league_games(
        blob,
        [SELF, "heuristic", "tuned"],
        out,
        weights=[1, 1, 1],
        games=games,
        seed=1,
        batch="bench",
        generation=1,
        config=ExportConfig(min_decisions=1),
        backend=backend,
    )
    seconds = time.perf_counter() - start
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in counts.files)).hexdigest()[:16]
    shutil.rmtree(out)  # ~0.8 GB a job: left on disk, the kernel's writeback of one run would slow the next
    return seconds, digest, counts.exported_decisions


def _warmed_up(root: Path, shard_games: int):  # noqa: ANN202
    """The job's policy and the in-process back end, after one untimed shard (imports, caches: not a game's cost)."""
    from toolkit.jobs.config import BackendConfig
    from toolkit.train.agents import policy_blob

    blob = policy_blob(_checkpoint(root / "ckpt"))
    inprocess = BackendConfig(kind="inprocess", shard_games=shard_games)
    _job(blob, root / "inprocess-warm-up", shard_games, inprocess)
    return blob, inprocess


def _child(games: int, shard_games: int) -> None:
    """One process of the ceiling: warm up, say ``ready``, wait for a line on stdin, then time ``games`` games."""
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        blob, inprocess = _warmed_up(root, shard_games)
        print("ready", flush=True)
        sys.stdin.readline()
        seconds, _, _ = _job(blob, root / "run", games, inprocess)
        print(seconds, flush=True)


def _ceiling(games: int, shard_games: int) -> tuple[float, float]:
    """Wall seconds of ``games`` in-process games in one process alone, then in each of two started together.

    Both in fresh processes (:func:`_child`), warmed up first and held at a
    barrier, with the thread settings of the pool's workers: two independent
    processes are the most two cores give the pool on this machine (the
    ratio is ``2 x alone / together``).
    """
    import subprocess

    from toolkit.jobs.worker import THREAD_VARS

    command = [sys.executable, __file__, "--child-games", str(games), "--shard-games", str(shard_games)]
    env = {**os.environ, **dict.fromkeys(THREAD_VARS, "1")}
    seconds = []
    for count in (1, 2):
        procs = [
            subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
            for _ in range(count)
        ]
        for proc in procs:  # every one warmed up and waiting: then start them together
            assert proc.stdout is not None
            proc.stdout.readline()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("\n")
            proc.stdin.flush()
        seconds.append(max(float(proc.communicate()[0].strip().splitlines()[-1]) for proc in procs))
    return seconds[0], seconds[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=4096)
    parser.add_argument("--shard-games", type=int, default=512)
    parser.add_argument("--warm-runs", type=int, default=3, help="warm runs per back end, each paired and judged")
    parser.add_argument("--skip-ray", action="store_true", help="Leave Ray out (when it is not installed).")
    parser.add_argument(
        "--no-ceiling", action="store_true", help="Skip timing two independent in-process halves at once."
    )
    parser.add_argument("--child-games", type=int, help=argparse.SUPPRESS)  # one process of the ceiling
    args = parser.parse_args()
    if args.child_games is not None:
        _child(args.child_games, args.shard_games)
        return 0
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    torch.set_num_threads(1)

    from toolkit.jobs.backends import free_cores
    from toolkit.jobs.config import BackendConfig

    cores = free_cores()
    shards = -(-args.games // args.shard_games)
    workers = min(cores, shards)
    print(f"{args.games} self-play export games in {shards} shards of {args.shard_games}; {cores} cores")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        blob, inprocess = _warmed_up(root, args.shard_games)
        digests = set()
        kinds = ["pool"] + ([] if args.skip_ray else ["ray"])
        for kind in kinds:
            backend = BackendConfig(kind=kind, workers=cores, shard_games=args.shard_games)
            cold, d1, _ = _job(blob, root / f"{kind}-cold", args.games, backend)
            digests.add(d1)
            pairs = []
            for run in range(args.warm_runs):
                base, d0, decisions = _job(blob, root / f"{kind}-inprocess-{run}", args.games, inprocess)
                seconds, d2, _ = _job(blob, root / f"{kind}-warm-{run}", args.games, backend)
                pairs.append((base, seconds))
                digests.update((d0, d2))
                print(
                    f"{kind:<6} pair {run + 1}: in-process {base:6.2f} s ({base / args.games * 1e3:.2f} ms a game, "
                    f"{decisions:,} decisions written), warm {seconds:6.2f} s: {base / seconds:4.2f}x"
                )
            ratios = [base / seconds for base, seconds in pairs]
            base, warm = pairs[ratios.index(min(ratios))]  # the worst pair: the target holds for every run
            ideal = base / workers
            overhead = max(0.0, warm - ideal)
            print(f"{kind:<6} cold {cold:7.2f} s  {args.games / cold:8,.0f} games/s  {base / cold:5.2f}x in-process")
            print(
                f"{kind:<6} warm {warm:7.2f} s  {args.games / warm:8,.0f} games/s  {base / warm:5.2f}x in-process  "
                f"(worst of {len(pairs)} pairs: " + ", ".join(f"{r:.2f}x" for r in ratios) + "; "
                f"ideal {ideal:.2f} s on {workers} workers; start {cold - warm:.2f} s, "
                f"{overhead * workers / shards * 1e3:.0f} ms a shard = "
                f"{overhead * workers / args.games * 1e3:.3f} ms a game)"
            )
            if kind == "pool":
                judged = verdict(
                    "pool warm / in-process, every run", min(ratios), POOL_TARGET, unit="x", against="in-process"
                )
                print(f"target: pool warm >= {POOL_TARGET}x in-process on {cores} cores, every run: {judged}")
        if not args.no_ceiling:
            alone, together = _ceiling(args.games // 2, args.shard_games)
            ratio("ceiling: two processes at once / one", 2 * alone / together, "one process alone")
            print(
                f"ceiling: {args.games // 2} games in-process in one fresh process {alone:.2f} s, in each of two at "
                f"once {together:.2f} s: {2 * alone / together:.2f}x (the most two cores give the pool here)"
            )
        same = len(digests) == 1
        print(f"same files on every back end: {'yes' if same else 'NO'} ({', '.join(sorted(digests))})")
        return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
