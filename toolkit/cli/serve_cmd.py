"""``distill serve``: the dashboard and its JSON API over the data root (see toolkit.serve)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from toolkit.cli.app import app, console, layout
from toolkit.limits import MAX_WORKERS


@app.command("serve")
def serve_command(
    host: Annotated[
        str, typer.Option("--host", help="Address to bind; anything but loopback needs --token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="DISTILL_TOKEN",
            show_envvar=True,
            help="Required on every request (Bearer header, or open /?token=...).",
        ),
    ] = None,
    max_loops: Annotated[
        int | None,
        typer.Option(
            "--max-loops",
            max=MAX_WORKERS,
            min=1,
            help="Loops running on the data root at once past which a start or resume is refused (HTTP 429); "
            "default: half the cores, at least 2.",
        ),
    ] = None,
) -> None:
    """Watch and steer the loop in a browser: runs, generations, ratings, the lake; start, pause, resume, stop."""
    import uvicorn

    from toolkit.serve.admission import DEFAULT_MAX_LOOPS
    from toolkit.serve.app import create_app
    from toolkit.serve.security import Access

    access = Access.for_bind(host, port, token)
    home = layout()
    shown = f"[{host}]" if ":" in host else host
    console.print(
        f"Distill dashboard for {home.home}: http://{shown}:{port}/ (API docs at /docs; Ctrl-C stops "
        f"the server, never a loop)",
        markup=False,
    )
    uvicorn.run(
        create_app(home, access, max_loops or DEFAULT_MAX_LOOPS),
        host=host,
        port=port,
        log_level=os.environ.get("DISTILL_LOG_LEVEL", "warning"),
        proxy_headers=False,
        server_header=False,
    )
