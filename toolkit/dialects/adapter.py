"""The per-file, streaming converter: :class:`FileAdapter`."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any, Final

from toolkit.dialects.detect import detect_dialect
from toolkit.dialects.forge import convert_forge
from toolkit.dialects.ppo_legacy import convert_ppo_legacy
from toolkit.dialects.raw import json_type
from toolkit.dialects.sequence import DecisionSequencer, Numbered
from toolkit.dialects.sim import convert_ds, convert_sim
from toolkit.errors import ConfigError, DialectError
from toolkit.schema.vocab import DIALECTS, SOURCE_PATTERN

Converter = Callable[[dict[str, Any]], dict[str, Any]]

# One converter per non-canonical dialect: the registry, not an if/elif chain.
CONVERTERS: Final[dict[str, Converter]] = {
    "forge": convert_forge,
    "sim": convert_sim,
    "ds": convert_ds,
    "ppo_legacy": convert_ppo_legacy,
}


class FileAdapter:
    """Per-file, streaming, stateful converter for the non-canonical dialects.

    Feed the records of one file in order, then call :meth:`finish`. Rows may
    come back later than they were fed (the latest row of each (game, seat) is
    held back until it is known whether it is terminal); each comes back with
    its line number.

    Without a forced dialect each record is detected on its own, with one
    refinement: once a game was seen as ``ds``, its rows detected as ``sim``
    are ``ds`` too (a ``ds`` row can look like ``sim`` when its game id lacks
    the ``ds-`` prefix and its type is common to both).

    Attributes:
        dialects_seen: rows per dialect detected (or forced), bad rows included
            once their dialect was known.
    """

    def __init__(self, *, dialect: str | None = None, source: str | None = None) -> None:
        """Create an adapter for one file.

        Args:
            dialect: force this dialect for every row of the file instead of
                detecting it.
            source: force this ``source`` role on every row (a lowercase slug).

        Raises:
            ConfigError: an unknown dialect or a source that is not a slug.
        """
        if dialect is not None and dialect not in DIALECTS:
            raise ConfigError(f"unknown dialect {dialect!r}; choose one of {', '.join(DIALECTS)}")
        if source is not None and (not isinstance(source, str) or not re.match(SOURCE_PATTERN, source)):
            raise ConfigError(f"source {source!r} must be a lowercase slug matching {SOURCE_PATTERN}")
        self.dialect = dialect
        self.source = source
        self.dialects_seen: Counter[str] = Counter()
        self._sequencer = DecisionSequencer()
        self._ds_games: set[str] = set()

    def feed(self, line_no: int, record: dict[str, Any]) -> list[Numbered]:
        """Convert one record; return the canonical rows now complete, with their line numbers.

        Args:
            line_no: the record's line number in the file.
            record: the parsed JSON line.

        Returns:
            Zero or more ``(line_no, canonical dict)`` pairs.

        Raises:
            DialectError: this line cannot be converted; the adapter's state is
                unchanged, so the caller can skip (quarantine) it and go on.
        """
        dialect = self._dialect_of(record)
        self.dialects_seen[dialect] += 1
        if dialect == "canonical":
            return [(line_no, record if self.source is None else {**record, "source": self.source})]
        row = CONVERTERS[dialect](record)
        if self.source is not None:
            row["source"] = self.source
        if dialect == "ds":
            self._ds_games.add(row["game_id"])
        return self._sequencer.push(line_no, row)

    def finish(self) -> list[Numbered]:
        """Release the rows held back, each the terminal row of its (game, seat), in line order."""
        return self._sequencer.finish()

    def _dialect_of(self, record: Any) -> str:
        if self.dialect is not None:
            if not isinstance(record, dict):
                raise DialectError(f"a decision record must be a JSON object, got {json_type(record)}", field="")
            return self.dialect
        dialect = detect_dialect(record)
        game_id = record.get("game_id")
        if dialect == "sim" and isinstance(game_id, str) and game_id in self._ds_games:
            return "ds"
        return dialect
