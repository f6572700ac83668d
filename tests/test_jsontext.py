"""Distill's own versioned files are read through one strict JSON reader: no nesting past a limit, no key twice,
and every problem one error naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from toolkit.errors import DistillError
from toolkit.jsontext import MAX_NESTING, JSONShapeError, loads_strict, nesting_depth
from toolkit.storage import read_versioned


def test_text_nested_past_the_limit_is_refused_before_parsing_at_any_depth() -> None:
    for depth in (MAX_NESTING + 1, 1_000, 1_000_000):
        with pytest.raises(JSONShapeError, match=f"nested {depth} levels deep"):
            loads_strict("[" * depth + "]" * depth)
    assert loads_strict("[" * MAX_NESTING + "]" * MAX_NESTING) is not None


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"s": "[{" * 500 + '\\"' + "]}" * 500})
    assert nesting_depth(text.encode()) == 1 and loads_strict(text)["s"].startswith("[{")


@pytest.mark.parametrize("text", ['{"a": 1, "a": 2}', '{"x": [{"b": 1, "c": 2, "b": 1}]}', '{"k": {}, "k": {}}'])
def test_a_key_twice_in_any_object_is_refused_naming_it(text: str) -> None:
    with pytest.raises(JSONShapeError, match="appears twice"):
        loads_strict(text)


def test_ordinary_json_reads_as_json_does() -> None:
    text = '{"a": [1, 2.5, "x", null, true], "b": {"c": {}}, "NaN": NaN}'
    assert repr(loads_strict(text)) == repr(json.loads(text))


class _Thing(BaseModel):
    format_version: int
    n: int


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[" * 100_000 + "]" * 100_000, "values nested 100000 levels deep"),
        ('{"format_version": 1, "n": 1, "n": 2}', "key 'n' appears twice"),
        ("{nope", "not JSON"),
        ("[1]", "a JSON object is expected"),
        ('{"n": 1}', "format_version: missing"),
        ('{"format_version": true, "n": 1}', "format_version: an integer is expected"),
        ('{"format_version": 1, "n": "many"}', "n: Input should be a valid integer"),
    ],
)
def test_every_problem_of_a_versioned_file_is_one_error_naming_the_file(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "thing.json"
    path.write_text(text)
    with pytest.raises(DistillError, match=f"is not a valid thing: {reason}") as refused:
        read_versioned(path, _Thing, 1, what="thing", error=DistillError, hint="write it again")
    assert str(path) in refused.value.message and refused.value.hint == "write it again"


def test_another_format_version_names_it(tmp_path: Path) -> None:
    path = tmp_path / "thing.json"
    path.write_text('{"format_version": 2, "n": 1}')
    with pytest.raises(DistillError, match="of format version 2; this Distill reads version 1"):
        read_versioned(path, _Thing, 1, what="thing", error=DistillError, hint="write it again")
