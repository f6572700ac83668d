"""Safe by default: loopback or a token, no cross-site control, nothing from a request reaching a path unchecked."""

from __future__ import annotations

import re
import socket
from urllib.parse import urljoin, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.serve.conftest import BASE, client_for, serving
from toolkit.cli.main import app
from toolkit.errors import UsageError
from toolkit.layout import Layout
from toolkit.serve.security import Access, own_location


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


def _raw_get(base: str, target: str) -> tuple[int, dict[str, str]]:
    """Send ``GET <target>`` as written (no client normalises it) and return the status and headers."""
    host, port = urlsplit(base).hostname, urlsplit(base).port
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode("latin-1"))
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in head[1:])
    return int(head[0].split()[1]), {k.lower(): v for k, v in headers.items()}


def _where_a_browser_goes(base: str, location: str) -> tuple[str, str]:
    """(host:port, path) a browser opens for ``location`` on ``base``: it drops tabs and newlines, and reads a
    backslash as a slash (the WHATWG URL parser, for http and https)."""
    cleaned = re.sub(r"[\t\n\r]", "", location).replace("\\", "/")
    target = urlsplit(urljoin(base + "/", cleaned))
    return target.netloc, target.path


OPEN_REDIRECTS = [
    "//evil.example/x",
    "/%2F%2Fevil.example",
    "/%2f/evil.example/x",
    "///evil.example",
    "/\\evil.example",
    "/%5Cevil.example",
    "/%5C%5Cevil.example/x",
    "/%09/evil.example",
    "/%0A/evil.example",
    "/%20//evil.example",
    "/https:%2F%2Fevil.example",
    "/%0D%0ASet-Cookie:%20x=y",
]


def test_a_token_login_redirects_only_to_a_path_of_this_server(tmp_path) -> None:
    layout = Layout.at(tmp_path / "home")
    with serving(layout, token="s3cret") as base:
        own = urlsplit(base).netloc
        for target in OPEN_REDIRECTS:
            status, headers = _raw_get(base, f"{target}?token=s3cret&name=tiny")
            assert status == 303, (target, status)
            location = headers["location"]
            assert _where_a_browser_goes(base, location)[0] == own, (target, location)
            assert location.startswith("/") and not location.startswith(("//", "/\\")), (target, location)
            assert "set-cookie" in headers and headers["set-cookie"].startswith("distill_token=s3cret;")
            assert "x=y" not in headers["set-cookie"] and "token=" not in location and location.endswith("?name=tiny")
        status, headers = _raw_get(base, "/runs/tiny?token=s3cret")
        assert status == 303 and headers["location"] == "/runs/tiny"


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40), st.binary(max_size=40))
def test_a_redirect_after_a_token_login_never_leaves_the_server(path: str, query: bytes) -> None:
    location = own_location("/" + path, query)
    assert _where_a_browser_goes("http://127.0.0.1:8765", location)[0] == "127.0.0.1:8765", location
    assert location.isascii() and location.isprintable() and " " not in location


MALFORMED_HOSTS = [
    "evil.example@localhost",
    "evil.example@localhost:8765",
    "localhost@evil.example",
    "localhost:99999",
    "localhost:0",
    "localhost:",
    "localhost:80:80",
    "localhost:+80",
    "localhost:8765 ",
    " localhost",
    "localhost/x",
    "localhost\\@evil.example",
    "localhost#x",
    "localhost?x",
    "localhost.",
    "127.0.0.1:8765\x00",
    "localhost:８７６５",
    "[::1",
    "::1",
    "[::1]x",
    "[fe80::1%25eth0]",
    "[::1]:99999",
    "",
]


def test_a_host_header_that_is_not_exactly_name_and_port_is_refused(loop_home: Layout) -> None:
    client = client_for(loop_home)
    access = Access.for_bind("127.0.0.1", 8765, None)
    for host in MALFORMED_HOSTS:
        assert not access.host_allowed(host), host
    for host in ("evil.example@localhost", "localhost:99999", "localhost:", "[::1]x"):
        assert client.get("/api/runs", headers={"Host": host}).status_code == 421, host
    for host in ("localhost", "LOCALHOST:8765", "127.0.0.1:1", "[::1]"):
        assert access.host_allowed(host), host
    for origin in ("http://evil.example@localhost:8765", "http://localhost:8765/", "http://localhost:99999"):
        assert not access.origin_allowed(origin), origin


@given(st.text(max_size=30))
def test_only_a_loopback_name_with_at_most_a_valid_port_is_an_allowed_host(header: str) -> None:
    if Access.for_bind("127.0.0.1", 8765, None).host_allowed(header):
        found = re.fullmatch(r"(localhost|127\.0\.0\.1|\[::1\])(?::([0-9]{1,5}))?", header, re.IGNORECASE)
        assert found is not None and (found[2] is None or 1 <= int(found[2]) <= 65535), header
