"""The benchmarks' verdicts and ``make bench``'s closing table (bench/_common.py, bench/summary.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import summary  # noqa: E402
from _common import VERDICTS_ENV, judged, ratio, verdict  # noqa: E402


def test_a_verdict_judges_lower_and_upper_bounds() -> None:
    assert verdict("rate", 300_000.0, 300_000.0, unit="decisions/s") == "PASS"
    assert verdict("rate", 299_999.0, 300_000.0, unit="decisions/s") == "FAIL"
    assert verdict("time ratio", 1.29, 1.0, at_most=True, unit="x") == "FAIL"
    assert verdict("time ratio", 0.97, 1.0, at_most=True, unit="x") == "PASS"


def test_verdicts_are_recorded_only_when_the_environment_names_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(VERDICTS_ENV, raising=False)
    verdict("not recorded", 1.0, 2.0)
    path = tmp_path / "out" / "verdicts.jsonl"
    monkeypatch.setenv(VERDICTS_ENV, str(path))
    verdict("ingest / orjson", 0.63, 1.0, unit="x", against="orjson line by line")
    judged("decisive play", False, "worst 28.0%", "< 10%")
    ratio("check / floor", 1.45, "one DuckDB pass")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["what"], r["measured"], r["target"], r["ok"]) for r in records] == [
        ("ingest / orjson", "0.63x", ">= 1.00x", False),
        ("decisive play", "worst 28.0%", "< 10%", False),
        ("check / floor", "1.45x", "-", None),
    ]
    assert summary.render(records)[-1] == "0 of 2 targets met"  # a ratio without a target is shown, not judged
    assert records[0]["against"] == "orjson line by line"


def test_the_summary_prints_one_row_per_target_and_counts_those_met(tmp_path: Path) -> None:
    path = tmp_path / "verdicts.jsonl"
    rows = [
        {"bench": "bench_game", "what": "batched core", "against": "", "measured": "310,000 decisions/s",
         "target": ">= 300,000 decisions/s", "ok": True},
        {"bench": "bench_build", "what": "build / COPY time", "against": "DuckDB COPY", "measured": "1.29x",
         "target": "<= 1.00x", "ok": False},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = subprocess.run(
        [sys.executable, str(BENCH / "summary.py"), str(path)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0].split() == ["bench", "figure", "against", "(same", "run)", "measured", "target"]
    assert "bench_game" in out[2] and out[2].endswith("PASS")
    assert "DuckDB COPY" in out[3] and "1.29x" in out[3] and out[3].endswith("FAIL")
    assert out[-1] == "1 of 2 targets met"
    assert summary.render([])[-1] == "0 of 0 targets met"


def test_the_summary_says_how_to_make_the_file_when_it_is_missing(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "summary.py"), str(tmp_path / "none.jsonl")], capture_output=True, text=True
    )
    assert proc.returncode == 1 and "make bench" in proc.stderr
