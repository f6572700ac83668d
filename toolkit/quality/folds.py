"""Out-of-sample probabilities by k-fold behaviour cloning, folds drawn by game.

A game's fold is a pure function of (seed, game id): games are ordered by a
salted hash and dealt round-robin, so folds hold equal numbers of games and
no game's decisions sit on both sides of a fold (they are correlated: a model
that saw a game's other decisions would vouch for its labels). Each fold's
model is the student's network (:func:`toolkit.train.bc.fit_rows`) trained on
the other folds; its probabilities are masked to the legal actions and
renormalised (:func:`toolkit.train.bc.masked_probabilities`).
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Final

import numpy as np

from toolkit.train.bc import fit_rows, masked_probabilities, seeded_actor
from toolkit.train.config import LrSchedule, PolicySpec

if TYPE_CHECKING:
    from toolkit.train.policy import ActorNet

PROBABILITY_ROWS: Final = 65_536  # held rows scored at a time (a copy of their features: ~30 MB)


def assign_folds(game_ids: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """The fold (0..folds-1) of every row, by its game."""
    games, inverse = np.unique(game_ids, return_inverse=True)
    digests = [hashlib.md5(f"{seed}:{g}".encode(), usedforsecurity=False).hexdigest() for g in games.tolist()]
    order = np.argsort(np.array(digests), kind="stable")
    fold_of_game = np.empty(len(games), np.int64)
    fold_of_game[order] = np.arange(len(games)) % folds
    return fold_of_game[inverse]


def fold_steps(train_rows: int, batch_size: int, epochs: int, min_steps: int, max_steps: int) -> int:
    """Gradient steps of one fold model: ``epochs`` passes, at least ``min_steps`` (small builds need many
    passes) and at most ``max_steps`` (large ones learn enough in fewer)."""
    per_epoch = max(1, math.ceil(train_rows / batch_size))
    return int(min(max(epochs * per_epoch, min_steps), max_steps))


def out_of_sample_probabilities(
    features: np.ndarray,
    labels: np.ndarray,
    masks: np.ndarray,
    weights: np.ndarray,
    fold: np.ndarray,
    *,
    folds: int,
    policy: PolicySpec,
    steps: Callable[[int], int],
    batch_size: int,
    learning_rate: float,
    seed: int,
    schedule: LrSchedule = "linear",
    workers: int = 1,
    on_fold: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Each row's probabilities from the model that did not see its game ([N, actions], float64).

    ``workers`` fold models train at once, each on its own thread (torch's operators release the GIL): the
    networks are made first, in fold order on this thread, so the probabilities are the same however many train
    at once. ``on_fold`` is told how many folds are done as each finishes."""
    probs = np.zeros(masks.shape, np.float64)
    actors = [seeded_actor(policy, seed * 1000 + k) for k in range(folds)]
    stopping = threading.Event()  # set when this call gives up (a fold failed, an interrupt): the others stop too

    def fit(k: int) -> ActorNet:
        rows = np.flatnonzero(fold != k)
        return fit_rows(
            features,
            labels,
            masks,
            weights,
            rows,
            policy=policy,
            steps=steps(len(rows)),
            batch_size=batch_size,
            learning_rate=learning_rate,
            schedule=schedule,
            seed=seed * 1000 + k,
            actor=actors[k],
            stop=stopping,
        )

    with ThreadPoolExecutor(max_workers=min(workers, folds), thread_name_prefix="distill-fold") as pool:
        training = {pool.submit(fit, k): k for k in range(folds)}
        try:
            for done, future in enumerate(as_completed(training), 1):
                k = training[future]
                actor = future.result()
                # Scored here, one fold at a time, while the others train: the blocks (~130 MB at once) are the
                # check's largest transients, and one thread's allocator holds them (each thread has its own).
                held_rows = np.flatnonzero(fold == k)
                for start in range(0, len(held_rows), PROBABILITY_ROWS):  # the held rows gathered a block at a time
                    part = held_rows[start : start + PROBABILITY_ROWS]
                    probs[part] = masked_probabilities(actor, features[part], masks[part], chunk=PROBABILITY_ROWS)
                if on_fold is not None:
                    on_fold(done)
        except BaseException:  # a fold failed, progress raised, an interrupt: the folds not started are not
            stopping.set()  # started and those training stop at their next step
            for future in training:
                future.cancel()
            raise
    return probs
