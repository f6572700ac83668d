"""The dashboard under test: its app over a data root, a live tiny loop, and a server a browser can reach."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.factories import TINY
from toolkit.layout import Layout
from toolkit.loop.status import RunStatus, run_status
from toolkit.serve.app import create_app
from toolkit.serve.security import Access

BASE = "http://127.0.0.1:8765"


def client_for(
    layout: Layout, token: str | None = None, host: str = "127.0.0.1", max_loops: int | None = None
) -> TestClient:
    limits = {} if max_loops is None else {"max_loops": max_loops}
    return TestClient(create_app(layout, Access.for_bind(host, 8765, token), **limits), base_url=BASE)


@pytest.fixture(scope="module")
def client(loop_home: Layout) -> TestClient:
    """The dashboard over the suite's finished tiny loop (run ``tiny``)."""
    return client_for(loop_home)


def live_config(**changes: Any) -> dict[str, Any]:
    """A tiny loop's fields for a start request: long enough (three generations) to be paused and resumed."""
    return {**{k: v for k, v in TINY.items() if k != "name"}, "max_generations": 3, **changes}


def wait_for(layout: Layout, name: str, predicate, timeout: float = 120.0) -> RunStatus:  # noqa: ANN001
    """Poll the run's status until ``predicate(status)`` holds (fails the test after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        status = run_status(layout, name)
        if predicate(status):
            return status
        assert time.monotonic() < deadline, f"timed out; last status: {status}"
        time.sleep(0.2)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(layout: Layout, token: str | None = None, max_loops: int | None = None) -> Iterator[str]:
    """A real HTTP server (uvicorn, in a thread) over ``layout`` for the block; yields its base URL."""
    import uvicorn

    port = free_port()
    limits = {} if max_loops is None else {"max_loops": max_loops}
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(layout, Access.for_bind("127.0.0.1", port, token), **limits),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        assert thread.is_alive(), "the server stopped at once"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def served(tmp_path) -> Iterator[tuple[Layout, str]]:  # noqa: ANN001
    """A real HTTP server over a fresh data root: (layout, base URL)."""
    layout = Layout.at(tmp_path / "home")
    layout.check(write=True)
    with serving(layout) as base:
        yield layout, base


def kept_student_copy(source: Path, target: Path) -> None:
    """Copy the finished run folder ``source`` to ``target`` (another run name) as if its last generation's student
    gate had refused the candidate: the student stays the previous generation's, as the loop records it."""
    import json
    import shutil

    shutil.copytree(source, target, ignore=shutil.ignore_patterns("run.lock", "tensorboard"))
    name = target.name
    records = [json.loads(line) for line in (target / "generations.jsonl").read_text().splitlines() if line.strip()]
    before, last = records[-2], records[-1]
    gate = last["attempts"][-1]["steps"]["student_gate"]
    beat = gate["head_to_head"]
    llr = beat["lower"] - 1.0  # below the lower bound: "no better"
    rounds = [{**r, "llr": llr if i == len(beat["rounds"]) - 1 else r["llr"]} for i, r in enumerate(beat["rounds"])]
    reason = "does not beat the previous model head to head (refused in this copy)"
    refused = {**beat, "passed": False, "decision": "accept_h0", "reason": reason, "llr": llr, "rounds": rounds}
    refusal = {"passed": False, "reason": f"head to head: {reason}", "head_to_head": refused, "strength": None}
    gate.update(refusal)
    last.update(
        student_promoted=False,
        student=before["student"],
        reason=f"teacher promoted; student kept: {reason}",
        **{k: before[k] for k in ("student_win_rate", "student_win_low", "student_win_high")},
    )
    last["evaluation"]["student"] = before["evaluation"]["student"]
    if before["generation"] == 0:  # the same model on the same deals: no gain over generation 0
        last["student_gain"] = {t: {**g, "diff": 0.0, "low": 0.0, "high": 0.0} for t, g in last["student_gain"].items()}
    for record in records:
        record["loop"] = name
    (target / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    state = json.loads((target / "state.json").read_text())
    gen = state["generations"][last["generation"]]
    gen["steps"][f"{gen['attempt']}:student_gate"]["result"].update(refusal)
    state["promoted"] = [p for p in state["promoted"] if (p["generation"], p["kind"]) != (gen["generation"], "student")]
    state.update(name=name, current_student=before["student"])
    (target / "state.json").write_text(json.dumps(state))


@pytest.fixture(scope="module")
def two_runs(loop_home: Layout, tmp_path_factory: pytest.TempPathFactory) -> Layout:
    """A data root holding the suite's tiny run (``tiny``: its students promoted) and a copy of it whose last
    student was refused and kept (``kept``); no catalog (the run pages read the run folders)."""
    import shutil

    layout = Layout.at(tmp_path_factory.mktemp("two-runs") / "home")
    layout.runs.mkdir(parents=True)
    shutil.copytree(loop_home.runs / "tiny", layout.runs / "tiny", ignore=shutil.ignore_patterns("run.lock"))
    kept_student_copy(loop_home.runs / "tiny", layout.runs / "kept")
    return layout
