"""On a real two-node Ray cluster (two `ray start` on 127.0.0.1, one CPU each, token auth on every node):
evaluate and a tournament give what they give in-process, and a worker killed mid-job (kill -9) costs no row.

The driver is the `distill` CLI in a subprocess, as a user runs it; the cluster is stopped at the end, even on
failure.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
RAY = Path(sys.executable).with_name("ray")
TIMINGS = {"seconds", "decisions_per_second", "games_per_second"}


@dataclass(frozen=True)
class Cluster:
    address: str
    env: dict[str, str]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    pytest.importorskip("ray")  # the dev extra installs it: `make test` always has it
    port = _free_port()
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "token",  # the same auth mode and token on every node and the driver
        "RAY_AUTH_TOKEN": secrets.token_hex(16),
    }
    temp = Path(f"/tmp/distill-ray-{os.getpid()}")  # short: Ray's socket paths must fit in 107 bytes
    common = ["--num-cpus=1", "--object-store-memory=100000000", "--disable-usage-stats"]
    head = [str(RAY), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}"]
    head += ["--include-dashboard=false", f"--temp-dir={temp}", *common]
    node = [str(RAY), "start", f"--address=127.0.0.1:{port}", "--node-ip-address=127.0.0.1", *common]
    try:
        for command in (head, node):
            subprocess.run(command, env=env, check=True, capture_output=True, timeout=120)
        yield Cluster(f"127.0.0.1:{port}", env)
    finally:
        subprocess.run([str(RAY), "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)


def _distill(cluster: Cluster, *args: str, home: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "toolkit", "--home", str(home), *args, "--json"],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_cluster_has_two_nodes(cluster: Cluster, tmp_path: Path) -> None:
    probe = "import ray; ray.init(address='%s'); print(len([n for n in ray.nodes() if n['Alive']]))" % cluster.address
    done = subprocess.run([sys.executable, "-c", probe], env=cluster.env, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "2", done.stderr


def test_evaluate_and_a_tournament_on_ray_equal_in_process(cluster: Cluster, checkpoint: Path, tmp_path: Path) -> None:
    ray = ["--backend", "ray", "--address", cluster.address, "--shard-games", "50"]
    here = ["--backend", "inprocess", "--shard-games", "50"]
    evaluate = ["evaluate", "--policy", str(checkpoint), "--vs", "heuristic,random,tuned", "--games", "200"]
    on_ray, in_process = (_distill(cluster, *evaluate, *where, home=tmp_path) for where in (ray, here))
    assert on_ray["games"] == 200
    assert {k: v for k, v in on_ray.items() if k not in TIMINGS} == {
        k: v for k, v in in_process.items() if k not in TIMINGS
    }

    tournament = ["tournament", f"student={checkpoint}", "heuristic", "tuned", "random", "h2=heuristic"]
    tournament += ["--focus", "student", "--deals", "8"]
    on_ray, in_process = (_distill(cluster, *tournament, *where, home=tmp_path) for where in (ray, here))
    assert on_ray["games"] == 4 * 4 * 8
    assert on_ray == in_process  # the same games (their digest), so the same ratings


def _running_tasks() -> list[int]:
    listing = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in listing.splitlines()[1:] if "ray::_ray_task" in line]


def test_a_worker_killed_mid_job_loses_and_duplicates_no_row(cluster: Cluster, tmp_path: Path) -> None:
    args = ["simulate", "--games", "1200", "--shard-games", "100", "--players", "heuristic,tuned,random,heuristic"]
    driver = subprocess.Popen(
        [sys.executable, "-m", "toolkit", "--home", str(tmp_path / "home"), *args, "--seed", "9"]
        + ["--out", str(tmp_path / "ray"), "--backend", "ray", "--address", cluster.address, "--json"],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and driver.poll() is None and time.monotonic() < deadline:
        running = _running_tasks()
        if running and any((tmp_path / "ray").glob("*.jsonl")):  # mid-job: shards done, shards running
            os.kill(running[0], signal.SIGKILL)
            killed = running[0]
        time.sleep(0.05)
    out, err = driver.communicate(timeout=600)
    assert killed is not None, f"no worker was caught running a shard: {err}"
    assert driver.returncode == 0, err
    assert out.startswith("{"), out[:2000]
    on_ray = json.loads(out)

    here = _distill(
        cluster, *args, "--seed", "9", "--out", str(tmp_path / "here"), "--backend", "inprocess", home=tmp_path
    )
    assert [Path(f).name for f in on_ray["files"]] == [Path(f).name for f in here["files"]]
    assert [Path(f).read_bytes() for f in on_ray["files"]] == [Path(f).read_bytes() for f in here["files"]]
    assert not list((tmp_path / "ray").glob("*.tmp"))

    home = tmp_path / "home"
    ingested = _distill(cluster, "ingest", str(tmp_path / "ray"), home=home)
    assert ingested["rows_valid"] == on_ray["decisions"] == here["decisions"] and not ingested["rows_rejected"]
    _distill(cluster, "ingest", str(tmp_path / "ray"), home=home)  # a shard ingested again is a no-op
    query = "select count(*) as n, count(distinct (game_id, decision_index)) as d from decisions"
    assert _distill(cluster, "sql", query, home=home) == [{"n": on_ray["decisions"], "d": on_ray["decisions"]}]


def test_a_local_ray_started_by_distill_gives_the_in_process_files(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    args = ["simulate", "--games", "300", "--shard-games", "100", "--players", "heuristic,random,tuned,heuristic"]
    results = {}
    for where in (["--backend", "ray", "--workers", "2"], ["--backend", "inprocess"]):
        out = tmp_path / where[1]
        done = subprocess.run(
            [sys.executable, "-m", "toolkit", *args, "--out", str(out), *where, "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        results[where[1]] = [Path(f).read_bytes() for f in json.loads(done.stdout)["files"]]
    assert len(results["ray"]) == 3 and results["ray"] == results["inprocess"]
