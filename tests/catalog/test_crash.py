"""kill -9 in the middle of every change of the lake: the next writer finds it at the version before or after,
never between, and a rerun reaches the lake an uninterrupted run reaches."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from tests.factories import make_snapshot
from toolkit.catalog import Catalog, Lake
from toolkit.failpoints import ENV
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout

ROOT = Path(__file__).resolve().parents[2]


def _log(folder: Path, name: str) -> Path:
    path = folder / f"{name}.jsonl"
    records = []
    for g in range(3):
        for i in range(8):
            record = make_snapshot(game_id=f"{name}-{g}", seat=i % 4, decision_index=i)
            record.update(winner_seat=0, seat_won=i % 4 == 0)
            records.append(orjson.dumps(record))
    path.write_bytes(b"\n".join(records) + b"\n")
    return path


def setup_lake(home: Path) -> list[str]:
    """The same lake every time: three batches, the second retired, the first two compacted together."""
    layout = Layout.at(home)
    logs = home.parent / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    batches = ingest_paths([_log(logs, n) for n in ("a", "b", "c")], layout).batches
    with Lake.open(layout, write=True) as lake:
        lake.retire([batches[1]], "bad seats")
    return batches


def _batches(home: Path) -> list[str]:
    with Catalog.open(Layout.at(home)) as catalog:
        return [b.batch_id for b in sorted(catalog.batches(), key=lambda b: b.lake_version or 0)]


def op_retire(home: Path) -> None:
    with Lake.open(Layout.at(home), write=True) as lake:
        lake.retire([_batches(home)[0]], "bad too")


def op_retire_shared(home: Path) -> None:  # inside a compacted file: a rewrite
    with Lake.open(Layout.at(home), write=True) as lake:
        lake.retire([_batches(home)[2]], "bad too")


def op_restore(home: Path) -> None:
    with Lake.open(Layout.at(home), write=True) as lake:
        lake.restore([_batches(home)[1]])


def op_compact(home: Path) -> None:
    with Lake.open(Layout.at(home), write=True) as lake:
        lake.compact()


def op_vacuum(home: Path) -> None:
    with Lake.open(Layout.at(home), write=True) as lake:
        lake.vacuum(0)


def op_review(home: Path) -> None:
    with Lake.open(Layout.at(home), write=True) as lake:
        lake.review(_batches(home), "accepted", "gate passed")


OPS: dict[str, Callable[[Path], None]] = {
    "retire": op_retire,
    "retire_shared": op_retire_shared,
    "restore": op_restore,
    "compact": op_compact,
    "vacuum": op_vacuum,
    "review": op_review,
}
# (operation, what must hold before it, failpoints to kill at)
CASES = [
    ("retire", None, ["retire.before_commit", "retire.after_commit"]),
    ("retire_shared", "compact", ["retire.moved", "retire.before_commit", "retire.after_commit"]),
    ("restore", None, ["restore.before_commit", "restore.after_commit"]),
    ("compact", None, ["compact.moved", "compact.before_commit", "compact.after_commit"]),
    ("vacuum", None, ["vacuum.deleting", "vacuum.before_commit", "vacuum.after_commit"]),
    ("review", None, ["review.before_commit", "review.after_commit"]),
]


def lake_state(home: Path) -> dict[str, object]:
    """What a reader sees: rows, batch states, the operations of the versions, how many files are on disk."""
    with Lake.open(Layout.at(home), write=True) as lake:  # a writer: recovery runs first
        return {
            "rows": lake.view.con.execute(
                "SELECT batch_id, game_id, seat, decision_index FROM decisions ORDER BY ALL"
            ).fetchall(),
            "batches": lake.view.con.execute(
                "SELECT batch_id, status, status_reason, retired, retired_reason FROM batches ORDER BY ALL"
            ).fetchall(),
            "operations": [
                r[0] for r in lake.view.con.execute("SELECT operation FROM versions ORDER BY version").fetchall()
            ],
            "horizon": lake.view.vacuum_horizon,
            "files": len(list(Layout.at(home).lake.rglob("*.parquet"))),
            "staging": sorted(p.name for p in Layout.at(home).staging.iterdir()),
        }


def visible(state: dict[str, object]) -> dict[str, object]:
    """What the latest version shows."""
    return {key: state[key] for key in ("rows", "batches", "operations")}


def _prepare(home: Path, before: str | None) -> None:
    setup_lake(home)
    if before is not None:
        OPS[before](home)


@pytest.mark.parametrize(("operation", "before", "points"), CASES, ids=[c[0] for c in CASES])
def test_a_kill_mid_change_leaves_the_version_before_or_after_and_a_rerun_finishes(
    tmp_path: Path, operation: str, before: str | None, points: list[str]
) -> None:
    reference = tmp_path / "reference" / "home"
    _prepare(reference, before)
    start = lake_state(reference)
    OPS[operation](reference)
    done = lake_state(reference)
    assert done != start
    for point in points:
        home = tmp_path / point / "home"
        _prepare(home, before)
        code = (
            "from pathlib import Path; "
            f"from tests.catalog.test_crash import OPS; OPS[{operation!r}](Path({str(home)!r}))"
        )
        process = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, ENV: point})
        assert process.returncode == -signal.SIGKILL, point
        found = lake_state(home)  # a vacuum may have deleted some old files: the versions read the same
        assert visible(found) in (visible(start), visible(done)), point
        if visible(found) == visible(start):
            OPS[operation](home)
        assert lake_state(home) == done, point
