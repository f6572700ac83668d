"""``distill ablate``: which data makes the student stronger (a grid of variants, paired on the same deals)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from toolkit.ablate.config import AblateConfig
from toolkit.cli.app import (
    AddressOpt,
    BackendOpt,
    ConfigMaxRoundsOpt,
    JsonOpt,
    Table,
    WorkersOpt,
    app,
    backend_config,
    console,
    flags_given,
    layout,
    model_option,
    print_json,
    progress_bar,
)
from toolkit.errors import ConfigError

if TYPE_CHECKING:
    from toolkit.ablate.result import AblationResult

_EPILOG = (
    "Examples: distill ablate --loop demo --vary data.weights.forge=0,0.05,0.3 | "
    "distill ablate --loop demo --vary data.wins_only=\\[],\\[ppo] | "
    "distill ablate --build mix --vary data.min_reward=null,0.5 --vary student.epochs=4,8"
)


@app.command("ablate", epilog=_EPILOG)
def ablate_command(
    vary: Annotated[
        list[str],
        typer.Option(
            "--vary",
            help="FIELD=V1,V2,...: a field path into the base's config (a loop base: LoopConfig, e.g. "
            "data.weights.forge, data.wins_only, student.epochs; a build base: data.<build field>, "
            "student.<field>) and its values as YAML (0.05, null, \\[], \\[ppo]); commas inside brackets stay in "
            "one value. Repeat for a grid; the first combination is the baseline the others are paired with.",
        ),
    ],
    loop: Annotated[str | None, model_option(AblateConfig, "loop", "--loop")] = None,
    loop_config: Annotated[Path | None, typer.Option("--loop-config", help="Base: a loop config YAML.")] = None,
    build: Annotated[str | None, model_option(AblateConfig, "build", "--build")] = None,
    build_config: Annotated[Path | None, typer.Option("--build-config", help="Base: a build config YAML.")] = None,
    zip_values: Annotated[bool | None, model_option(AblateConfig, "zip", "--zip/--product")] = None,
    name: Annotated[str | None, model_option(AblateConfig, "name", "--name")] = None,
    games: Annotated[int | None, model_option(AblateConfig, "games", "--games")] = None,
    seed: Annotated[int | None, model_option(AblateConfig, "seed", "--seed")] = None,
    table: Annotated[
        list[str] | None,
        typer.Option(
            "--table",
            help="NAME=P,P,P: a table of opponents (repeat); default: the loop's evaluation tables "
            "(three heuristics, three tuned).",
        ),
    ] = None,
    max_rounds: ConfigMaxRoundsOpt = None,
    backend: BackendOpt = None,
    workers: WorkersOpt = None,
    address: AddressOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Train one student per variant of a base's data (same seeds) and evaluate every student on the same deals:
    win rates with 95% intervals, the paired difference to the first variant, holdout accuracy and rows.

    Writes ablations/NAME/ablation.json and ablation.html; a variant already finished (same build, student,
    tables and seeds) is not run again.
    """
    from pydantic import ValidationError

    from toolkit.ablate.base import load_base_file
    from toolkit.ablate.config import parse_table, parse_vary
    from toolkit.ablate.run import run_ablation
    from toolkit.config import validation_message

    try:
        config = AblateConfig(
            build=build,
            build_config=load_base_file("build", build_config) if build_config else None,
            loop=loop,
            loop_config=load_base_file("loop", loop_config) if loop_config else None,
            vary=[parse_vary(v) for v in vary],
            tables=dict(parse_table(t) for t in table) if table else None,
            max_rounds=max_rounds,
            backend=backend_config(backend, workers, address),
            **flags_given(name=name, zip=zip_values, seed=seed, games=games),
        )
    except ValidationError as error:
        raise ConfigError(f"invalid ablation: {validation_message(error, as_flags=True)}", hint="see --help") from None
    with progress_bar("ablate", enabled=not as_json) as progress:
        result = run_ablation(layout(), config, progress=progress)
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    _render(result)


def _render(result: AblationResult) -> None:
    from rich.markup import escape

    from toolkit.ablate.grid import setting_text
    from toolkit.ablate.report import interval, percent
    from toolkit.stats import interval_verdict

    fields = ", ".join(result.fields)
    for name, opponents in result.tables.items():
        shown = Table(
            title=f"ablation {result.name}: vs {name} ({', '.join(opponents)}), {result.games:,} games each",
            caption=f"values of: {fields}",
        )
        for column in ("#", "values", "win rate [95%]", "vs #1, points [95%]", "holdout acc", "train rows", "shares"):
            shown.add_column(column)
        for v in result.variants:
            s = v.tables[name]
            diff = (
                "-"
                if s.diff is None or s.diff_low is None or s.diff_high is None
                else f"{percent(s.diff, signed=True)} {interval(s.diff_low, s.diff_high, signed=True)} "
                f"{interval_verdict(s.diff_low, s.diff_high)}"
            )
            shares = ", ".join(f"{k} {x:.0%}" for k, x in sorted(v.shares.items()) if x > 0)
            shown.add_row(
                str(v.index + 1),
                escape(", ".join(setting_text(x) for x in v.settings.values())),  # [ppo] is text, not markup
                f"{percent(s.win_rate)} {interval(s.win_low, s.win_high)}",
                diff if v.index else "baseline",
                f"{v.holdout_accuracy:.3f}",
                f"{v.train_rows:,}",
                shares,
            )
        console.print(shown)
    if not result.same_holdout:
        console.print("[yellow]the variants' holdouts differ: their accuracies do not compare[/yellow]", markup=True)
    reused = sum(v.resumed for v in result.variants)
    console.print(
        f"{len(result.variants)} variants ({reused} finished earlier) in {result.seconds:.0f} s; "
        f"report: {result.paths.get('html')}",
        soft_wrap=True,
    )
