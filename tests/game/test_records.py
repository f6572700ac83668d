"""The decision logger: rows assembled from byte pieces, and the part-file writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest

from toolkit.game import cards as C
from toolkit.game import core, records, rules
from toolkit.game.config import SimulateConfig
from toolkit.game.lineup import Entrant
from toolkit.game.observation import SEAT_FIELDS
from toolkit.game.players import make_player
from toolkit.game.simulate import simulate
from toolkit.schema.models import ActionRecord, DecisionSnapshot, PlayerState


def _finished(n_seats: int, games: int = 12, seed: int = 3) -> list[core.Finished]:
    players = [make_player("heuristic"), make_player("tuned")] + [make_player("random")] * (n_seats - 2)
    config = rules.RulesConfig(n_seats=n_seats, max_rounds=10)
    return list(core.play(players, games, seed=seed, config=config, batch_size=5, record=True, flush_every=4))


def _names(counts: np.ndarray) -> list[str]:
    return [C.NAMES[card] for card in np.repeat(np.arange(C.N_CARDS), counts)]


@pytest.mark.parametrize("n_seats", [2, 4, 6])
def test_every_row_carries_the_logged_state_of_every_seat(n_seats: int) -> None:
    c = C.N_CARDS
    for finished in _finished(n_seats):
        log = finished.log
        lines = records.build_rows(finished, seed=3, sources=["forge", "forge"] + ["random"] * (n_seats - 2))
        assert len(lines) == len(log["game"])
        for i, line in enumerate(lines):
            row = orjson.loads(line)
            game = int(np.searchsorted(finished.game, log["game"][i]))
            assert row["game_id"] == records.game_id(3, int(log["game"][i])) and row["seat"] == log["seat"][i]
            assert row["legal_actions"] == log["mask"][i].tolist() and row["turn"] == log["turn"][i]
            for p, entry in enumerate(row["players"]):
                cards = log["cards"][i, p]
                creatures = cards[3 * c : -1]
                logged = log["seats"][i, p].tolist()
                assert [entry[f] for f in SEAT_FIELDS] == [*logged[:-1], bool(logged[-1])]
                assert entry["hand"] == (_names(cards[:c]) if p == row["seat"] else None)
                assert entry["graveyard"] == _names(cards[c : 2 * c])
                on_board = [C.NAMES[k] for k in creatures[creatures >= 0]]
                assert entry["battlefield"] == _names(cards[2 * c : 3 * c]) + on_board
                commander = C.NAMES[finished.commander[game, p]]
                assert entry["command_zone"] == ([commander] if cards[-1] else [])


def test_rows_are_what_orjson_writes_for_them_with_the_contracts_key_order() -> None:
    finished = _finished(4)[0]
    lines = records.build_rows(finished, seed=3, sources=["forge", "forge", "random", "random"])
    for line in lines:
        row = orjson.loads(line)
        assert orjson.dumps(row) == line
        assert list(row) == list(DecisionSnapshot.model_fields)
        assert list(row["action"]) == list(ActionRecord.model_fields)
        assert all(list(entry) == list(PlayerState.model_fields) for entry in row["players"])
        DecisionSnapshot.model_validate_json(line)


def test_split_parts_hold_the_same_lines_as_one_part(tmp_path: Path) -> None:
    def lines(out: Path, rows_per_file: int) -> tuple[list[str], bytes]:
        # Parts end at the chunks core.play yields (every 256 finished games), so play more than one.
        result = simulate(
            SimulateConfig(
                games=600,
                players=("heuristic", "random"),
                seed=5,
                out=out,
                batch_size=64,
                max_rounds=6,
                rows_per_file=rows_per_file,
            )
        )
        assert not list(out.glob("*.tmp"))
        return [f.name for f in result.files], b"".join(f.read_bytes() for f in result.files)

    names, split = lines(tmp_path / "split", 1000)
    one_name, whole = lines(tmp_path / "whole", 1_000_000)
    assert len(names) > 1 and names == [f"sim-5-part-{i:04d}.jsonl" for i in range(len(names))]
    assert one_name == ["sim-5-part-0000.jsonl"] and split == whole


def test_a_failed_write_surfaces_and_publishes_nothing(tmp_path: Path) -> None:
    writer = records.DecisionWriter(tmp_path / "logs", "sim-1")
    (tmp_path / "logs").rmdir()  # the background thread cannot stage its .tmp file
    writer.write([b'{"a":1}\n'], 1)
    with pytest.raises(FileNotFoundError):
        writer.close()
    assert writer.files == []


def test_rows_name_every_seats_player_in_the_lineup_game_by_game() -> None:
    finished = _finished(4)[0]
    entrants = [Entrant("heuristic", "heuristic"), Entrant("tuned", "tuned"), Entrant("random", "random")]
    seating = np.array([[g % 3, (g + 1) % 3, 2, 2] for g in range(len(finished.game))])
    lines = records.build_rows(
        finished, seed=3, sources=["forge", "forge", "random", "random"], entrants=entrants, seating=seating
    )
    for line in lines:
        row = DecisionSnapshot.model_validate_json(line)
        game = int(np.searchsorted(finished.game, int(row.game_id.rsplit("-", 1)[1])))
        assert [(e.seat, e.kind) for e in row.lineup] == [(s, entrants[i].kind) for s, i in enumerate(seating[game])]


def test_without_entrants_the_lineup_is_unknown_and_the_outcome_is_still_written() -> None:
    finished = _finished(3)[0]
    for line in records.build_rows(finished, seed=3, sources=["forge", "forge", "random"]):
        row = DecisionSnapshot.model_validate_json(line)
        assert row.schema_version == 2 and row.lineup is None
        assert row.outcome == (1 if row.seat_won else -1)


def test_simulated_rows_name_each_seats_player_type_and_their_outcome(tmp_path: Path) -> None:
    players = ("heuristic", "tuned", "random", "heuristic")
    result = simulate(SimulateConfig(games=20, players=players, seed=7, out=tmp_path, max_rounds=8))
    rows = [DecisionSnapshot.model_validate_json(line) for p in result.files for line in p.read_bytes().splitlines()]
    assert {r.timed_out for r in rows} == {True, False}  # turn-limit games too: an outcome of -1 for every seat
    for row in rows:
        assert [(e.kind, e.name, e.model_version) for e in row.lineup] == [(p, p, None) for p in players]
        assert row.outcome == (1 if row.winner_seat == row.seat else -1)
    wins = {(r.game_id, r.lineup[r.winner_seat].kind) for r in rows if r.winner_seat is not None}
    assert len(wins) == sum(result.wins_per_seat)
