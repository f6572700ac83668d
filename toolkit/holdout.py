"""The fixed holdout: a game's split is a pure function of a salted hash of its id.

Adding data, rebuilding, reordering or reweighting never moves a game across
the split, because nothing but the game id and the salt enters the rule. The
same rule is available in Python (:func:`in_holdout`) and as a DuckDB SQL
expression (:func:`holdout_sql`) so builds can split inside the query; a test
keeps the two identical.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Final

RULE: Final = "md5(salt || ':' || game_id), first 15 hex digits as an integer / 16**15 < fraction"
_DIGITS: Final = 15
_SCALE: Final = 16**_DIGITS


@dataclass(frozen=True)
class HoldoutRule:
    """A holdout of ``fraction`` of games, chosen by ``salt``."""

    salt: str
    fraction: float

    def __post_init__(self) -> None:
        if not 0.0 < self.fraction < 1.0:
            raise ValueError(f"holdout fraction must be in (0, 1), got {self.fraction}")

    @property
    def threshold(self) -> int:
        return int(self.fraction * _SCALE)

    def describe(self) -> dict[str, object]:
        return {"rule": RULE, "salt": self.salt, "fraction": self.fraction}


def game_hash(game_id: str, salt: str) -> int:
    """The 60-bit hash a game's split is drawn from."""
    digest = hashlib.md5(f"{salt}:{game_id}".encode(), usedforsecurity=False).hexdigest()
    return int(digest[:_DIGITS], 16)


def in_holdout(game_id: str, rule: HoldoutRule) -> bool:
    """Whether ``game_id`` belongs to the holdout under ``rule``."""
    return game_hash(game_id, rule.salt) < rule.threshold


def holdout_sql(game_id_column: str, rule: HoldoutRule) -> str:
    """A DuckDB boolean expression equal to :func:`in_holdout` for each row."""
    salt = rule.salt.replace("'", "''")
    digest = f"md5('{salt}' || ':' || {game_id_column})"
    return f"(('0x' || left({digest}, {_DIGITS}))::UBIGINT < {rule.threshold})"
