"""What the marimo notebooks share: their arguments, a clear stop when there is nothing to show, how sections show."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from toolkit.errors import DistillError
from toolkit.layout import DEFAULT_HOME, HOME_ENV

T = TypeVar("T")


def arguments(defaults: dict[str, str]) -> dict[str, str]:
    """``--home`` (default ``$DISTILL_HOME`` or ``./datasets``), ``--name`` and ``--report`` from the script's
    command line (``python notebooks/x.py -- --home DIR --name N``), over ``defaults``."""
    import marimo as mo

    given = {k: str(v) for k, v in mo.cli_args().items()}
    return {"home": os.environ.get(HOME_ENV, DEFAULT_HOME), **defaults, **given}


def or_stop(load: Callable[..., T], *args: Any) -> T:
    """``load(*args)``; when there is nothing to show (or the arguments are wrong), stop: with the message and
    its hint on stderr and exit status 1 when run as a script, as the notebook's output when opened in marimo."""
    import marimo as mo

    try:
        return load(*args)
    except DistillError as error:
        message = f"distill: {error.message}" + (f"\n  hint: {error.hint}" if error.hint else "")
        if mo.running_in_notebook():
            mo.stop(True, mo.md(f"**Nothing to show.** {error.message}  \n_{error.hint or ''}_"))
        raise SystemExit(message) from None


def show(sections: list[Any]) -> Any:
    """The notebook's view of its sections (``toolkit.analysis.sections.Section``): per section its title, note,
    chart and table, one under the other."""
    import marimo as mo

    blank = mo.md("")
    return mo.vstack(
        [
            mo.vstack(
                [
                    mo.md(f"## {s.title}"),
                    mo.md(s.note) if s.note else blank,
                    s.chart if s.chart is not None else blank,
                    s.table if s.table is not None else blank,
                ]
            )
            for s in sections
        ]
    )
