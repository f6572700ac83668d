"""``distill engine ...``: Distill's game served over the engine protocol, and the conformance check of an engine."""

from __future__ import annotations

from typing import Annotated

import typer

from toolkit.cli.app import JsonOpt, Table, app, console, print_json

engine_app = typer.Typer(
    help="Engines: Distill's game over the engine protocol (builtin), and the check an engine author runs.",
    no_args_is_help=True,
)
app.add_typer(engine_app, name="engine")


@engine_app.command("builtin")
def engine_builtin_command(
    games_per_process: Annotated[
        int | None,
        typer.Option(
            "--games-per-process", min=1, max=65_536, help="Games this process plays at once (default: 1024)."
        ),
    ] = None,
) -> None:
    """Serve Distill's own game over the engine protocol on standard input and output (the reference engine;
    what `--engine "distill engine builtin"` starts)."""
    from toolkit.engine.builtin import DEFAULT_GAMES, serve

    raise typer.Exit(serve(games_per_process or DEFAULT_GAMES))


@engine_app.command("check", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def engine_check_command(
    command: Annotated[list[str], typer.Argument(help="The engine's command line, after --.", show_default=False)],
    deadline: Annotated[
        float, typer.Option("--deadline", min=0.1, max=600, help="Seconds any one wait on the engine may take.")
    ] = 10.0,
    only: Annotated[
        list[str] | None, typer.Option("--only", help="Run this check only (repeatable): hello, games, ...")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Check an engine against the protocol: handshake, rows, answers, faults, determinism, shutdown, speed.

    distill engine check -- distill engine builtin
    distill engine check -- clients/java/bin/demo-engine

    Exit 0 when every check passes, 1 otherwise.
    """
    from toolkit.engine.check import check_engine

    report = check_engine(command, deadline, only or ())
    if as_json:
        print_json(report.model_dump(mode="json") | {"passed": report.passed})
    else:
        table = Table(title=f"engine check: {' '.join(command)}", title_justify="left")
        for name in ("check", "result", "seconds", "detail"):
            table.add_column(name, justify="right" if name == "seconds" else "left")
        for c in report.checks:
            table.add_row(c.name, "PASS" if c.passed else "FAIL", f"{c.seconds:.2f}", c.detail)
        console.print(table)
        failed = [c.name for c in report.checks if not c.passed]
        console.print("every check passed" if not failed else f"failed: {', '.join(failed)}")
    if not report.passed:
        raise typer.Exit(1)
