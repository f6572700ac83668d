"""A loop's state on disk: what each step did, where the loop is, and the requests it obeys.

``runs/<name>/`` holds::

    config.json          the config the run started with, with its format version (resume reuses it)
    state.json           every generation's steps, their typed inputs and results (rewritten atomically after each step)
    generations.jsonl    one complete record per finished generation (the view `generations` in distill sql)
    events.jsonl         one line per finished step, with its timing
    ratings.json         the persistent rating pool
    STOP, PAUSE          requests, obeyed at the next step boundary
    run.lock             held (flock, with its pid) by the one process running the loop
    loop.log             what a loop started by the dashboard printed
    gen-NNN/...          checkpoints, exports, logs of each generation and attempt

A step that finished is never run again: resume replays nothing and goes on
at the first pending step. A step interrupted by a crash runs again from its
start (each step clears its own half-written outputs first).

Every path these files record into the data root is relative to it
(``toolkit.layout.Layout.stored``), so a run folder copied or moved with its
root resumes there. Version 2 states recorded absolute paths; they are read
with the paths under the root they were written in made relative.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.errors import ConfigError
from toolkit.jsontext import loads_strict
from toolkit.layout import (
    GENERATION_RECORD_FORMAT_VERSION,
    RUN_CONFIG_FORMAT_VERSION,
    STATE_FORMAT_VERSION,
    Layout,
    checked_name,
    generation_label,
)
from toolkit.storage import (
    LockHeldError,
    exclusive_lock,
    lock_holder,
    open_append,
    read_versioned,
    versioned,
    write_text_atomic,
)

if TYPE_CHECKING:
    from toolkit.loop.config import LoopConfig

_CONFIG_HINT: Final = "restore the run's folder from a backup, or start a new run with another --name"
STOP: Final = "STOP"
PAUSE: Final = "PAUSE"
Status = Literal["running", "paused", "stopped", "converged", "finished", "failed"]


class RunNotFoundError(ConfigError):
    """No loop run of that name in the data root."""


class StepRecord(BaseModel):
    """A finished step: its typed input and result, as saved (the driver reloads the result as its type)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    attempt: int
    seconds: float
    finished_at: str
    input: dict[str, Any]
    result: dict[str, Any]


class PromotedModel(BaseModel):
    """A model the loop promoted: the league's past opponents and the ratings' history."""

    model_config = ConfigDict(extra="forbid")

    generation: int
    kind: Literal["student", "ppo"]
    name: str = Field(description="Its rating name, gen-NNN-student or gen-NNN-ppo.")
    checkpoint: str = Field(description="Its card, relative to the data root.")


class GenerationState(BaseModel):
    """One generation: its attempts' steps, and its outcome once decided."""

    model_config = ConfigDict(extra="forbid")

    generation: int
    attempt: int = 0
    steps: dict[str, StepRecord] = Field(default_factory=dict, description="Key: '<attempt>:<step>'.")
    outcome: Literal["pending", "passed", "failed"] = "pending"
    reason: str | None = None

    def batches(self) -> set[str]:
        """The batches this generation's ingest steps recorded (every attempt), with the lake's batches that held
        some of their files' decisions already (the same games, logged before)."""
        return {
            batch
            for step in self.steps.values()
            if step.name == "ingest"
            for batch in [*step.result.get("batches", []), *step.result.get("held_by", [])]
        }


class LoopState(BaseModel):
    """Where a loop is."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = STATE_FORMAT_VERSION
    name: str
    status: Status = "running"
    generation: int = 0
    started_at: str
    updated_at: str
    generations: list[GenerationState] = Field(default_factory=list)
    running_step: str | None = Field(
        None, description="The step under way, '<attempt>:<step>' of the current generation (None between steps)."
    )
    current_student: str | None = Field(None, description="Card of the promoted student (relative to the root).")
    current_ppo: str | None = Field(None, description="Card of the promoted PPO model (relative to the root).")
    promoted: list[PromotedModel] = Field(default_factory=list, description="Every promotion, in order.")
    message: str | None = None

    def batches(self) -> set[str]:
        """Every batch this run's ingest steps recorded (bootstrap logs and self-play exports)."""
        return {batch for gen in self.generations for batch in gen.batches()}

    def gen(self, generation: int) -> GenerationState:
        while len(self.generations) <= generation:
            self.generations.append(GenerationState(generation=len(self.generations)))
        return self.generations[generation]


