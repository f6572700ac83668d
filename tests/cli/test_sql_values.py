"""``distill sql`` prints every value DuckDB can return exactly, as a table, as CSV and as JSON.

One case per kind of value: every numeric type at its bounds, DECIMAL,
BIGNUM, the floats JSON has no number for, infinite, BC and extreme dates
and timestamps of every precision, times with their offsets, intervals,
bytes, UUID, BIT, ENUM, JSON, VARIANT, GEOMETRY, text that a terminal or
a CSV reader could misread, and nested LIST / STRUCT / MAP / UNION / ARRAY
values holding such values. A value is printed as DuckDB prints it (its
cast to text); JSON is the JSON DuckDB writes for it, with NaN and the
infinities as the strings "NaN", "Infinity" and "-Infinity".
"""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from tests.factories import make_generation_record, make_snapshot
from toolkit.catalog.view_docs import VIEWS
from toolkit.cli.main import app
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout

UHUGEINT_2_127 = 170141183460469231731687303715884105728
UHUGEINT_MAX = 2**128 - 1
HUGEINT_MIN, HUGEINT_MAX = -(2**127), 2**127 - 1

# name -> (SQL, as DuckDB prints it, as JSON reads it (non-integer numbers as Decimal, to compare them exactly))
CASES: dict[str, tuple[str, str | None, Any]] = {
    "tinyint min": ("(-128)::TINYINT", "-128", -128),
    "tinyint max": ("127::TINYINT", "127", 127),
    "smallint min": ("(-32768)::SMALLINT", "-32768", -32768),
    "integer min": ("(-2147483648)::INTEGER", "-2147483648", -2147483648),
    "bigint min": ("(-9223372036854775808)::BIGINT", "-9223372036854775808", -(2**63)),
    "bigint max": ("9223372036854775807::BIGINT", "9223372036854775807", 2**63 - 1),
    "hugeint min": (f"({HUGEINT_MIN})::HUGEINT", str(HUGEINT_MIN), HUGEINT_MIN),
    "hugeint max": (f"{HUGEINT_MAX}::HUGEINT", str(HUGEINT_MAX), HUGEINT_MAX),
    "utinyint max": ("255::UTINYINT", "255", 255),
    "usmallint max": ("65535::USMALLINT", "65535", 65535),
    "uinteger max": ("4294967295::UINTEGER", "4294967295", 2**32 - 1),
    "ubigint max": ("18446744073709551615::UBIGINT", "18446744073709551615", 2**64 - 1),
    "uhugeint 2^127": ("1::UHUGEINT << 127", str(UHUGEINT_2_127), UHUGEINT_2_127),
    "uhugeint max": (f"{UHUGEINT_MAX}::UHUGEINT", str(UHUGEINT_MAX), UHUGEINT_MAX),
    "decimal 38 digits": ("(-99999999999999999999999999999999999999)::DECIMAL(38,0)", "-" + "9" * 38, -(10**38 - 1)),
    "decimal 38 with scale": (
        "(-9999999999999999999999999999.9999999999)::DECIMAL(38,10)",
        "-9999999999999999999999999999.9999999999",
        Decimal("-9999999999999999999999999999.9999999999"),
    ),
    "decimal small": ("0.001::DECIMAL(4,3)", "0.001", Decimal("0.001")),
    "bignum": ("('-' || repeat('9', 60))::BIGNUM", "-" + "9" * 60, -(10**60 - 1)),
    "float max": ("'-3.4028235e38'::FLOAT", "-3.4028235e+38", Decimal("-3.4028234663852886e38")),
    "float subnormal": ("1e-45::FLOAT", "1e-45", Decimal("1.401298464324817e-45")),
    "double max": ("1.7976931348623157e308::DOUBLE", "1.7976931348623157e+308", Decimal("1.7976931348623157e308")),
    "double min subnormal": ("5e-324::DOUBLE", "5e-324", Decimal("5e-324")),
    "double negative zero": ("'-0.0'::DOUBLE", "-0.0", Decimal("-0.0")),
    "double nan": ("'nan'::DOUBLE", "nan", "NaN"),
    "double infinity": ("'inf'::DOUBLE", "inf", "Infinity"),
    "float -infinity": ("'-inf'::FLOAT", "-inf", "-Infinity"),
    "date infinity": ("'infinity'::DATE", "infinity", "infinity"),
    "date -infinity": ("'-infinity'::DATE", "-infinity", "-infinity"),
    "date BC": ("'0044-03-15 (BC)'::DATE", "0044-03-15 (BC)", "0044-03-15 (BC)"),
    "date max": ("'5881580-07-10'::DATE", "5881580-07-10", "5881580-07-10"),
    "date min": ("'5877642-06-25 (BC)'::DATE", "5877642-06-25 (BC)", "5877642-06-25 (BC)"),
    "timestamp infinity": ("'infinity'::TIMESTAMP", "infinity", "infinity"),
    "timestamp BC": ("'0044-03-15 (BC) 12:00:00'::TIMESTAMP", "0044-03-15 (BC) 12:00:00", "0044-03-15 (BC) 12:00:00"),
    "timestamp max": (
        "'294247-01-10 04:00:54.775806'::TIMESTAMP",
        "294247-01-10 04:00:54.775806",
        "294247-01-10 04:00:54.775806",
    ),
    "timestamp min": (
        "'290309-12-22 (BC) 00:00:00'::TIMESTAMP",
        "290309-12-22 (BC) 00:00:00",
        "290309-12-22 (BC) 00:00:00",
    ),
    "timestamp_s -infinity": ("'-infinity'::TIMESTAMP_S", "-infinity", "-infinity"),
    "timestamp_ms infinity": ("'infinity'::TIMESTAMP_MS", "infinity", "infinity"),
    "timestamp_ns max": (
        "'2262-04-11 23:47:16.854775806'::TIMESTAMP_NS",
        "2262-04-11 23:47:16.854775806",
        "2262-04-11 23:47:16.854775806",
    ),
    "timestamp_ns infinity": ("'infinity'::TIMESTAMP_NS", "infinity", "infinity"),
    "timestamptz (in UTC)": (
        "'2024-01-01 12:00:00+05:30'::TIMESTAMPTZ",
        "2024-01-01 06:30:00+00",
        "2024-01-01 06:30:00+00",
    ),
    "timestamptz infinity": ("'infinity'::TIMESTAMPTZ", "infinity", "infinity"),
    "time 24:00": ("'24:00:00'::TIME", "24:00:00", "24:00:00"),
    "time_ns": ("'12:00:00.123456789'::TIME_NS", "12:00:00.123456789", "12:00:00.123456789"),
    "timetz offset": ("'12:34:56+05:30'::TIMETZ", "12:34:56+05:30", "12:34:56+05:30"),
    "timetz bounds": ("'24:00:00-15:59:59'::TIMETZ", "24:00:00-15:59:59", "24:00:00-15:59:59"),
    "interval": ("INTERVAL '1 month 2 days 3 hours'", "1 month 2 days 03:00:00", "1 month 2 days 03:00:00"),
    "interval mixed signs": (
        "INTERVAL '-1 month 40 days -1 microsecond'",
        "-1 month 40 days -00:00:00.000001",
        "-1 month 40 days -00:00:00.000001",
    ),
    "interval min months": ("to_months(-2147483648)", "-178956970 years -8 months", "-178956970 years -8 months"),
    "blob": (r"'\x00\xFF\x5Cok'::BLOB", r"\x00\xFF\x5Cok", r"\x00\xFF\x5Cok"),
    "uuid max": (
        "'ffffffff-ffff-ffff-ffff-ffffffffffff'::UUID",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
    ),
    "bit": ("'10101'::BIT", "10101", "10101"),
    "enum": ("CAST('ok' AS ENUM('sad', 'ok'))", "ok", "ok"),
    "json": ("""'{"a": [1, NaN]}'::JSON""", '{"a": [1, NaN]}', {"a": [1, "NaN"]}),
    "variant": ("123::VARIANT", "123", 123),
    "geometry": ("'POINT(1 2)'::GEOMETRY", "POINT (1 2)", "POINT (1 2)"),
    "boolean": ("true", "true", True),
    "null": ("NULL::INTEGER", None, None),
    "text a CSV reader could misread": ("""'x,"y"' || chr(10) || 'z'""", 'x,"y"\nz', 'x,"y"\nz'),
    "text with a terminal escape and markup": (
        "'[/bold]' || chr(27) || '[2J' || chr(0)",
        "[/bold]\x1b[2J\x00",
        "[/bold]\x1b[2J\x00",
    ),
    "text that reads as a float": ("'NaN'", "NaN", "NaN"),
    "list": ("['infinity'::DATE, NULL]", "[infinity, NULL]", ["infinity", None]),
    "list of floats": ("['nan'::DOUBLE, 'inf'::DOUBLE, 1.5]", "[nan, inf, 1.5]", ["NaN", "Infinity", Decimal("1.5")]),
    "struct": (
        "{'a': 'nan'::DOUBLE, 'b': 1::UHUGEINT << 127}",
        f"{{'a': nan, 'b': {UHUGEINT_2_127}}}",
        {"a": "NaN", "b": UHUGEINT_2_127},
    ),
    "map": ("MAP {'k': '-infinity'::TIMESTAMP}", "{k=-infinity}", {"k": "-infinity"}),
    "map of lists": ("MAP {1: [1::UHUGEINT << 127]}", f"{{1=[{UHUGEINT_2_127}]}}", {"1": [UHUGEINT_2_127]}),
    "union": (
        "union_value(t := '12:00:00+01:00'::TIMETZ)::UNION(t TIMETZ, i INT)",
        "12:00:00+01",
        {"t": "12:00:00+01"},
    ),
    "array": ("['-inf'::DOUBLE, 'nan'::DOUBLE]::DOUBLE[2]", "[-inf, nan]", ["-Infinity", "NaN"]),
    "nested": (
        "[{'i': INTERVAL 1 day, 'd': '0001-01-01 (BC)'::DATE}]",
        "[{'i': 1 day, 'd': '0001-01-01 (BC)'}]",
        [{"i": "1 day", "d": "0001-01-01 (BC)"}],
    ),
}
# how the table shows a value, where it differs from the text: control characters escaped, NULL named
TABLE = {
    "null": "NULL",
    "text a CSV reader could misread": 'x,"y"\\nz',
    "text with a terminal escape and markup": "[/bold]\\x1b[2J\\x00",
}
STATEMENT = "SELECT " + ", ".join(f'{sql} AS "{name}"' for name, (sql, _, _) in CASES.items())
runner = CliRunner()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lake of one decision, and a loop's generations."""
    root = tmp_path_factory.mktemp("sql-values")
    log = root / "a.jsonl"
    log.write_bytes(orjson.dumps(make_snapshot(game_id="g0", seat=0, decision_index=0)) + b"\n")
    layout = Layout.at(root / "home")
    ingest_paths([log], layout)
    (layout.runs / "demo").mkdir(parents=True)
    records = [make_generation_record(g) for g in (1, 0, 2)]
    (layout.runs / "demo" / "generations.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return layout.home


def sql(home: Path, *args: str) -> str:
    result = runner.invoke(app, ["--home", str(home), "sql", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_value_prints_exactly_in_csv(home: Path) -> None:
    header, row, *rest = list(csv.reader(io.StringIO(sql(home, "--csv", STATEMENT))))
    assert rest == [] and header == list(CASES)
    assert dict(zip(header, row, strict=True)) == {name: text or "" for name, (_, text, _) in CASES.items()}


def _no_bare_constants(word: str) -> Any:
    raise AssertionError(f"{word} is not JSON")


def test_every_value_prints_exactly_as_valid_json(home: Path) -> None:
    text = sql(home, "--json", STATEMENT)
    rows = json.loads(text, parse_float=Decimal, parse_constant=_no_bare_constants)
    assert rows == [{name: value for name, (_, _, value) in CASES.items()}]


def test_every_value_prints_exactly_as_a_table_and_nothing_reaches_the_terminal_raw(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "20000")  # one line for the header and one for the row
    lines = sql(home, STATEMENT).splitlines()
    header, row = (line for line in lines if line.startswith(("┃", "│")))
    names = [cell.strip() for cell in header.strip("┃").split("┃")]
    cells = [cell.strip() for cell in row.strip("│").split("│")]
    assert names == list(CASES)
    assert dict(zip(names, cells, strict=True)) == {name: TABLE.get(name, text) for name, (_, text, _) in CASES.items()}
    assert "\x1b" not in "".join(lines) and "\x00" not in "".join(lines)


def test_a_statement_with_no_rows_prints_its_columns_or_an_empty_list(home: Path) -> None:
    statement = "SELECT 'infinity'::DATE AS d WHERE false"
    assert "┃ d ┃" in sql(home, statement)
    assert sql(home, "--csv", statement) == "d\n"
    assert json.loads(sql(home, "--json", statement)) == []


def _visible(output: str) -> str:
    """The output's text without the table's borders and line breaks (what wraps is joined again)."""
    return re.sub(r"[\s│┃┏┓┗┛┡┩└┘┌┐━─╇┳┻┼╋┯┷]+", "", output)


def _column(output: str, index: int) -> str:
    """The text of the table's column ``index``, its cells' lines joined (as :func:`_visible`)."""
    return _visible("".join(line.strip("│").split("│")[index] for line in output.splitlines() if line[:1] == "│"))


def test_long_values_and_types_print_whole_in_a_narrow_terminal(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    long = "x" * 300 + "END"
    assert long in _visible(sql(home, f"SELECT 'a' AS a, '{long}' AS long"))
    gains = sql(home, "--csv", "SELECT student_gain FROM generations WHERE generation = 1").splitlines()[1]
    example = "SELECT generation, outcome, student_win_rate, holdout_accuracy, student_gain FROM generations"
    assert len(gains) > 80 and _visible(gains).strip('"') in _column(sql(home, example), 4)
    players = sql(home, "--csv", "SELECT column_type FROM (DESCRIBE decisions) WHERE column_name = 'players'")
    assert _visible(players.splitlines()[1]).strip('"') in _column(sql(home, "DESCRIBE decisions"), 1)


def test_too_many_columns_for_the_terminal_print_as_one_block_per_row(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    printed = sql(home, "SELECT " + ", ".join(f"{i} AS column_{i}" for i in range(12)) + " FROM range(2)")
    lines = printed.splitlines()
    assert "row 1" in lines[0] and any("row 2" in line for line in lines)
    assert [line.split() for line in lines[1:13]] == [[f"column_{i}", str(i)] for i in range(12)]


def test_schema_lists_the_views_and_describes_one(home: Path) -> None:
    listed = json.loads(sql(home, "--schema", "--json"))
    assert [view["name"] for view in listed] == list(VIEWS)
    assert all(view["description"] and view["columns"] for view in listed)
    one = json.loads(sql(home, "--schema", "generations", "--json"))
    assert one["order"] == "loop, generation"
    gain = next(c for c in one["columns"] if c["name"] == "student_gain")
    assert gain["type"].startswith("STRUCT(heuristic STRUCT(deals BIGINT") and "paired gain" in gain["description"]
    table = _visible(sql(home, "--schema"))
    assert all(name in table for name in VIEWS)
    types = _column(sql(home, "--schema", "generations"), 1)
    assert _visible(gain["type"]) in types and _visible(gain["description"]) in _column(
        sql(home, "--schema", "generations"), 2
    )
    assert "lineup[i]seati" in _column(sql(home, "--schema", "decisions"), 2)  # no markup read in descriptions
    refused = runner.invoke(app, ["--home", str(home), "sql", "--schema", "batch_log"])
    assert refused.exit_code == 2 and "no view is named 'batch_log'" in refused.output


def test_help_names_every_view() -> None:
    shown = runner.invoke(app, ["sql", "--help"], env={"COLUMNS": "200"}).output
    assert all(re.search(rf"^\W*{name} \(", shown, re.MULTILINE) for name in VIEWS), shown


ROOT = Path(__file__).resolve().parents[2]
MANUAL = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]  # the README and the documentation site


def test_the_manuals_sql_examples_run(home: Path) -> None:
    """Every ``distill sql`` line of the README's and the docs' shell examples (an --as-of version: the lake's
    last one)."""
    text = "".join(page.read_text(encoding="utf-8") for page in MANUAL if "reference" not in page.parts)
    blocks = re.findall(r"```bash\n(.*?)```", text, re.DOTALL)
    examples = [line for block in blocks for line in block.splitlines() if line.startswith("distill sql ")]
    assert len(examples) >= 4
    for example in examples:
        args = shlex.split(re.sub(r"--as-of \d+", "--as-of 1", example.split(" #")[0]))[2:]
        sql(home, *args)
