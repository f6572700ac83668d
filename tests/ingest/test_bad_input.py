"""Bad input gets a precise error (file, line, field, reason) and nothing is lost."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import zstandard

from tests.conftest import encode
from tests.factories import make_snapshot
from toolkit.errors import UsageError
from toolkit.ingest.dry_run import validate_paths


def good(i: int, **overrides: object) -> dict:
    record = make_snapshot(game_id=f"g{i // 4}", seat=i % 4, decision_index=i, winner_seat=i % 4)
    record.update(overrides)
    return record


def problems(path: Path) -> list[tuple[int, str, str]]:
    return [(p.line, p.field, p.code) for p in validate_paths([path]).problems]


def test_a_clean_file_is_valid(write_log) -> None:
    result = validate_paths([write_log("ok.jsonl", [good(i) for i in range(12)])])
    assert result.ok and result.reports[0].valid == 12 and result.reports[0].dialects == {"canonical": 12}


def test_invalid_json_names_its_line(write_log) -> None:
    path = write_log("bad.jsonl", [good(0), b'{"schema_version": 1,', good(1)])
    assert problems(path) == [(2, "", "invalid_json")]


def test_a_truncated_last_line_without_newline_is_reported_as_truncated(write_log) -> None:
    path = write_log("cut.jsonl", [good(0), encode(good(1))[:150]], final_newline=False)
    [problem] = validate_paths([path]).problems
    assert problem.line == 2 and "truncated" in problem.reason


def test_a_complete_last_line_without_newline_is_accepted(write_log) -> None:
    path = write_log("open.jsonl", [good(0), good(1)], final_newline=False)
    result = validate_paths([path])
    assert result.ok and result.reports[0].valid == 2 and result.reports[0].ends_without_newline


def test_blank_lines_are_counted_and_skipped(write_log) -> None:
    path = write_log("blank.jsonl", [good(0), b"", b"   ", good(1), b"\t"])
    result = validate_paths([path])
    assert result.ok and result.reports[0].blank == 3 and result.reports[0].valid == 2


def test_a_utf8_bom_is_tolerated_and_noted(write_log) -> None:
    path = write_log("bom.jsonl", [b"\xef\xbb\xbf" + encode(good(0)), good(1)])
    result = validate_paths([path])
    assert result.ok and result.reports[0].bom


def test_crlf_line_ends_are_accepted(write_log) -> None:
    path = write_log("crlf.jsonl", [good(0), good(1), b"{oops"], newline=b"\r\n")
    assert problems(path) == [(3, "", "invalid_json")]


def test_invalid_utf8_is_rejected_with_its_byte_offset(write_log) -> None:
    line = encode(good(1)).replace(b'"Elves"', b'"Elv\xff\xfes"')
    [problem] = validate_paths([write_log("utf.jsonl", [good(0), line])]).problems
    assert (problem.line, problem.code) == (2, "invalid_utf8") and "byte" in problem.reason


@pytest.mark.parametrize("token", [b"NaN", b"Infinity", b"-Infinity"])
def test_nan_and_infinity_are_rejected(write_log, token: bytes) -> None:
    line = encode(good(0)).replace(b'"reward":0.0', b'"reward":' + token)
    [problem] = validate_paths([write_log("nan.jsonl", [line])]).problems
    assert problem.code == "invalid_json" and "NaN" in problem.reason


def test_numbers_out_of_range_name_the_nested_field(write_log) -> None:
    record = good(0)
    record["players"][2]["life"] = -5000
    assert problems(write_log("range.jsonl", [record])) == [(1, "players.2.life", "greater_than_equal")]


def test_wrong_types_are_rejected_not_coerced(write_log) -> None:
    path = write_log("types.jsonl", [good(0, turn="3"), good(1, is_draw=1), good(2, reward="0.5")])
    assert problems(path) == [(1, "turn", "int_type"), (2, "is_draw", "bool_type"), (3, "reward", "float_type")]


def test_missing_and_unknown_fields_are_each_named(write_log) -> None:
    record = good(0, colour="blue")
    del record["turn"]
    assert sorted(problems(write_log("fields.jsonl", [record]))) == [
        (1, "colour", "extra_forbidden"),
        (1, "turn", "missing"),
    ]


def test_a_record_of_no_known_dialect_is_rejected(write_log) -> None:
    path = write_log("alien.jsonl", [good(0), {"hello": "world"}, [1, 2], b"null"])
    found = problems(path)
    assert [(line, code) for line, _, code in found] == [
        (2, "unknown_dialect"),
        (3, "not_an_object"),
        (4, "not_an_object"),
    ]


def test_an_illegal_chosen_action_is_rejected(write_log) -> None:
    path = write_log("illegal.jsonl", [good(0, legal_actions=[False] + [True] * 7)])
    assert problems(path) == [(1, "action.index", "inconsistent")]


def test_an_acting_seat_outside_the_pod_is_rejected(write_log) -> None:
    path = write_log("seat.jsonl", [good(0, seat=4, winner_seat=None, seat_won=None)])
    assert (1, "seat", "inconsistent") in problems(path)


def test_duplicates_within_a_file_point_at_the_first(write_log) -> None:
    path = write_log("dup.jsonl", [good(0), good(1), good(0)])
    [problem] = validate_paths([path]).problems
    assert (problem.line, problem.code) == (3, "duplicate") and f"{path}:1" in problem.reason


def test_duplicates_across_files_point_at_the_first_file(write_log) -> None:
    first = write_log("a.jsonl", [good(0), good(1)])
    second = write_log("b.jsonl", [good(2), good(1)])
    [problem] = validate_paths([first, second]).problems
    assert (problem.file, problem.line) == (str(second), 2) and f"{first}:2" in problem.reason


def test_a_ten_megabyte_line_is_rejected_without_harm_to_its_neighbours(write_log) -> None:
    huge = encode(good(1, deck_name="x" * (10 << 20)))
    result = validate_paths([write_log("huge.jsonl", [good(0), huge, good(2)])])
    assert [(p.line, p.code) for p in result.problems] == [(2, "line_too_long")]
    assert result.reports[0].valid == 2


def test_an_empty_file_is_a_problem(write_log) -> None:
    path = write_log("empty.jsonl", [])
    assert problems(path) == [(0, "", "empty_file")]


def test_a_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        validate_paths([tmp_path / "nope.jsonl"])


def test_a_folder_with_mixed_files_reads_only_logs_of_every_compression(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.jsonl").write_bytes(encode(good(0)) + b"\n")
    (folder / "b.jsonl.gz").write_bytes(gzip.compress(encode(good(1)) + b"\n"))
    (folder / "sub" / "c.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(encode(good(2)) + b"\n"))
    (folder / "notes.txt").write_text("not a log")
    (folder / "data.csv").write_text("a,b\n1,2\n")
    result = validate_paths([folder])
    assert result.ok and sorted(Path(r.path).name for r in result.reports) == ["a.jsonl", "b.jsonl.gz", "c.jsonl.zst"]


def test_every_problem_of_a_file_is_reported_not_just_the_first(write_log) -> None:
    lines = [good(i, turn="x") if i % 3 == 0 else good(i) for i in range(30)]
    assert len(validate_paths([write_log("many.jsonl", lines)]).problems) == 10
