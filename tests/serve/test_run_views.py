"""The run page's records without a browser: per generation what was promoted, kept and refused; the charts'
series (every table, chance, styles); the training curves; the strength gates' reports; the comparison page."""

from __future__ import annotations

import csv

import pytest
from fastapi.testclient import TestClient

from tests.serve.conftest import client_for
from toolkit.errors import ConfigError
from toolkit.layout import Layout
from toolkit.loop.gates import StrengthVerdict
from toolkit.loop.state import RunFolder
from toolkit.serve import views
from toolkit.serve.compare import MAX_RUNS, comparison, parse_runs
from toolkit.serve.gate_report import gate_report, trace_chart
from toolkit.serve.generations import generation_rows, table_label
from toolkit.serve.pages import with_back_link
from toolkit.train.metrics import tensorboard_available


@pytest.fixture(scope="module")
def kept(two_runs: Layout) -> views.RunDetail:
    return views.run_detail(two_runs, "kept")


@pytest.fixture(scope="module")
def web(two_runs: Layout) -> TestClient:
    return client_for(two_runs)


def test_a_kept_student_is_shown_as_kept_with_its_refused_candidate(kept: views.RunDetail) -> None:
    first, last = kept.rows
    assert (first.student.status, first.student.in_use) == ("promoted", "gen-000-student")
    assert first.ppo.status == "none" and first.ppo.in_use is None
    assert last.ppo.status == "promoted" and last.ppo.in_use == "gen-001-ppo"
    assert (last.student.status, last.student.in_use, last.student.in_use_generation) == ("kept", "gen-000-student", 0)
    (candidate,) = last.student.candidates
    refused = ("gen-001-student", False, "student gate: head to head")
    assert (candidate.name, candidate.promoted, candidate.refused_by) == refused
    record = kept.generations[-1]
    assert candidate.holdout_accuracy == record.holdout_accuracy  # the refused candidate's, labelled so
    assert "kept gen-000-student" in last.student.note and "refused by the student gate" in last.student.note
    gate = next(v for v in candidate.verdicts if v.gate == "student gate: head to head")
    assert gate.passed is False and gate.report == "/runs/kept/gates/1/student_gate"


def test_every_evaluation_table_is_charted_with_chance_and_distinct_styles(kept: views.RunDetail) -> None:
    strength = [c for c in kept.charts if c.id.startswith("chart-strength")]
    assert len(strength) == len(kept.tables) == 2
    assert [c.title for c in strength] == [f"Win rate vs {label}" for label in kept.tables.values()]
    for chart, table in zip(strength, kept.tables, strict=True):
        lines = {line.label: line for line in chart.lines}
        label = kept.tables[table]
        student, ppo = lines[f"student vs {label}"], lines[f"PPO vs {label}"]
        assert student.data == [r.evaluation["student"][table].win_rate for r in kept.generations]
        assert ppo.data == [None, kept.generations[1].evaluation["ppo"][table].win_rate]
        assert ppo.order < student.order, "the PPO line is drawn above the student's"
        assert (ppo.dash, ppo.marker) != (student.dash, student.marker)
        assert lines["chance (1 in 4)"].data == [0.25, 0.25] and lines["chance (1 in 4)"].reference
        assert chart.unit == "percent" and "(%)" in chart.y_label and chart.x_label == "generation"
        assert "kept, same model as generation 0" in student.notes[-1]
    accuracy = next(c for c in kept.charts if c.id == "chart-accuracy").lines[0]
    assert accuracy.label == "candidate's holdout accuracy" and accuracy.notes[-1] == "gen-001-student, refused"
    ratings = next(c for c in kept.charts if c.id == "chart-elo")
    assert all(line.marker != "none" for line in ratings.lines), "a player rated once still shows"


def test_tables_are_named_by_their_opponents() -> None:
    assert table_label(("heuristic",) * 3) == "3 heuristics"
    assert table_label(("tuned",) * 3) == "3 tuned heuristics"
    assert table_label(("heuristic", "heuristic", "random")) == "2 heuristics + 1 random"


def test_the_training_curves_are_the_csv_the_trainers_wrote(two_runs: Layout, kept: views.RunDetail) -> None:
    by_gen = {c.generation: {chart.id: chart for chart in c.charts} for c in kept.curves}
    assert set(by_gen) == {0, 1}
    assert set(by_gen[0]) == {"curve-gen-000-a0-epoch"}
    assert {"curve-gen-001-a0-update", "curve-gen-001-a0-epoch"} <= set(by_gen[1])
    folder = RunFolder(two_runs, "kept").gen_dir(1, 0)
    (updates,) = (folder / "selfplay").glob("*-metrics-update.csv")
    rows = list(csv.DictReader(updates.open()))
    chart = by_gen[1]["curve-gen-001-a0-update"]
    assert chart.x == [float(r["steps"]) for r in rows]
    entropy = next(line for line in chart.lines if line.label == "entropy")
    assert entropy.data == pytest.approx([float(r["entropy"]) for r in rows])
    epochs = by_gen[1]["curve-gen-001-a0-epoch"]
    assert epochs.x_label == "epoch" and {"train_loss", "holdout_accuracy"} <= {line.label for line in epochs.lines}
    assert (kept.tensorboard_install is None) == tensorboard_available()


