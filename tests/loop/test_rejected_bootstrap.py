"""Logs that give the loop no valid decision: the run fails, saying why and where the rejected lines are, and is
never left interrupted; a batch with no valid decision fails the data gate instead of stopping it. (Logs whose
decisions the lake holds already are no failure: the run trains on the batches that hold them, see
tests/loop/test_loop.py.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import encode
from tests.factories import make_snapshot, tiny
from toolkit.catalog.store import Catalog
from toolkit.cli.main import app
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout
from toolkit.loop.run import run_loop
from toolkit.loop.state import RunFolder
from toolkit.loop.status import run_status
from toolkit.loop.steps import data_gate
from toolkit.loop.steps.base import StepContext

SEE_REJECTS = 'counted by reason in `distill sql "FROM reject_reasons"`'


def _forge_log(folder: Path, games: int = 4) -> Path:
    from toolkit.game.config import SimulateConfig
    from toolkit.game.simulate import simulate

    players = ("heuristic", "tuned", "heuristic", "tuned")
    [log] = simulate(SimulateConfig(games=games, players=players, seed=3, out=folder, max_rounds=20)).files
    return log


def _not_json(folder: Path, layout: Layout) -> tuple[list[Path], int]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "notes.jsonl"
    path.write_bytes(b"secret line one\nsecret line two\n{not json\n")
    return [path], 3


def _not_records(folder: Path, layout: Layout) -> tuple[list[Path], int]:
    lines = [encode({"schema_version": 1}), encode(make_snapshot(seat=9)), encode([1, 2]), b"null"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "broken.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return [path], 4


def _several_files(folder: Path, layout: Layout) -> tuple[list[Path], int]:
    (first, one), (second, two) = _not_json(folder / "a", layout), _not_records(folder / "b", layout)
    return first + second, one + two


def _empty(folder: Path, layout: Layout) -> tuple[list[Path], int]:
    path = folder / "empty.jsonl"
    path.write_bytes(b"")
    return [path], 0


CASES: dict[str, Callable[[Path, Layout], tuple[list[Path], int]]] = {
    "lines that are not JSON": _not_json,
    "JSON that is not a decision": _not_records,
    "several files, each all rejected": _several_files,
    "an empty file": _empty,
}


@pytest.mark.parametrize("make", CASES.values(), ids=CASES.keys())
def test_a_bootstrap_whose_every_line_is_rejected_fails_saying_so(tmp_path: Path, make) -> None:  # noqa: ANN001
    layout = Layout.at(tmp_path / "home")
    (tmp_path / "logs").mkdir()
    logs, rejected = make(tmp_path / "logs", layout)
    state = run_loop(layout, tiny(name="junk", bootstrap={"logs": [str(p) for p in logs]}))
    assert state.status == "failed"
    assert state.message == f"the bootstrap logs gave no valid decisions: {rejected} lines rejected, {SEE_REJECTS}"
    assert run_status(layout, "junk").status == "failed" and run_status(layout, "junk").controls == ["resume", "stop"]
    [record] = RunFolder(layout, "junk").records()
    assert record["outcome"] == "failed" and record["reason"] == state.message and record["student"] is None
    if rejected:
        counted = CliRunner().invoke(app, ["--home", str(layout.home), "sql", "select count(*) AS n from rejects"])
        assert counted.exit_code == 0 and str(rejected) in counted.output, counted.output
        batches = state.generations[0].steps["0:ingest"].result["batches"]
        with Catalog.open(layout) as catalog:
            reviewed = {b.batch_id: (b.status, b.status_reason) for b in catalog.batches()}
        assert all(reviewed[b] == ("rejected", "no valid decisions") for b in batches)


def test_an_unreadable_bootstrap_log_is_named_in_the_failure(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    cut = tmp_path / "cut.jsonl.zst"
    cut.write_bytes(b"(\xb5/\xfd\x00\x00")  # a zstd frame header and nothing after it
    state = run_loop(layout, tiny(name="cut", bootstrap={"logs": [str(cut)]}))
    assert state.status == "failed" and state.message.startswith("the bootstrap logs gave no valid decisions: 0 lines")
    assert "1 file(s) could not be read" in state.message and str(cut) in state.message


def test_a_bootstrap_log_of_only_rejected_lines_among_good_ones_fails_the_data_gate(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    good = _forge_log(tmp_path / "good")
    [junk], rejected = _not_json(tmp_path, layout)
    state = run_loop(layout, tiny(name="mixed", bootstrap={"logs": [str(good), str(junk)]}))
    assert state.status == "failed" and state.message.startswith("bootstrap data rejected: b")
    assert f"no valid decisions ({rejected} lines rejected)" in state.message


def test_the_data_gate_fails_a_batch_with_no_valid_decision_and_checks_the_others(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    good = _forge_log(tmp_path / "good")
    [junk], rejected = _not_json(tmp_path, layout)
    result = ingest_paths([good, junk], layout)
    batches = [f.batch_id for f in result.files]
    context = StepContext(layout, tiny(), tmp_path / "gate", seed=0, generation=1, attempt=0)
    gate = data_gate.data_gate_step(context, data_gate.DataGateInput(batches=batches))
    assert not gate.passed and gate.reason == f"{batches[1]}: no valid decisions ({rejected} lines rejected)"
    assert len(gate.reports) == 1  # the good batch was checked
