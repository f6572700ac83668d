"""A run folder's files carry their format version: a run an older Distill started resumes, one a newer Distill
started is refused naming the file, its version and the versions read.

``tests/data/formats/run-config-v1-state-v3`` is a run as Distill wrote it before its ``config.json`` carried a
format version (what ``run_loop`` writes before its first step: a run killed right after it started);
``generations-v1`` the generation records of a finished tiny run before each line carried one. Such fixtures stay
here for good: a later change of a format must migrate them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.factories import SMALL_SHARDS_BACKEND, tiny
from toolkit.cli.main import app
from toolkit.errors import ConfigError
from toolkit.layout import GENERATION_RECORD_FORMAT_VERSION, RUN_CONFIG_FORMAT_VERSION, Layout
from toolkit.loop.run import resume_loop
from toolkit.loop.state import RunFolder

FORMATS = Path(__file__).parents[1] / "data" / "formats"


def _planted(tmp_path: Path, fixture: str) -> Layout:
    layout = Layout.at(tmp_path / "home")
    shutil.copytree(FORMATS / fixture, layout.runs / "tiny")
    return layout


def test_a_run_an_older_distill_started_resumes_and_finishes(tmp_path: Path) -> None:
    layout = _planted(tmp_path, "run-config-v1-state-v3")
    assert "format_version" not in json.loads((layout.runs / "tiny" / "config.json").read_text())
    # the fixture's run was started with the tiny loop's shards of then: 16 games
    assert RunFolder(layout, "tiny").config() == tiny(backend=SMALL_SHARDS_BACKEND).recorded(layout)
    state = resume_loop(layout, "tiny")
    assert state.status == "finished", state.message
    assert [r["generation"] for r in RunFolder(layout, "tiny").records()] == [0, 1]


def test_a_run_records_its_config_with_its_format_version_first(loop_home: Layout) -> None:
    written = json.loads((loop_home.runs / "tiny" / "config.json").read_text())
    assert next(iter(written)) == "format_version" and written["format_version"] == RUN_CONFIG_FORMAT_VERSION
    assert RunFolder(loop_home, "tiny").own_config() == tiny().recorded(loop_home)


def test_a_config_from_a_newer_distill_is_refused_naming_file_version_and_range(tmp_path: Path) -> None:
    layout = _planted(tmp_path, "run-config-v1-state-v3")
    path = layout.runs / "tiny" / "config.json"
    path.write_text(json.dumps({"format_version": RUN_CONFIG_FORMAT_VERSION + 1, **json.loads(path.read_text())}))
    message = f"{path} is a loop config of format version {RUN_CONFIG_FORMAT_VERSION + 1}; this Distill reads "
    message += f"versions 1 to {RUN_CONFIG_FORMAT_VERSION}"
    with pytest.raises(ConfigError) as refused:
        resume_loop(layout, "tiny")
    assert refused.value.message == message and "the Distill version that wrote it" in (refused.value.hint or "")
    result = CliRunner().invoke(app, ["--home", str(layout.home), "loop", "resume", "--name", "tiny"])
    assert result.exit_code == 2 and "format version" in result.output and "config.json" in result.output
    assert not (layout.runs / "tiny" / "gen-000").exists()  # refused before any step ran


def test_a_config_with_a_field_this_distill_does_not_know_is_refused_by_name(tmp_path: Path) -> None:
    layout = _planted(tmp_path, "run-config-v1-state-v3")
    path = layout.runs / "tiny" / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "student_epochs": 3}))  # a renamed field, say
    with pytest.raises(ConfigError, match="student_epochs"):
        RunFolder(layout, "tiny").config()


def test_generation_records_an_older_distill_wrote_are_read_as_todays(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    (layout.runs / "tiny").mkdir(parents=True)
    shutil.copy(FORMATS / "generations-v1" / "generations.jsonl", layout.runs / "tiny" / "generations.jsonl")
    written = [json.loads(line) for line in (FORMATS / "generations-v1" / "generations.jsonl").read_text().splitlines()]
    assert all("format_version" not in line for line in written)
    records = RunFolder(layout, "tiny").records()
    assert [r["format_version"] for r in records] == [GENERATION_RECORD_FORMAT_VERSION] * 2
    assert [{k: v for k, v in r.items() if k != "format_version"} for r in records] == written


def test_the_loop_writes_each_generation_record_with_its_format_version(loop_home: Layout) -> None:
    lines = (loop_home.runs / "tiny" / "generations.jsonl").read_text().splitlines()
    assert lines and [json.loads(line)["format_version"] for line in lines] == [GENERATION_RECORD_FORMAT_VERSION] * len(
        lines
    )


def test_a_generation_record_from_a_newer_distill_is_refused_naming_its_line_version_and_range(
    tmp_path: Path,
) -> None:
    layout = Layout.at(tmp_path / "home")
    path = layout.runs / "tiny" / "generations.jsonl"
    path.parent.mkdir(parents=True)
    first, second = (FORMATS / "generations-v1" / "generations.jsonl").read_text().splitlines()
    newer = json.dumps({"format_version": GENERATION_RECORD_FORMAT_VERSION + 1, **json.loads(second)})
    path.write_text(f"{first}\n{newer}\n")
    with pytest.raises(ConfigError) as refused:
        RunFolder(layout, "tiny").records()
    assert refused.value.message == (
        f"{path}:2 is a generation record of format version {GENERATION_RECORD_FORMAT_VERSION + 1}; this Distill "
        f"reads versions 1 to {GENERATION_RECORD_FORMAT_VERSION}"
    )
