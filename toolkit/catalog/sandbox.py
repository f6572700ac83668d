"""What one ``distill sql`` statement may spend (:class:`SandboxLimits`), light to import (the CLI builds its
options from it at start-up; :func:`toolkit.catalog.views.seal` applies it)."""

from __future__ import annotations

import re
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolkit.limits import MAX_SECONDS

DEFAULT_TIMEOUT_S: Final = 300.0
DEFAULT_MEMORY_LIMIT: Final = "25%"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%|B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)\s*$", re.IGNORECASE)


class SandboxLimits(BaseModel):
    """What one statement on a sandboxed catalog (``distill sql``) may spend; set by :func:`seal`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: float = Field(
        DEFAULT_TIMEOUT_S,
        ge=0,
        le=MAX_SECONDS,
        description="Seconds a statement may run, its output included; 0: no limit (--timeout).",
    )
    memory_limit: str = Field(
        DEFAULT_MEMORY_LIMIT,
        description="Memory DuckDB may use: a size (512MB, 4GB, 2GiB) or a share of this machine's (25%) "
        "(--memory-limit).",
    )

    @field_validator("memory_limit")
    @classmethod
    def _a_size_or_a_share(cls, value: str) -> str:
        found = _SIZE.match(value)
        if found is None or float(found[1]) <= 0 or (found[2] == "%" and float(found[1]) > 100):
            raise ValueError(f"give a size such as 4GB or 512MiB, or a share such as 25% (not {value!r})")
        return value.strip()

    @property
    def timeout_ms(self) -> int:
        """DuckDB's ``max_execution_time``: milliseconds, 0 for none."""
        return 0 if self.timeout == 0 else max(1, round(self.timeout * 1000))
