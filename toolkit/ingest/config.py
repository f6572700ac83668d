"""What the ingest stage is told: how to read files (``distill validate``) and how to ingest them
(``distill ingest``)."""

from __future__ import annotations

import re
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolkit import limits
from toolkit.errors import ConfigError
from toolkit.schema.vocab import DIALECTS, SOURCE_PATTERN

# Bytes of lines per chunk (~8,000 canonical records): each chunk is one part
# handed between threads, with a fixed cost (column checks, partition runs,
# lineage) that larger chunks spread thinner; 16 MB took ~6% less CPU than 8 MB.
CHUNK_BYTES: Final[int] = 16 << 20
# The longest line read by default (``ReadOptions.max_line_bytes``); a longer one is rejected unread.
MAX_LINE_BYTES: Final[int] = 4 << 20


class ReadOptions(BaseModel):
    """How to read decision-log files."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dialect: str | None = Field(
        default=None,
        description=f"Force this dialect for every line, one of {', '.join(DIALECTS)}; default: detect (--dialect).",
    )
    source: str | None = Field(
        default=None, description="Force the source role of every row, e.g. forge or ppo (--source)."
    )
    max_line_bytes: int = Field(
        default=MAX_LINE_BYTES,
        ge=1024,
        le=limits.MAX_LINE_BYTES,
        description="Longer lines are rejected unread: skipped to their newline, their first 4 KiB quarantined "
        "(--max-line-bytes).",
    )
    max_stdin_bytes: int = Field(
        default=64 << 30,
        ge=1,
        le=limits.MAX_BYTES,
        description="Standard input (path '-') longer than this is refused, not spooled.",
    )
    chunk_bytes: int = Field(
        default=CHUNK_BYTES, ge=1 << 10, le=limits.MAX_LINE_BYTES, description="Bytes of lines parsed per chunk."
    )
    workers: int = Field(default=2, ge=1, le=64, description="Threads parsing chunks on the fast path.")

    @field_validator("dialect")
    @classmethod
    def _known_dialect(cls, value: str | None) -> str | None:
        if value is not None and value not in DIALECTS:
            raise ConfigError(f"--dialect {value!r} is unknown", hint=f"use one of {', '.join(DIALECTS)}")
        return value

    @field_validator("source")
    @classmethod
    def _source_slug(cls, value: str | None) -> str | None:
        if value is not None and not re.match(SOURCE_PATTERN, value):
            raise ConfigError(
                f"--source {value!r} is not a lowercase slug", hint="use e.g. forge, sim, ppo (a-z, 0-9, _ or -)"
            )
        return value


class IngestConfig(BaseModel):
    """What ``distill ingest`` does; every field is a CLI flag."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    read: ReadOptions = Field(default_factory=ReadOptions)
