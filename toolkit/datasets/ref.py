"""How a build is named wherever a command takes one: ``NAME`` (its latest build) or ``NAME@FINGERPRINT``.

One parser for every command and config that names a build (``datasets show``, ``diff``, ``rm``, ``check``,
``export``, ``train bc --dataset``, ``build --label-scores``, ``ablate --build``), so a reference that one accepts,
all accept, and mean the same build.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolkit.errors import UsageError
from toolkit.layout import checked_fingerprint, checked_name

SEPARATOR = "@"


@dataclass(frozen=True)
class BuildRef:
    """A build: a dataset's name and, where one build is meant, its fingerprint (None: the latest)."""

    name: str
    fingerprint: str | None = None

    @classmethod
    def parse(cls, text: str, fingerprint: str | None = None) -> BuildRef:
        """``NAME`` or ``NAME@FINGERPRINT``; ``fingerprint`` (a ``--fingerprint`` option) may name the build
        instead, never a second one.

        Raises:
            NameRefusedError: the name or the fingerprint is not one.
            UsageError: two different fingerprints given.
        """
        name, at, given = text.partition(SEPARATOR)
        if at and fingerprint is not None and given != fingerprint:
            raise UsageError(
                f"two builds named: {text!r} and --fingerprint {fingerprint}", hint="give NAME@FINGERPRINT once"
            )
        found = given if at else fingerprint  # an empty one is refused, never read as "the latest"
        return cls(checked_name(name, "dataset name"), None if found is None else checked_fingerprint(found))

    def __str__(self) -> str:
        return self.name if self.fingerprint is None else f"{self.name}{SEPARATOR}{self.fingerprint}"


def split_build_field(data: Any, name_field: str, fingerprint_field: str = "fingerprint") -> Any:
    """For a config's ``model_validator(mode="before")``: a ``NAME@FINGERPRINT`` in ``name_field`` becomes the
    name there and the fingerprint in ``fingerprint_field`` (the same build given twice is fine, two are refused)."""
    if isinstance(data, dict) and isinstance(data.get(name_field), str) and SEPARATOR in data[name_field]:
        ref = BuildRef.parse(data[name_field], data.get(fingerprint_field))
        data = {**data, name_field: ref.name, fingerprint_field: ref.fingerprint}
    return data
