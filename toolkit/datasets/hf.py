"""The Hugging Face ``datasets`` features of a build's Parquet parts, written into their schema metadata.

``datasets.load_dataset("parquet", ...)`` reads its features from the first
file's Arrow schema metadata (key ``huggingface``, ``{"info": {"features":
...}}``), and keeps a column's feature from there only when the column's
Arrow field equals the feature's exactly. So the ``label`` column is written
as ``ClassLabel``'s Arrow type (int64, nullable: it is never null) and named
here as ``ClassLabel(names=<the macro actions>)``: loaded through
``datasets``, ``label`` reads as the action's name. Every other column's
feature is what ``datasets`` infers from its Arrow type (written here too,
for readers of the metadata). Fixed-size lists are written as ``Sequence``
with a ``length``, which ``datasets`` 2.x and 3.x read as such and 4.x reads
as ``List``.
"""

from __future__ import annotations

import json
from typing import Any, Final

import pyarrow as pa

from toolkit.schema.vocab import MACRO_ACTIONS

METADATA_KEY: Final = b"huggingface"
_VALUE_TYPES: Final[dict[pa.DataType, str]] = {
    pa.string(): "string",
    pa.int32(): "int32",
    pa.int64(): "int64",
    pa.float32(): "float32",
    pa.float64(): "float64",
    pa.bool_(): "bool",
}


def feature(kind: pa.DataType) -> dict[str, Any]:
    """The ``datasets`` feature (as its JSON dict) of a column of Arrow type ``kind``.

    Raises:
        TypeError: a type a dataset column does not use.
    """
    if pa.types.is_fixed_size_list(kind):
        return {"feature": feature(kind.value_type), "length": kind.list_size, "_type": "Sequence"}
    if pa.types.is_list(kind):
        return {"feature": feature(kind.value_type), "_type": "Sequence"}
    if kind in _VALUE_TYPES:
        return {"dtype": _VALUE_TYPES[kind], "_type": "Value"}
    raise TypeError(f"no Hugging Face feature for Arrow type {kind}")


def class_label(names: tuple[str, ...] = MACRO_ACTIONS) -> dict[str, Any]:
    """``ClassLabel(names=...)`` as its JSON dict: integer ``i`` reads as ``names[i]``."""
    return {"names": list(names), "_type": "ClassLabel"}


def with_features(schema: pa.Schema, labels: dict[str, tuple[str, ...]]) -> pa.Schema:
    """``schema`` with its ``huggingface`` metadata: every column's feature, the ``labels`` columns as
    ``ClassLabel`` of their names (each must be int64 and nullable, ClassLabel's own Arrow field)."""
    features = {}
    for field in schema:
        if field.name in labels:
            if field.type != pa.int64() or not field.nullable:
                raise TypeError(f"{field.name}: a ClassLabel column must be a nullable int64, got {field}")
            features[field.name] = class_label(labels[field.name])
        else:
            features[field.name] = feature(field.type)
    text = json.dumps({"info": {"features": features}}, separators=(",", ":"))
    return schema.with_metadata({**(schema.metadata or {}), METADATA_KEY: text.encode()})
