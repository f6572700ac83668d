"""The largest value Distill takes for each kind of number a user gives: every count, size, duration and rate of a
config field or a CLI option is bounded by one of these (a test walks them all), so a typo such as
``--games 99999999999999999999`` is a clear error naming the flag, never hours of work or gigabytes of memory.

Each bound is far past what a lab's largest run asks for, and small enough that the work it allows fits a
machine: raise one here (one place) when a real run needs more.
"""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import Field

MAX_SEED: Final = 2**63 - 1  # a seed: the protocol's and numpy's 63 bits
MAX_GAMES: Final = 10_000_000  # games one command plays (evaluate, simulate, export, a gate)
MAX_DEALS: Final = 1_000_000  # deals of a sequential test or a tournament lineup
MAX_STEPS: Final = 10_000_000_000  # learner decisions of a PPO run
MAX_ENVS: Final = 4_096  # games stepped together by PPO
MAX_ROLLOUT: Final = 1_000_000  # steps per env per rollout
MAX_BATCH: Final = 1 << 22  # rows or games per step (about four million)
MAX_EPOCHS: Final = 10_000  # passes over a dataset or a rollout, patience in epochs
MAX_UPDATES: Final = 1_000_000  # optimiser updates (a critic warm-up)
MAX_RATE: Final = 1.0  # a learning rate, a fraction, a share
MAX_COEF: Final = 1_000.0  # a loss coefficient, a clipping norm, a KL bound, a league weight
MAX_WEIGHT: Final = 1e9  # a source's relative weight (a ratio: one source may weigh thousands of times another)
MAX_ROWS: Final = 1_000_000_000  # rows per file, per chunk, per read
MAX_MB: Final = 1 << 20  # a memory size in MiB (a TiB)
DEFAULT_TARGET_MB: Final = 128  # the size `lake compact` merges small files into, by default
MAX_WORKERS: Final = 1_024  # processes or workers of a job
MAX_MODELS: Final = 1_000  # models a league keeps, retries, tables, generations a rule looks back over
MAX_GENERATION: Final = 1_000_000  # a loop generation's number
MAX_VERSION: Final = 1_000_000  # a version number a user picks (a dataset id's -vN)
MAX_REWARD: Final = 1e9  # the size of a reward or an episode return a filter compares to
MAX_LAYER: Final = 65_536  # units of a hidden layer
MAX_SECONDS: Final = 86_400.0 * 7  # a duration (a week)
MAX_RETAIN_DAYS: Final = 36_500.0  # days of lake versions kept readable (a century)
MAX_LINE_BYTES: Final = 1 << 30  # a log line, a chunk of lines (a GiB)
MAX_BYTES: Final = 1 << 50  # a stream's size in bytes (a PiB)
MAX_ERRORS: Final = 1_000_000_000  # errors printed or counted
MAX_ROUNDS: Final = 1_000  # a game's turn limit (rounds)

# The turn limit of every config that plays games and of every --max-rounds: one bound, one description (its
# default, the same everywhere, is toolkit.game.DEFAULT_MAX_ROUNDS).
MAX_ROUNDS_HELP: Final = (
    "Rounds before a game stops at the turn limit: a truncation, nobody's win; one default for simulate, evaluate, "
    "tournament, train ppo and the loop"
)
MaxRounds = Annotated[int, Field(ge=1, le=MAX_ROUNDS, description=MAX_ROUNDS_HELP + " (--max-rounds)")]

# Element types of the fields that hold numbers in a container.
LayerSize = Annotated[int, Field(ge=1, le=MAX_LAYER)]  # a hidden layer's units
SourceWeight = Annotated[float, Field(le=MAX_WEIGHT)]  # a source's weight or share (its validator refuses negatives)
