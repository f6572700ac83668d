"""What a start request may ask: files of the data root only, game jobs on this machine only, and no more loops
at once than the server allows.

The path fields are found by walking LoopConfig's annotations, so a path
field added later is tested here without a change.
"""

from __future__ import annotations

import contextlib
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.serve.conftest import client_for, live_config
from toolkit.jobs.backends import free_cores
from toolkit.layout import Layout
from toolkit.loop.config import LoopConfig
from toolkit.loop.state import RunFolder
from toolkit.serve import control
from toolkit.serve.admission import REFUSED_SECTIONS, LoopLimitError, LoopSlots, running_loops
from toolkit.storage import exclusive_lock

Where = tuple[str, ...]


def path_fields(model: type[BaseModel], where: Where = ()) -> Iterator[tuple[Where, bool]]:
    """Every field of ``model`` and its nested models that holds paths: (its keys, whether it holds a list)."""
    for name, info in model.model_fields.items():
        yield from _paths_in(info.annotation, (*where, name), in_list=False)


def _paths_in(annotation: Any, where: Where, in_list: bool) -> Iterator[tuple[Where, bool]]:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Path:
        yield where, in_list
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield from path_fields(annotation, where)
    elif origin in (list, tuple, set, frozenset):
        for arg in args:
            yield from _paths_in(arg, where, in_list=True)
    elif origin in (typing.Union, types.UnionType):
        for arg in args:
            yield from _paths_in(arg, where, in_list)
    elif origin is dict and args:
        yield from ((w, True) for w, _ in _paths_in(args[1], where, in_list))  # a value per key: given as a list


# A section a start may not hold at all is refused whole (below), not walked for its paths.
PATH_FIELDS = sorted(f for f in set(path_fields(LoopConfig)) if f[0][0] not in REFUSED_SECTIONS)


def config_with(where: Where, as_list: bool, value: str) -> dict[str, Any]:
    """LoopConfig fields (as a request sends them) setting the field at ``where`` to ``value``."""
    fields: dict[str, Any] = {}
    node = fields
    for key in where[:-1]:
        node = node.setdefault(key, {})
    node[where[-1]] = [value] if as_list else value
    return fields


def shown(where: Where, as_list: bool) -> str:
    return ".".join(where) + (".0" if as_list else "")


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Layout:
    """A data root with a file, a folder and symlinks in it, a secret beside it, and the server's working folder
    holding a secret of the same name as a file the root lacks."""
    layout = Layout.at(tmp_path / "home")
    layout.check(write=True)
    (layout.home / "inside.jsonl").write_text("{}\n")
    (layout.home / "logs").mkdir()
    (tmp_path / "secret.txt").write_text("the server's secret\n")
    (layout.home / "out.jsonl").symlink_to(tmp_path / "secret.txt")
    (layout.home / "in.jsonl").symlink_to(layout.home / "inside.jsonl")
    (layout.home / "outdir").symlink_to(tmp_path, target_is_directory=True)
    monkeypatch.chdir(tmp_path)  # where a path the server resolved against its own folder would be read
    return layout


def test_the_walk_finds_the_path_fields_it_must() -> None:
    assert {(("bootstrap", "logs"), True), (("data_gate_suite",), False)} <= set(PATH_FIELDS)


REFUSED = {
    "the issue's example: a name that is the server's file, not the root's": ("secret.txt", "missing"),
    "a climb out of the root": ("../secret.txt", "outside the data root"),
    "a climb through a folder": ("logs/../../secret.txt", "outside the data root"),
    "an absolute path elsewhere": ("{tmp}/secret.txt", "outside the data root"),
    "a system file": ("/etc/passwd", "outside the data root"),
    "a symlink in the root to a file outside": ("out.jsonl", "outside the data root"),
    "a file under a symlinked folder pointing outside": ("outdir/secret.txt", "outside the data root"),
    "a folder": ("logs", "a folder"),
    "the root itself": (".", "a folder"),
    "a missing file": ("nothing.jsonl", "missing"),
    "a home folder that is not expanded": ("~/secret.txt", "missing"),
}


@pytest.mark.parametrize(("where", "as_list"), PATH_FIELDS, ids=[shown(*f) for f in PATH_FIELDS])
@pytest.mark.parametrize(("value", "why"), REFUSED.values(), ids=REFUSED.keys())
def test_a_start_naming_a_file_outside_the_data_root_is_refused_naming_the_field(
    root: Layout, where: Where, as_list: bool, value: str, why: str
) -> None:
    value = value.format(tmp=root.home.parent)
    client = client_for(root)
    answer = client.post("/api/distill/start", json={"name": "leak", "config": config_with(where, as_list, value)})
    assert answer.status_code == 422, answer.text
    assert f"{shown(where, as_list)}: " in answer.json()["detail"] and why in answer.json()["detail"]
    assert "under the data root" in answer.json()["hint"]
    assert not (root.runs / "leak").exists()


