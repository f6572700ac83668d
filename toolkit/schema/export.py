"""JSON Schema export into ``schemas/``: the canonical record, one file per contract version, and the engine
protocol's messages, one file per direction.

``decision_snapshot.v1.schema.json`` is the frozen version 1 (:mod:`toolkit.schema.v1`),
``decision_snapshot.v2.schema.json`` the current model;
``engine_protocol.v1.engine.schema.json`` the messages an engine sends,
``engine_protocol.v1.distill.schema.json`` those Distill sends
(:mod:`toolkit.schema.engine`). A test keeps the committed files equal to what
this module renders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from pydantic import BaseModel

from toolkit.schema import engine, models, v1
from toolkit.schema.vocab import SCHEMA_VERSION

# The model of each contract version.
MODELS: Final[dict[int, type[BaseModel]]] = {1: v1.DecisionSnapshot, 2: models.DecisionSnapshot}


def schema_file(version: int = SCHEMA_VERSION) -> str:
    """The file name of contract ``version``'s JSON Schema."""
    return f"decision_snapshot.v{version}.schema.json"


SCHEMA_FILE: Final = schema_file()


def render_json_schema(version: int = SCHEMA_VERSION) -> str:
    """The JSON Schema of contract ``version``'s :class:`DecisionSnapshot`, as stable, sorted text."""
    schema = MODELS[version].model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://distill.dev/schemas/{schema_file(version)}"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def engine_schemas() -> dict[str, str]:
    """The engine protocol's JSON Schemas (both directions), by file name, as stable, sorted text."""
    rendered = {}
    for side, schema in (("engine", engine.ENGINE_MESSAGES), ("distill", engine.DISTILL_MESSAGES)):
        name = f"engine_protocol.v{engine.MAJOR}.{side}.schema.json"
        body = schema.json_schema()
        body["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        body["$id"] = f"https://distill.dev/schemas/{name}"
        body["title"] = f"{engine.PROTOCOL} {engine.MAJOR}.{engine.MINOR}: the messages {side} sends"
        rendered[name] = json.dumps(body, indent=2, sort_keys=True) + "\n"
    return rendered


def write_json_schemas(out_dir: Path) -> list[Path]:
    """Write every version's schema file and the engine protocol's into ``out_dir``; returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for version in MODELS:
        path = out_dir / schema_file(version)
        path.write_text(render_json_schema(version), encoding="utf-8")
        paths.append(path)
    for name, text in engine_schemas().items():
        path = out_dir / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths
