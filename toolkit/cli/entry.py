"""The ``distill`` program: it registers the command modules its command line names, then runs the CLI.

A command module imports what its flags are made of (the loop's, the
build's, the checks' config models) at import, and all fourteen cost ~0.7 s
of a process's start, paid again by every ``distill`` a test, a dashboard or
a loop starts, and by every engine process (``distill engine builtin``). So
the program imports the modules of the words of its command line that name a
command (every such word: an option's value that happens to be a command's
name only adds a module), and all of them when none does (``distill``,
``distill --help``, a mistyped command: the full list is shown).
:mod:`toolkit.cli.main` registers every module, for whatever imports the
CLI's ``app`` (the tests, the CLI reference).
"""

from __future__ import annotations

import faulthandler
import importlib
import sys
from collections.abc import Sequence
from typing import Final

# Each top-level command and the module that registers it (tests/cli/test_entry.py holds it to the full CLI).
COMMAND_MODULES: Final = {
    "ablate": "ablate_cmd",
    "build": "build_cmd",
    "check": "check_cmd",
    "validate": "data_cmd",
    "ingest": "data_cmd",
    "sql": "data_cmd",
    "datasets": "datasets_cmd",
    "engine": "engine_cmd",
    "export": "export_cmd",
    "lake": "lake_cmd",
    "loop": "loop_cmd",
    "schemas": "schemas_cmd",
    "serve": "serve_cmd",
    "simulate": "simulate_cmd",
    "tournament": "tournament_cmd",
    "evaluate": "train_cmd",
    "train": "train_cmd",
}


def command_modules(argv: Sequence[str]) -> list[str]:
    """The command modules a command line needs: those of its words that name a command, else every one."""
    named = dict.fromkeys(COMMAND_MODULES[word] for word in argv if word in COMMAND_MODULES)
    return list(named) or list(dict.fromkeys(COMMAND_MODULES.values()))


def register_commands(argv: Sequence[str]) -> None:
    """Register on the root app the commands of :func:`command_modules` (``()``: every command)."""
    for module in command_modules(argv):
        importlib.import_module(f"toolkit.cli.{module}")


def main() -> None:
    """Run the CLI (errors are mapped to messages and exit codes by the root group). A crash below Python (a
    segfault in a native library) still prints the Python stack on stderr, so a loop's log says where it died. The
    process pools a command started are shut down as it ends."""
    faulthandler.enable()
    register_commands(sys.argv[1:])
    from toolkit.cli.app import app

    try:
        app()
    finally:  # a command's pool workers exit with it (no pool without the module: it need not load for nothing)
        backends = sys.modules.get("toolkit.jobs.backends")
        if backends is not None:
            backends.close_pools()
