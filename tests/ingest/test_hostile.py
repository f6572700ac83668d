"""Hostile input: no line can crash the process, ambiguous records are refused, and every line is accounted for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import DIALECT_CASES, encode
from tests.factories import make_snapshot
from toolkit.catalog import Catalog
from toolkit.ingest.ingest import ingest_paths
from toolkit.jsontext import MAX_NESTING, nesting_depth
from toolkit.layout import Layout

REPO = Path(__file__).resolve().parents[2]


def good(i: int) -> bytes:
    return encode(make_snapshot(game_id=f"g{i // 4}", seat=i % 4, decision_index=i))


def _deep(depth: int, kind: str) -> bytes:
    return b'{"x":' * depth + b"1" + b"}" * depth if kind == "object" else b"[" * depth + b"]" * depth


def crash_corpus() -> dict[str, bytes]:
    """Lines that crashed (or could crash) a parser, each between valid lines."""
    base = good(10_000)  # a decision no other line of the corpus has
    cases = {}
    for depth in (MAX_NESTING + 1, 10_000, 200_000):
        for kind in ("object", "array"):
            cases[f"unknown-field-{kind}-{depth}"] = base[:-1] + b',"zzz":' + _deep(depth, kind) + b"}"
            cases[f"known-field-{kind}-{depth}"] = base.replace(
                b'"raw_outcome":null', b'"raw_outcome":' + _deep(depth, kind)
            )
            cases[f"top-level-{kind}-{depth}"] = _deep(depth, kind)
    cases["brackets-in-strings"] = base.replace(
        b'"raw_outcome":null', b'"raw_outcome":"' + b"[{" * 30 + b'"'
    )  # > 64 openers
    return cases


def test_the_crash_corpus_never_kills_the_process_and_every_line_is_accounted_for(tmp_path: Path) -> None:
    corpus = crash_corpus()
    folder = tmp_path / "logs"
    folder.mkdir()
    for k, (name, line) in enumerate(corpus.items()):
        (folder / f"{name}.jsonl").write_bytes(good(4 * k) + b"\n" + line + b"\n" + good(4 * k + 1) + b"\n")
    code = (
        "import sys; from pathlib import Path; from toolkit.layout import Layout; "
        "from toolkit.ingest.ingest import ingest_paths; "
        "r = ingest_paths([Path(sys.argv[1])], Layout.at(sys.argv[2])); print(r.rows_valid, r.rows_rejected)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(folder), str(tmp_path / "home")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"the ingest process died ({run.returncode}): {run.stderr[-2000:]}"
    valid, rejected = map(int, run.stdout.split())
    assert rejected == len(corpus) - 1 and valid == 2 * len(corpus) + 1  # strings may hold any brackets
    with Catalog.open(Layout.at(tmp_path / "home")) as catalog:
        reasons = dict(catalog.con.execute("SELECT source_file, reason FROM rejects").fetchall())
    for name in corpus:
        reason = reasons.get(str(folder / f"{name}.jsonl"))
        if name == "brackets-in-strings":
            assert reason is None
        elif name.startswith(("unknown", "top-level")) or name.endswith(("10000", "200000")):
            assert reason is not None and "levels deep; the limit is 64" in reason, (name, reason)


def test_nesting_depth_ignores_brackets_inside_strings_and_escaped_quotes() -> None:
    assert nesting_depth(b'{"a":[1,{"b":[]}]}') == 4
    assert nesting_depth(b'{"a":"[[[[{{{{"}') == 1
    assert nesting_depth(b'{"a":"x\\"[[[[","b":[1]}') == 2  # an escaped quote does not end the string
    assert nesting_depth(b'{"a":"x\\\\","b":[[1]]}') == 3  # an escaped backslash, then the real closing quote


@pytest.mark.parametrize("dialect", ["canonical", "forge"])
def test_a_record_with_a_key_twice_is_rejected_naming_the_key(tmp_path: Path, dialect: str) -> None:
    if dialect == "canonical":
        lines = [
            good(0),
            good(1)[:-1] + b',"turn":99}',
            good(2).replace(b'"life":40', b'"life":40,"life":3', 1),
            good(3),
        ]
    else:
        source = (DIALECT_CASES / "forge_4seat.jsonl").read_bytes().splitlines()
        lines = [source[0], source[1][:-1] + b',"turn":99}', source[2]]
    path = tmp_path / f"{dialect}.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = ingest_paths([path], Layout.at(tmp_path / "home"))
    with Catalog.open(Layout.at(tmp_path / "home")) as catalog:
        rejects = catalog.con.execute("SELECT source_line, reason FROM rejects ORDER BY 1").fetchall()
    expected = [(2, "turn: key 'turn' appears twice in one object: the record is ambiguous")]
    if dialect == "canonical":
        expected.append((3, "life: key 'life' appears twice in one object: the record is ambiguous"))
    assert rejects == expected and result.rows_rejected == len(expected)


LINE_MUTATIONS = st.sampled_from(["cut", "insert", "swap", "duplicate-key", "deep", "bytes"])


def _mutate(line: bytes, how: str, data: st.DataObject) -> bytes:
    at = data.draw(st.integers(0, len(line) - 1))
    if how == "cut":
        return line[:at]
    if how == "insert":
        return (
            line[:at]
            + data.draw(st.sampled_from([b"{", b"[", b'"', b"\\", b",", b":", b"\x00", b"\xff", b"NaN"]))
            + line[at:]
        )
    if how == "swap":
        return line[:at] + data.draw(st.binary(min_size=1, max_size=3)).replace(b"\n", b" ") + line[at + 1 :]
    if how == "duplicate-key":
        return line[:-1] + b',"seat":' + data.draw(st.sampled_from([b"0", b"1", b'"x"'])) + b"}"
    if how == "deep":
        return (
            line[:-1]
            + b',"zzz":'
            + _deep(data.draw(st.integers(60, 3000)), data.draw(st.sampled_from(["object", "array"])))
            + b"}"
        )
    return data.draw(st.binary(max_size=40)).replace(b"\n", b" ")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=st.data())
def test_fuzz_every_line_lands_in_decisions_or_rejects_byte_for_byte(tmp_path_factory, data) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    lines = [good(i) for i in range(8)]
    for index in data.draw(st.lists(st.integers(0, 7), min_size=1, max_size=4, unique=True)):
        lines[index] = _mutate(lines[index], data.draw(LINE_MUTATIONS), data)
    path = folder / "fuzz.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    layout = Layout.at(folder / "home")
    result = ingest_paths([path], layout)
    blank = sum(not line.strip() for line in lines)
    assert result.rows_valid + result.rows_rejected + blank == len(lines)
    if not result.batches:
        return
    with Catalog.open(layout) as catalog:
        accepted = {row[0] for row in catalog.con.execute("SELECT source_line FROM decisions").fetchall()}
        rejected = dict(catalog.con.execute("SELECT source_line, raw FROM rejects").fetchall())
    assert not accepted & set(rejected)
    for number, line in enumerate(lines, start=1):
        if number in rejected:
            assert rejected[number] == line + b"\n"  # byte for byte
        elif line.strip():
            assert number in accepted


def test_a_line_with_a_hundred_thousand_unknown_keys_gets_a_bounded_reason(tmp_path: Path) -> None:
    from toolkit.ingest.rowpath import MAX_FIELD_CHARS, MAX_PROBLEMS, MORE_PROBLEMS

    many = good(1)[:-1] + b"".join(b',"k%d":0' % i for i in range(100_000)) + b"}"  # ~1 MB
    long_key = good(2)[:-1] + b',"' + b"k" * (1 << 20) + b'":0}'  # one unknown key of 1 MB
    path = tmp_path / "keys.jsonl"
    path.write_bytes(b"\n".join([good(0), many, long_key, good(3)]) + b"\n")
    result = ingest_paths([path], Layout.at(tmp_path / "home"))
    assert (result.rows_valid, result.rows_rejected) == (2, 2)
    assert result.files[0].report.reasons == {"extra_forbidden": 2}  # the count of the others is no reason
    with Catalog.open(Layout.at(tmp_path / "home")) as catalog:
        rows = catalog.con.execute("SELECT source_line, reason, problems FROM rejects ORDER BY 1").fetchall()
    (_, reason, problems), (_, long_reason, [long_problem]) = rows
    assert len(problems) == MAX_PROBLEMS + 1 and len(reason) < 4000
    assert problems[-1] == {"field": "", "code": MORE_PROBLEMS, "message": "99,984 more problems on this line"}
    assert len(long_problem["field"]) < MAX_FIELD_CHARS + 40 and len(long_reason) < 2000
