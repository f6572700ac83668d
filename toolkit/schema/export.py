"""JSON Schema export of the canonical record into ``schemas/``."""

from __future__ import annotations

import json
from pathlib import Path

from toolkit.schema.models import DecisionSnapshot
from toolkit.schema.vocab import SCHEMA_VERSION

SCHEMA_FILE = f"decision_snapshot.v{SCHEMA_VERSION}.schema.json"


def render_json_schema() -> str:
    """The JSON Schema of :class:`DecisionSnapshot`, as stable, sorted text."""
    schema = DecisionSnapshot.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://distill.dev/schemas/{SCHEMA_FILE}"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write_json_schemas(out_dir: Path) -> list[Path]:
    """Write every schema file into ``out_dir``; returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / SCHEMA_FILE
    path.write_text(render_json_schema(), encoding="utf-8")
    return [path]
