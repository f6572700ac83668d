"""How a path is recorded under a data root and read back (Layout.stored / Layout.resolve)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import OutsideRootError
from toolkit.layout import Layout


def test_a_file_inside_the_root_is_recorded_relative_and_one_outside_absolute(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    inside = layout.runs / "demo" / "gen-000" / "card.json"
    assert layout.stored(inside) == "runs/demo/gen-000/card.json"
    assert layout.resolve(layout.stored(inside)) == inside
    assert layout.stored(tmp_path / "logs" / "forge.jsonl") == str(tmp_path / "logs" / "forge.jsonl")


def test_an_absolute_path_under_the_root_or_under_what_its_user_named_is_itself(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    users = tmp_path / "logs" / "forge.jsonl"
    users.parent.mkdir()
    users.write_text("{}\n")
    assert layout.resolve(users, outside=[users.parent]) == users
    with pytest.raises(OutsideRootError, match="leads outside the data root"):
        layout.resolve(users)  # a file outside that nobody named: a data root's file cannot lead there
    assert layout.resolve(layout.home / "runs" / "x.json") == layout.home / "runs" / "x.json"


def test_a_path_into_a_root_that_moved_names_the_same_place_in_this_one(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "new")
    card = layout.runs / "demo" / "gen-001" / "card.json"
    card.parent.mkdir(parents=True)
    card.write_text("{}")
    assert layout.resolve(tmp_path / "old" / "runs" / "demo" / "gen-001" / "card.json") == card
    # a deleted file of a folder still here (a loop's own log) is placed too, so lineage still reads
    assert layout.resolve(f"{tmp_path}/old/runs/demo/gen-001/gone.jsonl.zst") == card.with_name("gone.jsonl.zst")
    nowhere = tmp_path / "old" / "runs" / "other" / "card.json"
    with pytest.raises(OutsideRootError):  # no such place here: a path outside, refused
        layout.resolve(nowhere)
