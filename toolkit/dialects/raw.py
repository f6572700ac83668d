"""Checked access to a raw dialect record, and the skeleton of the canonical record.

Raw records come from writers that validate nothing. Every read that the
conversion *depends on* (a key, an index, a comparison) goes through
:class:`RawObject`, so that an unexpected shape becomes a
:class:`~toolkit.errors.DialectError` naming the raw field path
(``players.2.life``, dotted like the canonical model's error locations) instead of a ``KeyError`` or
``TypeError``. Values that
are only copied are left as they are: the canonical model words their type
errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolkit.errors import DialectError
from toolkit.schema.vocab import SCHEMA_VERSION

_HINT = "fix the writer, or force the right dialect if the file was detected as the wrong one"


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type, for messages about raw data."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def is_int(value: Any) -> bool:
    """True for a JSON integer (``bool`` is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class RawObject:
    """A JSON object of a raw record, with the path that leads to it."""

    data: dict[str, Any]
    dialect: str
    path: str = ""

    def at(self, key: str) -> str:
        """The raw field path of ``key`` inside this object."""
        return f"{self.path}.{key}" if self.path else key

    def fail(self, key: str, reason: str) -> DialectError:
        """A :class:`DialectError` about ``key`` of this object (returned, to be raised)."""
        return DialectError(f"{self.dialect} record: `{self.at(key)}` {reason}", field=self.at(key), hint=_HINT)

    def has(self, key: str) -> bool:
        """Whether the writer wrote ``key`` (even as null)."""
        return key in self.data

    def get(self, key: str, default: Any = None) -> Any:
        """The value of an optional field, copied as is."""
        return self.data.get(key, default)

    def require(self, key: str) -> Any:
        """The value of a required field; raises when the writer omitted it."""
        if key not in self.data:
            raise self.fail(key, "is missing; the canonical record cannot be built without it")
        return self.data[key]

    def require_int(self, key: str) -> int:
        """A required integer that the conversion computes with (a seat, a mana count)."""
        value = self.require(key)
        if not is_int(value):
            raise self.fail(key, f"must be an integer, got {json_type(value)} {value!r:.40}")
        return value

    def require_str(self, key: str) -> str:
        """A required string that the conversion computes with (an id, an outcome)."""
        value = self.require(key)
        if not isinstance(value, str):
            raise self.fail(key, f"must be a string, got {json_type(value)} {value!r:.40}")
        return value

    def optional_str(self, key: str) -> str | None:
        """An optional string the conversion reads; an empty string means absent."""
        value = self.data.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise self.fail(key, f"must be a string, got {json_type(value)} {value!r:.40}")
        return value

    def require_list(self, key: str) -> list[Any]:
        """A required JSON array (its length is used)."""
        value = self.require(key)
        if not isinstance(value, list):
            raise self.fail(key, f"must be an array, got {json_type(value)}")
        return value

    def optional_list(self, key: str) -> list[Any] | None:
        """An optional JSON array; ``None`` when absent or null."""
        if self.data.get(key) is None:
            return None
        return self.require_list(key)

    def require_object(self, key: str) -> RawObject:
        """A required nested JSON object."""
        value = self.require(key)
        if not isinstance(value, dict):
            raise self.fail(key, f"must be an object, got {json_type(value)}")
        return RawObject(value, self.dialect, self.at(key))

    def require_objects(self, key: str) -> list[RawObject]:
        """A required array of JSON objects (e.g. ``players``)."""
        items = self.require_list(key)
        objects = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise DialectError(
                    f"{self.dialect} record: `{self.at(key)}.{i}` must be an object, got {json_type(item)}",
                    field=f"{self.at(key)}.{i}",
                    hint=_HINT,
                )
            objects.append(RawObject(item, self.dialect, f"{self.at(key)}.{i}"))
        return objects


def blank_to_none(value: Any) -> Any:
    """Engines write ``""`` for "no value"; the canonical record writes null."""
    return None if value == "" else value


def acting_player(players: list[RawObject], seat: int, seat_key: str, owner: RawObject) -> RawObject:
    """The player entry of the acting seat; raises naming ``seat_key`` when there is none."""
    for player in players:
        if player.get("seat") == seat and is_int(player.get("seat")):
            return player
    raise owner.fail(seat_key, f"is {seat} but `players` has no entry with that seat")


def add_flag(row: dict[str, Any], flag: str) -> None:
    """Append ``flag`` to the row's flags (once)."""
    flags = row.get("flags") or []
    if flag not in flags:
        row["flags"] = [*flags, flag]


def make_row(**fields: Any) -> dict[str, Any]:
    """A canonical record dict (the current contract version) with every field present: defaults, then
    ``fields``, then the ``outcome`` read off ``seat_won`` unless ``fields`` give it.

    Defaults are what a converted dialect does not know: no legal-action mask,
    no reward, no placement, not truncated, no timeout, no lineup (who played
    the seats is not in any dialect in the wild).
    """
    row: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "source": None,
        "dialect": None,
        "engine": None,
        "game_id": None,
        "decision_index": 0,
        "turn": None,
        "phase": None,
        "seat": None,
        "pod_size": None,
        "players": None,
        "action": None,
        "legal_actions": None,
        "reward": None,
        "episode_return": None,
        "winner_seat": None,
        "is_draw": False,
        "timed_out": False,
        "seat_won": None,
        "placement": None,
        "is_terminal": False,
        "truncated": False,
        "model_version": None,
        "generation": None,
        "deck_name": None,
        "commander": None,
        "archetype": None,
        "raw_outcome": None,
        "flags": None,
        "lineup": None,
        "outcome": None,
    }
    row.update(fields)
    if "outcome" not in fields:
        row["outcome"] = outcome_of(row["seat_won"])
    return row


def outcome_of(seat_won: Any) -> int | None:
    """The ``outcome`` of a result: +1 a win, -1 anything else, None unknown (a non-bool is left for the model)."""
    if not isinstance(seat_won, bool):
        return None
    return 1 if seat_won else -1
