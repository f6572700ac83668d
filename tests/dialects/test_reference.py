"""DIALECTS.md, the project's own reference of its dialects, keeps up with the code it was written from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolkit.dialects import CONVERTERS
from toolkit.dialects.labels import ACCEPTED_TYPES, MAPPED_TYPES
from toolkit.schema.models import ActionRecord, DecisionSnapshot, PlayerState, SeatLineup
from toolkit.schema.vocab import DIALECTS, KNOWN_FLAGS, LABEL_SOURCES, PLAYER_KINDS

REPO = Path(__file__).resolve().parents[2]
REFERENCE = (REPO / "DIALECTS.md").read_text(encoding="utf-8")


def _named(word: str) -> bool:
    return f"`{word}`" in REFERENCE or re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", REFERENCE) is not None


def test_every_dialect_the_code_reads_has_its_own_section() -> None:
    assert set(CONVERTERS) | {"canonical"} == set(DIALECTS)
    headings = re.findall(r"^## (.+)$", REFERENCE, flags=re.MULTILINE)
    for dialect in DIALECTS:
        assert any(dialect in heading for heading in headings), f"DIALECTS.md has no section for {dialect}"
        assert f"| `{dialect}` |" in REFERENCE, f"DIALECTS.md's table of dialects lacks {dialect}"


@pytest.mark.parametrize("model", [DecisionSnapshot, PlayerState, ActionRecord, SeatLineup], ids=lambda m: m.__name__)
def test_every_field_of_the_canonical_record_is_named(model: type) -> None:
    missing = [name for name in model.model_fields if not _named(name)]
    assert not missing, f"DIALECTS.md does not name {model.__name__} fields {missing}"


def test_every_flag_label_source_player_kind_and_engine_type_is_named() -> None:
    words = [
        *KNOWN_FLAGS,
        *LABEL_SOURCES,
        *PLAYER_KINDS,
        *MAPPED_TYPES,
        *(t for ts in ACCEPTED_TYPES.values() for t in ts),
    ]
    assert not [word for word in words if not _named(word)]


def test_the_readme_links_the_reference_and_nothing_outside_the_repository() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(DIALECTS.md)" in readme
    assert not re.search(r"\.\./", readme), "the README points outside the repository"
