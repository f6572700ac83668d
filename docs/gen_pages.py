"""Write the site's generated pages before `mkdocs build` (`make docs` runs it): the home page from README.md,
the CLI reference from the typer app, the contract reference from the JSON Schema in schemas/.

Generated, never edited: docs/index.md, docs/reference/cli.md, docs/reference/contract.md (git ignores them).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def home() -> str:
    """README.md, its links into docs/ made relative to the site."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    text = re.sub(r"\[([^\]]+)\]\((?!docs/|https?:)([^)]+)\)", r"\1 (`\2`)", text)  # a repository file: its path
    return re.sub(r"\]\(docs/", "](", text)


def cli_reference() -> str:
    """Every command's --help, as the CLI prints it, grouped as the CLI groups them."""
    import typer
    from typer.testing import CliRunner

    from toolkit.cli.main import app

    runner = CliRunner()
    pages = ["# CLI reference\n\n", "Every command's `--help`, generated from the CLI itself (`docs/gen_pages.py`).\n"]

    def walk(command: Any, path: list[str], parent: Any) -> None:  # typer's click (it vendors its own)
        ctx = command.context_class(command, info_name=path[-1], parent=parent)
        if path[1:]:
            shown = runner.invoke(app, [*path[1:], "--help"], env={"COLUMNS": "110", "NO_COLOR": "1", "TERM": "dumb"})
            pages.append(f"\n## `{' '.join(path)}`\n\n```text\n{_plain(shown.stdout)}\n```\n")
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(sub, [*path, name], ctx)

    walk(typer.main.get_command(app), ["distill"], None)
    return "".join(pages)


def _plain(text: str) -> str:
    """Help text without terminal colours and trailing blanks."""
    lines = re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines()
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def contract_reference() -> str:
    """Each JSON Schema in schemas/: its fields, types, whether required, and what each holds."""
    out = ["# Contract reference\n", "Generated from the JSON Schema in `schemas/` (`distill schemas export`).\n"]
    for path in sorted((ROOT / "schemas").glob("*.schema.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        out.append(f"\n## `{path.name}`\n\n{schema.get('description', '').strip()}\n")
        for title, part in [(schema.get("title", path.stem), schema), *sorted(schema.get("$defs", {}).items())]:
            properties = part.get("properties")
            if not properties:
                continue
            required = set(part.get("required", []))
            out.append(f"\n### {title}\n\n| field | type | required | description |\n|---|---|---|---|\n")
            for name, spec in properties.items():
                description = " ".join(str(spec.get("description", "")).split()).replace("|", "\\|")
                out.append(f"| `{name}` | {_type(spec)} | {'yes' if name in required else ''} | {description} |\n")
    return "".join(out)


def _type(spec: dict) -> str:
    if "$ref" in spec:
        return spec["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in spec:
        return " or ".join(_type(s) for s in spec["anyOf"])
    if "enum" in spec:
        return "one of " + ", ".join(f"`{v}`" for v in spec["enum"])
    if "const" in spec:
        return f"`{spec['const']}`"
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list of {_type(spec.get('items', {}))}"
    return str(kind)


def main() -> None:
    (DOCS / "reference").mkdir(exist_ok=True)
    (DOCS / "index.md").write_text(home(), encoding="utf-8")
    (DOCS / "reference" / "cli.md").write_text(cli_reference(), encoding="utf-8")
    (DOCS / "reference" / "contract.md").write_text(contract_reference(), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