class RunFolder:
    """The files of one loop run."""

    def __init__(self, layout: Layout, name: str) -> None:
        self.layout = layout
        self.root = layout.inside(layout.runs / checked_name(name, "loop run name"))
        self.state_path = layout.inside(self.root / "state.json")
        self.config_path = layout.inside(self.root / "config.json")
        self.generations_path = layout.inside(self.root / "generations.jsonl")
        self.events_path = layout.inside(self.root / "events.jsonl")
        self.ratings_path = layout.inside(self.root / "ratings.json")

    @property
    def lock_path(self) -> Path:
        return self.layout.inside(self.root / "run.lock")

    @property
    def log_path(self) -> Path:
        """Where a loop started in the background (``distill serve``) writes its output."""
        return self.layout.inside(self.root / "loop.log")

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Be the one process running this loop for the block (an OS lock, released by a crash or kill too).

        Raises:
            ConfigError: another process is running it.
        """
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(exclusive_lock(self.lock_path))
            except LockHeldError as held:
                name = self.root.name
                raise ConfigError(
                    f"loop run {name!r} is already running (process {held.pid or '?'})",
                    hint=f"follow it with `distill loop status --name {name}`, or ask it to stop "
                    f"with `distill loop stop --name {name}`",
                ) from None
            yield

    def process(self) -> int | None:
        """The id of the process running this loop now, or None when none is."""
        return lock_holder(self.lock_path)

    def gen_dir(self, generation: int, attempt: int | None = None) -> Path:
        folder = self.root / generation_label(generation)
        return self.layout.inside(folder if attempt is None else folder / f"attempt-{attempt}")

    def exists(self) -> bool:
        return self.state_path.exists()

    def load(self) -> LoopState:
        if not self.exists():
            raise RunNotFoundError(f"no loop run at {self.root}", hint="start one with `distill loop run`")
        return read_versioned(
            self.state_path,
            LoopState,
            STATE_FORMAT_VERSION,
            what="loop state",
            error=ConfigError,
            hint="start a new run with another --name",
            upgrades={2: lambda raw: reroot(raw, self.root.name)},
        )

    def config(self) -> LoopConfig:
        """The config the run started with (``config.json``); a file from before the format carried a version is
        read as version 1.

        Raises:
            ConfigError: it is missing, invalid, or of a format version this Distill does not read (a newer one's).
        """
        from toolkit.loop.config import LoopConfig

        return read_versioned(
            self.config_path,
            LoopConfig,
            RUN_CONFIG_FORMAT_VERSION,
            what="loop config",
            error=ConfigError,
            hint=_CONFIG_HINT,
            upgrades=LoopConfig.FORMAT_UPGRADES,
            unversioned=1,
        )

    def own_config(self) -> LoopConfig:
        """The config a resume of this run runs: :meth:`config`, which must be this run's.

        Raises:
            ConfigError: as :meth:`config`, or it is the config of another run than its folder's.
        """
        config = self.config()
        if config.name != self.root.name:
            raise ConfigError(
                f"{self.config_path} is the config of run {config.name!r}, not of {self.root.name!r}",
                hint=_CONFIG_HINT,
            )
        return config

    def write_config(self, config: LoopConfig) -> None:
        """Record the config the run starts with, with its format version."""
        write_text_atomic(self.config_path, config.file_text())

    def save(self, state: LoopState) -> None:
        state.updated_at = now()
        write_text_atomic(self.state_path, state.model_dump_json(indent=1))

    def append(self, path: Path, record: dict[str, Any]) -> None:
        with open_append(self.layout.inside(path)) as handle:
            handle.write(json.dumps(record, default=str, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def request(self, kind: str) -> None:
        """Ask a running loop to stop or pause at its next step boundary."""
        write_text_atomic(self.layout.inside(self.root / kind), now() + "\n")

    def requested(self) -> str | None:
        for kind in (STOP, PAUSE):
            if (self.root / kind).exists():
                return kind
        return None

    def clear_requests(self) -> None:
        for kind in (STOP, PAUSE):
            (self.root / kind).unlink(missing_ok=True)

    def records(self) -> list[dict[str, Any]]:
        """The generation records written so far (the last one per generation wins)."""
        if not self.generations_path.exists():
            return []
        if not self.generations_path.is_file():  # a FIFO would hang the reader
            raise ConfigError(
                f"{self.generations_path} is not a regular file", hint="restore the run's folder from a backup"
            )
        from toolkit.loop.record import GenerationRecord

        hint = "restore the run's folder from a backup (the records are written by the loop only)"
        latest: dict[int, dict[str, Any]] = {}
        text = self.generations_path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                where = f"{self.generations_path}:{number}"
                try:
                    raw = reroot(loads_strict(line), self.root.name)
                except ValueError as error:  # not JSON, or JSON too deep or with a key twice
                    raise ConfigError(f"{where} is not a generation record: {error}", hint=hint) from None
                record = versioned(
                    raw,
                    GenerationRecord,
                    GENERATION_RECORD_FORMAT_VERSION,
                    where=where,
                    what="generation record",
                    error=ConfigError,
                    hint=hint,
                    upgrades={1: dict},  # version 1: the same record, without its version
                    unversioned=1,
                    article="a",
                )
                latest[record.generation] = {**raw, "format_version": record.format_version}
        return [latest[g] for g in sorted(latest)]


def reroot(value: Any, name: str) -> Any:
    """A record of run ``name`` written with absolute paths (state version 2, its generation records), with the
    paths under the data root it was written in made relative to that root.

    That root is where the record's paths into ``runs/<name>/`` start (a run
    resumed in another root by an older Distill has several); paths outside
    them (a user's logs) stay absolute.
    """
    pattern = re.compile(rf"^(/.*)/runs/{re.escape(name)}/")
    roots = sorted({m.group(1) + "/" for text in _strings(value) if (m := pattern.match(text))}, key=len, reverse=True)

    def relative(text: str) -> str:
        prefix = next((root for root in roots if text.startswith(root)), "")
        return text[len(prefix) :]

    return _map_strings(value, relative) if roots else value


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _strings(item)


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {key: _map_strings(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_map_strings(item, change) for item in value]
    return value


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
