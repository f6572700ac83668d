"""Decision rows completed into contract records once their game's outcome is known.

Both sides of the protocol need it: Distill completes the rows its seats
answered in an engine's game (:mod:`toolkit.train.engine_export`), and the
built-in engine completes its own AI's decisions into the ``records`` it
sends (teacher data). A row (a contract row without its label) and the
action taken become a version-2 record: the action as the label
(``logged``), the outcome for the acting seat, the lineup and the lineage
fields given. No reward is shaped: ``reward`` is 0 but on the seat's last
decision, which carries the outcome (+1 a win, -1 otherwise, the turn limit
included), and ``episode_return`` is that outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from toolkit.schema.vocab import MACRO_ACTIONS, SCHEMA_VERSION

# What a record keeps of a row: the decision state (the rest it sets itself; unknown fields dropped).
_STATE: Final = ("engine", "decision_index", "turn", "phase", "seat", "pod_size", "players", "legal_actions")
_KEPT: Final = ("deck_name", "commander", "archetype", "raw_outcome", "flags")


def complete(
    played: Sequence[tuple[dict[str, Any], int]],
    *,
    winner_seat: int | None,
    truncated: bool,
    placements: Sequence[int | None],
    game_id: str,
    source: str,
    model_version: str | None = None,
    generation: int | None = None,
    lineup: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The records of ``played`` ((row, action) pairs of one game, in the order they were made)."""
    last = {row["seat"]: k for k, (row, _) in enumerate(played)}
    winner = None if truncated else winner_seat
    records = []
    for k, (row, action) in enumerate(played):
        seat = row["seat"]
        won = winner == seat
        outcome = 1 if won else -1
        final = last[seat] == k
        records.append(
            {
                "schema_version": SCHEMA_VERSION,
                "source": source,
                "dialect": "canonical",
                **{name: row.get(name) for name in _STATE},
                "game_id": game_id,
                "action": {"macro": MACRO_ACTIONS[action], "index": action, "label_source": "logged"},
                "reward": float(outcome) if final else 0.0,
                "episode_return": float(outcome),
                "winner_seat": winner,
                "is_draw": False,
                "timed_out": truncated,
                "seat_won": won,
                "placement": placements[seat] if seat < len(placements) else None,
                "is_terminal": final and not truncated,
                "truncated": final and truncated,
                "model_version": model_version,
                "generation": generation,
                **{name: row[name] for name in _KEPT if row.get(name) is not None},
                "lineup": lineup,
                "outcome": outcome,
            }
        )
    return records
