"""Named points of Distill's write protocols where a test can kill the process, as a power cut would.

``DISTILL_FAILPOINT=<name>`` in a process's environment makes it send
itself SIGKILL when it reaches :func:`failpoint` ``(<name>)``: the tests of
crash safety kill an ingest, a retirement, a compaction or a vacuum at the
exact step they mean (before a commit, between a commit and its index, in
the middle of deleting files), then check that a rerun reaches the lake a
run without the kill reaches. Costs one dictionary lookup when unset.
"""

from __future__ import annotations

import os
import signal
from typing import Final

ENV: Final = "DISTILL_FAILPOINT"


def failpoint(name: str) -> None:
    """Die here, at once and without cleanup, if the environment names this point."""
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
