"""The Distill game: a small, honest 4-player Commander (see ``rules``)."""

from typing import Final, Literal

DEFAULT_MAX_ROUNDS: Final = 30
"""The turn limit a game has unless told otherwise (``rules.RulesConfig.max_rounds``): simulate, evaluate,
tournaments, PPO and the loop all default to it, so a rating, a gate and a training run count truncations alike.
Here, not in ``rules``, so the CLI can state it in its help without importing the game."""

PLAYER_TYPES: Final = ("random", "heuristic", "tuned")
"""The built-in players a seat can hold by name (:func:`toolkit.game.players.make_player` makes them)."""

Compression = Literal["none", "gzip", "zstd"]
"""How a decision log is compressed (:class:`toolkit.game.records.DecisionWriter` writes each)."""
