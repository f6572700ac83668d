"""Where each loop run of a data root stands: what ``distill loop status`` prints and the dashboard shows.

The status comes from the run folder alone (``state.json``, the requests,
the run lock), never from the catalog, so it is read without waiting for a
loop that is writing. A run whose state says ``running`` while no process
holds its lock was interrupted (a crash, a kill, a reboot): it shows as
``interrupted``, and ``distill loop resume`` continues it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from toolkit.layout import Layout
from toolkit.loop.config import NAME_PATTERN
from toolkit.loop.state import PAUSE, STOP, RunFolder

Shown = Literal["running", "paused", "stopped", "converged", "finished", "failed", "interrupted"]


class RunStatus(BaseModel):
    """One loop run, now."""

    name: str
    status: Shown = Field(description="As saved, except 'interrupted': saved as running, but no process runs it.")
    message: str | None
    generation: int = Field(description="The generation being run (or the last one, once the run ended).")
    attempt: int
    last_step: str | None = Field(description="The last finished step of the current generation, '<attempt>:<step>'.")
    running_step: str | None = Field(
        None, description="The step a running loop is in now, '<attempt>:<step>' (None when no process runs it)."
    )
    now: str = Field("", description="What the run does now, in words: 'running: selfplay (generation 1, attempt 0)'.")
    steps_done: int = Field(description="Finished steps of the current generation, all attempts.")
    generations_recorded: int = Field(description="Generations with a complete record (the history's length).")
    last_outcome: str | None = Field(description="Outcome and reason of the last recorded generation.")
    current_student: str | None = Field(description="The promoted student's card, relative to the data root.")
    current_ppo: str | None = Field(description="The promoted PPO model's card, relative to the data root.")
    exploitability: float | None = Field(
        description="The last recorded generation's exploitability: its exploiter's win rate against three copies "
        "of the promoted student (25% is even)."
    )
    started_at: str
    updated_at: str
    requests: Literal["STOP", "PAUSE"] | None = Field(description="A stop or pause asked for and not yet obeyed.")
    pid: int | None = Field(description="The process running the loop, when one is.")
    controls: list[Literal["pause", "resume", "stop"]] = Field(description="What can be asked of the run now.")


def run_status(layout: Layout, name: str) -> RunStatus:
    """The status of run ``name``.

    Raises:
        ConfigError: an invalid name, or no such run.
    """
    run = RunFolder(layout, name)
    # Whether a process runs it, then its state: a loop saves its last state before it lets go of its lock, so a
    # state read after the lock was found free is the last one (read the other way round, a loop that finished
    # between the two reads showed as interrupted).
    pid = run.process()
    state = run.load()
    gen = state.generations[state.generation] if state.generation < len(state.generations) else None
    done = sorted(gen.steps, key=lambda k: gen.steps[k].finished_at) if gen else []
    records = run.records()
    last = records[-1] if records else None
    requested = run.requested()
    # A process that holds the run's lock runs it, whatever its last saved state says: a loop that paused, stopped
    # or finished saved that state and is letting go of its lock (until it has, a resume is refused), and a loop
    # resumed from the dashboard holds the lock before it saves "running".
    shown = "running" if pid is not None else "interrupted" if state.status == "running" else state.status
    running = state.running_step if pid is not None and state.status == "running" else None
    return RunStatus(
        name=state.name,
        status=shown,
        controls=_controls(shown, pid),
        message=state.message,
        generation=state.generation,
        attempt=gen.attempt if gen else 0,
        last_step=done[-1] if done else None,
        running_step=running,
        now=_now(shown, running, state.generation, done[-1] if done else None),
        steps_done=len(done),
        generations_recorded=len(records),
        last_outcome=f"gen {last['generation']}: {last['outcome']} - {last['reason']}" if last else None,
        current_student=state.current_student,
        current_ppo=state.current_ppo,
        exploitability=last.get("exploitability") if last else None,
        started_at=state.started_at,
        updated_at=state.updated_at,
        requests=requested if requested in (STOP, PAUSE) else None,
        pid=pid,
    )


def _controls(status: str, pid: int | None) -> list[Literal["pause", "resume", "stop"]]:
    if pid is not None:
        return ["pause", "stop"]
    if status in ("finished", "converged"):
        return []
    return ["resume", "stop"] if status in ("paused", "interrupted", "failed") else ["resume"]


def list_runs(layout: Layout) -> list[RunStatus]:
    """Every loop run of the data root, most recently updated first (folders that are not runs are skipped)."""
    import re

    if not layout.runs.is_dir():
        return []
    found = [
        run_status(layout, p.name)
        for p in layout.runs.iterdir()
        if re.fullmatch(NAME_PATTERN, p.name) and (p / "state.json").exists()
    ]
    return sorted(found, key=lambda s: s.updated_at, reverse=True)


def _now(shown: str, running: str | None, generation: int, last: str | None) -> str:
    """The status in words: the step under way while running, else where the run stands."""
    if running is not None:
        attempt, _, step = running.partition(":")
        return f"running: {step} (generation {generation}, attempt {attempt})"
    if last is None:
        return shown
    attempt, _, step = last.partition(":")
    return f"{shown} after {step} (generation {generation}, attempt {attempt})"
