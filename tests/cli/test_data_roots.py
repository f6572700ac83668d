"""Unusable data roots and bad names get one clear error each, never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.factories import make_snapshot
from toolkit.cli.main import app
from toolkit.stats import entropy_bits

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]


def run(*args: str):
    return runner.invoke(app, list(args))


def as_unprivileged(*args: str) -> subprocess.CompletedProcess:
    """The CLI as a user without root's power to write anywhere (root ignores file permissions)."""
    command = [sys.executable, "-m", "toolkit", *args]
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("running as root without setpriv: permissions cannot be tested")
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.fixture
def log(write_log) -> Path:
    path = write_log("a.jsonl", [make_snapshot(game_id="g0", seat=i, decision_index=i) for i in range(4)])
    path.chmod(0o644)
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["ingest", "LOG"],
        ["sql", "SELECT 1"],
        ["datasets", "list"],
        ["build"],
        ["loop", "status"],
        ["loop", "run", "--name", "x"],
    ],
)
def test_a_data_root_that_is_a_file_is_refused_by_every_command(tmp_path: Path, log: Path, command: list[str]) -> None:
    home = tmp_path / "afile"
    home.write_text("not a folder")
    result = run("--home", str(home), *[str(log) if c == "LOG" else c for c in command])
    assert result.exit_code == 2 and "is a file, not a folder" in result.stderr
    assert "Traceback" not in result.output + result.stderr


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A temporary folder other users can reach (pytest's own is private to its user)."""
    folder = Path(tempfile.mkdtemp(prefix="distill-roots-"))
    folder.chmod(0o755)
    yield folder
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    shutil.rmtree(folder)


@pytest.fixture
def locked_down(shared_tmp: Path, log: Path) -> tuple[Path, Path, Path]:
    """A data root (with a catalog), a folder, and a log: the first two read-only for other users."""
    shared_log = shared_tmp / "a.jsonl"
    shutil.copy(log, shared_log)
    shared_log.chmod(0o644)
    home = shared_tmp / "home"
    assert run("--home", str(home), "ingest", str(shared_log)).exit_code == 0
    for path in [home, *home.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    readonly = shared_tmp / "readonly"
    readonly.mkdir(mode=0o555)
    return home, readonly, shared_log


@pytest.mark.parametrize("case", ["existing root", "new root in a read-only folder", "loop run"])
def test_a_data_root_without_write_permission_gets_one_clear_error(locked_down, case: str) -> None:
    home, readonly, log = locked_down
    args = {
        "existing root": ["--home", str(home), "ingest", str(log)],
        "new root in a read-only folder": ["--home", str(readonly / "sub"), "ingest", str(log)],
        "loop run": ["--home", str(home), "loop", "run", "--name", "x"],
    }[case]
    result = as_unprivileged(*args)
    assert result.returncode == 2, result.stderr
    assert "error:" in result.stderr and ("not writable" in result.stderr or "cannot create" in result.stderr)
    assert "Traceback" not in result.stderr and "another distill" not in result.stderr


def test_a_read_only_data_root_can_still_be_queried(locked_down) -> None:
    home, _, _ = locked_down
    result = as_unprivileged("--home", str(home), "sql", "--csv", "SELECT count(*) AS n FROM decisions")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["n", "4"]


@pytest.mark.parametrize("command", ["stop", "pause", "resume", "status", "history"])
def test_loop_commands_refuse_a_name_that_is_not_a_run_name(tmp_path: Path, command: str) -> None:
    result = run("--home", str(tmp_path / "home"), "loop", command, "--name", "../escape")
    assert result.exit_code == 2 and "not a loop run name" in result.stderr
    assert not (tmp_path / "escape").exists() and not (tmp_path / "home" / "escape").exists()


def test_error_messages_keep_their_brackets() -> None:
    result = run("loop", "run", "--name", "BAD NAME")
    assert result.exit_code == 2 and "^[a-z0-9][a-z0-9_.-]{0,63}$" in result.stderr


def test_the_entropy_of_one_action_is_zero_not_minus_zero() -> None:
    assert f"{entropy_bits([5, 0, 0]):.3f}" == "0.000"
