"""What Distill writes does not change under a refactor: a fixed simulate -> ingest -> build gives the same
build fingerprint and the same rows, in the same files, as the code before the house was rearranged (issue 16).

The digests were recorded from commit 82c75f0 (before the refactor) and from the refactored code alike. A
change that alters them changes data users already have: it needs a format version, not a new golden value.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq

from toolkit.datasets.build import build_dataset
from toolkit.datasets.config import BuildConfig
from toolkit.game.simulate import SimulateConfig, simulate
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout

GOLDEN = {
    "fingerprint": "66840869c1481fde",
    "lake": "bb0eef5dd68e3ba91747d964c512ba8556e48788f64964c4ab020e86823b051a",
    "build": "3f9bf8139bd9107e76f58c54e3d6e9789455caec220005c70abf73ce9e2eadc5",
}


def rows_digest(layout: Layout, files: list[Path], logs: Path) -> str:
    """sha256 over each file's place and rows (the logs' folder taken out of the lineage paths)."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(str(path.relative_to(layout.home)).encode())
        for row in pq.read_table(path).to_pylist():
            if "source_file" in row:
                row["source_file"] = str(Path(row["source_file"]).relative_to(logs))
            digest.update(json.dumps(row, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def test_a_fixed_pipeline_writes_what_it_always_wrote(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    logs = tmp_path / "logs"
    simulate(SimulateConfig(games=12, players=("heuristic", "tuned", "random", "heuristic"), seed=3, out=logs))
    ingest_paths([logs], layout)
    build_dataset(layout, BuildConfig(name="g", seed=1))
    manifest = json.loads(next((layout.builds / "g").rglob("manifest.json")).read_text())
    found = {
        "fingerprint": manifest["fingerprint"],
        "lake": rows_digest(layout, list(layout.lake.rglob("*.parquet")), logs),
        "build": rows_digest(layout, list((layout.builds / "g").rglob("*.parquet")), logs),
    }
    assert found == GOLDEN
