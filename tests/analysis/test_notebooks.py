"""The analysis notebooks run headless as scripts on a real loop's data root, and stop clearly on an empty one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.analysis.report import report_path
from toolkit.layout import Layout

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

# notebook, its --name on the tiny loop's data root, headings its report must hold
CASES = [
    (
        "lake",
        None,
        [
            "Rows and games by source and generation",
            "Label sources",
            "Quarantined lines by reason",
            "Files and batches (lineage)",
        ],
    ),
    (
        "dataset",
        "loop-tiny",
        [
            "composition",
            "Filters: rows and games left after each step",
            "Sample weights",
            "The fixed holdout, build after build",
            "Actions per source and split",
            "Features: train against holdout",
            "Drift against the previous build",
        ],
    ),
    (
        "loop",
        "tiny",
        [
            "Win rate against three",
            "Gates per generation",
            "Data composition per generation",
            "Ratings over generations",
            "Imitation accuracy against playing strength",
        ],
    ),
]


def run_notebook(name: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python notebooks/<name>.py -- --home HOME ARGS`` as a user runs it (a cell error exits non-zero)."""
    return subprocess.run(
        [sys.executable, str(NOTEBOOKS / f"{name}.py"), "--", "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=NOTEBOOKS.parent,
    )


@pytest.mark.parametrize(("notebook", "name", "headings"), CASES, ids=[c[0] for c in CASES])
def test_each_notebook_runs_as_a_script_and_writes_an_offline_report(
    loop_home: Layout, notebook, name, headings
) -> None:
    args = ["--report"] + (["--name", name] if name else [])
    done = run_notebook(notebook, loop_home.home, *args)
    assert done.returncode == 0, done.stderr
    report = report_path(loop_home, notebook, name)
    assert str(report) in done.stdout
    page = report.read_text(encoding="utf-8")
    for heading in headings:
        assert heading in page, heading
    assert "<svg" in page  # the charts are drawn into the page ...
    assert "<script" not in page and "cdn" not in page.lower()  # ... and nothing is fetched to show them


@pytest.mark.parametrize(("notebook", "name"), [(c[0], c[1]) for c in CASES], ids=[c[0] for c in CASES])
def test_on_an_empty_data_root_a_notebook_stops_with_a_message_not_a_traceback(tmp_path: Path, notebook, name) -> None:
    done = run_notebook(notebook, tmp_path / "empty", *(["--name", name] if name else []))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("distill: ")
    assert "hint: " in done.stderr


def test_a_notebook_run_on_a_dataset_that_does_not_exist_names_the_ones_that_do(loop_home: Layout) -> None:
    done = run_notebook("dataset", loop_home.home, "--name", "nope")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "nope" in done.stderr and "loop-tiny" in done.stderr


@pytest.mark.parametrize("notebook", [c[0] for c in CASES])
def test_a_notebook_answers_help_with_its_usage_without_reading_the_default_data_root(
    tmp_path: Path, notebook: str
) -> None:
    done = subprocess.run(
        [sys.executable, str(NOTEBOOKS / f"{notebook}.py"), "--", "--help"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,  # no ./datasets here: the default root does not exist
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: python {NOTEBOOKS / notebook}.py -- [--home DIR]")
    assert "--report" in done.stdout and "--help" in done.stdout
    assert ("--name NAME" in done.stdout) == (notebook != "lake")
    assert not (tmp_path / "datasets").exists()


def test_a_notebook_refuses_an_option_it_does_not_take_with_its_usage(tmp_path: Path) -> None:
    done = run_notebook("lake", tmp_path, "--nmae", "demo")
    assert done.returncode == 2
    assert done.stderr.startswith("distill: unknown option --nmae") and "usage: python" in done.stderr
