"""A file's validation reads top to bottom: ``validate.py`` calls each step once, and no step calls back into it."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import orjson

import toolkit
from tests.factories import make_snapshot
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout

PACKAGE = Path(toolkit.__file__).parent
VALIDATE = str(PACKAGE / "ingest" / "validate.py")


def _walk(path: Path, home: Path) -> set[tuple[str, str, str, str]]:
    """Every call from one file of ``toolkit/`` into another of ``toolkit/ingest/`` while ``path`` is ingested:
    (caller's file, caller, callee's file, callee), files relative to the package, on every thread."""
    edges: set[tuple[str, str, str, str]] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        back = frame.f_back
        if event != "call" or back is None:
            return
        callee, caller = frame.f_code.co_filename, back.f_code.co_filename
        if callee != caller and callee.startswith(str(PACKAGE / "ingest")) and caller.startswith(str(PACKAGE)):
            edges.add((caller, back.f_code.co_name, callee, frame.f_code.co_name))

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        result = ingest_paths([path], Layout(home))
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    assert result.rows_valid == 397 and result.rows_rejected == 3
    return edges


def test_validation_calls_each_step_once_and_no_step_calls_back(tmp_path: Path) -> None:
    lines = [orjson.dumps(make_snapshot(game_id=f"g{i // 10}", decision_index=i % 10)) for i in range(400)]
    lines[7] = b'{"schema_version": 1, "bad'  # broken JSON: the fast parse splits its block, the row path rejects it
    lines[20] = b"   " + lines[20] + b"  "  # padded: sorted out of the block, accepted by the row path
    lines[30] = lines[30].replace(b'"turn":', b'"turn":"x","t":')  # a wrong type and an unknown field
    lines[31] = lines[31].replace(b'"turn":', b'"turn":"x","t":')
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n\n")
    edges = _walk(path, tmp_path / "home")

    calls = [(Path(callee).name, name) for caller, _, callee, name in edges if caller == VALIDATE]
    assert {"read_chunks_ahead", "sort", "parse_ahead", "check", "make_part", "finish"} <= {n for _, n in calls}
    assert len(calls) == len(set(calls)) <= 12, sorted(calls)  # each step called from one place
    callers_in = {(Path(caller).name, name) for caller, name, callee, _ in edges if callee == VALIDATE}
    # Only the stages that validate a file enter it, and the parse step, to take the next sorted chunk.
    assert {file for file, _ in callers_in} <= {"ingest.py", "dry_run.py", "shards.py", "parse.py"}, callers_in
    assert {name for file, name in callers_in if file == "parse.py"} == {"parse_ahead"}
