"""Builds in one data root: other names run side by side and equal their solo runs; the same name is refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.datasets.conftest import game_records
from toolkit.datasets.build import build_dataset, build_lock
from toolkit.datasets.config import BuildConfig
from toolkit.datasets.dataset import open_dataset
from toolkit.errors import BuildError
from toolkit.layout import Layout

REPO = Path(__file__).resolve().parents[2]


def _fill(lake) -> None:
    lake("a.jsonl", *[game_records(f"f{i}", "forge", per_seat=20) for i in range(150)])
    lake("b.jsonl", *[game_records(f"p{i}", "ppo", per_seat=20) for i in range(150)])


CONFIGS = {
    "one": {"weights": {"forge": 1.0, "ppo": 0.5}},
    "two": {"weight_mode": "share", "weights": {"forge": 0.4, "ppo": 0.6}},
}


def test_builds_of_different_names_run_side_by_side_and_equal_their_solo_runs(
    layout: Layout, lake, tmp_path: Path
) -> None:
    _fill(lake)
    code = (
        "import sys, json; from toolkit.layout import Layout; from toolkit.datasets.build import build_dataset; "
        "from toolkit.datasets.config import BuildConfig; "
        "info = build_dataset(Layout.at(sys.argv[1]), BuildConfig(name=sys.argv[2], rows_per_file=500, "
        "**json.loads(sys.argv[3]))); print(info.manifest.fingerprint)"
    )
    running = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(layout.home), name, json.dumps(CONFIGS[name])],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in CONFIGS
        for _ in range(2)
    ]  # each name twice: one builds, the other is refused or reuses
    outcomes = [(p.communicate(timeout=300), p.returncode) for p in running]
    for (out, err), code_ in outcomes:
        assert code_ == 0 or "is being written by another process" in err, err
    concurrent = {name: open_dataset(layout, name).manifest.fingerprint for name in CONFIGS}
    solo = Layout.at(tmp_path / "solo")  # the same lake, each name built alone
    shutil.copytree(layout.home, solo.home, ignore=shutil.ignore_patterns("builds"))
    for name in CONFIGS:
        alone = build_dataset(solo, BuildConfig(name=name, rows_per_file=500, **CONFIGS[name]))
        assert alone.manifest.fingerprint == concurrent[name]
    assert not any(layout.build_staging.rglob("*.parquet"))


def test_a_build_of_a_name_being_built_is_refused_and_others_are_untouched(layout: Layout, lake) -> None:
    _fill(lake)
    other = layout.build_staging / "other" / "0123456789ab"
    other.mkdir(parents=True)
    (other / "part.parquet").write_bytes(b"being written")
    with build_lock(layout, "other"):
        built = build_dataset(layout, BuildConfig(name="mine"))  # clears only its own name's staging
        assert (other / "part.parquet").exists()
        with pytest.raises(BuildError, match="being written by another process"):
            build_dataset(layout, BuildConfig(name="other"))
    assert built.manifest.name == "mine"
    again = build_dataset(layout, BuildConfig(name="other"))  # the lock is free again: it builds
    assert again.manifest.name == "other" and not (layout.build_staging / "other").exists()
