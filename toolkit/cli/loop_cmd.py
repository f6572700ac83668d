"""``distill loop run | resume | status | history | stop | pause``: the closed loop."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from toolkit.cli.app import JsonOpt, Table, app, console, layout, model_option, points, print_json
from toolkit.errors import ConfigError
from toolkit.loop.config import LoopConfig
from toolkit.progress import Progress

if TYPE_CHECKING:  # for annotations only: the CLI imports stages when a command runs
    from toolkit.loop.record import GenerationRecord

loop_app = typer.Typer(
    help="The closed loop: gated generations of self-play, data and BC, with ratings.", no_args_is_help=True
)
app.add_typer(loop_app, name="loop")

NameOpt = Annotated[str, typer.Option("--name", help="The loop run (folder runs/<name>).")]


@loop_app.command("run")
def loop_run_command(
    config_file: Annotated[
        Path | None, typer.Option("--config", help="A loop.yaml; flags override its fields.")
    ] = None,
    name: Annotated[str | None, model_option(LoopConfig, "name", "--name")] = None,
    max_generations: Annotated[int | None, model_option(LoopConfig, "max_generations", "--max-generations")] = None,
    seed: Annotated[int | None, model_option(LoopConfig, "seed", "--seed")] = None,
    max_rounds: Annotated[int | None, model_option(LoopConfig, "max_rounds", "--max-rounds")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Start a loop run and follow it to the end (or to a stop, pause, failure or convergence).

    Every option of the loop is a field of its config: `distill loop config` prints them all, documented.
    """
    from toolkit.config import load_config
    from toolkit.loop.run import run_loop

    config = load_config(
        LoopConfig,
        config_file,
        {"name": name, "max_generations": max_generations, "seed": seed, "max_rounds": max_rounds},
    )
    state = run_loop(layout(), config, progress=None if as_json else _say)
    _finish(state.name, as_json)


LOOP_YAML_HEADER = """A Distill loop's config (distill loop config): every field at its default. Delete what you keep \
at its default, change the rest, then: distill loop run --config loop.yaml (flags override fields). Relative \
paths are read from the folder the loop starts in."""


@loop_app.command("config")
def loop_config_command(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write it to this file (default: standard output).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output if it exists.")] = False,
) -> None:
    """Print the default loop.yaml: every field at its default, each described in a comment above it.

    Edit it (e.g. `bootstrap.logs` to start from your own Forge logs) and start a loop with it:
    `distill loop config -o loop.yaml`, then `distill loop run --config loop.yaml`.
    """
    import sys

    from toolkit.config import default_yaml
    from toolkit.storage import write_text_atomic

    text = default_yaml(LoopConfig, header=LOOP_YAML_HEADER)
    if output is None:
        sys.stdout.write(text)
        return
    if output.exists() and not force:
        raise ConfigError(f"{output} exists", hint="choose another --output, or add --force to overwrite it")
    write_text_atomic(output, text)
    console.print(f"wrote {output}; start a loop with it: distill loop run --config {output}", markup=False)


@loop_app.command("resume")
def loop_resume_command(name: NameOpt = "demo", as_json: JsonOpt = False) -> None:
    """Continue a run at its first pending step (after a crash, kill, stop or pause)."""
    from toolkit.loop.run import resume_loop

    state = resume_loop(layout(), name, progress=None if as_json else _say)
    _finish(state.name, as_json)


@loop_app.command("status")
def loop_status_command(name: NameOpt = "demo", as_json: JsonOpt = False) -> None:
    """Where a run is: status, generation, last finished step, promoted models, the process running it."""
    from toolkit.loop.status import run_status

    payload = run_status(layout(), name).model_dump(mode="json")
    if as_json:
        print_json(payload)
        return
    for key, value in payload.items():
        if value is not None and value != []:  # a field with nothing to say is left out (--json keeps it as null)
            console.print(f"{key:>20}: {value}", markup=False)


@loop_app.command("history")
def loop_history_command(name: NameOpt = "demo", as_json: JsonOpt = False) -> None:
    """One row per finished generation: gates, data, accuracy, win rate, ratings."""
    from toolkit.loop.state import RunFolder

    records = RunFolder(layout(), name).records()
    if as_json:
        print_json(records)
        return
    show_history(records)


@loop_app.command("stop")
def loop_stop_command(name: NameOpt = "demo") -> None:
    """Ask a running loop to stop at its next step boundary (resume continues it)."""
    from toolkit.loop.run import request

    console.print(f"stop requested: {request(layout(), name, 'stop')}")


