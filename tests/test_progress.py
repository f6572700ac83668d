"""Every stage reports progress the same way: Progress events, counted from the start, never deltas."""

from __future__ import annotations

from pathlib import Path

from toolkit.datasets.build import build_dataset
from toolkit.datasets.config import BuildConfig
from toolkit.game.config import SimulateConfig
from toolkit.game.simulate import simulate
from toolkit.ingest.dry_run import validate_paths
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout
from toolkit.progress import Progress


def _watch() -> tuple[list[Progress], object]:
    events: list[Progress] = []
    return events, events.append


def test_simulate_validate_ingest_and_build_report_progress_alike(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    games, watch = _watch()
    simulate(SimulateConfig(games=6, seed=4, out=tmp_path / "logs"), progress=watch)
    assert {(e.total, e.unit) for e in games} == {(6, "games")} and games[-1].done == 6
    assert [e.done for e in games] == sorted(e.done for e in games)
    [log] = sorted((tmp_path / "logs").rglob("*.jsonl*"))

    for stage in (validate_paths, lambda paths, progress: ingest_paths(paths, layout, progress=progress)):
        rows, watch = _watch()
        stage([log], progress=watch)
        assert rows and all(isinstance(e, Progress) and e.unit == "rows" and e.item == str(log) for e in rows)
        assert [e.done for e in rows] == sorted(e.done for e in rows) and rows[-1].total is None

    scanned, watch = _watch()
    build_dataset(layout, BuildConfig(), progress=watch)
    assert scanned and all(e.unit == "rows" for e in scanned)
    done = [e.done for e in scanned]
    assert done == sorted(done) and done[-1] > 0
