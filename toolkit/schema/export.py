"""JSON Schema export of the canonical record into ``schemas/``: one file per contract version.

``decision_snapshot.v1.schema.json`` is the frozen version 1 (:mod:`toolkit.schema.v1`),
``decision_snapshot.v2.schema.json`` the current model. A test keeps the committed
files equal to what this module renders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from pydantic import BaseModel

from toolkit.schema import models, v1
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


def write_json_schemas(out_dir: Path) -> list[Path]:
    """Write every version's schema file into ``out_dir``; returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for version in MODELS:
        path = out_dir / schema_file(version)
        path.write_text(render_json_schema(version), encoding="utf-8")
        paths.append(path)
    return paths
