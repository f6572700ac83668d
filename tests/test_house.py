"""The house's naming rule: a public class or function name means one thing in ``toolkit/``."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TOOLKIT = Path(__file__).parents[1] / "toolkit"
# The version-1 contract keeps the names its models had when it was the contract (they read version-1 logs).
CONTRACT_V1 = TOOLKIT / "schema" / "v1.py"


def _public_definitions(kinds: tuple[type[ast.stmt], ...]) -> dict[str, list[str]]:
    """Each public module-level name of these kinds (classes, or functions), with the modules defining it."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(TOOLKIT.rglob("*.py")):
        if path == CONTRACT_V1:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, kinds) and not node.name.startswith("_"):
                found[node.name].append(path.relative_to(TOOLKIT.parent).as_posix())
    return found


def test_every_public_class_name_is_defined_once() -> None:
    twice = {name: where for name, where in _public_definitions((ast.ClassDef,)).items() if len(where) > 1}
    assert not twice, f"one name, two classes (rename one): {twice}"


def test_every_public_function_name_is_defined_once() -> None:
    """A command's function is named after its command (``loop_run_command``), a route's after its method and path
    (``get_status``), a loop step's after its step (``build_step``): never after the domain function it calls."""
    functions = _public_definitions((ast.FunctionDef, ast.AsyncFunctionDef))
    twice = {name: where for name, where in functions.items() if len(where) > 1}
    assert not twice, f"one name, two functions (rename one): {twice}"
