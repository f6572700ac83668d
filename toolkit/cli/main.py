"""Entry point of the ``distill`` CLI: registers every command module on the root app."""

from __future__ import annotations

from toolkit.cli.app import app

# Each import registers its commands on `app`.
from toolkit.cli import data_cmd, schemas_cmd  # noqa: E402,F401
from toolkit.cli import simulate_cmd  # noqa: E402,F401
from toolkit.cli import train_cmd  # noqa: E402,F401
from toolkit.cli import check_cmd  # noqa: E402,F401
from toolkit.cli import build_cmd  # noqa: E402,F401
from toolkit.cli import loop_cmd  # noqa: E402,F401
from toolkit.cli import export_cmd  # noqa: E402,F401
from toolkit.cli import serve_cmd  # noqa: E402,F401


def main() -> None:
    """Run the CLI (errors are mapped to messages and exit codes by the root group)."""
    app()
