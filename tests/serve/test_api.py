"""Every endpoint of the dashboard's API and pages, on a data root made by a real tiny loop."""

from __future__ import annotations

import json
import re

import duckdb
import pytest
from fastapi.testclient import TestClient

from toolkit.layout import Layout
from toolkit.loop.state import RunFolder


def test_runs_and_status_say_where_the_run_stands(client: TestClient) -> None:
    runs = client.get("/api/runs").json()
    assert [r["name"] for r in runs] == ["tiny"]
    status = client.get("/api/distill/status", params={"name": "tiny"}).json()
    assert status["status"] == "finished" and status["generation"] == 1 and status["pid"] is None
    assert status["generations_recorded"] == 2 and status["controls"] == []
    assert status["last_outcome"].startswith("gen 1: passed")


def test_generations_are_the_records_loop_history_prints(client: TestClient, loop_home: Layout) -> None:
    served = client.get("/api/distill/generations", params={"name": "tiny"}).json()
    on_disk = RunFolder(loop_home, "tiny").records()
    assert [g["generation"] for g in served] == [0, 1]
    for record, expected in zip(served, on_disk, strict=True):
        assert record["student_win_rate"] == expected["student_win_rate"]
        assert record["rows_by_source"] == expected["rows_by_source"]
        assert record["ratings"] == expected["ratings"]


def test_ratings_history_has_each_generations_table(client: TestClient, loop_home: Layout) -> None:
    history = client.get("/api/distill/ratings", params={"name": "tiny"}).json()
    records = RunFolder(loop_home, "tiny").records()
    assert [p["generation"] for p in history] == [r["generation"] for r in records if r["ratings"]]
    last = {s["name"]: s["elo"] for s in history[-1]["standings"]}
    assert last["heuristic"] == 1500 and {"gen-001-student", "gen-000-student"} <= set(last)


def test_composition_counts_the_students_rows_by_source(client: TestClient, loop_home: Layout) -> None:
    points = client.get("/api/distill/composition", params={"name": "tiny"}).json()
    records = RunFolder(loop_home, "tiny").records()
    for point, record in zip(points, records, strict=True):
        assert point["rows"] == record["rows_by_source"]
        assert sum(point["share"].values()) == pytest.approx(1.0)
        # what the generation trained on: its build, named as every command names one, and the lake version it read
        build = record["attempts"][-1]["steps"]["build"]
        assert (point["dataset"], point["fingerprint"]) == (build["name"], build["fingerprint"])
        manifest = json.loads((loop_home.resolve(build["path"]) / "manifest.json").read_text())
        assert point["lake_version"] == manifest["lake_version"] is not None
    assert points[0]["forge_share"] == 1.0 and points[1]["teacher_share"] > 0
    page = client.get("/runs/tiny").text
    assert f"<code>{points[-1]['dataset']}@{points[-1]['fingerprint']}</code>" in page


def test_the_lake_summary_matches_the_catalog(client: TestClient, loop_home: Layout) -> None:
    lake = client.get("/api/lake").json()
    con = duckdb.connect(str(loop_home.catalog_snapshot), read_only=True)
    try:
        valid = con.sql("SELECT sum(rows_valid) FROM batch_log").fetchall()[0][0]
        batches = con.sql("SELECT count(*) FROM batch_log").fetchall()[0][0]
        version = con.sql("SELECT max(version) FROM versions").fetchall()[0][0]
    finally:
        con.close()
    assert lake["version"] == version and lake["versions"][0]["version"] == version
    assert lake["total_rows"] == valid
    assert sum(r["rows"] for r in lake["rows"]) == valid
    assert len(lake["batches"]) == batches
    assert {r["source"] for r in lake["rows"]} == {"forge", "ppo"}


def test_run_detail_links_each_data_gate_report(client: TestClient) -> None:
    detail = client.get("/api/distill/run", params={"name": "tiny"}).json()
    data_gates = [g for g in detail["gates"] if g["gate"] == "data_gate"]
    assert [g["generation"] for g in data_gates] == [0, 1]
    for gate in data_gates:
        assert gate["reports"], gate
        page = client.get(f"/reports/{gate['reports'][0]}")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert detail["tensorboard"].startswith("tensorboard --logdir ") and detail["tensorboard"].endswith("runs/tiny")


