"""What a user reads where the first session with Distill used to stall (issue "user path 2", its smaller items)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from toolkit.cli.main import app
from toolkit.layout import Layout
from toolkit.loop.state import LoopState, RunFolder, now

runner = CliRunner()


def test_a_required_option_left_out_is_named_as_the_flag_to_give(tmp_path: Path) -> None:
    result = runner.invoke(app, ["--home", str(tmp_path / "home"), "train", "bc"])
    assert result.exit_code == 2
    assert "--dataset is required" in result.stderr and "`dataset:`" in result.stderr
    assert "BCConfig" not in result.stderr and "Field required" not in result.stderr


def test_loop_status_prints_no_empty_fields(tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    run = RunFolder(layout, "idle")
    run.root.mkdir(parents=True)
    run.save(LoopState(name="idle", status="stopped", started_at=now(), updated_at=now()))
    result = runner.invoke(app, ["--home", str(layout.home), "loop", "status", "--name", "idle"])
    assert result.exit_code == 0 and "stopped" in result.stdout
    assert "None" not in result.stdout, result.stdout
    as_json = runner.invoke(app, ["--home", str(layout.home), "loop", "status", "--name", "idle", "--json"])
    assert '"message": null' in as_json.stdout  # the JSON keeps every field


def test_ingest_keeps_the_good_lines_and_exits_1_on_quarantined_ones_only_when_strict(tmp_path: Path) -> None:
    import json

    from tests.datasets.conftest import game_records

    log = tmp_path / "mixed.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in game_records("g-0")) + '{"not": "a decision"}\n')
    home = ["--home", str(tmp_path / "home")]
    assert runner.invoke(app, [*home, "ingest", str(log)]).exit_code == 0
    again = tmp_path / "again.jsonl"
    again.write_text("".join(json.dumps(r) + "\n" for r in game_records("g-1")) + '{"not": "a decision"}\n')
    strict = runner.invoke(app, [*home, "ingest", "--strict", str(again)])
    assert strict.exit_code == 1 and "1 lines quarantined" in strict.stdout.replace(",", ""), strict.stdout
    counted = runner.invoke(app, [*home, "sql", "SELECT count(*) AS n FROM batches", "--json"])
    assert json.loads(counted.stdout) == [{"n": 2}]  # the strict run ingested its good lines all the same


def test_the_lake_page_has_a_title_and_keeps_batch_ids_in_quarantine_reasons(tmp_path: Path) -> None:
    import json
    import re

    from tests.datasets.conftest import game_records
    from tests.serve.conftest import client_for
    from toolkit.analysis.lake import rejects_by_reason

    home = tmp_path / "home"
    rows = game_records("g-0")
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in rows))
    clash = {**rows[0], "reward": 0.125}  # rows[0]'s decision with other content: a duplicate, not a copy
    second.write_text("".join(json.dumps(r) + "\n" for r in [*game_records("g-1"), clash]))
    for log in (first, second):
        assert runner.invoke(app, ["--home", str(home), "ingest", str(log)]).exit_code == 0
    layout = Layout.at(home)
    batch = re.search(r"\(batch (b[0-9a-f]+)\)", rejects_by_reason(layout)["example"][0])
    assert batch is not None and batch[1] in rejects_by_reason(layout)["reason"][0]  # not folded into bNbN...
    page = client_for(layout).get("/lake")
    assert page.status_code == 200
    title = re.search(r"<title>(.*?)</title>", page.text, re.S)
    assert title is not None and title[1].strip() == "Lake · Distill", title
    assert page.text.count('id="lake-versions"') == 1


def test_the_quarantine_reads_as_reason_codes_and_text_and_the_hint_summarises(tmp_path: Path) -> None:
    import json

    from tests.datasets.conftest import game_records
    from toolkit.catalog.lake import Lake

    records = [json.dumps(r) + "\n" for r in game_records("g-0")]
    bad = ["not json\n", '{"half": \n', "\u00e9t\u00e9 {\n", records[0]]  # two kinds, then a duplicate of line 1
    log = tmp_path / "mixed.jsonl"
    log.write_text("".join(records) + "".join(bad), encoding="utf-8")
    (tmp_path / "bytes.jsonl").write_bytes(b"\xff\xfe{}\n")
    home = ["--home", str(tmp_path / "home")]
    ingested = runner.invoke(app, [*home, "ingest", str(log), str(tmp_path / "bytes.jsonl")], env={"COLUMNS": "200"})
    assert ingested.exit_code == 0, ingested.output
    assert 'distill sql "FROM reject_reasons"' in ingested.stdout  # the hint is a summary, not every line

    reasons = json.loads(runner.invoke(app, [*home, "sql", "--json", "FROM reject_reasons"]).stdout)
    assert [(r["code"], r["field"], r["lines"]) for r in reasons] == [
        ("invalid_json", "", 3),  # one row per reason code, whichever lines and batches it was on
        ("duplicate", "game_id", 1),
        ("invalid_utf8", "", 1),
    ]
    assert reasons[0]["first_at"] == f"{log}:{len(records) + 1}" and "invalid JSON" in reasons[0]["example"]

    lines = json.loads(
        runner.invoke(
            app, [*home, "sql", "--json", "SELECT code, line, hex(raw) AS raw FROM rejects ORDER BY source_file, 2"]
        ).stdout
    )
    texts = {r["line"]: r for r in lines}
    assert set(texts) == {"not json", '{"half": ', "\u00e9t\u00e9 {", records[0].rstrip("\n"), "\\xFF\\xFE{}\\x0A"}
    assert texts["\u00e9t\u00e9 {"]["raw"] == "\u00e9t\u00e9 {\n".encode().hex().upper()  # the bytes, unchanged
    with Lake.open(Layout.at(tmp_path / "home")) as lake:  # the same views outside the SQL sandbox
        assert lake.view.read("SELECT sum(lines) AS n FROM reject_reasons")["n"].to_pylist() == [5]


def test_ids_times_and_intervals_are_whole_at_80_columns(loop_home: Layout) -> None:
    """Piped, in CI or make, a terminal is 80 columns: a table too wide for its words prints one block per row
    instead of cutting a batch id, a fingerprint, a time or an interval with an ellipsis."""
    import json

    home = ["--home", str(loop_home.home)]

    def shown(*args: str) -> str:
        result = runner.invoke(app, [*home, *args], env={"COLUMNS": "80"})
        assert result.exit_code == 0, result.output
        assert "\u2026" not in result.stdout, result.stdout  # no ellipsis
        assert max(map(len, result.stdout.splitlines())) <= 80, result.stdout
        return result.stdout

    batches = json.loads(runner.invoke(app, [*home, "sql", "--json", "SELECT batch_id FROM batches"]).stdout)
    history = shown("lake", "history")
    assert all(b["batch_id"] in history for b in batches)
    [build] = json.loads(runner.invoke(app, [*home, "datasets", "list", "--json"]).stdout)[:1]
    assert build["fingerprint"] in shown("datasets", "list", "--all")
    looped = " ".join(shown("loop", "history", "--name", "tiny").split())  # a block may wrap between words
    gains = [r["student_gain"]["heuristic"] for r in RunFolder(loop_home, "tiny").records() if r["student_gain"]]
    assert gains
    for gain in gains:
        assert f"[{100 * gain['low']:+.1f}, {100 * gain['high']:+.1f}]" in looped, looped
    shown("loop", "status", "--name", "tiny")
    shown("sql", "SELECT batch_id, created_at, file_sha256 FROM batches")
