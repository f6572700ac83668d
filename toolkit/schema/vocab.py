"""The shared vocabularies of the decision contract.

The 8 macro actions are shared with the Forge side: their index is their
position in :data:`MACRO_ACTIONS` and never changes.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

MacroAction = Literal[
    "cast_creature",
    "cast_removal",
    "cast_draw",
    "cast_ramp",
    "cast_commander",
    "attack_opponent",
    "hold_mana",
    "pass",
]
MACRO_ACTIONS: Final[tuple[str, ...]] = get_args(MacroAction)
N_ACTIONS: Final[int] = len(MACRO_ACTIONS)
ACTION_INDEX: Final[dict[str, int]] = {name: i for i, name in enumerate(MACRO_ACTIONS)}

Phase = Literal["main_1", "combat", "main_2", "end"]
PHASES: Final[tuple[str, ...]] = get_args(Phase)

Dialect = Literal["canonical", "forge", "sim", "ds", "ppo_legacy"]
DIALECTS: Final[tuple[str, ...]] = get_args(Dialect)

# How a row's macro-action label came to be:
#   logged    - the writer recorded the macro action itself (canonical, PPO)
#   mapped    - a one-to-one map of the engine's action type (attack -> 5)
#   card_role - a cast classified by the card-role table (removal/draw/ramp)
#   default   - a cast with no card or an unknown card, taken as a creature
#   mana_rule - pass vs hold decided by whether 2+ mana was open
LabelSource = Literal["logged", "mapped", "card_role", "default", "mana_rule"]
LABEL_SOURCES: Final[tuple[str, ...]] = get_args(LabelSource)
INFERRED_LABEL_SOURCES: Final[frozenset[str]] = frozenset({"card_role", "default", "mana_rule"})

# Roles we know by name; any other lowercase slug is accepted as a source.
# ``random`` (the simulator's random player) and ``ppo-eval`` (evaluation
# games of a PPO run) are Distill's own producers, kept apart from training data.
KNOWN_SOURCES: Final[tuple[str, ...]] = ("forge", "sim", "ds", "ppo", "random", "ppo-eval")
SOURCE_PATTERN: Final[str] = r"^[a-z][a-z0-9_-]{0,31}$"
MODEL_VERSION_PATTERN: Final[str] = r"^gen-(\d{3,})$"

# Known defects of a dialect, stamped on the rows they touch (column `flags`).
FLAG_DS_OUTCOME_AMBIGUOUS: Final[str] = "ds_outcome_ambiguous"
FLAG_PPO_ACTIVE_SEAT_MISMATCH: Final[str] = "ppo_active_seat_mismatch"
FLAG_DECISION_INDEX_FROM_FILE_ORDER: Final[str] = "decision_index_from_file_order"
FLAG_TERMINAL_FROM_FILE_ORDER: Final[str] = "terminal_from_file_order"
KNOWN_FLAGS: Final[tuple[str, ...]] = (
    FLAG_DS_OUTCOME_AMBIGUOUS,
    FLAG_PPO_ACTIVE_SEAT_MISMATCH,
    FLAG_DECISION_INDEX_FROM_FILE_ORDER,
    FLAG_TERMINAL_FROM_FILE_ORDER,
)

# Who played a seat (``lineup[].kind``, contract version 2):
#   random, heuristic, tuned   - our game's scripted players, by their player type
#   bc, ppo, ppo-recurrent     - a checkpoint of that kind (student, teacher)
#   policy                     - a learned policy of another kind (another lab's)
#   forge                      - the Forge engine's own AI
#   human                      - a person
#   unknown                    - a seat the writer knows was played, not by whom
PlayerKind = Literal[
    "random", "heuristic", "tuned", "bc", "ppo", "ppo-recurrent", "policy", "forge", "human", "unknown"
]
PLAYER_KINDS: Final[tuple[str, ...]] = get_args(PlayerKind)
UNKNOWN_KIND: Final[str] = "unknown"

# The contract version our code writes; every version it reads (a record keeps the one it was written in).
SCHEMA_VERSION: Final[int] = 2
SCHEMA_VERSIONS: Final[tuple[int, ...]] = (1, 2)
MAX_POD_SIZE: Final[int] = 8
MIN_POD_SIZE: Final[int] = 2
