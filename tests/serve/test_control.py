"""Start, pause, resume and stop a real tiny loop through the API; the loop runs in its own process.

After each control the run's state on disk is checked; while the loop
ingests and builds, the lake page, the API and ``distill sql`` keep
answering (they read the catalog's snapshot).
"""

from __future__ import annotations

import json
import os
import signal
from concurrent.futures import ThreadPoolExecutor

import pytest
from typer.testing import CliRunner

from tests.factories import TINY
from tests.serve.conftest import client_for, live_config, serving, wait_for
from toolkit.cli.main import app
from toolkit.layout import Layout
from toolkit.loop.state import RunFolder

pytestmark = pytest.mark.slow


def saved_status(layout: Layout, name: str) -> str:
    return json.loads((layout.runs / name / "state.json").read_text())["status"]


def test_start_pause_resume_stop_a_real_loop(tmp_path) -> None:
    layout = Layout.at(tmp_path / "home")
    client = client_for(layout)
    started = client.post("/api/distill/start", json={"name": "live", "config": live_config()})
    assert started.status_code == 200, started.text
    pid = started.json()["status"]["pid"]
    assert pid and pid != os.getpid() and started.json()["status"]["status"] == "running"
    try:
        restarted = client_for(layout)  # a new server over the same data root finds the loop running
        seen = restarted.get("/api/distill/status", params={"name": "live"}).json()
        assert seen["status"] == "running" and seen["pid"] == pid
        again = restarted.post("/api/distill/start", json={"name": "live", "config": live_config()})
        assert again.status_code == 409 and "exists" in again.json()["detail"]
        twice = client.post("/api/distill/resume", json={"name": "live"})
        assert twice.status_code == 409 and "running" in twice.json()["detail"]
        # the status says which step runs now, in words, on the API and the run page
        busy = wait_for(layout, "live", lambda s: s.running_step is not None)
        step = busy.running_step.split(":")[1]
        assert busy.now.startswith(f"running: {step} (generation ") and busy.now.endswith(", attempt 0)")
        assert 'data-field="now">running' in client.get("/runs/live").text  # (between two steps: "running after")

        # reading never waits for the loop's writes: poll while it ingests, gates and builds generation 0
        answers = 0
        while RunFolder(layout, "live").records() == []:
            assert client.get("/api/lake").status_code == 200
            if layout.catalog.exists():
                result = CliRunner().invoke(app, ["--home", str(layout.home), "sql", "SELECT count(*) FROM batches"])
                assert result.exit_code == 0, result.output
            answers += 1
        assert answers > 0

        paused = client.post("/api/distill/pause", json={"name": "live"})
        assert paused.status_code == 200 and paused.json()["status"]["requests"] == "PAUSE"
        status = wait_for(layout, "live", lambda s: s.status == "paused")
        assert status.pid is None and status.controls == ["resume", "stop"]
        assert saved_status(layout, "live") == "paused" and not (layout.runs / "live" / "PAUSE").exists()
        steps_at_pause = status.steps_done, status.generation

        resumed = client.post("/api/distill/resume", json={"name": "live"})
        assert resumed.status_code == 200, resumed.text
        assert resumed.json()["status"]["pid"] not in (None, pid)
        assert saved_status(layout, "live") == "running"
        wait_for(layout, "live", lambda s: (s.generation, s.steps_done) != steps_at_pause)  # it went on

        stopped = client.post("/api/distill/stop", json={"name": "live"})
        assert stopped.status_code == 200 and "next step boundary" in stopped.json()["message"]
        status = wait_for(layout, "live", lambda s: s.status in ("stopped", "finished"))
        assert status.pid is None and saved_status(layout, "live") == status.status
        if status.status == "stopped":  # a stopped run resumes where it stopped
            assert status.controls == ["resume"]
        log = (layout.runs / "live" / "loop.log").read_text()
        assert "gen-000 attempt 0: simulate" in log
    finally:
        holder = RunFolder(layout, "live").process()
        if holder:
            os.kill(holder, signal.SIGKILL)


def test_stopping_a_paused_run_marks_it_stopped_at_once(tmp_path) -> None:
    layout = Layout.at(tmp_path / "home")
    client = client_for(layout)
    assert client.post("/api/distill/start", json={"name": "idle", "config": live_config()}).status_code == 200
    assert client.post("/api/distill/pause", json={"name": "idle"}).status_code == 200
    wait_for(layout, "idle", lambda s: s.status == "paused")
    stopped = client.post("/api/distill/stop", json={"name": "idle"})
    assert stopped.status_code == 200 and stopped.json()["status"]["status"] == "stopped"
    assert saved_status(layout, "idle") == "stopped"
    assert client.post("/api/distill/pause", json={"name": "idle"}).status_code == 409


def test_a_loop_killed_from_outside_says_in_its_log_how_it_ended(tmp_path) -> None:
    import time

    layout = Layout.at(tmp_path / "home")
    client = client_for(layout)
    started = client.post("/api/distill/start", json={"name": "doomed", "config": live_config()})
    assert started.status_code == 200, started.text
    os.kill(started.json()["status"]["pid"], signal.SIGKILL)  # as the out-of-memory killer would: no last words
    status = wait_for(layout, "doomed", lambda s: s.pid is None)
    assert status.status == "interrupted" and status.controls == ["resume", "stop"]
    deadline = time.monotonic() + 30
    while "killed by signal" not in (log := (layout.runs / "doomed" / "loop.log").read_text()):
        assert time.monotonic() < deadline, log
        time.sleep(0.1)
    assert log.splitlines()[-1].endswith("was killed by signal 9 (SIGKILL)")


def test_loops_started_at_once_on_one_data_root_all_finish(tmp_path) -> None:
    import httpx2

    layout = Layout.at(tmp_path / "home")
    names = ["one", "two", "three"]
    config = {k: v for k, v in TINY.items() if k != "name"}  # the same config: the same bootstrap games too
    try:
        with serving(layout, max_loops=len(names)) as base, ThreadPoolExecutor(len(names)) as pool:
            starts = [
                pool.submit(httpx2.post, f"{base}/api/distill/start", json={"name": n, "config": config}, timeout=300)
                for n in names
            ]
            assert [s.result().status_code for s in starts] == [200] * len(names), [s.result().text for s in starts]
        for name in names:
            status = wait_for(layout, name, lambda s: s.pid is None, timeout=1200)
            assert status.status == "finished", (name, status, (layout.runs / name / "loop.log").read_text())
            assert status.generations_recorded == 2
    finally:
        for name in names:
            holder = RunFolder(layout, name).process()
            if holder:
                os.kill(holder, signal.SIGKILL)
