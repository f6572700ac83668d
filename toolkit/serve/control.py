"""Start, pause, resume and stop loop runs from the dashboard, without ever running one in the server.

A start or a resume spawns ``python -m toolkit --home H loop run|resume``
as a process of its own (a new session: it outlives the server, and a
signal to the server never reaches it), writing to ``runs/<name>/loop.log``.
The call returns once that process holds the run's lock, so two starts of
one run cannot both spawn a loop: the second finds the first running and is
refused. Pause and stop are the loop's step-boundary requests; a stop of a
run no process runs (paused, interrupted) marks it stopped at once.

Nothing from a request reaches a shell: the command is an argument list,
the run name is checked against the loop's name pattern, and a config is
admitted by :mod:`toolkit.serve.admission` (its files resolved in the data
root, its back end local) before the loop receives it. A start or resume
takes one of the server's :class:`~toolkit.serve.admission.LoopSlots`.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

from toolkit.config import load_config, optional_field
from toolkit.errors import ConfigError, DistillError
from toolkit.layout import Layout
from toolkit.loop.config import NAME_PATTERN, LoopConfig
from toolkit.loop.run import request, stop_idle
from toolkit.loop.state import RunFolder
from toolkit.loop.status import RunStatus, run_status
from toolkit.serve.admission import LoopSlots, admit_config
from toolkit.storage import no_follow, write_text_atomic

Action = Literal["start", "resume", "pause", "stop"]
# How long a start waits for the new process to take the run's lock (imports take 1-3 s on a laptop).
SPAWN_WAIT_S = 60.0


class ControlError(ConfigError):
    """A control the run's state refuses (HTTP 409)."""


class RunRef(BaseModel):
    """A loop run, by name."""

    name: str = Field(pattern=NAME_PATTERN, description="The loop run (folder runs/<name>).")


# The fields a start may set beside its config: LoopConfig's own (type, bounds, description), None for its default.
MaxGenerations = optional_field(LoopConfig, "max_generations")
Seed = optional_field(LoopConfig, "seed")


class StartRequest(RunRef):
    """A new loop run: its name, and its config (LoopConfig fields; YAML text or an object; defaults otherwise)."""

    config: dict[str, Any] | str | None = Field(None, description="LoopConfig fields, as an object or as YAML text.")
    max_generations: MaxGenerations = None
    seed: Seed = None


class ControlResult(BaseModel):
    """What a control did, and the run's status right after."""

    action: Action
    message: str
    status: RunStatus


_spawn_lock = threading.Lock()


def start_run(layout: Layout, ask: StartRequest, slots: LoopSlots) -> ControlResult:
    """Spawn a new loop run; refused if a run of that name exists.

    Raises:
        ConfigError: an invalid config, or one :func:`~toolkit.serve.admission.admit_config` refuses.
        ControlError: the run exists (resume it), or did not start.
        LoopLimitError: the server runs as many loops as ``slots`` allow.
    """
    config = loop_config(layout, ask)
    run = RunFolder(layout, config.name)
    with slots.claim(layout, config.name), _spawn_lock:
        if run.exists():
            raise ControlError(
                f"a loop run named {config.name!r} exists ({_status_word(layout, config.name)})",
                hint="resume it, or start another --name",
            )
        layout.check(write=True)
        requested = run.root / "requested-config.json"
        write_text_atomic(requested, config.file_text())
        try:
            _spawn(layout, run, ["loop", "run", "--config", str(requested)])
        finally:
            requested.unlink(missing_ok=True)  # read by the loop, which records its config in config.json
    return ControlResult(action="start", message=f"loop {config.name} started", status=run_status(layout, config.name))


def resume_run(layout: Layout, name: str, slots: LoopSlots) -> ControlResult:
    """Spawn ``loop resume`` for a run no process runs (paused, stopped, interrupted, failed).

    Raises:
        ConfigError: the config it recorded names what a start from the dashboard may not (see
            :func:`~toolkit.serve.admission.admit_config`).
        ControlError: it is running, or it finished or converged.
        LoopLimitError: the server runs as many loops as ``slots`` allow.
    """
    _allowed(layout, name, "resume")
    admit_config(layout, RunFolder(layout, name).own_config())  # what it recorded, admitted as a start is
    with slots.claim(layout, name), _spawn_lock:
        _allowed(layout, name, "resume")
        _spawn(layout, RunFolder(layout, name), ["loop", "resume", "--name", name])
    return ControlResult(action="resume", message=f"loop {name} resumed", status=run_status(layout, name))


