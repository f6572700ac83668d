"""What the dashboard lets a request start: a config that reads only the data root and runs only here, and no
more loops at once than the server allows.

- Paths: every path a start's config holds (found by walking the config's
  fields: the bootstrap logs, the data gate's suite, any path field added
  later) is resolved once against the data root, symlinks followed, and
  must name a regular file under it. The loop receives the resolved paths,
  so it reads exactly the file that was checked, never one relative to the
  server's working folder.
- Back end: game jobs run on this machine (``auto``, ``inprocess`` or
  ``pool``), with at most its cores as workers; never on Ray, whose address
  would let a request send the jobs (and the data root's models) anywhere.
- Engine: none. A lab's engine is a program the loop starts; a request may
  not name one (its command would run on this machine at a web request's
  word), so loops on an engine start from ``distill loop run --config``.
- Loops at once: at most ``limit`` loops hold a run of the data root,
  whoever started them (the dashboard or ``distill loop run``); a start or a
  resume past that is refused (HTTP 429, with ``Retry-After``), never queued,
  so nothing waits in a server that may be stopped before it runs.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from toolkit.config import map_paths
from toolkit.errors import ConfigError, UsageError
from toolkit.jobs.backends import free_cores
from toolkit.layout import Layout
from toolkit.loop.config import NAME_PATTERN, LoopConfig
from toolkit.loop.state import RunFolder

LOCAL_BACKENDS: Final = ("auto", "inprocess", "pool")
# Loops the dashboard runs at once by default: each trains with torch on the cores it finds.
DEFAULT_MAX_LOOPS: Final = max(2, (os.cpu_count() or 2) // 2)
# Sections of a loop's config a start request may not hold: what they name is run, not read.
REFUSED_SECTIONS: Final = ("engine",)
RETRY_AFTER_S: Final = 30  # what a refused start is told: tiny loops take seconds, real ones minutes


class LoopLimitError(UsageError):
    """The server runs as many loops as it allows (HTTP 429)."""

    retry_after = RETRY_AFTER_S


def admit_config(layout: Layout, config: LoopConfig) -> LoopConfig:
    """``config`` as a loop started from a request runs it: every path resolved to a file in the data root, the
    back end checked to be local and bounded.

    Raises:
        ConfigError: naming every refused field at once.
    """
    problems: list[str] = []

    def inside(where: str, path: Path) -> Path:
        resolved = (layout.home / path).resolve()
        if not resolved.is_relative_to(layout.home):
            problems.append(f"{where}: {path} is outside the data root {layout.home}")
        elif not resolved.is_file():
            kind = "a folder" if resolved.is_dir() else "not a file" if resolved.exists() else "missing"
            problems.append(f"{where}: {path} is {kind} in the data root (name a file under {layout.home})")
        return resolved

    problems += [
        f"{name}: the dashboard starts no engine (its command would run on this machine); leave it out"
        for name in REFUSED_SECTIONS
        if getattr(config, name) is not None
    ]
    admitted = map_paths(config, inside)
    problems += _backend_problems(config)
    if problems:
        raise ConfigError(
            "; ".join(problems),
            hint="a loop started from the dashboard reads only files under the data root and runs its games on "
            "this machine, in Distill's game; run other loops with `distill loop run --config`",
        )
    return admitted


def _backend_problems(config: LoopConfig) -> list[str]:
    backend, cores, problems = config.backend, free_cores(), []
    if backend.kind not in LOCAL_BACKENDS:
        local = ", ".join(LOCAL_BACKENDS)
        problems.append(f"backend.kind: {backend.kind!r} is not run from the dashboard (use {local})")
    if backend.address is not None:
        problems.append("backend.address: the dashboard connects to no cluster (leave it out)")
    if backend.workers is not None and backend.workers > cores:
        problems.append(f"backend.workers: {backend.workers} is more than this machine's {cores} cores")
    return problems


def running_loops(layout: Layout) -> set[str]:
    """The runs of the data root a process runs now (the holders of their run locks)."""
    if not layout.runs.is_dir():
        return set()
    names = (p.name for p in layout.runs.iterdir() if re.fullmatch(NAME_PATTERN, p.name))
    return {name for name in names if RunFolder(layout, name).process() is not None}


@dataclass
class LoopSlots:
    """At most ``limit`` loops at once on the data root: those running, and those this server is starting."""

    limit: int = DEFAULT_MAX_LOOPS
    _starting: list[str] = field(default_factory=list)  # a name twice: two requests start it (one will be refused)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @contextlib.contextmanager
    def claim(self, layout: Layout, name: str) -> Iterator[None]:
        """Hold a slot for run ``name`` while it is being started (once started, its run lock holds it).

        Raises:
            LoopLimitError: ``limit`` loops run or are being started.
        """
        with self._lock:
            busy = running_loops(layout) | set(self._starting)
            if name not in busy and len(busy) >= self.limit:
                raise LoopLimitError(
                    f"{len(busy)} loops run on this data root, as many as this server starts at once ({self.limit})",
                    hint="wait for one to finish, or pause or stop one; `distill serve --max-loops N` allows more",
                )
            self._starting.append(name)
        try:
            yield
        finally:
            with self._lock:
                self._starting.remove(name)
