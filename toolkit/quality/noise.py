"""Planted label noise: flip a share of the decisions with a choice to another legal action, at random.

What ``distill check labels`` is measured with (the tests and ``bench/bench_labels.py``):
canonical decision logs are rewritten with ``rate`` of their decisions that have
more than one legal action relabelled to another legal action, uniformly. Whether a
decision is flipped, and to what, is a pure function of (seed, game, seat, decision
index), so the same logs and seed plant the same flips.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson

from toolkit.schema import columns as col
from toolkit.schema.vocab import MACRO_ACTIONS, N_ACTIONS

Key = tuple[str, int, int]  # (game_id, seat, decision_index)


def _uniforms(seed: int, key: Key) -> tuple[float, float]:
    digest = hashlib.md5(f"{seed}:{key[0]}:{key[1]}:{key[2]}".encode(), usedforsecurity=False).digest()
    return int.from_bytes(digest[:8]) / 2**64, int.from_bytes(digest[8:]) / 2**64


def flip_record(record: dict, rate: float, seed: int) -> bool:
    """Flip ``record``'s label in place with probability ``rate`` when it had a choice; True when flipped."""
    legal = record.get(col.LEGAL_ACTIONS) or [True] * N_ACTIONS
    action = record[col.ACTION]
    others = [a for a in range(N_ACTIONS) if legal[a] and a != action[col.ACTION_INDEX]]
    if not others:
        return False
    draw, pick = _uniforms(seed, (record[col.GAME_ID], record[col.SEAT], record[col.DECISION_INDEX]))
    if draw >= rate:
        return False
    new = others[int(pick * len(others))]
    action[col.ACTION_INDEX], action[col.ACTION_MACRO] = new, MACRO_ACTIONS[new]
    return True


def flip_lines(lines: Iterable[bytes], rate: float, seed: int, flipped: set[Key]) -> Iterator[bytes]:
    """JSON lines with planted flips; the flipped decisions' keys are added to ``flipped``."""
    for line in lines:
        record = orjson.loads(line)
        if flip_record(record, rate, seed):
            flipped.add((record[col.GAME_ID], record[col.SEAT], record[col.DECISION_INDEX]))
        yield orjson.dumps(record) + b"\n"


def flip_files(paths: Iterable[Path], out: Path, rate: float, seed: int) -> tuple[list[Path], set[Key]]:
    """Copies of the logs ``paths`` under ``out`` with planted flips, and the flipped decisions' keys."""
    out.mkdir(parents=True, exist_ok=True)
    flipped: set[Key] = set()
    written = []
    for path in paths:
        target = out / Path(path).name
        with open(path, "rb") as source, open(target, "wb") as sink:
            for line in flip_lines(source, rate, seed, flipped):
                sink.write(line)
        written.append(target)
    return written, flipped
