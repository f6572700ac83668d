"""Simulation in an engine: its own AI plays every seat, and the records of its decisions are the logs.

:func:`simulate_on_engine` is :func:`toolkit.game.simulate.simulate` with the
games played in an engine: game ``k`` is ``sim-<seed>-<k>``, dealt
``game_seed(seed, k)``, every seat the engine's AI profile of the config's
player type, with ``records`` asked for (the engine's ``ai_records``). The
records it sends (whole contract rows, as the engine logs them) are written
in game order to ``sim-<seed>-part-*`` files, each published by an atomic
rename; a failed run publishes none. The lake ingests them like any log: an
engine's malformed row is quarantined there with its reason.
"""

from __future__ import annotations

import time

import numpy as np
import orjson

from toolkit.engine.config import EngineConfig
from toolkit.engine.driver import EngineDriver, GameSpec, game_seed
from toolkit.errors import ConfigError, EngineError
from toolkit.game import records
from toolkit.game.config import SimulateConfig
from toolkit.game.simulate import SimulateResult, simulate_result


def simulate_on_engine(config: SimulateConfig, engine: EngineConfig) -> SimulateResult:
    """Play ``config.games`` games in ``engine`` with its AI at every seat; write its records to ``config.out``.

    Raises:
        ConfigError: the output folder already holds logs of this seed; a player type the engine has no profile of;
            an engine that sends no records.
        EngineError: the engine failed past its restart budget, or a game ended without its records.
    """
    if config.out is not None and any(config.out.glob(f"sim-{config.seed}-*part-*")):
        raise ConfigError(
            f"{config.out} already holds logs of seed {config.seed}", hint="choose another --out folder or --seed"
        )
    n = len(config.players)
    seats = tuple({"player": "engine", "profile": name} for name in config.players)
    specs = [
        GameSpec(f"sim-{config.seed}-{k}", game_seed(config.seed, k), seats, config.max_rounds, records=True)
        for k in range(config.games)
    ]
    writer = None
    if config.out is not None:
        writer = records.DecisionWriter(config.out, f"sim-{config.seed}", config.compression, config.rows_per_file)
    wins = np.zeros(n, np.int64)
    decisions = truncations = draws = 0
    start = time.perf_counter()
    try:
        with EngineDriver(engine) as driver:
            for result in driver.play(specs, {}, ordered=True):
                if not result.records and result.decisions:
                    raise EngineError(
                        f"game {result.spec.game} ended without the records of its {result.decisions} decisions",
                        phase="game",
                        hint="an engine that offers ai_records sends a records frame before each result",
                    )
                if writer is not None:
                    writer.write([b"".join(orjson.dumps(row) + b"\n" for row in result.records)], len(result.records))
                decisions += result.decisions
                if result.truncated:
                    truncations += 1
                elif result.winner_seat is None:
                    draws += 1
                else:
                    wins[result.winner_seat] += 1
    except BaseException:
        if writer is not None:
            writer.abandon()  # no part of a failed run is published
        raise
    if writer is not None:
        writer.close()
    return simulate_result(
        config,
        wins,
        games=config.games,
        decisions=decisions,
        seconds=time.perf_counter() - start,
        draws=draws,
        truncations=truncations,
        files=list(writer.files) if writer is not None else [],
    )
