"""What an ablation does: :class:`AblateConfig`, every field documented, and the ``--vary`` grammar.

An ablation starts from one base (a built dataset, a build config, a loop
run or a loop config) and a grid of variants, each a set of field paths into
the base's config with new values (``data.weights.forge=0.05``). Values are
YAML scalars or lists (``0.3``, ``[]``, ``[ppo]``, ``null``); a ``--vary``
gives a field several values separated by commas outside brackets
(``data.wins_only=[],[ppo]``). The grid is the cartesian product of the
``--vary`` lists, or with ``zip`` their i-th values together.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolkit.datasets.config import BuildConfig
from toolkit.errors import ConfigError
from toolkit.game import DEFAULT_MAX_ROUNDS
from toolkit.jobs.config import BackendConfig
from toolkit.limits import MAX_GAMES, MAX_ROUNDS_HELP, MAX_SEED, MaxRounds
from toolkit.loop.config import LoopConfig

NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,56}$"  # the builds are named ablate-<name>, within the layout's 64
TABLE_PATTERN = r"[a-z0-9][a-z0-9_-]{0,31}"
_OPEN, _CLOSE = "[{", "]}"


class Vary(BaseModel):
    """One varied field: its dotted path into the base's config and the values it takes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str = Field(min_length=1, description="Dotted path into the base's config, e.g. data.weights.forge.")
    values: list[Any] = Field(min_length=1, description="The values it takes, in order (the first is the baseline).")

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.field.split("."))


class AblateConfig(BaseModel):
    """An ablation (``distill ablate``): one base, a grid of variants, one student each on the same seeds, every
    student on the same paired deals against the same tables."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        "ablation", pattern=NAME_PATTERN, description="Names the output ablations/<name>/ and its builds (--name)."
    )
    build: str | None = Field(None, description="Base: a built dataset, NAME or NAME@FINGERPRINT (--build).")
    build_config: BuildConfig | None = Field(None, description="Base: a build config (--build-config FILE).")
    loop: str | None = Field(
        None, description="Base: a loop run of the data root; its config and its last build's batches (--loop)."
    )
    loop_config: LoopConfig | None = Field(
        None,
        description="Base: a loop config (--loop-config FILE); the batches of its run's last build when the run "
        "exists, else every usable batch.",
    )
    vary: list[Vary] = Field(min_length=1, description="The varied fields (--vary FIELD=V1,V2,...).")
    zip: bool = Field(False, description="Pair the i-th values of every --vary instead of their product (--zip).")
    seed: int = Field(
        0,
        ge=0,
        le=MAX_SEED,
        description="Seeds every student and the deals, and a loop base's build sampling (a build base keeps its "
        "data.seed) (--seed).",
    )
    games: int = Field(1000, ge=4, le=MAX_GAMES, description="Games per student and table, seats rotated (--games).")
    tables: dict[str, tuple[str, ...]] | None = Field(
        None,
        description="Named tables of opponents (--table NAME=P,P,P); default: a loop base's evaluation tables, "
        "else three heuristics and three tuned heuristics.",
    )
    max_rounds: MaxRounds | None = Field(
        None, description=f"{MAX_ROUNDS_HELP}; default: the base loop's, else {DEFAULT_MAX_ROUNDS} (--max-rounds)."
    )
    backend: BackendConfig = Field(default_factory=BackendConfig, description="Where the variants run (--backend).")

    @model_validator(mode="after")
    def _one_base(self) -> AblateConfig:
        given = [f for f in ("build", "build_config", "loop", "loop_config") if getattr(self, f) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one base: --build NAME, --build-config FILE, --loop RUN or --loop-config FILE"
                + (f" (got {', '.join(given)})" if given else "")
            )
        fields = [v.field for v in self.vary]
        if len(set(fields)) != len(fields):
            raise ValueError("a field is varied twice: give each field one --vary with all its values")
        if self.zip and len({len(v.values) for v in self.vary}) > 1:
            raise ValueError("--zip pairs the i-th values: give every --vary the same number of values")
        return self

    @field_validator("tables")
    @classmethod
    def _tables(cls, value: dict[str, tuple[str, ...]] | None) -> dict[str, tuple[str, ...]] | None:
        if value is not None and (not value or any(not 1 <= len(p) <= 5 for p in value.values())):
            raise ValueError("each table seats 1 to 5 opponents")
        for name in value or {}:
            if not re.fullmatch(TABLE_PATTERN, name):
                raise ValueError(f"table name {name!r}: lowercase letters, digits, _ or -")
        return value


def parse_vary(text: str) -> Vary:
    """``FIELD=V1,V2,...`` as a :class:`Vary`; each value read as YAML (commas inside brackets stay in one value).

    Raises:
        ConfigError: no ``=``, an empty field or value, or a value that is not YAML.
    """
    field, sep, rest = text.partition("=")
    field = field.strip()
    if not sep or not field or not rest.strip():
        raise ConfigError(f"--vary {text!r} is not FIELD=V1,V2,...", hint="e.g. --vary data.weights.forge=0,0.05,0.3")
    values = []
    for piece in split_values(rest):
        if not piece.strip():
            raise ConfigError(f"--vary {text!r} has an empty value", hint="separate values by single commas")
        try:
            values.append(yaml.safe_load(piece))
        except yaml.YAMLError:
            raise ConfigError(
                f"--vary {text!r}: {piece!r} is not a YAML value", hint="write a number, a word, null, [] or [a, b]"
            ) from None
    return Vary(field=field, values=values)


def split_values(text: str) -> list[str]:
    """``text`` cut at the commas outside brackets and braces."""
    pieces, depth, current = [], 0, []
    for char in text:
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            pieces.append("".join(current))
            current = []
        else:
            current.append(char)
    pieces.append("".join(current))
    return pieces


def parse_table(text: str) -> tuple[str, tuple[str, ...]]:
    """``NAME=P,P,P`` as a named table of opponents.

    Raises:
        ConfigError: no ``=``, or no player.
    """
    name, sep, players = text.partition("=")
    seats = tuple(p.strip() for p in players.split(",") if p.strip())
    if not sep or not name.strip() or not seats:
        raise ConfigError(
            f"--table {text!r} is not NAME=P,P,P", hint="e.g. --table heuristic=heuristic,heuristic,heuristic"
        )
    return name.strip(), seats


def read_yaml_model(model: type[BaseModel], path: Path, flag: str) -> Any:
    """A config model from a YAML file named by ``flag``.

    Raises:
        ConfigError: the file is unreadable or invalid.
    """
    from toolkit.config import load_config

    try:
        return load_config(model, path)
    except ConfigError as error:
        raise ConfigError(f"{flag} {path}: {error.message}", hint=error.hint) from None
