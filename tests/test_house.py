"""The house's rules: a public class or function name means one thing in ``toolkit/``; no import runs in a circle."""

from __future__ import annotations

import ast
import graphlib
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


def _module_imports() -> dict[str, set[str]]:
    """Each module of ``toolkit/`` with the modules of ``toolkit/`` it imports as it loads (not those imported inside
    a function or only for type checking)."""
    modules = {}
    for path in TOOLKIT.rglob("*.py"):
        parts = path.relative_to(TOOLKIT.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("toolkit"):
                module = str(node.module)
                imported |= {f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names}
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names if a.name in modules}
        graph[name] = imported - {name}
    return graph


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return list(error.args[1])
    return None


def test_no_import_runs_in_a_circle() -> None:
    """The layers (import-linter, ``make lint``) keep imports from running up the house; within a room too, no
    module imports one that imports it back."""
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) is not None  # the check finds a circle where one is
    graph = _module_imports()
    assert "toolkit.ingest.validate" in graph and "toolkit.ingest.parse" in graph["toolkit.ingest.validate"]
    assert _circle(graph) is None, f"an import circle: {' -> '.join(_circle(graph) or [])}"
