"""The ``distill`` CLI with every command registered on its root app: what the tests, the CLI reference and any
``from toolkit.cli.main import app`` get. The program itself (:func:`main`, :mod:`toolkit.cli.entry`) registers
only the commands its command line names."""

from __future__ import annotations

from toolkit.cli.entry import main, register_commands

register_commands(())

from toolkit.cli.app import app  # noqa: E402

__all__ = ["app", "main"]
