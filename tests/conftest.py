"""Shared fixtures: a data root per test and writers of tiny log files."""

from __future__ import annotations

import contextlib
import os
import signal
import time

# Nothing may reach a model or dataset hub while the tests run (Hugging Face `datasets` reads these on import).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# The size of no terminal: pytest-xdist's workers inherit COLUMNS=80 and LINES=24, and the CLI's consoles take a
# size set at import for good, so a test that gives its own COLUMNS would see 80 on a worker and its own alone.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.s3server import S3Server, s3_server
from toolkit.layout import LAKE_ENV, Layout

DIALECT_CASES = Path(__file__).parent / "data" / "dialects"
# Nothing in the environment the tests run in chooses their lake: each test's data root has its own, unless a
# test shares one at a location (the ``shared_lake`` fixture).
os.environ.pop(LAKE_ENV, None)


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    """A real S3 API (moto's server on the loopback), one per test process."""
    with s3_server() as server:
        yield server


@pytest.fixture
def s3_env(s3: S3Server) -> Iterator[S3Server]:
    """The ``AWS_*`` environment that reaches ``s3``, for the test (set apart from the test's own ``monkeypatch``,
    which a test may undo)."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in s3.env.items():
            patch.setenv(key, value)
        yield s3


@pytest.fixture
def shared_lake(s3_env: S3Server) -> Iterator[str]:
    """A new lake at a location (a prefix of a new bucket), chosen for every data root of the test as
    ``DISTILL_LAKE`` chooses it."""
    uri = f"s3://{s3_env.bucket()}/lake"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(LAKE_ENV, uri)
        yield uri


@pytest.fixture(params=["local", "s3"])
def either_lake(request: pytest.FixtureRequest) -> str:
    """A test twice: on the data root's own lake, and on a lake at a location (S3) of which the data root keeps
    the copy; for behaviour that must not differ (``pytestmark = pytest.mark.usefixtures("either_lake")``)."""
    if request.param == "s3":
        request.getfixturevalue("shared_lake")
    return str(request.param)


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout.at(tmp_path / "home")


def encode(record: Any) -> bytes:
    return orjson.dumps(record)


@pytest.fixture
def write_log(tmp_path: Path) -> Callable[..., Path]:
    """Write records (dicts, or raw bytes lines) as a JSONL file; returns its path."""

    def write(name: str, lines: Iterable[Any], *, newline: bytes = b"\n", final_newline: bool = True) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        encoded = [line if isinstance(line, bytes) else encode(line) for line in lines]
        data = newline.join(encoded) + (newline if final_newline and encoded else b"")
        path.write_bytes(data)
        return path

    return write


@pytest.fixture(scope="session")
def loop_home(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    """A data root made by one real tiny closed loop (run ``tiny``, dataset ``loop-tiny``), shared read-mostly by
    the tests of what reads a finished run: its records, the notebooks, the exports."""
    from tests.factories import tiny
    from toolkit.loop.run import run_loop

    layout = Layout.at(tmp_path_factory.mktemp("loop") / "home")
    state = run_loop(layout, tiny())
    assert state.status == "finished", state.message
    return layout


# -- no child process outlives the test that started it ----------------------------------------------------------

# Children kept on purpose across tests: the process pool's workers (cached per worker count, as in a long-running
# `distill serve`) and multiprocessing's resource tracker.
_KEPT_CHILDREN = ("multiprocessing.spawn", "multiprocessing.resource_tracker", "multiprocessing.forkserver")
_CHILD_GRACE_S = 10.0


def _children() -> dict[int, str]:
    """This process's live children (zombies are dead: only not yet reaped), by pid, with their command lines."""
    me, found = os.getpid(), {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
            state, parent = stat[stat.rindex(")") + 2 :].split()[:2]
            if int(parent) != me or state in ("Z", "X"):
                continue
            with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError):
            continue
        if not any(kept in command for kept in _KEPT_CHILDREN):
            found[int(entry.name)] = command
    return found


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    before = _children()
    try:
        return (yield)
    finally:  # what the fixtures started (a session's S3 server, a module's engine) is theirs to stop
        item.stash[_EXPECTED] = set(before) | set(_children())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    result = yield
    expected = item.stash.get(_EXPECTED, set())
    deadline = time.monotonic() + _CHILD_GRACE_S
    left = {pid: command for pid, command in _children().items() if pid not in expected}
    while left and time.monotonic() < deadline:  # a process told to stop may take a moment to exit
        time.sleep(0.1)
        left = {pid: command for pid, command in _children().items() if pid in left}
    if left:
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        pytest.fail(f"the test left child processes running (killed now): {left}", pytrace=False)
    return result


_EXPECTED = pytest.StashKey[set[int]]()