ADMITTED = {
    "a relative name": "inside.jsonl",
    "a climb that stays inside": "logs/../inside.jsonl",
    "an absolute path inside": "{home}/inside.jsonl",
    "a symlink inside to a file inside": "in.jsonl",
}


@pytest.mark.parametrize(("where", "as_list"), PATH_FIELDS, ids=[shown(*f) for f in PATH_FIELDS])
@pytest.mark.parametrize("value", ADMITTED.values(), ids=ADMITTED.keys())
def test_a_file_of_the_data_root_reaches_the_loop_resolved_once(
    root: Layout, where: Where, as_list: bool, value: str
) -> None:
    fields = config_with(where, as_list, value.format(home=root.home))
    config = control.loop_config(root, control.StartRequest(name="ok", config=fields))
    found = config
    for key in where:
        found = getattr(found, key)
    assert found == ([root.home / "inside.jsonl"] if as_list else root.home / "inside.jsonl")


def test_every_refused_field_is_named_in_one_answer(root: Layout) -> None:
    fields = {"bootstrap": {"logs": ["inside.jsonl", "../secret.txt", "logs"]}, "data_gate_suite": "/etc/passwd"}
    detail = client_for(root).post("/api/distill/start", json={"name": "many", "config": fields}).json()["detail"]
    assert "bootstrap.logs.1: " in detail and "bootstrap.logs.2: " in detail and "data_gate_suite: " in detail
    assert "bootstrap.logs.0" not in detail


@pytest.mark.parametrize(
    ("backend", "field"),
    [
        ({"address": "10.0.0.1:6379"}, "backend.address"),
        ({"kind": "ray", "address": "ray://evil.example:10001"}, "backend.address"),
        ({"kind": "ray"}, "backend.kind"),
        ({"kind": "pool", "workers": 4096}, "backend.workers"),
        ({"workers": free_cores() + 1}, "backend.workers"),
    ],
)
def test_a_start_runs_its_games_on_this_machine_with_at_most_its_cores(
    root: Layout, backend: dict[str, Any], field: str
) -> None:
    answer = client_for(root).post("/api/distill/start", json={"name": "far", "config": {"backend": backend}})
    assert answer.status_code == 422 and f"{field}: " in answer.json()["detail"], answer.text
    assert not (root.runs / "far").exists()


def test_a_start_naming_an_engine_is_refused_and_runs_nothing(root: Layout) -> None:
    marker = root.home.parent / "ran"
    engine = {"command": ["sh", "-c", f"touch {marker}"], "log_dir": "logs"}
    answer = client_for(root).post("/api/distill/start", json={"name": "cmd", "config": {"engine": engine}})
    assert answer.status_code == 422, answer.text
    assert "engine: the dashboard starts no engine" in answer.json()["detail"]
    assert "distill loop run --config" in answer.json()["hint"]
    assert not marker.exists() and not (root.runs / "cmd").exists()


@pytest.mark.parametrize("backend", [{}, {"kind": "inprocess"}, {"kind": "pool", "workers": free_cores()}])
def test_a_local_back_end_is_admitted(root: Layout, backend: dict[str, Any]) -> None:
    config = control.loop_config(root, control.StartRequest(name="near", config={"backend": backend}))
    assert config.backend.address is None and config.backend.kind in ("auto", "inprocess", "pool")


@contextlib.contextmanager
def running(layout: Layout, *names: str) -> Iterator[None]:
    """Runs held as a running loop holds them (their run lock), by this process."""
    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(exclusive_lock(RunFolder(layout, name).lock_path))
        yield


def test_past_its_bound_of_loops_a_start_is_answered_429_and_nothing_starts(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    client = client_for(layout, max_loops=2)
    with running(layout, "one", "two"):
        assert running_loops(layout) == {"one", "two"}
        answer = client.post("/api/distill/start", json={"name": "three", "config": live_config()})
        assert answer.status_code == 429, answer.text
        assert answer.headers["retry-after"].isdigit() and "--max-loops" in answer.json()["hint"]
        assert "2 loops run on this data root" in answer.json()["detail"]
        page = client.post("/start", data={"name": "three", "config": ""})
        assert page.status_code == 429 and "as many as this server starts at once" in page.text
        assert not (layout.runs / "three").exists()
    assert running_loops(layout) == set()  # a loop that ended frees its slot


def test_the_bound_counts_the_loops_being_started_once_each() -> None:
    layout = Layout.at("/nonexistent-distill-home")
    slots = LoopSlots(limit=2)
    with slots.claim(layout, "a"), slots.claim(layout, "a"):  # a name twice is one loop (one start will fail)
        with slots.claim(layout, "b"):
            with pytest.raises(LoopLimitError), slots.claim(layout, "c"):
                pass
            with slots.claim(layout, "b"):  # its own start again: refused later as existing, not as one too many
                pass
    with slots.claim(layout, "c"), slots.claim(layout, "d"):
        pass
