"""Who sits at a table, as the decision records name it: :class:`Entrant`, one per seat of a game.

The records' ``lineup`` (contract version 2) lists every seat's player: its
kind (see ``toolkit.schema.vocab.PlayerKind``), its model version when it is
a learned policy, and its own name (a player type, a checkpoint's stem).
Writers know their players when they seat them: ``simulate`` by player type,
the PPO exporter and evaluation by league entry or checkpoint; they hand the
entrants to the decision logger (``records.build_jsonl``) with, per game,
which entrant sat where.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from toolkit.game import PLAYER_TYPES
from toolkit.schema.vocab import UNKNOWN_KIND


@dataclass(frozen=True)
class Entrant:
    """One player as a record's lineup names it."""

    kind: str
    name: str | None = None
    model_version: str | None = None

    def entry(self, seat: int) -> dict[str, Any]:
        """The canonical lineup entry of this player at ``seat`` (keys in the contract's order)."""
        return {"seat": seat, "kind": self.kind, "model_version": self.model_version, "name": self.name}


UNKNOWN: Final = Entrant(UNKNOWN_KIND)


def entrant_of(name: str) -> Entrant:
    """The entrant a player named in a config stands for: a player type (random, heuristic, tuned) is its
    own kind; any other name (a checkpoint path, a label) is an unknown player of that name."""
    if name in PLAYER_TYPES:
        return Entrant(kind=name, name=name)
    return Entrant(UNKNOWN_KIND, name=name[-200:] or None)


def lineup_entries(entrants: Sequence[Entrant]) -> list[dict[str, Any]]:
    """The canonical ``lineup`` of a game whose seat ``i`` is ``entrants[i]``."""
    return [entrant.entry(seat) for seat, entrant in enumerate(entrants)]
