"""Decisions Distill's seats made in an engine's games, as canonical decision records for the lake.

A game played in an engine (:mod:`toolkit.engine`) with ``record=True``
brings back every row the engine asked Distill's seats about and the action
answered (:attr:`toolkit.engine.driver.GameResult.played`). Those rows are
the decision states of the contract without their labels; :func:`engine_records`
completes them into version-2 records: the action as the label (``logged``:
the policy's own choice, never substituted), the game's outcome for the
acting seat, the lineup (Distill's checkpoints by their cards, the engine's
AI seats by their profile names), the exporter's source, model version and
generation. An engine reports no shaped reward: a record's ``reward`` is 0
but on the seat's last decision, which carries the outcome (+1 a win, -1
otherwise, the turn limit included), and ``episode_return`` is that
outcome. The engine's own name stays in ``engine``; every record is checked
against the contract (:class:`~toolkit.schema.models.DecisionSnapshot`)
before it is written, so an engine's malformed row stops the export with the
field at fault instead of reaching the lake's quarantine.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Final

from pydantic import ValidationError

from toolkit.engine.driver import GameResult
from toolkit.errors import EngineError
from toolkit.game.lineup import Entrant, lineup_entries
from toolkit.schema.models import DecisionSnapshot
from toolkit.schema.vocab import MACRO_ACTIONS, SCHEMA_VERSION

# What a record keeps of the engine's row: the decision state (the rest it sets itself; unknown fields dropped).
_STATE: Final = ("engine", "decision_index", "turn", "phase", "seat", "pod_size", "players", "legal_actions")
_KEPT: Final = ("deck_name", "commander", "archetype", "raw_outcome", "flags")


def engine_records(
    result: GameResult,
    seats: Collection[int],
    *,
    game_id: str,
    source: str,
    model_version: str | None,
    generation: int | None,
    lineup: Sequence[Entrant] | None,
) -> list[dict[str, Any]]:
    """The records of ``seats``' decisions in one engine game, in the order they were made.

    Raises:
        EngineError: a row that does not make a contract record (the field and the reason).
    """
    played = [(row, action) for row, action in result.played if row.get("seat") in seats]
    last = {row["seat"]: k for k, (row, _) in enumerate(played)}
    winner = None if result.truncated else result.winner_seat
    entries = lineup_entries(lineup) if lineup is not None else None
    records = []
    for k, (row, action) in enumerate(played):
        seat = row["seat"]
        won = winner == seat
        outcome = 1 if won else -1
        final = last[seat] == k
        record = {
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
            "timed_out": result.truncated,
            "seat_won": won,
            "placement": result.placements[seat] if seat < len(result.placements) else None,
            "is_terminal": final and not result.truncated,
            "truncated": final and result.truncated,
            "model_version": model_version,
            "generation": generation,
            **{name: row[name] for name in _KEPT if row.get(name) is not None},
            "lineup": entries,
            "outcome": outcome,
        }
        try:
            DecisionSnapshot.model_validate(record)
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(p) for p in problem["loc"]) or "row"
            raise EngineError(
                f"game {result.spec.game}, decision {row.get('decision_index')}: the engine's row does not make a "
                f"contract record: {where}: {problem['msg']}",
                phase="export",
                hint="run `distill engine check` on the engine: its rows must be contract rows without the label",
            ) from None
        records.append(record)
    return records
