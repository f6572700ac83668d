"""Decision order and terminal rows for dialects that log neither.

Non-canonical dialects write no decision index and no terminal flag, so both
come from the order of the file: ``decision_index`` counts a game's rows in
file order (0, 1, 2... across seats), and the LAST row of each (game, seat)
in the file is terminal (every dialect in the wild logs only games that
ended). Streaming: only the latest row of each open (game, seat) is held
back; a newer row of the same (game, seat) releases it as non-terminal, and
:meth:`DecisionSequencer.finish` releases the rest as terminal. Rows carry
the flags ``decision_index_from_file_order`` and ``terminal_from_file_order``.

Memory grows with the number of (game, seat) pairs in one file, one row each.
"""

from __future__ import annotations

from typing import Any

from toolkit.dialects.raw import add_flag
from toolkit.schema.vocab import FLAG_DECISION_INDEX_FROM_FILE_ORDER, FLAG_TERMINAL_FROM_FILE_ORDER

Numbered = tuple[int, dict[str, Any]]


class DecisionSequencer:
    """Assigns ``decision_index`` and ``is_terminal`` to converted rows of one file."""

    def __init__(self) -> None:
        self._next_index: dict[str, int] = {}
        self._held: dict[tuple[str, int], Numbered] = {}

    def push(self, line_no: int, row: dict[str, Any]) -> list[Numbered]:
        """Number ``row`` within its game and hold it; return the row it supersedes, if any.

        Args:
            line_no: the row's line number in the file.
            row: a converted record with a string ``game_id`` and an int ``seat``.

        Returns:
            The previous row of the same (game, seat), now known not to be
            terminal, or nothing.
        """
        game_id = row["game_id"]
        index = self._next_index.get(game_id, 0)
        self._next_index[game_id] = index + 1
        row["decision_index"] = index
        row["is_terminal"] = False
        add_flag(row, FLAG_DECISION_INDEX_FROM_FILE_ORDER)
        add_flag(row, FLAG_TERMINAL_FROM_FILE_ORDER)
        previous = self._held.pop((game_id, row["seat"]), None)
        self._held[(game_id, row["seat"])] = (line_no, row)
        return [] if previous is None else [previous]

    def finish(self) -> list[Numbered]:
        """Release every held row as its (game, seat)'s terminal row, in line order."""
        released = sorted(self._held.values(), key=lambda numbered: numbered[0])
        for _, row in released:
            row["is_terminal"] = True
        self._held.clear()
        return released

    @property
    def held(self) -> int:
        """How many rows are held back now."""
        return len(self._held)
