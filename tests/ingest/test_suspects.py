"""A dirty file's repeated faults are learned and looked for before each chunk is parsed; the verdicts never change."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.conftest import encode
from tests.factories import make_snapshot
from toolkit.ingest import fastpath
from toolkit.ingest import suspects as suspects_module
from toolkit.ingest.config import ReadOptions
from toolkit.ingest.parse import blank_lines
from toolkit.ingest.parts import FileReport
from toolkit.ingest.suspects import Suspects, find_suspects
from toolkit.ingest.validate import validate_file


def _line(i: int, fault: str | None = None) -> bytes:
    record = make_snapshot(game_id=f"g{i // 4}", seat=i % 4, decision_index=i)
    if fault == "text":
        record["turn"] = str(record["turn"])
    elif fault == "unknown":
        record["players"][1]["unexpected"] = 1
    elif fault == "nan":
        return encode(record).replace(b'"reward":0.0', b'"reward":NaN', 1)
    return encode(record)


def _dirty_file(tmp_path: Path, lines: int = 4000, every: int = 97) -> tuple[Path, set[int]]:
    bad = {n for n in range(1, lines + 1) if n % every == 0}
    rows = [_line(n, ("text", "unknown")[n % 2] if n in bad else None) for n in range(1, lines + 1)]
    path = tmp_path / "dirty.jsonl"
    path.write_bytes(b"".join(r + b"\n" for r in rows))
    return path, bad


def test_faults_are_learned_and_later_chunks_parse_in_one_go(tmp_path: Path, monkeypatch) -> None:
    path, bad = _dirty_file(tmp_path)
    parses: list[bool] = []
    real = fastpath._parse_block

    def counting(data, n, **kwargs):
        result = real(data, n, **kwargs)
        parses.append(isinstance(result, str))
        return result

    monkeypatch.setattr(fastpath, "_parse_block", counting)
    report = FileReport(path=str(path))
    parts = list(validate_file(path, ReadOptions(chunk_bytes=1 << 16, workers=1), report))
    rejected = {r.line for part in parts for r in part.rejects}
    assert rejected == bad and report.valid == 4000 - len(bad)
    chunks = len(parts) - 1  # the last part is the adapter's finish
    assert chunks > 20 and sum(parses) <= 4  # only the first chunks' parses failed: the rest were found beforehand


def test_a_pattern_found_on_many_lines_is_forgotten_not_obeyed() -> None:
    body = b"\n".join(b'{"turn":"x","a":1}' if i % 2 else b'{"turn":1}' for i in range(200))
    breaks = np.flatnonzero(np.frombuffer(body, np.uint8) == 10)
    marked, common = find_suspects(body, breaks, 200, [b'"turn":"', b'"zzz":'])
    assert common == [b'"turn":"'] and not marked.any()
    suspects = Suspects()
    suspects.learn(b'{"turn":"x"}', [("turn", "int_type")])
    suspects.learn(b'{"players":[{},{"unexpected":1}]}', [("players.1.unexpected", "extra_forbidden")])
    suspects.learn(b'{"reward":NaN}', [("", "invalid_json")])
    suspects.learn(b'{"turn":1,"life":1000}', [("players.0.life", "less_than_equal")])  # not a parse breaker
    assert suspects.snapshot() == (b'"turn":"', b'"unexpected":', b"NaN")
    suspects.forget([b'"turn":"'])
    assert suspects.snapshot() == (b'"unexpected":', b"NaN")


def test_the_patterns_are_found_exactly_where_they_occur(monkeypatch) -> None:
    """The vectorised search marks the same lines as a plain substring test, wherever a
    pattern falls (across the stretches it is searched in, or at the edges), and for any length."""
    rng = np.random.default_rng(11)
    alphabet = np.frombuffer(b'ab":{}NnaN\r xy\xc3\xa9', dtype=np.uint8)
    for stretch in (4, 12, 1 << 19):
        monkeypatch.setattr(suspects_module, "_STRETCH_BYTES", stretch)
        for _ in range(300):
            lines = [rng.choice(alphabet, rng.integers(0, 30)).tobytes() for _ in range(rng.integers(1, 40))]
            patterns = list(dict.fromkeys(rng.choice(alphabet, rng.integers(1, 10)).tobytes() for _ in range(3)))
            body = b"\n".join(lines)
            breaks = np.flatnonzero(np.frombuffer(body, dtype=np.uint8) == 10)
            marked, common = find_suspects(memoryview(body), breaks, len(lines), patterns)
            limit = max(32, int(0.02 * len(lines)))
            counts = {p: sum(p in line for line in lines) for p in patterns}
            assert common == [p for p in patterns if counts[p] > limit]
            expected = [any(p in line for p in patterns if p not in common) for line in lines]
            assert marked.tolist() == expected


def test_a_fault_that_parses_teaches_nothing(tmp_path: Path, monkeypatch) -> None:
    """NaN as a float parses (the column checks refuse it): it breaks no parse, so no chunk
    is searched for it; the verdicts are the same."""
    rows = [_line(n, "nan" if n % 97 == 0 else None) for n in range(1, 2001)]
    assert sum(b"NaN" in row for row in rows) == 20
    path = tmp_path / "nan.jsonl"
    path.write_bytes(b"".join(r + b"\n" for r in rows))
    searched: list[tuple[bytes, ...]] = []
    real = suspects_module.find_suspects

    def recording(body, breaks, n_lines, patterns):
        searched.append(tuple(patterns))
        return real(body, breaks, n_lines, patterns)

    monkeypatch.setattr("toolkit.ingest.parse.find_suspects", recording)
    report = FileReport(path=str(path))
    parts = list(validate_file(path, ReadOptions(chunk_bytes=1 << 16, workers=1), report))
    rejected = {r.line for part in parts for r in part.rejects}
    assert rejected == {n for n in range(1, 2001) if n % 97 == 0} and report.valid == 2000 - 20
    assert not searched


def test_a_line_blanked_to_spaces_gives_no_row_and_the_rest_parse_in_line_order() -> None:
    """Blanking a line in place stands for leaving it out: Arrow's reader skips a line of
    whitespace (should that change, the row count no longer matches and the block is split)."""
    lines = [_line(n) for n in range(1, 41)]
    body = bytearray(b"\n".join([lines[0], b"", *lines[1:], b"\r"]))
    breaks = np.flatnonzero(np.frombuffer(bytes(body), dtype=np.uint8) == 10)
    ids = np.arange(1, len(breaks) + 2, dtype=np.int64)
    blank = np.array([0, 1, 7, 8, 20, len(ids) - 1])
    blank_lines(body, breaks, blank)
    ids[blank] = fastpath.PLACEHOLDER_ID
    assert all(not line.strip() for i, line in enumerate(bytes(body).split(b"\n")) if i in set(blank.tolist()))
    parsed = fastpath._parse_block(bytes(body), int((ids != fastpath.PLACEHOLDER_ID).sum()))
    assert not isinstance(parsed, str)
    assert parsed["decision_index"].to_pylist() == [n for n in range(2, 41) if n not in (7, 8, 20)]  # line k: record k
    result = fastpath.validate_block(body, ids)
    assert sorted(result.ids.tolist()) == [n for n in ids.tolist() if n != fastpath.PLACEHOLDER_ID]


def test_a_blanked_line_is_still_quarantined_byte_for_byte(tmp_path: Path) -> None:
    """Lines set aside are blanked in the chunk's own buffer (or in a copy of the last line, read
    without a newline): what the per-row path judges and the quarantine keeps are the lines as
    they were."""
    rows = [_line(n, "unknown" if n % 50 == 7 or n == 1500 else None) for n in range(1, 1501)]
    rows[5] = b"  " + rows[5] + b"\r"  # padded, with a CR: blanked too, judged one by one
    path = tmp_path / "open.jsonl"
    path.write_bytes(b"\n".join(rows))  # the last line has no newline
    report = FileReport(path=str(path))
    parts = list(validate_file(path, ReadOptions(chunk_bytes=1 << 16, workers=1), report))
    rejects = {r.line: r.raw for part in parts for r in part.rejects}
    assert rejects == {
        n: rows[n - 1] + (b"" if n == 1500 else b"\n") for n in range(1, 1501) if n % 50 == 7 or n == 1500
    }
    accepted = sorted(int(n) for part in parts for n in part.lines)
    assert accepted == [n for n in range(1, 1501) if n not in rejects] and report.valid == len(accepted)
