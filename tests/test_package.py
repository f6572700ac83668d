"""Distill installed as a package (a wheel, not this checkout) finds everything it ships: the default suites,
the card-role table, the dashboard's templates and vendored scripts; `distill validate` and `distill check` run."""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import make_snapshot

ROOT = Path(__file__).parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding the built wheel, and nothing of this checkout; the dependencies come
    from this environment's site-packages (appended after the wheel's, so they can never shadow it)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"  # a copy: setuptools leaves build/ in the tree it builds, and reuses it next time
    shutil.copytree(ROOT / "toolkit", source / "toolkit", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(work / "dist"),
            str(source),
        ],
        check=True,
        cwd=work,
    )
    [wheel] = (work / "dist").glob("distill-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)
    python = work / "venv" / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)], check=True)
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "zz-distill-test-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return work


def distill(installed: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [installed / "venv" / "bin" / "distill", *args], capture_output=True, text=True, cwd=installed, timeout=300
    )


def test_the_wheel_runs_validate_and_check_with_its_own_files(installed: Path) -> None:
    python = installed / "venv" / "bin" / "python"
    where = subprocess.run(
        [python, "-c", "import toolkit, toolkit.checks.suite as s; print(toolkit.__file__); print(s.SUITES_DIR)"],
        capture_output=True,
        text=True,
        cwd=installed,
        check=True,
    )
    package, suites = where.stdout.split()
    assert package.startswith(str(installed / "venv")) and suites.startswith(str(installed / "venv"))
    log = installed / "log.jsonl"
    log.write_text(
        "\n".join(json.dumps(make_snapshot(game_id=f"g{i // 4}", seat=i % 4, decision_index=i)) for i in range(16))
        + "\n"
    )
    valid = distill(installed, "validate", str(log))
    assert valid.returncode == 0, valid.stderr
    home = str(installed / "home")
    assert distill(installed, "--home", home, "ingest", str(log)).returncode == 0
    checked = distill(installed, "--home", home, "check", "lake", "--json")
    assert checked.returncode in (0, 1), checked.stderr  # the gate ran (a verdict), not a missing suite (2)
    report = json.loads(checked.stdout)
    assert report["suite"]["path"].startswith(str(installed / "venv")) and report["results"]
    served = subprocess.run(
        [
            python,
            "-c",
            "from toolkit.serve.app import STATIC; from toolkit.serve.pages import "
            "templates; print(STATIC); print(templates.env.loader.searchpath[0])",
        ],
        capture_output=True,
        text=True,
        cwd=installed,
        check=True,
    ).stdout.split()
    for folder, expected in zip(served, ("vendor/chart.js/chart.umd.min.js", "run.html"), strict=True):
        assert folder.startswith(str(installed / "venv")) and (Path(folder) / expected).is_file()
    assert (Path(served[0]) / "vendor/chart.js/LICENSE.md").is_file()
