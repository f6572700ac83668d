"""What Distill writes does not change under a refactor: a fixed simulate -> ingest -> build gives the same
build fingerprint and the same rows, in the same files, as the code before the house was rearranged (issue 16).

The digests were recorded from commit 82c75f0 (before the refactor) and from the refactored code alike. A
change that alters them changes data users already have: it needs a format version, not a new golden value.

Re-pinned once, deliberately, for contract version 2 (the "lake lifecycle" issue): simulate now writes v2
records (each row's `lineup` and `outcome`), so the logs, hence the batch ids, the lake rows and every build
row's lineage change; builds write `label` as int64 with Hugging Face features, and the manifest lists the
action names. The version is the contract's (`schema_version` 2, the manifest's `contract_version`). In the
same issue the lake became a versioned table: a build reads the lake's files in (source, generation, batch)
order, the order a compaction keeps, so compacting never changes a build's bytes, and its input key names the
partitions it selected rather than file paths (the lake's own rows are unchanged: same digest).

Re-pinned once more, deliberately, for lake format 3 ("one truth for the lake"): the table declares its
partitions, so a batch's file moved from ``source=<s>/generation=<NNN>/batch=<id>/part-00000.parquet`` to the
hive folder ``source=<s>/generation=<N>/batch-<id>.parquet``. Only the files' places changed: hashed under their
old names, the new files give the old digest (0b98e17f...) exactly, and the build's rows and fingerprint are
unchanged.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq

from toolkit.datasets.build import build_dataset
from toolkit.datasets.config import BuildConfig
from toolkit.game.config import SimulateConfig
from toolkit.game.simulate import simulate
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout

GOLDEN = {
    "fingerprint": "76fc6fce69e17e26",
    "lake": "a74437db91394e3b3ed6a9c90d39718012e142ecf7c59ab3a7b7036341fb1c4e",
    "build": "5dee2950ce0787e3df763cec7b5f98064c32d65402a2f40a53b39d4f7f9152e0",
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
