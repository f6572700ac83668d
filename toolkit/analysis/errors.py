"""Why an analysis has nothing to show: said in one sentence, with the command that fixes it."""

from __future__ import annotations

from toolkit.errors import DistillError


class NothingToShowError(DistillError):
    """The data root holds nothing to analyse yet (no catalog, no build, no loop run of that name)."""
