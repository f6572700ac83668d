"""The README is a manual a newcomer reads in one sitting, and what it shows works; the rest is the docs site."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from toolkit.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_a_manual_of_at_most_400_lines_with_its_sections() -> None:
    assert len(README.splitlines()) <= 400
    headings = re.findall(r"^## (.+)$", README, re.MULTILINE)
    assert headings == [
        "Two commands",
        "A first log",
        "A tour of the CLI",
        "Where each stage lives",
        "What a data root may contain",
        "A shared lake and a cluster",
        "Documentation",
    ]


def test_the_readmes_first_log_line_is_valid_and_ingests(tmp_path: Path) -> None:
    [line] = re.findall(r"```json\n(.*?)\n```", README, re.DOTALL)
    json.loads(line)  # one line of JSON, as a log holds it
    log = tmp_path / "first.jsonl"
    log.write_text(line + "\n", encoding="utf-8")
    home = ["--home", str(tmp_path / "home")]
    assert CliRunner().invoke(app, [*home, "validate", str(log)]).exit_code == 0
    assert CliRunner().invoke(app, [*home, "ingest", "--strict", str(log)]).exit_code == 0


def test_every_page_the_readme_links_exists_and_is_in_the_sites_navigation() -> None:
    linked = re.findall(r"\]\((docs/[^)#]+)\)", README)
    assert linked
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for target in linked:
        assert (ROOT / target).is_file(), target
        assert target.removeprefix("docs/") in nav, target
