"""One engine process: started in its own process group, its stdout read in frames, its stderr drained to a log.

The pitfalls of talking to a child over pipes, each designed out here:

- its stderr is drained by a thread into a log file (a pipe left full at
  64 KB would block the engine) and its last lines are kept for errors;
- its stdout carries frames only, read without blocking (:meth:`read`
  waits on the pipe with a deadline, never on a ``readline`` that could
  hang), cut by :class:`~toolkit.engine.wire.FrameBuffer` with a size cap;
- it runs in a process group of its own, asked to die with its parent (Linux
  ``PR_SET_PDEATHSIG``), and :meth:`close` kills the whole group: no engine
  outlives the driver, however the driver ends; an engine that closes its
  input early, ignores end of file or sleeps is killed at the deadline.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import fcntl
import os
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from toolkit.engine.wire import FrameBuffer, FrameError, decode, encode_frame
from toolkit.errors import EngineError
from toolkit.schema.engine import MAX_FRAME_BYTES

STDERR_LINES = 40  # kept for error messages
_PR_SET_PDEATHSIG = 1
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux; refused (and left alone) where pipes cannot grow


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class EngineProcess:
    """A running engine: frames in and out, its stderr in a log, its process group ours to end."""

    def __init__(self, command: Sequence[str], log: Path | None = None, *, name: str = "engine") -> None:
        self.command = list(command)
        self.name = name
        if not self.command:
            raise EngineError("no engine command given", phase="start", hint='--engine "PROGRAM ARGS..."')
        program = self.command[0]
        if program == "distill" and shutil.which(program) is None:
            # Distill's own command from an environment not on PATH: the interpreter running this Distill
            self.command[:1] = [sys.executable, "-m", "toolkit"]
        elif shutil.which(program) is None:
            raise EngineError(
                f"the engine program {program!r} is not found (not a path to an executable, nor on PATH)",
                phase="start",
                hint="give the full path of the engine, or put it on PATH",
            )
        self.tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._log: IO[bytes] | None = open(log, "ab") if log is not None else None  # noqa: SIM115 - closed in close()
        try:
            self.proc = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - only prctl, no locks taken
            )
        except OSError as error:
            raise EngineError(f"cannot start the engine {self.command!r}: {error.strerror}", phase="start") from None
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self.stdin = self.proc.stdin
        self.fd = self.proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        for pipe in (self.fd, self.stdin.fileno()):  # room for a whole frame: neither side blocks mid-frame
            with contextlib.suppress(OSError):
                fcntl.fcntl(pipe, _F_SETPIPE_SZ, MAX_FRAME_BYTES)
        self.frames: collections.deque[bytes] = collections.deque()
        self._buffer = FrameBuffer(MAX_FRAME_BYTES)
        self.eof = False
        self._drain = threading.Thread(target=self._drain_stderr, name=f"{name}-stderr", daemon=True)
        self._drain.start()

    # -- output -------------------------------------------------------------------

    def _drain_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        for line in iter(stream.readline, b""):
            if self._log is not None:
                with contextlib.suppress(ValueError, OSError):
                    self._log.write(line)
                    self._log.flush()
            self.tail.append(line.decode("utf-8", "replace").rstrip("\n"))

    def pump(self) -> bool:
        """Read what the pipe holds now into :attr:`frames`; False once the engine closed its output.

        Raises:
            EngineError: a frame over the size cap.
        """
        while True:
            try:
                data = os.read(self.fd, MAX_FRAME_BYTES)
            except BlockingIOError:
                return True
            except OSError:
                data = b""
            if not data:
                self.eof = True
                return False
            try:
                self.frames.extend(self._buffer.feed(data))
            except FrameError as error:
                raise self.error(f"sent {error}", "game") from None

    def read(self, deadline: float, phase: str) -> dict[str, Any]:
        """The next message, waiting until ``deadline`` (a ``time.monotonic()`` value).

        Raises:
            EngineError: the engine exited, sent something that is not a message, or said nothing in time.
        """
        with selectors.DefaultSelector() as selector:
            selector.register(self.fd, selectors.EVENT_READ)
            while not self.frames:
                if self.eof:
                    raise self.error(f"exited ({self.exit_status()}) during {phase}", phase)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self.error(f"said nothing for the {phase} deadline", phase)
                if selector.select(left):
                    self.pump()
        return self.message(self.frames.popleft(), phase)

    def message(self, frame: bytes, phase: str) -> dict[str, Any]:
        try:
            return decode(frame)
        except FrameError as error:
            raise self.error(
                f"wrote {error} on its standard output, which carries protocol frames only",
                phase,
                hint="engines write their logs to standard error",
            ) from None

    # -- input --------------------------------------------------------------------

    def send(self, message: dict[str, Any], phase: str) -> None:
        """Write one frame.

        Raises:
            EngineError: the engine exited (the same words as when its output ends first: which pipe tells
                Distill first is a race), or closed its input and runs on.
        """
        try:
            self.stdin.write(encode_frame(message))
            self.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            status = self.exit_status(ended=True)
            if status == "still running":
                raise self.error(f"closed its input during {phase} (still running)", phase) from None
            raise self.error(f"exited ({status}) during {phase}", phase) from None

    # -- life ---------------------------------------------------------------------

    def exit_status(self, *, ended: bool = False) -> str:
        """How the engine ended: its exit code or signal (a process that closed its output is given a moment to
        exit, so that its code, not "still running", is what the error shows)."""
        code = self.peek(1.0 if ended or self.eof else 0.0)
        if code is None:
            return "still running"
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"

    def error(self, what: str, phase: str, hint: str | None = None) -> EngineError:
        time.sleep(0.05)  # let the stderr thread catch the engine's last words
        return EngineError(
            f"the engine {self.name} ({' '.join(self.command)}) {what}", phase=phase, stderr=list(self.tail), hint=hint
        )

    def close(self, grace: float = 2.0) -> int | None:
        """End the engine: its input closed (a well-behaved engine exits on end of file), then its whole process
        group killed if it is still there after ``grace`` seconds; returns its exit code (None: it was killed)."""
        with contextlib.suppress(OSError, ValueError):
            self.stdin.close()
        code = self.peek(grace)
        self.kill()
        self._drain.join(1.0)
        if self._log is not None:
            self._log.close()
            self._log = None
        return code

    def peek(self, timeout: float) -> int | None:
        """The engine's exit code (negative: the signal that killed it) once it has exited, waiting up to
        ``timeout`` seconds; None while it runs. It is never reaped here: until :meth:`kill` reaps it, its
        process id, which is its group's id, cannot be given to another process, so the group kill can only
        reach the engine's own group."""
        deadline = time.monotonic() + timeout
        while self.proc.returncode is None:
            try:
                info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # reaped by someone else
                return self.proc.poll()
            if info is not None and info.si_pid:
                return -info.si_status if info.si_code in (os.CLD_KILLED, os.CLD_DUMPED) else info.si_status
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.01)
        return self.proc.returncode

    def kill(self) -> None:
        """Kill the engine's process group (it and anything it started), then reap it. The group is killed
        only while its leader is unreaped: a reaped leader's id may already name another process's group."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()
