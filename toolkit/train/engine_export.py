"""Decisions Distill's seats made in an engine's games, as canonical decision records for the lake.

A game played in an engine (:mod:`toolkit.engine`) with ``record=True``
brings back every row the engine asked Distill's seats about and the action
answered (:attr:`toolkit.engine.driver.EngineGame.played`). Those rows are
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
from typing import Any

from pydantic import ValidationError

from toolkit.engine.driver import EngineGame
from toolkit.engine.records import complete
from toolkit.errors import EngineError
from toolkit.game.lineup import Entrant, lineup_entries
from toolkit.schema.models import DecisionSnapshot


def engine_records(
    result: EngineGame,
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
    records = complete(
        played,
        winner_seat=result.winner_seat,
        truncated=result.truncated,
        placements=result.placements,
        game_id=game_id,
        source=source,
        model_version=model_version,
        generation=generation,
        lineup=lineup_entries(lineup) if lineup is not None else None,
    )
    for (row, _), record in zip(played, records, strict=True):
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
    return records
