"""Writers of one data root take turns: a loop waits for the catalog as long as another process holds it (its
progress says so) and goes on; a one-shot command waits briefly, then says who holds it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.factories import tiny
from toolkit.catalog import Lake
from toolkit.catalog.connect import WriterWait, connect_writer
from toolkit.cli.main import app
from toolkit.errors import CatalogError
from toolkit.layout import Layout
from toolkit.loop.run import resume_loop, run_loop
from toolkit.loop.state import STOP, RunFolder
from toolkit.progress import Progress

HOLD = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('held', flush=True); sys.stdin.read(); c.close()"


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[Layout, subprocess.Popen]]:
    """A data root whose catalog another process holds open for writing until its stdin closes."""
    layout = Layout.at(tmp_path / "home")
    Lake.open(layout, write=True).close()
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(layout.catalog)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "held"
        yield layout, process
    finally:
        process.kill()
        process.wait()


def _let_go(process: subprocess.Popen) -> None:
    if process.poll() is None:
        assert process.stdin is not None
        process.stdin.close()
        process.wait()


def test_a_loop_waits_for_the_catalog_another_process_holds_saying_so(holder) -> None:  # noqa: ANN001
    layout, process = holder
    seen: list[str] = []

    def watch(event: Progress) -> None:
        seen.append(event.item)
        if "waiting for the catalog" in event.item:
            _let_go(process)
        if event.item.endswith(": data_gate"):  # past the ingest: enough
            RunFolder(layout, "tiny").request(STOP)

    state = run_loop(layout, tiny(), progress=watch)
    assert state.status == "stopped", state.message
    waiting = [item for item in seen if "waiting for the catalog" in item]
    assert waiting and waiting[0].startswith("gen-000 attempt 0: ingest: waiting for the catalog, which another")
    assert RunFolder(layout, "tiny").load().generations[0].steps["0:ingest"].result["rows"] > 0


def test_a_stop_asked_while_a_loop_waits_for_the_catalog_stops_it_and_resume_goes_on(holder) -> None:  # noqa: ANN001
    layout, process = holder

    def stop_while_waiting(event: Progress) -> None:
        if "waiting for the catalog" in event.item:
            RunFolder(layout, "tiny").request(STOP)

    state = run_loop(layout, tiny(), progress=stop_while_waiting)
    assert state.status == "stopped" and "0:ingest" not in state.generations[0].steps
    _let_go(process)

    def stop_after_ingest(event: Progress) -> None:
        if event.item.endswith(": data_gate"):
            RunFolder(layout, "tiny").request(STOP)

    state = resume_loop(layout, "tiny", progress=stop_after_ingest)
    assert state.status == "stopped" and state.generations[0].steps["0:ingest"].result["rows"] > 0


def test_a_writer_told_to_wait_as_long_as_it_takes_reports_and_gets_the_catalog(holder) -> None:  # noqa: ANN001
    layout, process = holder
    waited: list[float] = []

    def report(seconds: float) -> None:
        waited.append(seconds)
        _let_go(process)

    connect_writer(layout, WriterWait(None, on_wait=report)).close()
    assert len(waited) == 1 and waited[0] >= 0


def test_a_one_shot_command_waits_briefly_then_says_who_holds_the_catalog(holder, tmp_path: Path) -> None:  # noqa: ANN001
    layout, _ = holder
    with pytest.raises(CatalogError, match="another process holds it"):
        connect_writer(layout, WriterWait(0.2))
    log = tmp_path / "forge.jsonl"
    log.write_bytes(b"{}\n")
    result = CliRunner().invoke(app, ["--home", str(layout.home), "ingest", str(log)])
    assert result.exit_code == 1 and "another process holds it" in result.output, result.output
    assert "wait for it to finish" in result.output