def test_pages_render_every_number_as_a_table_without_scripts(client: TestClient) -> None:
    index = client.get("/").text
    assert 'href="/runs/tiny"' in index and "finished" in index
    page = client.get("/runs/tiny").text
    for table in ("table-generations", "table-composition", "table-ratings", "table-gates", "table-rejected"):
        assert f'id="{table}"' in page
    assert page.count("<tr data-generation=") == 2  # two generations, with what each promoted and kept
    assert page.count("<tr><td>") >= 2  # and in the composition table
    assert re.search(r'<button id="pause" type="submit" disabled', page)  # a finished run cannot be paused
    lake = client.get("/lake").text
    assert 'id="lake-rows"' in lake and "forge" in lake


def test_unknown_runs_are_404_and_bad_names_422(client: TestClient) -> None:
    missing = client.get("/api/distill/status", params={"name": "nope"})
    assert missing.status_code == 404 and "no loop run" in missing.json()["detail"]
    assert client.get("/runs/nope").status_code == 404
    for bad in ("../tiny", "a/b", "", "UPPER"):
        assert client.get("/api/distill/generations", params={"name": bad}).status_code == 422
        assert client.post("/api/distill/stop", json={"name": bad}).status_code == 422
    assert client.get("/reports/..%2Fcatalog.duckdb").status_code == 404
    assert client.get("/reports/catalog.duckdb").status_code == 404


def test_controls_refuse_what_a_finished_run_cannot_do(client: TestClient) -> None:
    for action in ("pause", "resume", "stop"):
        answer = client.post(f"/api/distill/{action}", json={"name": "tiny"})
        assert answer.status_code == 409, answer.text
        assert "finished" in answer.json()["detail"]
    again = client.post("/api/distill/start", json={"name": "tiny"})
    assert again.status_code == 409 and "exists" in again.json()["detail"]


def test_docs_and_static_files_are_served_from_the_package(client: TestClient) -> None:
    docs = client.get("/docs").text
    assert "/static/vendor/swagger-ui/swagger-ui-bundle.js" in docs
    assert not re.search(r"(src|href)=\"https?://", docs)
    assert client.get("/static/vendor/swagger-ui/swagger-ui-bundle.js").status_code == 200
    chart = client.get("/static/vendor/chart.js/chart.umd.min.js")
    assert chart.status_code == 200 and "Chart.js v4.6.1" in chart.text[:200]
    schema = client.get("/openapi.json").json()
    for path in (
        "/api/distill/start",
        "/api/distill/status",
        "/api/distill/stop",
        "/api/distill/pause",
        "/api/distill/resume",
        "/api/distill/generations",
        "/api/distill/ratings",
        "/api/distill/composition",
        "/api/lake",
    ):
        assert path in schema["paths"], path


def test_the_lake_page_marks_retired_batches_and_lists_versions(loop_home: Layout, tmp_path) -> None:
    import shutil

    from tests.serve.conftest import client_for
    from toolkit.catalog import Lake

    copy = Layout.at(tmp_path / "home")
    shutil.copytree(loop_home.home, copy.home)
    with Lake.open(copy, write=True) as lake:
        batch = lake.view.batches()[0]
        lake.retire([batch.batch_id], "engine build 4.2 logged wrong seats")
    client = client_for(copy)
    lake = client.get("/api/lake").json()
    [row] = [b for b in lake["batches"] if b["batch_id"] == batch.batch_id]
    assert row["retired"] and row["retired_reason"] == "engine build 4.2 logged wrong seats"
    assert lake["versions"][0]["operation"] == "retire"
    assert lake["total_rows"] == sum(r["rows"] for r in lake["rows"])  # the retired rows counted nowhere
    page = client.get("/lake").text
    assert 'id="lake-versions"' in page and "retired" in page and "wrong seats" in page