@loop_app.command("pause")
def loop_pause_command(name: NameOpt = "demo") -> None:
    """Ask a running loop to pause at its next step boundary (resume continues it)."""
    from toolkit.loop.run import request

    console.print(f"pause requested: {request(layout(), name, 'pause')}")


def _say(event: Progress) -> None:
    console.print(f"[dim]loop[/dim] {escape(event.item)}", markup=True)


def _finish(name: str, as_json: bool) -> None:
    from toolkit.loop.state import RunFolder

    run = RunFolder(layout(), name)
    state = run.load()
    if as_json:
        print_json({"status": state.status, "message": state.message, "generations": run.records()})
        return
    show_history(run.records())
    console.print(f"loop {name}: {state.status}{' - ' + state.message if state.message else ''}")


def show_history(records: list[dict[str, Any]]) -> None:
    """Strength per generation (fixed-size evaluations), then gates and data, then the latest ratings."""
    from toolkit.loop.record import GenerationRecord

    parsed = [GenerationRecord.model_validate(record) for record in records]
    strength = Table(title="strength: fixed-size evaluations, same deals every generation (win rate, 95%)")
    for column in (
        "gen",
        "student vs heuristics",
        "student vs tuned",
        "student gain over gen 0",
        "PPO vs heuristics",
        "PPO vs tuned",
        "exploitability",
    ):
        strength.add_column(column)
    gates = Table(title="gates and data")
    for column in ("gen", "outcome", "tries", "PPO gate", "student gate", "holdout acc", "train rows", "minutes"):
        gates.add_column(column)
    for r in parsed:
        steps = r.attempts[-1].steps
        strength.add_row(
            str(r.generation),
            _score(r, "student", "heuristic"),
            _score(r, "student", "tuned"),
            _gain(r),
            _score(r, "ppo", "heuristic"),
            _score(r, "ppo", "tuned"),
            "-"
            if r.exploitability is None
            else f"{r.exploitability:.1%} [{r.exploitability_low * 100:.1f},{r.exploitability_high * 100:.1f}]",
        )
        gates.add_row(
            str(r.generation),
            r.outcome,
            str(r.retries + 1),
            _gate(steps.get("ppo_gate")),
            _gate(steps.get("student_gate")),
            "-" if r.holdout_accuracy is None else f"{r.holdout_accuracy:.3f}",
            ", ".join(f"{k} {v:,}" for k, v in (r.rows_by_source or {}).items()) or "-",
            f"{r.seconds / 60:.1f}",
        )
    console.print(strength)
    console.print(gates)
    if parsed and parsed[-1].ratings:
        ratings = Table(title="ratings (winner vs rest, fitted from every game; Elo anchored at heuristic = 1500)")
        for column in ("player", "elo", "+/-", "mu", "sigma", "ordinal", "games", "wins"):
            ratings.add_column(column, justify="left" if column == "player" else "right")
        for s in parsed[-1].ratings:
            ratings.add_row(
                s.name,
                f"{s.elo:.0f}",
                f"{s.elo_se:.0f}",
                f"{s.mu:.2f}",
                f"{s.sigma:.2f}",
                f"{s.ordinal:.2f}",
                str(s.games),
                str(s.wins),
            )
        console.print(ratings)
    for r in parsed:
        if r.outcome != "passed" or (r.generation > 0 and not r.student_promoted):
            console.print(f"gen {r.generation}: {r.outcome} - {r.reason}")


def _score(r: GenerationRecord, model: str, table: str) -> str:
    score = ((r.evaluation or {}).get(model) or {}).get(table)
    return "-" if score is None else f"{score.win_rate:.1%} [{score.win_low * 100:.1f},{score.win_high * 100:.1f}]"


def _gain(r: GenerationRecord) -> str:
    gain = (r.student_gain or {}).get("heuristic")
    return "-" if gain is None else points(gain.diff, gain.low, gain.high)


def _gate(result: dict[str, Any] | None) -> str:
    if not result:
        return "-"
    verdict = result.get("head_to_head") or (result.get("strength") if "floor" in result else result)
    if verdict is None:
        return "floor FAIL"
    if verdict["passed"] and not result["passed"]:
        return "scripted floor FAIL"
    return f"{'pass' if verdict['passed'] else 'FAIL'} {verdict['diff'] * 100:+.1f} points/{verdict['deals']} deals"
