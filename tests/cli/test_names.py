"""Names that become paths (builds, fingerprints, loop runs, ablations): every command that takes one refuses a
name that is a path, before it reads, writes or deletes anything, and nothing outside the data root changes.

A decoy build lies beside the data root, where ``../`` from ``builds/`` leads: a command that read it would echo
its manifest's marker.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolkit.cli.main import app
from toolkit.errors import NameRefusedError
from toolkit.layout import Layout, checked_fingerprint, checked_name

runner = CliRunner()
MARKER = "DECOY-MANIFEST-MARKER"
FINGERPRINT = "0123456789abcdef"

# Names that must never become a path; {decoy} is the decoy build's absolute folder.
HOSTILE = {
    "a climb out of builds/": "../../decoy",
    "a climb through a name": "mix/../../../decoy",
    "an absolute path": "{decoy}",
    "the parent": "..",
    "the folder itself": ".",
    "a NUL": "mix\x00x",
    "very long": "a" * 300,
    "terminal markup": "[bold]x[/bold]",
    "capitals": "Mix",
    "empty": "",
}
# Each command that takes a build, run or ablation name; {n} is the hostile name.
COMMANDS = {
    "datasets show": ["datasets", "show", "{n}"],
    "datasets show --fingerprint": ["datasets", "show", "mix", "--fingerprint", "{n}"],
    "datasets diff": ["datasets", "diff", "{n}", FINGERPRINT, FINGERPRINT],
    "datasets diff (a fingerprint)": ["datasets", "diff", "mix", "{n}", FINGERPRINT],
    "datasets rm": ["datasets", "rm", "{n}", FINGERPRINT],
    "datasets rm (a fingerprint)": ["datasets", "rm", "mix", "{n}"],
    "check dataset": ["check", "dataset", "{n}"],
    "check dataset --fingerprint": ["check", "dataset", "mix", "--fingerprint", "{n}"],
    "check labels": ["check", "labels", "{n}"],
    "export": ["export", "{n}", "--format", "minari"],
    "train bc --dataset": ["train", "bc", "--dataset", "{n}"],
    "ablate --build": ["ablate", "--build", "{n}", "--vary", "student.epochs=1,2"],
    "ablate --name": ["ablate", "--build", "mix", "--name", "{n}", "--vary", "student.epochs=1,2"],
    "build --name": ["build", "--name", "{n}"],
    "loop status --name": ["loop", "status", "--name", "{n}"],
    "loop resume --name": ["loop", "resume", "--name", "{n}"],
    "loop history --name": ["loop", "history", "--name", "{n}"],
}


def snapshot(folder: Path, leave_out: Path, also: Path | None = None) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``folder`` but ``leave_out`` (and ``also``): (size, modification time)."""
    found = {}
    for where, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if Path(where, d) not in (leave_out, also)]
        for name in [*dirs, *files]:
            stat = Path(where, name).lstat()
            found[str(Path(where, name).relative_to(folder))] = (stat.st_size, stat.st_mtime_ns)
    return found


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[tuple[Layout, Path]]:
    """A data root and, beside it, a decoy build (``LATEST`` and a manifest), and the folder watched around it."""
    layout = Layout.at(tmp_path / "home")
    layout.check(write=True)
    decoy = tmp_path / "decoy"
    (decoy / FINGERPRINT).mkdir(parents=True)
    (decoy / "LATEST").write_text(FINGERPRINT + "\n")
    (decoy / FINGERPRINT / "manifest.json").write_text('{"name": "%s", "format_version": 1}\n' % MARKER)
    (decoy / FINGERPRINT / "train").mkdir()
    before = snapshot(tmp_path, leave_out=layout.home)
    yield layout, decoy
    assert snapshot(tmp_path, leave_out=layout.home) == before, "a file outside the data root changed"


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
@pytest.mark.parametrize("name", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_name_that_is_a_path_is_refused_and_nothing_outside_the_root_is_touched(
    sandbox: tuple[Layout, Path], command: list[str], name: str
) -> None:
    layout, decoy = sandbox
    argv = ["--home", str(layout.home), *(part.replace("{n}", name.format(decoy=decoy)) for part in command)]
    result = runner.invoke(app, argv)
    output = result.stdout + result.stderr
    assert result.exit_code == 2, (result.exit_code, output, result.exception)
    assert ("not a" in output or "should match pattern" in output) and MARKER not in output, output
    assert "Traceback" not in output


@pytest.mark.parametrize("name", HOSTILE.values(), ids=HOSTILE.keys())
def test_one_validator_refuses_them_all(name: str) -> None:
    with pytest.raises(NameRefusedError, match="is not a dataset name"):
        checked_name(name.format(decoy="/tmp/decoy"), "dataset name")
    with pytest.raises(NameRefusedError, match="is not a build fingerprint"):
        checked_fingerprint(name.format(decoy="/tmp/decoy"))


@pytest.mark.parametrize("name", ["mix", "loop-demo", "a.b_c-9", "0" * 64])
def test_names_the_data_root_uses_are_names(name: str) -> None:
    assert checked_name(name, "dataset name") == name
    assert Layout.at("/data").build_dir(name, FINGERPRINT) == Path("/data/builds", name, FINGERPRINT)
