"""``distill tournament``: rate players (types or checkpoints) in seat-rotated 4-player pods."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Annotated

import typer

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
    checkpoint,
    console,
    engine_config,
    flags_given,
    model_option,
    print_json,
    warn_truncations,
)
from toolkit.errors import ConfigError
from toolkit.game.config import TournamentConfig

LINEUPS_SHOWN = 12  # more lineups than this: their truncations are in the JSON only


@app.command("tournament")
def tournament_command(
    entrants: Annotated[
        list[str],
        typer.Argument(
            help="Players: a type (heuristic, tuned, random), a checkpoint (card .json, .safetensors or stem; "
            "looked up here, then under the data root), with --engine ai:PROFILE (the engine's own AI), or "
            "NAME=any of them; at least 4."
        ),
    ],
    focus: Annotated[
        str | None,
        typer.Option("--focus", help="Comma-separated entrants every lineup includes (default: all of them)."),
    ] = None,
    deals: Annotated[int | None, model_option(TournamentConfig, "deals_per_lineup", "--deals")] = None,
    seed: Annotated[int | None, model_option(TournamentConfig, "seed", "--seed")] = None,
    max_rounds: MaxRoundsOpt = None,
    pool: Annotated[
        Path | None,
        typer.Option("--pool", help="A rating pool (JSON) to add the games to; its ratings are refitted from all."),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--id", help="The tournament's id in the pool; rating an id again is a no-op.")
    ] = None,
    backend: BackendOpt = None,
    workers: WorkersOpt = None,
    address: AddressOpt = None,
    shard_games: ShardOpt = None,
    engine: EngineOpt = None,
    engine_processes: EngineProcessesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Play every lineup of 4 entrants (with a focus player) on the same deals in every seat rotation; rate them.

    Games that reach the turn limit have no winner: how many did (overall, per player, per lineup) is reported
    with the ratings, and a warning says when they are a large share. The games, and so the ratings, are the
    same on every back end for the same seed. With --engine the games are played in that engine on the same
    deals: player types sit as its own AI profiles, checkpoints as Distill's seats.
    """
    from toolkit.ratings import RatingPool, count_truncations, neighbours, play_tournament, standings
    from toolkit.train.agents import player_from_ref, player_refs

    labels: dict[str, str] = {}
    for entrant in entrants:
        label, _, what = entrant.rpartition("=")
        label = label or Path(what).name.removesuffix(".json").removesuffix(".safetensors")
        if label in labels:
            raise ConfigError(f"two entrants are named {label!r}", hint="name them: NAME=checkpoint")
        labels[label] = what
    refs = player_refs(list(labels.values()), option="ENTRANT", locate=checkpoint, engine_ai=engine is not None)
    players = dict(zip(labels, refs, strict=True))
    focused = [f.strip() for f in focus.split(",")] if focus else list(players)
    unknown = [f for f in focused if f not in players]
    if unknown:
        raise ConfigError(f"--focus names no entrant: {', '.join(unknown)}", hint=f"entrants: {', '.join(players)}")
    config = TournamentConfig(**flags_given(deals_per_lineup=deals, seed=seed, max_rounds=max_rounds))
    games = play_tournament(
        players,
        focused,
        config,
        load=player_from_ref,
        backend=backend_config(backend, workers, address, shard_games),
        engine=engine_config(engine, engine_processes),
    )
    digest = hashlib.sha256("\n".join(f"{','.join(g.players)}:{g.winner}" for g in games).encode()).hexdigest()
    tournament = name or f"t-{config.seed}-{digest[:12]}"
    rated = RatingPool(pool)
    rated.rate(tournament, games)
    if pool is not None:
        rated.save()
    table = standings(rated)
    truncations = count_truncations(games, config.max_rounds)
    warn_truncations(truncations.truncated, truncations.games, config.max_rounds)
    if as_json:
        print_json(
            {
                "tournament": tournament,
                "games": len(games),
                "games_sha256": digest,
                "truncations": truncations.model_dump(mode="json"),
                "standings": [s.model_dump(mode="json") for s in table],
                "neighbours": [p.model_dump(mode="json") for p in neighbours(table)],
            }
        )
        return
    shown = Table(title=f"tournament {tournament}: {len(games)} games")
    for column in ("player", "elo", "± se", "ordinal", "games", "wins", "truncated", "vs next below"):
        shown.add_column(column, justify="left" if column in ("player", "vs next below") else "right")
    pairs = [*neighbours(table), None]
    for s, pair in zip(table, pairs, strict=True):
        shown.add_row(
            s.name,
            f"{s.elo:.0f}",
            f"{s.elo_se:.0f}",
            f"{s.ordinal:.2f}",
            str(s.games),
            str(s.wins),
            f"{s.truncated} ({s.truncated / max(s.games, 1):.0%})",
            ""
            if pair is None
            else f"{pair.elo_diff:+.0f} [{pair.low:+.0f},{pair.high:+.0f}] P={pair.p_stronger:.2f} {pair.verdict}",
        )
    console.print(shown)
    console.print(
        f"truncated: {truncations.truncated} of {truncations.games} games ({truncations.share:.1%}) ended at the "
        f"turn limit ({config.max_rounds} rounds) with no winner"
    )
    if 1 < len(truncations.by_lineup) <= LINEUPS_SHOWN:
        lineups = Table(title="games at the turn limit, per lineup (all seat rotations)")
        for column in ("lineup", "games", "truncated"):
            lineups.add_column(column, justify="left" if column == "lineup" else "right")
        for lineup in truncations.by_lineup:
            lineups.add_row(", ".join(lineup.players), str(lineup.games), f"{lineup.truncated} ({lineup.share:.0%})")
        console.print(lineups)
    elif len(truncations.by_lineup) > LINEUPS_SHOWN:
        console.print(f"per lineup ({len(truncations.by_lineup)} lineups): see --json, truncations.by_lineup")
    if pool is not None:
        console.print(f"pool {pool}: {len(rated.data.games)} games from {len(rated.data.tournaments)} tournaments")