def test_the_strength_gates_record_their_rounds_and_report_the_trace(two_runs: Layout) -> None:
    report = gate_report(two_runs, "tiny", 1, "student_gate")
    (attempt,) = report.attempts
    verdict = attempt.strength
    assert verdict is not None and verdict.rounds, "the loop records each round"
    assert sum(r.deals for r in verdict.rounds) == verdict.deals
    assert verdict.rounds[-1].llr == pytest.approx(verdict.llr, abs=1e-3)
    assert attempt.trace.count('class="point"') == len(verdict.rounds) + 1  # from LLR 0 at 0 deals
    assert attempt.trace.count('class="threshold"') == 2  # the two bounds
    ppo = gate_report(two_runs, "tiny", 1, "ppo_gate").attempts[0]
    assert ppo.floor is not None and ppo.strength is not None
    with pytest.raises(ConfigError):
        gate_report(two_runs, "tiny", 0, "student_gate")  # generation 0 has no student gate


def test_a_verdict_recorded_before_rounds_still_reports(two_runs: Layout) -> None:
    saved = gate_report(two_runs, "tiny", 1, "student_gate").attempts[0].strength
    old = StrengthVerdict.model_validate(saved.model_dump(exclude={"rounds"}))
    assert old.rounds == []
    assert trace_chart(old).count('class="point"') == 2  # 0 and the final LLR


def test_the_gate_report_pages_link_back_to_the_dashboard(web: TestClient) -> None:
    page = web.get("/runs/kept/gates/1/student_gate")
    assert page.status_code == 200
    assert 'href="/runs/kept"' in page.text and "GSPRT trace" in page.text and "refused" in page.text
    run = web.get("/runs/kept").text
    assert 'href="/runs/kept/gates/1/ppo_gate"' in run and 'href="/runs/kept/gates/1/student_gate"' in run
    assert web.get("/runs/kept/gates/1/data_gate").status_code == 404
    assert web.get("/runs/kept/gates/7/ppo_gate").status_code == 404
    assert web.get("/runs/NOT..A%20RUN/gates/1/ppo_gate").status_code in (404, 422)
    assert with_back_link("<html><body>\n<h1>x</h1>").startswith('<html><body><p style="font:14px')


def test_the_comparison_puts_runs_side_by_side(two_runs: Layout, web: TestClient) -> None:
    compared = comparison(two_runs, ["tiny", "kept"])
    assert [r.name for r in compared.runs] == ["tiny", "kept"]
    assert [r.rows[-1].student.status for r in compared.runs] == ["promoted", "kept"]
    strength = [c for c in compared.charts if c.id.startswith("compare-strength")]
    assert len(strength) == len(compared.tables) == 2
    assert [line.label.split(":")[0] for line in strength[0].lines[:2]] == ["tiny", "kept"]
    assert (
        next(c for c in compared.charts if c.id == "compare-composition").lines[0].data
        == compared.runs[0].teacher_share
    )
    page = web.get("/compare?runs=tiny,kept")
    assert page.status_code == 200
    # the page picks its runs: a checkbox per run of the data root, the compared ones checked
    import re

    boxes = re.findall(r'<input type="checkbox" name="runs" value="([^"]+)"( checked)?>', page.text)
    assert {name for name, _ in boxes} >= {"tiny", "kept"} and all(
        checked for name, checked in boxes if name in ("tiny", "kept")
    )
    assert web.get("/compare?runs=tiny&runs=kept").status_code == 200
    assert web.get("/api/distill/compare?runs=tiny,kept").json()["runs"][1]["name"] == "kept"
    assert web.get("/compare?runs=tiny").status_code == 422
    assert web.get("/compare?runs=tiny,nope").status_code == 404
    assert web.get("/api/distill/compare?runs=tiny,..%2Fx").status_code == 422
    index = web.get("/").text
    assert 'action="/compare"' in index and 'name="runs" value="kept"' in index


def test_compare_takes_two_to_eight_valid_names() -> None:
    assert parse_runs(["a,b", "a", " c "]) == ["a", "b", "c"]
    for bad in (["a"], ["a,../b"], [",".join(f"r{i}" for i in range(MAX_RUNS + 1))]):
        with pytest.raises(ConfigError):
            parse_runs(bad)


def test_the_dashboard_pages_keep_their_access_rules(two_runs: Layout) -> None:
    guarded = client_for(two_runs, token="s3cret")
    for url in ("/compare?runs=tiny,kept", "/runs/kept/gates/1/ppo_gate", "/api/distill/compare?runs=tiny,kept"):
        assert guarded.get(url).status_code == 401
        assert guarded.get(url, headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert client_for(two_runs).get(url, headers={"Host": "evil.example"}).status_code == 421


def test_a_retried_generation_lists_the_refused_attempt_before_the_promoted_one(kept: views.RunDetail) -> None:
    first, last = kept.generations
    original = last.attempts[0]
    floor = {**original.steps["ppo_gate"]["floor"], "passed": False, "reason": "win rate 1.0% <= 30%"}
    refused = original.model_copy(
        update={
            "steps": {
                "selfplay": original.steps["selfplay"],
                "ppo_gate": {"passed": False, "reason": "floor: refused", "floor": floor, "strength": None},
            }
        }
    )
    retried = last.model_copy(update={"retries": 1, "attempts": [refused, original.model_copy(update={"attempt": 1})]})
    row = generation_rows([first, retried])[-1]
    assert [(c.name, c.promoted, c.refused_by) for c in row.ppo.candidates] == [
        ("gen-001-ppo (attempt 0)", False, "export floor"),
        ("gen-001-ppo (attempt 1)", True, None),
    ]
    assert row.ppo.status == "promoted" and "gen-001-ppo (attempt 0) refused by the export floor" in row.ppo.note
    assert row.attempts == 2 and len(row.student.candidates) == 1  # the student trained in attempt 1 only
