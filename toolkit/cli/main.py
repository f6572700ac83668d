"""Entry point of the ``distill`` CLI: registers the command modules, maps errors to exit codes."""

from __future__ import annotations

import sys

import click

from toolkit.cli.app import app, err_console
from toolkit.errors import DistillError

# Each import registers its commands on `app`.
from toolkit.cli import data_cmd, schemas_cmd  # noqa: E402,F401


def main() -> None:
    """Run the CLI; a :class:`DistillError` becomes a message and its exit code."""
    try:
        # Without standalone mode, click returns the code of `typer.Exit`.
        code = app(standalone_mode=False)
    except DistillError as error:
        err_console.print(f"[red]error:[/red] {error.message}")
        if error.hint:
            err_console.print(f"  hint: {error.hint}")
        sys.exit(error.exit_code)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as error:
        error.show()
        sys.exit(2)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
