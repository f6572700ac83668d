"""Game jobs on each back end: games per second in-process, on the local process pool and on a local Ray,
and what each back end costs beyond the games themselves.

Run: ``.venv/bin/python bench/bench_scale.py [--games 4096] [--shard-games 512]``.

The job is the loop's biggest: the teacher's self-play export (a policy
checkpoint against itself and the heuristics, every teacher decision written
as JSONL), ``--games`` games in shards of ``--shard-games``. In-process is the
baseline, measured in the same run. For the pool and Ray the first job pays
the start (spawning workers, importing torch, starting Ray) and a second,
identical job runs warm; the results of all runs are checked equal.

Figures printed per back end: wall seconds, games/s, the ratio to
in-process, and the overhead: ``wall - games x c / workers`` where ``c`` is
the in-process cost of a game, split into a start cost (cold minus warm)
and a cost per shard (warm overhead x workers / shards).

Last run: see the README's "Scaling out" section (2 cores, 4,096 games,
shards of 512).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import verdict  # noqa: E402

POOL_TARGET = 1.8  # the process pool, warm, against in-process on 2 cores (the ideal is 2x)


def _checkpoint(folder: Path) -> Path:
    from toolkit.train import checkpoints
    from toolkit.train.policy import ActorNet, PolicySpec

    torch.manual_seed(0)
    actor = ActorNet(PolicySpec())
    return checkpoints.save_checkpoint(
        folder, actor.state_dict(), kind="bc", run_id="bench", tag="final", arch=actor.spec.model_dump(mode="json")
    )


def _job(blob, out: Path, games: int, backend) -> tuple[float, str, int]:  # noqa: ANN001
    from toolkit.train.export import SELF, ExportConfig, export_league_games

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
    return seconds, digest, counts.exported_decisions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=4096)
    parser.add_argument("--shard-games", type=int, default=512)
    parser.add_argument("--warm-runs", type=int, default=3, help="warm runs per back end (each judged)")
    parser.add_argument("--skip-ray", action="store_true", help="Leave Ray out (when it is not installed).")
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    torch.set_num_threads(1)

    from toolkit.jobs.backends import free_cores
    from toolkit.jobs.config import BackendConfig
    from toolkit.train.agents import policy_blob

    cores = free_cores()
    shards = -(-args.games // args.shard_games)
    print(f"{args.games} self-play export games in {shards} shards of {args.shard_games}; {cores} cores")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        blob = policy_blob(_checkpoint(root / "ckpt"))
        runs: dict[str, dict[str, float]] = {}
        digests = set()
        base, digest, decisions = _job(
            blob, root / "inprocess", args.games, BackendConfig(kind="inprocess", shard_games=args.shard_games)
        )
        digests.add(digest)
        per_game = base / args.games
        print(
            f"in-process   {base:7.2f} s  {args.games / base:8,.0f} games/s  (baseline; {decisions:,} decisions "
            f"written, {per_game * 1e3:.2f} ms a game)"
        )
        kinds = ["pool"] + ([] if args.skip_ray else ["ray"])
        for kind in kinds:
            backend = BackendConfig(kind=kind, workers=cores, shard_games=args.shard_games)
            cold, d1, _ = _job(blob, root / f"{kind}-cold", args.games, backend)
            warms = []
            for run in range(args.warm_runs):
                seconds, d2, _ = _job(blob, root / f"{kind}-warm-{run}", args.games, backend)
                warms.append(seconds)
                digests.add(d2)
            digests.add(d1)
            warm = max(warms)  # the slowest warm run: the target holds for every run
            ideal = args.games * per_game / min(cores, shards)
            overhead = max(0.0, warm - ideal)
            runs[kind] = {"cold": cold, "warm": warm}
            print(f"{kind:<6} cold {cold:7.2f} s  {args.games / cold:8,.0f} games/s  {base / cold:5.2f}x in-process")
            print(
                f"{kind:<6} warm {warm:7.2f} s  {args.games / warm:8,.0f} games/s  {base / warm:5.2f}x in-process  "
                f"(slowest of {len(warms)}: " + ", ".join(f"{base / w:.2f}x" for w in warms) + "; "
                f"ideal {ideal:.2f} s on {min(cores, shards)} workers; start {cold - warm:.2f} s, "
                f"{overhead * min(cores, shards) / shards * 1e3:.0f} ms a shard = "
                f"{overhead * min(cores, shards) / args.games * 1e3:.3f} ms a game)"
            )
            if kind == "pool":
                judged = verdict(
                    "pool warm / in-process, every run", base / warm, POOL_TARGET, unit="x", against="in-process"
                )
                print(f"target: pool warm >= {POOL_TARGET}x in-process on {cores} cores, every run: {judged}")
        same = len(digests) == 1
        print(f"same files on every back end: {'yes' if same else 'NO'} ({', '.join(sorted(digests))})")
        return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
