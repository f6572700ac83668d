"""The feature encoder: layout, seat-relative slots, nulls, and no train/serve skew with the game."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import orjson
import pyarrow as pa
import pytest

from tests.factories import make_player, make_snapshot
from toolkit.features import (
    FEATURE_SIZE,
    FEATURE_VERSION,
    HAND_ROLES,
    HAND_SCALE,
    MAX_SEATS,
    SEAT_FIELDS,
    SLOT_SIZE,
    feature_names,
    feature_spec,
    hand_role,
)
from toolkit.features_arrow import encode_arrow
from toolkit.game import cards as C
from toolkit.game import core, records
from toolkit.game.observation import HAND_KINDS
from toolkit.game.players import DecisionBatch, HeuristicPlayer, RandomPlayer
from toolkit.schema.arrow import snapshot_schema

SLOT = SLOT_SIZE
LIFE = 1 + SEAT_FIELDS.index("life")


def _encode(*rows: dict) -> np.ndarray:
    return encode_arrow(pa.Table.from_pylist(list(rows), schema=snapshot_schema()))


def _slot(vector: np.ndarray, k: int) -> np.ndarray:
    return vector[k * SLOT : (k + 1) * SLOT]


def test_names_cover_every_position_and_the_spec_is_versioned() -> None:
    assert len(feature_names()) == FEATURE_SIZE == len(set(feature_names()))
    assert feature_spec().version == FEATURE_VERSION and feature_spec().size == FEATURE_SIZE


def test_a_batch_of_mixed_pod_sizes_encodes_each_row_as_it_would_alone() -> None:
    rows = [
        make_snapshot(seat=s % n, pod_size=n, players=[make_player(p, life=10 + p + s) for p in range(n)])
        for s, n in enumerate([4, 2, 6, 4, 3, 8])
    ]
    together = _encode(*rows)  # several pod sizes in one batch
    alone = np.concatenate([_encode(row) for row in rows])  # one pod size each
    assert together.tobytes() == alone.tobytes()
    assert _encode(*[rows[0], rows[3]]).tobytes() == np.concatenate([alone[:1], alone[3:4]]).tobytes()


@pytest.mark.parametrize("pod_size", [2, 4, 6])
def test_a_game_rounds_rows_and_a_builds_large_batch_encode_alike(pod_size: int) -> None:
    """Small batches of one pod size fill the slots in one gather, large ones by the loop: the same bits."""
    from toolkit.features import _GATHER_ROWS, StateArrays, encode

    rng = np.random.default_rng(pod_size)
    m = _GATHER_ROWS + 7
    state = StateArrays(
        seats=rng.integers(0, 50, (m, MAX_SEATS, len(SEAT_FIELDS))).astype(np.int16),
        seat=rng.integers(0, pod_size, m),
        pod_size=np.full(m, pod_size),
        hand_roles=rng.integers(0, 6, (m, len(HAND_ROLES))).astype(np.int16),
        in_command_zone=rng.random(m) < 0.5,
        turn=rng.integers(1, 200, m).astype(np.int16),
        phase=rng.integers(0, 2, m),
        mask=rng.random((m, 8)) < 0.5,
        mask_known=np.ones(m, bool),
    )
    whole = encode(state)  # above the threshold: the loop over slots
    halves = [
        encode(StateArrays(**{f: getattr(state, f)[part] for f in state.__dataclass_fields__}))
        for part in (slice(0, m // 2), slice(m // 2, m))
    ]  # each at most the threshold: the gather
    assert np.concatenate(halves).tobytes() == whole.tobytes()


@pytest.mark.parametrize("pod_size", [2, 3, 4, 6, 8])
def test_slots_start_at_the_acting_seat_and_follow_turn_order(pod_size: int) -> None:
    seat = pod_size - 1
    players = [make_player(s, life=10 + s) for s in range(pod_size)]
    (vector,) = _encode(make_snapshot(seat=seat, pod_size=pod_size, players=players))
    assert vector.shape == (FEATURE_SIZE,)
    for k in range(MAX_SEATS):
        slot = _slot(vector, k)
        if k < pod_size:
            assert slot[0] == 1.0 and slot[LIFE] == pytest.approx((10 + (seat + k) % pod_size) / 40)
        else:
            assert not slot.any()  # padding is all zeros, present included
    assert vector[feature_names().index("pod_size")] == pytest.approx(pod_size / 8)


def test_the_same_table_seen_from_two_seats_swaps_the_slots() -> None:
    players = [make_player(s, life=20 + s) for s in range(4)]
    a, b = _encode(make_snapshot(seat=0, players=players), make_snapshot(seat=2, players=players))
    assert np.array_equal(_slot(a, 0), _slot(b, 2)) and np.array_equal(_slot(a, 2), _slot(b, 0))


def test_hand_roles_come_from_card_names() -> None:
    hand = ["Forest", "Command Tower", "Sol Ring", "Swords to Plowshares", "Harmonize", "Llanowar Elves", "Nope"]
    players = [make_player(s, hand=hand if s == 1 else None) for s in range(4)]
    (vector,) = _encode(make_snapshot(seat=1, players=players))
    names = feature_names()
    got = {role: vector[names.index(f"hand.{role}")] * HAND_SCALE for role in HAND_ROLES}
    assert got == {"land": 2, "creature_or_other": 2, "removal": 1, "draw": 1, "ramp": 1}


def test_nulls_encode_as_zero_and_an_unknown_mask_says_so() -> None:
    players = [make_player(s, creatures=None, total_power=None, hand=None, command_zone=None) for s in range(4)]
    known, unknown = _encode(make_snapshot(players=players), make_snapshot(players=players, legal_actions=None))
    names = feature_names()
    assert known[names.index("slot0.creatures")] == 0 and known[names.index("mask_known")] == 1
    assert known[names.index("commander_in_command_zone")] == 0
    legal = [names.index(f"legal.{a}") for a in ("cast_creature", "pass")]
    assert known[legal].tolist() == [1.0, 1.0]
    assert unknown[names.index("mask_known")] == 0 and not unknown[legal].any()


def test_a_sliced_table_encodes_like_its_rows() -> None:
    rows = [make_snapshot(seat=s % 4, decision_index=s, turn=s) for s in range(6)]
    table = pa.Table.from_pylist(rows, schema=snapshot_schema())
    whole = encode_arrow(table)
    assert np.array_equal(encode_arrow(table.slice(2, 3)), whole[2:5])


def test_every_game_card_has_the_role_the_game_plays_it_for() -> None:
    for card in C.CARDS:
        if card.kind in HAND_KINDS:
            assert hand_role(card.name) == HAND_KINDS.index(card.kind), card.name


class _Recorder:
    """Plays like an inner player and keeps the observation of every decision, per game slot."""

    def __init__(self, inner: HeuristicPlayer | RandomPlayer, seen: dict[int, list[np.ndarray]]) -> None:
        self.inner, self.seen, self.source = inner, seen, inner.source

    def act(self, batch: DecisionBatch) -> tuple[np.ndarray, np.ndarray | None]:
        for game, obs in zip(batch.games.tolist(), batch.observations(), strict=True):
            self.seen[game].append(obs)
        return self.inner.act(batch)


def test_logged_records_encode_to_exactly_what_the_player_observed() -> None:
    seen: dict[int, list[np.ndarray]] = defaultdict(list)
    players = [_Recorder(HeuristicPlayer(), seen), _Recorder(RandomPlayer(), seen)] * 2
    finished = list(core.play(players, 3, seed=5, batch_size=3, record=True))
    lines = [line for f in finished for line in records.build_rows(f, seed=5, sources=[p.source for p in players])]
    rows = [orjson.loads(line) for line in lines]
    encoded = encode_arrow(pa.Table.from_pylist(rows, schema=snapshot_schema()))
    by_game: dict[int, list[tuple[int, np.ndarray]]] = defaultdict(list)
    for row, vector in zip(rows, encoded, strict=True):
        by_game[int(row["game_id"].rsplit("-", 1)[1])].append((row["decision_index"], vector))
    assert sorted(by_game) == sorted(seen) == [0, 1, 2]
    for game, logged in by_game.items():
        logged_vectors = np.stack([v for _, v in sorted(logged, key=lambda item: item[0])])
        assert np.array_equal(logged_vectors, np.stack(seen[game]))
