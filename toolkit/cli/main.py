"""Entry point of the ``distill`` CLI: registers every command module on the root app."""

from __future__ import annotations

import faulthandler
import sys

# Each import registers its commands on `app`.
from toolkit.cli import (  # noqa: E402,F401
    ablate_cmd,
    build_cmd,  # noqa: E402,F401
    check_cmd,  # noqa: E402,F401
    data_cmd,
    datasets_cmd,  # noqa: E402,F401
    engine_cmd,
    export_cmd,  # noqa: E402,F401
    lake_cmd,  # noqa: E402,F401
    loop_cmd,  # noqa: E402,F401
    schemas_cmd,
    serve_cmd,  # noqa: E402,F401
    simulate_cmd,  # noqa: E402,F401
    tournament_cmd,
    train_cmd,  # noqa: E402,F401
)
from toolkit.cli.app import app


def main() -> None:
    """Run the CLI (errors are mapped to messages and exit codes by the root group). A crash below Python (a
    segfault in a native library) still prints the Python stack on stderr, so a loop's log says where it died. The
    process pools a command started are shut down as it ends."""
    faulthandler.enable()
    try:
        app()
    finally:  # a command's pool workers exit with it (no pool without the module: it need not load for nothing)
        backends = sys.modules.get("toolkit.jobs.backends")
        if backends is not None:
            backends.close_pools()
