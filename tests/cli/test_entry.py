"""The ``distill`` program registers the command modules its command line names: its table of commands is the
full CLI's, and a command's process imports no other command's module."""

from __future__ import annotations

import subprocess
import sys

import typer

from toolkit.cli.entry import COMMAND_MODULES, command_modules
from toolkit.cli.main import app


def _module_of(command: object) -> str:
    """The toolkit.cli module that defined a click command (a group: its first subcommand's)."""
    while getattr(command, "callback", None) is None or getattr(command, "commands", None):
        command = next(iter(command.commands.values()))  # type: ignore[attr-defined]
    return command.callback.__module__  # type: ignore[attr-defined]


def test_the_table_of_commands_is_the_full_clis() -> None:
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    assert set(commands) == set(COMMAND_MODULES)
    for name, command in commands.items():
        assert _module_of(command) == f"toolkit.cli.{COMMAND_MODULES[name]}", name


def test_a_command_line_registers_the_modules_of_the_commands_it_names_or_all() -> None:
    assert command_modules(["--home", "/data", "engine", "builtin", "--games-per-process", "8"]) == ["engine_cmd"]
    assert command_modules(["datasets", "show", "x", "--split", "train"]) == ["datasets_cmd", "train_cmd"]
    everything = sorted(set(COMMAND_MODULES.values()))
    assert sorted(command_modules([])) == sorted(command_modules(["--help"])) == everything
    assert sorted(command_modules(["bulid"])) == everything  # a mistyped command: the full list in the error


def test_an_engine_process_imports_no_other_commands_module() -> None:
    code = (
        "import sys; sys.argv = ['distill', 'engine', 'builtin', '--help']\n"
        "from toolkit.cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('toolkit.cli.') and m.endswith('_cmd')))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Serve Distill's own game over the engine protocol" in found.stdout
    assert found.stdout.strip().splitlines()[-1] == "['toolkit.cli.engine_cmd']"
