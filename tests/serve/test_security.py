"""Safe by default: loopback or a token, no cross-site control, nothing from a request reaching a path unchecked."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tests.serve.conftest import BASE, client_for
from toolkit.cli.main import app
from toolkit.errors import UsageError
from toolkit.layout import Layout
from toolkit.serve.security import Access


def test_a_non_loopback_bind_without_a_token_refuses_to_start(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("DISTILL_TOKEN", raising=False)
    with pytest.raises(UsageError, match="--token"):
        Access.for_bind("0.0.0.0", 8765, None)
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "would let anyone on the network" in result.output and "--token" in result.output
    assert Access.for_bind("0.0.0.0", 8765, "s3cret").token == "s3cret"
    assert Access.for_bind("::1", 8765, None).token is None


def test_a_cross_origin_post_is_refused_and_a_same_origin_one_is_not(loop_home: Layout) -> None:
    client = client_for(loop_home)
    for origin in ("http://evil.example", "http://127.0.0.1:9999", "null"):
        refused = client.post("/api/distill/stop", json={"name": "tiny"}, headers={"Origin": origin})
        assert refused.status_code == 403 and "cross-site" in refused.json()["detail"], origin
    cross = client.post("/runs/tiny/stop", headers={"Sec-Fetch-Site": "cross-site"})
    assert cross.status_code == 403
    same = client.post("/api/distill/stop", json={"name": "tiny"}, headers={"Origin": BASE})
    assert same.status_code == 409  # reached the control: a finished run cannot stop
    assert (
        client.get("/api/runs", headers={"Origin": "http://evil.example"}).status_code == 200
    )  # reads are not controls


def test_a_foreign_host_header_is_refused(loop_home: Layout) -> None:
    client = client_for(loop_home)
    for host in ("evil.example", "evil.example:8765", "127.0.0.1.evil.example"):
        assert client.get("/api/runs", headers={"Host": host}).status_code == 421, host
    for host in ("127.0.0.1:8765", "localhost:8765", "[::1]:8765"):
        assert client.get("/api/runs", headers={"Host": host}).status_code == 200, host


def test_with_a_token_every_request_needs_it(loop_home: Layout) -> None:
    client = client_for(loop_home, token="s3cret")
    assert client.get("/api/runs").status_code == 401
    assert client.get("/api/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/static/app.js").status_code == 401
    assert client.get("/api/runs", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    login = client.get("/runs/tiny?token=s3cret", follow_redirects=False)
    assert login.status_code == 303 and login.headers["location"] == "/runs/tiny"
    assert "HttpOnly" in login.headers["set-cookie"]
    assert client.get("/runs/tiny").status_code == 200  # the cookie it set


def test_run_names_and_config_paths_never_reach_the_file_system_unchecked(loop_home: Layout, tmp_path) -> None:
    client = client_for(loop_home)
    for name in ("../escape", "..", "x/../../y", "a b", "-rf"):
        answer = client.post("/api/distill/start", json={"name": name})
        assert answer.status_code == 422, (name, answer.text)
    outside = client.post(
        "/api/distill/start", json={"name": "reader", "config": {"bootstrap": {"logs": ["/etc/passwd"]}}}
    )
    assert outside.status_code == 422 and "outside the data root" in outside.json()["detail"]
    sneaky = client.post("/api/distill/start", json={"name": "reader", "config": "data_gate_suite: ../../x.json"})
    assert sneaky.status_code == 422 and "outside the data root" in sneaky.json()["detail"]
    bad = client.post("/api/distill/start", json={"name": "reader", "config": "max_generations: -3"})
    assert bad.status_code == 422 and "max_generations" in bad.json()["detail"]
    assert not (loop_home.runs / "reader").exists()
    assert not (loop_home.home.parent / "escape").exists()
