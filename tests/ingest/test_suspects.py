"""A dirty file's repeated faults are learned and looked for before each chunk is parsed; the verdicts never change."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.conftest import encode
from tests.factories import make_snapshot
from toolkit.ingest import fastpath
from toolkit.ingest.config import ReadOptions
from toolkit.ingest.parts import FileReport
from toolkit.ingest.suspects import Suspects, find_suspects
from toolkit.ingest.validate import validate_file


def _line(i: int, fault: str | None = None) -> bytes:
    record = make_snapshot(game_id=f"g{i // 4}", seat=i % 4, decision_index=i)
    if fault == "text":
        record["turn"] = str(record["turn"])
    elif fault == "unknown":
        record["players"][1]["unexpected"] = 1
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
