"""What the marimo notebooks share: their arguments, a clear stop when there is nothing to show, how sections show."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from toolkit.errors import DistillError
from toolkit.layout import DEFAULT_HOME, HOME_ENV

T = TypeVar("T")


def arguments(defaults: dict[str, str], *, about: str, options: dict[str, str] | None = None) -> dict[str, str]:
    """``--home`` (default ``$DISTILL_HOME`` or ``./datasets``), ``--report`` and the notebook's own ``options``
    from the script's command line (``python notebooks/x.py -- --home DIR --name N``), over ``defaults``.

    ``--help`` (or ``-h``) prints the usage (``about``, then every option) and exits 0 before anything is
    read; an option the notebook does not take prints it on stderr and exits 2.

    Args:
        defaults: the notebook's own options' defaults (``{"name": "demo"}``).
        about: what the notebook shows, one line.
        options: its own options' help, ``METAVAR  what it is`` (``{"name": "NAME  the loop run"}``).
    """
    import marimo as mo

    given = {k: str(v) for k, v in mo.cli_args().items() if k}  # marimo reports the "--" separator as ""
    values = {"home": os.environ.get(HOME_ENV, DEFAULT_HOME), **defaults}
    text = usage(about, {"home": NOTEBOOK_OPTIONS["home"], **(options or {}), **NOTEBOOK_OPTIONS}, values)
    if "help" in given or "h" in given:
        sys.stdout.write(text)
        raise SystemExit(0)
    unknown = sorted(set(given) - set(values) - {"report"})
    if unknown:
        sys.stderr.write(f"distill: unknown option {', '.join('--' + k for k in unknown)}\n\n{text}")
        raise SystemExit(2)
    return {**values, **given}


NOTEBOOK_OPTIONS = {
    "home": "DIR  the data root (default: $DISTILL_HOME, else ./datasets)",
    "report": "also write the static HTML report under <home>/reports/notebooks/ and print its path",
}


def usage(about: str, options: dict[str, str], values: dict[str, str]) -> str:
    """A notebook script's ``--help``: how to run it, what it shows, each option with its current value."""
    script = sys.argv[0] or "notebooks/<name>.py"
    flags = " ".join(f"[--{name}{' ' + help.split()[0] if '  ' in help else ''}]" for name, help in options.items())
    lines = [
        f"usage: python {script} -- {flags}",
        f"       marimo edit {script}   (interactive: the same inputs as fields)",
        "",
        about,
        "",
    ]
    for name, help in options.items():
        metavar, _, what = help.partition("  ") if "  " in help else ("", "", help)
        now = f" [now: {values[name]}]" if name in values else ""
        lines.append(f"  --{name}{' ' + metavar if metavar else ''}".ljust(22) + f"{what}{now}")
    lines.append("  --help".ljust(22) + "this text")
    return "\n".join(lines) + "\n"


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
