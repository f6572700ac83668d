"""Detect a raw record's dialect from its shape, never from the file's name.

Rules, first match wins:

1. a ``schema_version`` key: ``canonical`` (ours);
2. an action with ``macro_action`` or ``action_idx``, or players with
   camelCase keys (``handSize``...): ``ppo_legacy``;
3. an action that is only ``{"type": ...}``: the simulator family, ``ds``
   when the game id starts with ``ds-`` or the type is one only the ``ds``
   engine writes (``land``, ``cast_commander``), else ``sim``;
4. an action whose keys are among ``type``/``card``/``target``/``raw``: ``forge``.
"""

from __future__ import annotations

from typing import Any, Final

from toolkit.dialects.raw import json_type
from toolkit.errors import DialectError

PPO_ACTION_KEYS: Final = frozenset({"macro_action", "action_idx"})
FORGE_ACTION_KEYS: Final = frozenset({"type", "card", "target", "raw"})
DS_GAME_PREFIX: Final = "ds-"
DS_ONLY_TYPES: Final = frozenset({"land", "cast_commander"})
_HINT = "check that the file holds decision logs, or force its dialect"


def detect_dialect(record: Any) -> str:
    """The dialect of one raw record: canonical, forge, sim, ds or ppo_legacy.

    Args:
        record: one parsed JSON line.

    Returns:
        The dialect's name.

    Raises:
        DialectError: (``field=""``) the record is not an object, or its shape
            matches no known dialect; the message says what was seen.
    """
    if not isinstance(record, dict):
        raise DialectError(f"a decision record must be a JSON object, got {json_type(record)}", field="", hint=_HINT)
    if "schema_version" in record:
        return "canonical"
    action = record.get("action")
    if isinstance(action, dict) and PPO_ACTION_KEYS & action.keys():
        return "ppo_legacy"
    if has_camel_case_players(record.get("players")):
        return "ppo_legacy"
    if not isinstance(action, dict) or "type" not in action:
        raise unknown_shape(record)
    if action.keys() == {"type"}:
        return "ds" if looks_like_ds(record.get("game_id"), action["type"]) else "sim"
    if action.keys() <= FORGE_ACTION_KEYS:
        return "forge"
    raise unknown_shape(record)


def has_camel_case_players(players: Any) -> bool:
    """Whether any player entry has a camelCase key (the legacy PPO exporter's style)."""
    if not isinstance(players, list):
        return False
    return any(isinstance(p, dict) and any(_is_camel(k) for k in p) for p in players)


def looks_like_ds(game_id: Any, action_type: Any) -> bool:
    """Whether a simulator-family row comes from the ``ds`` engine."""
    if isinstance(game_id, str) and game_id.startswith(DS_GAME_PREFIX):
        return True
    return isinstance(action_type, str) and action_type in DS_ONLY_TYPES


def unknown_shape(record: dict[str, Any]) -> DialectError:
    """The error for an object of no known dialect, naming the keys that were seen."""
    keys = ", ".join(sorted(record)[:20]) or "none"
    action = record.get("action")
    if isinstance(action, dict):
        seen = f"action keys: {', '.join(sorted(action)) or 'none'}"
    else:
        seen = "no action object" if action is None else f"action is a {json_type(action)}"
    return DialectError(
        f"the record matches no known dialect (top-level keys: {keys}; {seen}); expected `schema_version` "
        "(canonical), an action with `macro_action`/`action_idx` (legacy PPO), or an action with `type` "
        "and only card/target/raw beside it (forge, sim, ds)",
        field="",
        hint=_HINT,
    )


def _is_camel(key: Any) -> bool:
    return isinstance(key, str) and key[:1].islower() and any(c.isupper() for c in key)