def pause_run(layout: Layout, name: str) -> ControlResult:
    """Ask a running loop to pause at its next step boundary.

    Raises:
        ControlError: no process runs it.
    """
    _allowed(layout, name, "pause")
    request(layout, name, "pause")
    return ControlResult(
        action="pause",
        message="pause requested: the loop pauses at its next step boundary",
        status=run_status(layout, name),
    )


def stop_run(layout: Layout, name: str) -> ControlResult:
    """Ask a running loop to stop at its next step boundary; a paused or interrupted run is marked stopped at once.

    Raises:
        ControlError: the run already ended.
    """
    now = _allowed(layout, name, "stop")
    if now.pid is not None:
        request(layout, name, "stop")
        message = "stop requested: the loop stops at its next step boundary"
    else:
        try:
            stop_idle(layout, name)
        except ConfigError as error:  # a resume took the run meanwhile
            raise ControlError(error.message, hint="ask again: it is running now") from None
        message = f"loop {name} stopped (it was {now.status})"
    return ControlResult(action="stop", message=message, status=run_status(layout, name))


def _allowed(layout: Layout, name: str, action: str) -> RunStatus:
    """The run's status, if ``action`` applies to it now (see :attr:`RunStatus.controls`)."""
    now = run_status(layout, name)
    if action not in now.controls:
        doing = f"running (process {now.pid})" if now.pid is not None else now.status
        raise ControlError(
            f"cannot {action} loop run {name!r}: it is {doing}",
            hint=f"what applies now: {', '.join(now.controls) or 'nothing (it ended)'}",
        )
    return now


def loop_config(layout: Layout, ask: StartRequest) -> LoopConfig:
    """The config a start asks for: its fields over the defaults, the request's name, admitted for a loop started
    from the server (see :func:`~toolkit.serve.admission.admit_config`: a relative path is read from the data root).

    Raises:
        ConfigError: naming each invalid or refused field.
    """
    fields = ask.config if isinstance(ask.config, dict) else _yaml(ask.config)
    overrides = {k: v for k, v in (("max_generations", ask.max_generations), ("seed", ask.seed)) if v is not None}
    return admit_config(layout, load_config(LoopConfig, None, {**fields, **overrides, "name": ask.name}))


def _yaml(text: str | None) -> dict[str, Any]:
    if not text or not text.strip():
        return {}
    try:
        fields = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"the config is not valid YAML: {error}", hint="give LoopConfig fields as YAML") from None
    if not isinstance(fields, dict):
        raise ConfigError("the config must be a mapping of LoopConfig fields", hint="e.g. max_generations: 2")
    return fields


def _spawn(layout: Layout, run: RunFolder, args: list[str]) -> None:
    """Run ``distill <args>`` detached and wait until it holds the run and its state is saved (a status read at
    once then finds it), or tell why it did not start."""
    run.root.mkdir(parents=True, exist_ok=True)
    with open(run.log_path, "ab", opener=no_follow) as log:
        process = subprocess.Popen(  # noqa: S603 - an argument list of checked values, no shell
            [sys.executable, "-m", "toolkit", "--home", str(layout.home), *_lake_args(layout), *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    threading.Thread(target=_reap, args=(process, run.log_path), daemon=True).start()
    deadline = time.monotonic() + SPAWN_WAIT_S
    while time.monotonic() < deadline:
        if run.process() == process.pid and run.exists():  # the loop saves its state just after taking the lock
            return
        if process.poll() is not None:
            raise ControlError(
                f"the loop process ended at once (exit {process.returncode}): {_tail(run.log_path)}",
                hint=f"see {run.log_path}",
            )
        time.sleep(0.05)
    raise ControlError(
        f"the loop process {process.pid} did not take its run within {SPAWN_WAIT_S:.0f} s", hint=f"see {run.log_path}"
    )


def _reap(process: subprocess.Popen[bytes], log_path: Path) -> None:
    """Wait for a loop process and, where it did not exit cleanly, say how it ended at the end of its log (a
    loop killed from outside, by the kernel's out-of-memory killer say, writes no last words of its own)."""
    code = process.wait()
    if code == 0:
        return
    how = f"was killed by signal {-code} ({_signal_name(-code)})" if code < 0 else f"exited with code {code}"
    with contextlib.suppress(OSError), open(log_path, "a", encoding="utf-8", opener=no_follow) as log:
        log.write(f"distill serve: the loop process {process.pid} {how}\n")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"


def _lake_args(layout: Layout) -> list[str]:
    return ["--lake", layout.lake_uri] if layout.lake_uri else []


def _tail(path: Path, lines: int = 3) -> str:
    try:
        return " | ".join(path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no output)"


def _status_word(layout: Layout, name: str) -> str:
    try:
        return run_status(layout, name).status
    except DistillError:
        return "unreadable"
