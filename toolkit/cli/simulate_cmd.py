"""``distill simulate``: play games with chosen players and write canonical decision logs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import ValidationError

from toolkit.cli.app import (
    AddressOpt,
    BackendOpt,
    EngineOpt,
    EngineProcessesOpt,
    JsonOpt,
    MaxRoundsOpt,
    ShardOpt,
    Table,
    WorkersOpt,
    app,
    backend_config,
    console,
    engine_config,
    flags_given,
    model_option,
    print_json,
    progress_bar,
)
from toolkit.config import validation_message
from toolkit.errors import ConfigError
from toolkit.game.config import SimulateConfig


@app.command("simulate")
def simulate_command(
    games: Annotated[int | None, model_option(SimulateConfig, "games", "--games")] = None,
    players: Annotated[str | None, model_option(SimulateConfig, "players", "--players")] = None,
    seed: Annotated[int | None, model_option(SimulateConfig, "seed", "--seed")] = None,
    out: Annotated[Path | None, model_option(SimulateConfig, "out", "--out")] = None,
    compress: Annotated[str | None, model_option(SimulateConfig, "compression", "--compress")] = None,
    batch_size: Annotated[int | None, model_option(SimulateConfig, "batch_size", "--batch-size")] = None,
    max_rounds: MaxRoundsOpt = None,
    backend: BackendOpt = None,
    workers: WorkersOpt = None,
    address: AddressOpt = None,
    shard_games: ShardOpt = None,
    engine: EngineOpt = None,
    engine_processes: EngineProcessesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Play GAMES games of the Distill Commander game and write every decision (role forge for heuristics).
    With --engine, the games are played in that engine by its own AI (the player types as its profiles) and the
    logs are the records of its decisions."""
    from toolkit.game.simulate import simulate

    given = flags_given(
        games=games,
        players=None if players is None else tuple(p.strip() for p in players.split(",")),
        seed=seed,
        out=out,
        compression=compress,
        batch_size=batch_size,
        max_rounds=max_rounds,
    )
    try:
        config = SimulateConfig(**given)
    except ValidationError as error:
        raise ConfigError(
            f"invalid simulate options: {validation_message(error)}", hint="see distill simulate --help"
        ) from None
    where = backend_config(backend, workers, address, shard_games)
    on = engine_config(engine, engine_processes)
    if on is not None:
        from toolkit.engine.simulate import simulate_on_engine

        result = simulate_on_engine(config, on)
        if as_json:
            print_json(result.model_dump(mode="json"))
            return
    elif as_json:
        print_json(simulate(config, backend=where).model_dump(mode="json"))
        return
    else:
        with progress_bar("simulate") as progress:
            result = simulate(config, progress=progress, backend=where)
    table = Table(title=f"{result.games} games, {result.decisions} decisions, {result.decisions_per_second:,.0f}/s")
    table.add_column("seat")
    table.add_column("player")
    table.add_column("wins", justify="right")
    table.add_column("win rate", justify="right")
    for seat, (name, won, rate) in enumerate(zip(config.players, result.wins_per_seat, result.win_rate_per_seat)):
        table.add_row(str(seat), name, str(won), f"{rate:.1%}")
    console.print(table)
    kinds = ", ".join(f"{name} {rate:.1%}" for name, rate in result.win_rate_per_player_type.items())
    console.print(f"win rate per player type: {kinds}")
    console.print(f"draws {result.draws}, truncations {result.truncations}")
    for path in result.files:
        console.print(f"wrote {path}")
