"""Who may talk to the dashboard: loopback by default, a token otherwise, never another site.

- Host: only the names the server answers to (its own address, and the
  loopback names when it binds loopback). A DNS-rebinding page that points
  its own name at 127.0.0.1 sends its own name as Host and is refused. The
  header is parsed strictly (``name`` or ``name:port``, a port of 1-65535
  digits, an IPv6 address in brackets): anything else (``evil@localhost``,
  ``localhost:99999``, a path, spaces) is refused, not guessed at.
- Origin: a request that changes something (any method but GET/HEAD/OPTIONS)
  must come from the server's own pages: an ``Origin`` (or, without one,
  ``Sec-Fetch-Site``) naming another site is refused, and so is one that is
  not exactly ``scheme://host[:port]``. Scripts that send neither (curl, the
  tests) are let through: a browser always sends one.
- Token: when the server was given one (required to bind a non-loopback
  address), every request carries it: ``Authorization: Bearer <token>``, the
  ``distill_token`` cookie, or once ``?token=<token>``, which sets the cookie
  and redirects to the same path of this server without the token (never to
  another site, whatever the path: ``//evil.example/x`` becomes ``/evil.example/x``).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from toolkit.errors import UsageError

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
TOKEN_ENV = "DISTILL_TOKEN"
COOKIE = "distill_token"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
# A Host header (RFC 9110 uri-host [":" port]) as this server reads it: a DNS name or IPv4 address, or an IPv6
# address in brackets, then at most a port of digits. No user info, path, zone id, spaces or empty port.
_HOST = re.compile(
    r"(?:\[(?P<ipv6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?))(?::(?P<port>[0-9]{1,5}))?"
)
_ORIGIN = re.compile(r"(?P<scheme>https?)://(?P<host>[^/?#@\s]+)")


def parse_host(header: str) -> tuple[str, int | None] | None:
    """The (name, port) a Host header names, or None when it is not exactly ``name[:port]`` with a port in
    1-65535 (an IPv6 address comes back without its brackets; names are lowercase)."""
    found = _HOST.fullmatch(header.lower()) if header.isascii() else None
    if found is None:
        return None
    port = None if found["port"] is None else int(found["port"])
    if port is not None and not 1 <= port <= 65535:
        return None
    if found["ipv6"] is not None:
        try:
            ipaddress.IPv6Address(found["ipv6"])
        except ValueError:
            return None
        return found["ipv6"], port
    return found["name"], port


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Access:
    """The server's own names and its token (None: loopback only, no token)."""

    host: str
    port: int
    token: str | None = None
    extra_hosts: tuple[str, ...] = field(default=())

    @classmethod
    def for_bind(cls, host: str, port: int, token: str | None) -> Access:
        """The access rules of a server bound to ``host:port``.

        Raises:
            UsageError: a non-loopback address without a token.
        """
        if not is_loopback(host) and not token:
            raise UsageError(
                f"binding {host} would let anyone on the network control this data root's loops",
                hint=f"give --token (or ${TOKEN_ENV}), or bind 127.0.0.1",
            )
        return cls(host=host, port=port, token=token or None)

    def hosts(self) -> set[str]:
        names = {self.host, *self.extra_hosts}
        if is_loopback(self.host) or self.host in ("0.0.0.0", "::"):
            names |= set(LOOPBACK_NAMES)
        return names

    def host_allowed(self, header: str) -> bool:
        parsed = parse_host(header)
        return parsed is not None and self._named(parsed[0])

    def origin_allowed(self, origin: str) -> bool:
        found = _ORIGIN.fullmatch(origin) if origin.isascii() else None
        parsed = parse_host(found["host"]) if found else None
        if found is None or parsed is None:
            return False
        name, port = parsed
        return self._named(name) and (port or (443 if found["scheme"] == "https" else 80)) == self.port

    def _named(self, name: str) -> bool:
        hosts = {h.lower() for h in self.hosts()}
        return name in hosts or f"[{name}]" in hosts

    def token_ok(self, given: str | None) -> bool:
        return self.token is None or (given is not None and hmac.compare_digest(given.encode(), self.token.encode()))


class Guard:
    """ASGI middleware enforcing :class:`Access` on every HTTP request."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app, self.access = app, access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if not self.access.host_allowed(headers.get("host", "")):
            await _refuse(send, 421, f"this server does not answer to host {headers.get('host', '')!r}")
            return
        if scope["method"] not in _SAFE_METHODS:
            origin = headers.get("origin")
            if origin is not None and not self.access.origin_allowed(origin):
                await _refuse(send, 403, f"cross-site request refused (Origin {origin})")
                return
            if origin is None and headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
                await _refuse(send, 403, "cross-site request refused (Sec-Fetch-Site)")
                return
        if self.access.token is not None:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"))).get("token")
            if query is not None and self.access.token_ok(query):
                await _set_cookie_and_redirect(send, scope, self.access.token)
                return
            if not self.access.token_ok(_token(headers)):
                await _refuse(send, 401, "a token is required: Authorization: Bearer <token>, or open /?token=<token>")
                return
        await self.app(scope, receive, send)


def _token(headers: dict[str, str]) -> str | None:
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    cookie: SimpleCookie = SimpleCookie()
    try:
        cookie.load(headers.get("cookie", ""))
    except CookieError:
        return None
    return cookie[COOKIE].value if COOKIE in cookie else None


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def own_location(path: str, query_string: bytes) -> str:
    """Where a ``?token=`` request is sent back to: the same path and query, less the token, on this server.

    The path is made one that no browser reads as another site's: leading
    slashes and backslashes (which browsers read as slashes) collapse to one
    ``/``, and every character but letters, digits, ``/`` and ``-._~`` is
    percent-encoded (a tab or a newline, which browsers drop, included).
    """
    query = [(k, v) for k, v in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True) if k != "token"]
    location = "/" + quote(path.lstrip("/\\\t\n\r "), safe="/", errors="replace")
    return location + (f"?{urlencode(query)}" if query else "")


async def _set_cookie_and_redirect(send: Send, scope: Scope, token: str) -> None:
    cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict".encode()
    location = own_location(scope["path"], scope.get("query_string", b"")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", location), (b"set-cookie", cookie), (b"content-length", b"0")],
        }
    )
    await send({"type": "http.response.body", "body": b""})
