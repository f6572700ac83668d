"""``distill schemas export``: JSON Schema of the canonical record."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolkit.cli.app import app, console
from toolkit.schema.export import write_json_schemas

schemas_app = typer.Typer(help="JSON Schema of the canonical decision record.", no_args_is_help=True)
app.add_typer(schemas_app, name="schemas")


@schemas_app.command("export")
def schemas_export_command(
    out: Annotated[Path, typer.Option("--out", help="Folder to write into.")] = Path("schemas"),
) -> None:
    """Write JSON Schema for every version of the canonical record (DecisionSnapshot) into OUT."""
    for path in write_json_schemas(out):
        console.print(f"wrote {path}")
