"""Behaviour cloning: the shared actor network trained on a built dataset's train split.

``train_bc(layout, BCConfig(dataset=NAME))`` streams the train split from
Parquet in record batches (file order and rows within a batch shuffled by a
generator seeded with ``(seed, epoch)``), minimises the cross-entropy of
MASKED logits (illegal actions never compete), weighted per row by
``sample_weight`` and, with ``class_weighting: balanced``, by the inverse
frequency of the label. After every epoch it measures the FIXED holdout:
loss, accuracy and per-action recall. Early stopping keeps the weights of
the lowest holdout loss and stops after ``patience`` epochs without an
improvement of ``min_delta``; with ``select: last_epoch`` every epoch runs and
the last one's weights are kept (the loop's student: it learns a teacher
whose play departs from the holdout's source, so holdout loss is the wrong
yardstick for it).

It writes ``bc-<run_id>-best.{safetensors,json}`` (the card names the
dataset and its fingerprint, the feature spec version, the config, every
epoch's metrics and the code version) and its curves (``bc-<run_id>-metrics.jsonl``,
``-metrics-epoch.csv`` and TensorBoard event files: see :mod:`toolkit.train.metrics`).
Same seed, same dataset -> same weights (one torch thread, seeded init and
shuffles).
"""

from __future__ import annotations

import queue
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import torch
from pydantic import BaseModel, Field

from toolkit.datasets.dataset import FEATURES, HOLDOUT, LABEL, LEGAL_MASK, SAMPLE_WEIGHT, TRAIN, Dataset, open_dataset
from toolkit.errors import TrainError
from toolkit.features import FEATURE_SIZE, FEATURE_VERSION
from toolkit.layout import Layout
from toolkit.progress import Progress, ProgressFn
from toolkit.schema.vocab import MACRO_ACTIONS, N_ACTIONS
from toolkit.train import checkpoints
from toolkit.train.config import BCConfig, LrSchedule, PolicySpec
from toolkit.train.metrics import MetricsWriter
from toolkit.train.policy import ActorNet

_COLUMNS = [FEATURES, LABEL, LEGAL_MASK, SAMPLE_WEIGHT]


class EpochMetrics(BaseModel):
    epoch: int
    train_loss: float
    holdout_loss: float | None
    holdout_accuracy: float | None
    recall: dict[str, float | None] = Field(description="Holdout recall per action (None: no such label).")
    samples: int
    seconds: float


class BCResult(BaseModel):
    """What a BC run did and wrote."""

    run_id: str
    checkpoint: Path
    metrics: Path
    dataset: str
    fingerprint: str
    best_epoch: int
    holdout_accuracy: float | None
    holdout_loss: float | None
    epochs: list[EpochMetrics]
    stopped_early: bool
    train_rows: int
    holdout_rows: int
    samples_per_second: float


def _check_not_retired(layout: Layout, dataset: Dataset, config: BCConfig) -> None:
    """Refuse a build that read batches retired from the lake since, unless asked (``allow_retired``).

    Raises:
        TrainError: naming each such batch and its reason.
    """
    from toolkit.datasets.inventory import retired_inputs

    retired = [] if config.allow_retired else retired_inputs(layout, dataset.manifest)
    if retired:
        named = "; ".join(f"{r.batch_id} ({r.reason or 'no reason given'})" for r in retired)
        raise TrainError(
            f"build {dataset.fingerprint} of {dataset.name!r} read batches retired from the lake since: {named}",
            hint=f"rebuild it from the lake as it is (`distill build --name {dataset.name}`), or train on it anyway "
            "with --allow-retired",
        )


def train_bc(layout: Layout, config: BCConfig, out: Path | None = None, progress: ProgressFn | None = None) -> BCResult:
    """Train the actor on ``config.dataset``; writes the checkpoint to ``out`` (default ``<home>/runs/train``).

    Raises:
        BuildError: the dataset does not exist.
        TrainError: it was built with other features, its train split is empty, or it read batches retired from
            the lake since (unless ``allow_retired``).
    """
    torch.set_num_threads(config.torch_threads)
    torch.manual_seed(config.seed)
    dataset = open_dataset(layout, config.dataset, config.fingerprint)
    _check_dataset(dataset)
    _check_not_retired(layout, dataset, config)
    out = out or layout.inside(layout.runs / "train")
    run_id = config.run_id or checkpoints.new_run_id()
    out.mkdir(parents=True, exist_ok=True)
    stem = checkpoints.checkpoint_stem("bc", run_id, "metrics")
    with (
        MetricsWriter(out, stem, "bc", run_id, tensorboard=config.tensorboard) as metrics,
        closing(_Split(dataset, config)) as split,  # its first epoch is read from now on, while the rest is set up
    ):
        actor = ActorNet(config.policy)
        optimizer = _adam(actor, config.learning_rate, config.weight_decay)
        class_weights = _class_weights(dataset, config)
        holdout = read_split(dataset, HOLDOUT)
        history: list[EpochMetrics] = []
        best_state, best_loss, best_epoch, waited = None, float("inf"), 0, 0
        samples, train_seconds = 0, 0.0
        for epoch in range(1, config.epochs + 1):
            start = time.perf_counter()
            train_loss, n = _train_epoch(actor, optimizer, split, config, class_weights, epoch)
            seconds = time.perf_counter() - start
            samples, train_seconds = samples + n, train_seconds + seconds
            epoch_metrics = _measure(actor, holdout, epoch, train_loss, n, seconds)
            history.append(epoch_metrics)
            metrics.write("epoch", epoch, epoch_metrics.model_dump(), typed=False)
            if progress is not None:
                progress(Progress(epoch, config.epochs, "epochs"))
            score = epoch_metrics.holdout_loss if epoch_metrics.holdout_loss is not None else train_loss
            if config.select == "last_epoch":
                best_epoch = epoch
            elif score < best_loss - config.min_delta:
                best_state = {k: v.clone() for k, v in actor.state_dict().items()}
                best_loss, best_epoch, waited = score, epoch, 0
            else:
                waited += 1
                if waited >= config.patience:
                    break
    best = history[best_epoch - 1]
    card = checkpoints.save_checkpoint(
        out,
        best_state or actor.state_dict(),
        kind="bc",
        run_id=run_id,
        tag="best",
        arch=config.policy.model_dump(mode="json"),
        generation=config.generation,
        dataset=checkpoints.DatasetRef(name=dataset.name, fingerprint=dataset.fingerprint),
        config=config.model_dump(mode="json"),
        metrics={
            "best_epoch": best_epoch,
            "holdout_accuracy": best.holdout_accuracy,
            "holdout_loss": best.holdout_loss,
            "recall": best.recall,
            "epochs": [m.model_dump() for m in history],
        },
    )
    return BCResult(
        run_id=run_id,
        checkpoint=card,
        metrics=metrics.path,
        dataset=dataset.name,
        fingerprint=dataset.fingerprint,
        best_epoch=best_epoch,
        holdout_accuracy=best.holdout_accuracy,
        holdout_loss=best.holdout_loss,
        epochs=history,
        stopped_early=len(history) < config.epochs,
        train_rows=dataset.manifest.splits[TRAIN].rows,
        holdout_rows=dataset.manifest.splits[HOLDOUT].rows,
        samples_per_second=round(samples / max(train_seconds, 1e-9), 1),
    )


def _check_dataset(dataset: Dataset) -> None:
    spec = dataset.manifest.features
    version, size = spec.version, spec.size
    if (version, size) != (FEATURE_VERSION, FEATURE_SIZE):
        raise TrainError(
            f"dataset {dataset.name} has features v{version} ({size}); this code trains on "
            f"v{FEATURE_VERSION} ({FEATURE_SIZE})",
            hint=f"rebuild it: distill build --name {dataset.name}",
        )
    if dataset.manifest.splits[TRAIN].rows == 0:
        raise TrainError(f"dataset {dataset.name} has an empty train split", hint="build it from more data")


def _arrays(batch: pa.RecordBatch | pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """features [M,116] float32, labels [M], masks [M,8] bool, weights [M] float32 of an Arrow batch."""
    m = batch.num_rows

    def flat(name: str) -> np.ndarray:
        column = batch.column(name)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        return column.flatten().to_numpy(zero_copy_only=False)

    features = flat(FEATURES).astype(np.float32, copy=False).reshape(m, FEATURE_SIZE)
    masks = flat(LEGAL_MASK).astype(bool, copy=False).reshape(m, N_ACTIONS)
    labels = batch.column(LABEL).to_numpy().astype(np.int64, copy=False)
    weights = batch.column(SAMPLE_WEIGHT).to_numpy().astype(np.float32, copy=False)
    return features, labels, masks, weights


def read_split(dataset: Dataset, split: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A whole split as (features [M,F] float32, labels [M], masks [M,8] bool, weights [M] float32), writable."""
    features, labels, masks, weights = (np.require(a, requirements="W") for a in _arrays(dataset.read(split, _COLUMNS)))
    return features, labels, masks, weights


def _class_weights(dataset: Dataset, config: BCConfig) -> np.ndarray:
    """Per label: 1, or (balanced) rows / (labels present x rows of the label)."""
    if config.class_weighting == "none":
        return np.ones(N_ACTIONS, np.float32)
    counts = np.zeros(N_ACTIONS, np.int64)
    for batch in dataset.iter_batches(TRAIN, [LABEL]):
        counts += np.bincount(batch.column(LABEL).to_numpy(), minlength=N_ACTIONS)
    present = counts > 0
    weights = np.zeros(N_ACTIONS, np.float32)
    weights[present] = counts.sum() / (present.sum() * counts[present])
    return weights


# Bytes of one decoded row: features (float32), label (int64), legal mask (bool), weight (float32).
_ROW_BYTES = FEATURE_SIZE * 4 + 8 + N_ACTIONS + 4
_Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class _Split:
    """The train split's read batches, decoded, epoch by epoch.

    An epoch's files come in a seeded order; a reader thread decodes them ahead of the training (Parquet
    decoding and torch's kernels release the GIL, so on two cores the reading hides behind the training), and
    when the decoded split fits ``cache_mb`` it is kept for the next epochs. The first epoch's reading starts
    as soon as the split is opened, while the holdout is read and the network built.
    """

    def __init__(self, dataset: Dataset, config: BCConfig) -> None:
        self.files = dataset.files(TRAIN)
        self.config = config
        rows = dataset.manifest.splits[TRAIN].rows
        self.cache: list[list[_Arrays]] | None = None
        self.keep = rows * _ROW_BYTES <= config.cache_mb * 2**20
        self.next: tuple[int, np.random.Generator, Iterator[_Arrays]] | None = None
        self._reader: _ReadAhead | None = None
        self._start(1)

    def _start(self, epoch: int) -> None:
        rng = np.random.default_rng([self.config.seed, epoch])
        order = rng.permutation(len(self.files))
        if self.cache is not None:
            reader: Iterator[_Arrays] = (arrays for index in order for arrays in self.cache[index])
        else:
            # A split the cache keeps is held whole anyway: read it all ahead, from the moment the split is opened
            # (while the holdout is read and the network built), not two read batches ahead of the training.
            self._reader = _ReadAhead(self._read(order), depth=0 if self.keep else 2)
            reader = iter(self._reader)
        self.next = (epoch, rng, reader)

    def _read(self, order: np.ndarray) -> Iterator[_Arrays]:
        import pyarrow.parquet as pq

        decoded: list[list[_Arrays]] = [[] for _ in self.files]
        for index in order:
            parquet = pq.ParquetFile(self.files[index])
            for batch in parquet.iter_batches(batch_size=self.config.read_batch_rows, columns=_COLUMNS):
                arrays = _arrays(batch)
                if self.keep:
                    decoded[index].append(arrays)
                yield arrays
        if self.keep:
            self.cache = decoded

    def epoch(self, epoch: int) -> tuple[np.random.Generator, Iterator[_Arrays]]:
        """Epoch ``epoch``'s generator (its file order drawn) and its read batches, in that order."""
        if self.next is None or self.next[0] != epoch:
            self._start(epoch)
        assert self.next is not None
        _, rng, reader = self.next
        self.next = None
        return rng, reader

    def close(self) -> None:
        """Stop a reader still running (an epoch cut short by an error)."""
        if self._reader is not None:
            self._reader.close()


class _ReadAhead:
    """``source``'s items, produced by a thread (started at once) up to ``depth`` items ahead of the consumer (0:
    no bound); its errors re-raised in the consumer. ``close()`` stops it."""

    def __init__(self, source: Iterator[_Arrays], depth: int = 2) -> None:
        self._items: queue.Queue[tuple[str, Any]] = queue.Queue(depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, args=(source,), name="bc-reader", daemon=True)
        self._thread.start()

    def _produce(self, source: Iterator[_Arrays]) -> None:
        try:
            for item in source:
                if not self._put(("item", item)):
                    return
            self._put(("end", None))
        except BaseException as error:  # handed to the consumer, raised there
            self._put(("error", error))

    def _put(self, entry: tuple[str, Any]) -> bool:
        while not self._stop.is_set():
            try:
                self._items.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Iterator[_Arrays]:
        try:
            while True:
                kind, value = self._items.get()
                if kind == "end":
                    return
                if kind == "error":
                    raise value
                yield value
        finally:
            self.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def _minibatches(split: _Split, config: BCConfig, epoch: int) -> Iterator[tuple[np.ndarray, ...]]:
    """Shuffled minibatches of the train split: files in a seeded order, each read batch's rows shuffled."""
    rng, batches = split.epoch(epoch)
    for arrays in batches:
        order = rng.permutation(len(arrays[1]))
        # One gather per read batch, then contiguous slices (views): the same minibatches as gathering each
        # minibatch's rows, at a fraction of the calls.
        shuffled = tuple(a[order] for a in arrays)
        for start in range(0, len(order), config.batch_size):
            yield tuple(a[start : start + config.batch_size] for a in shuffled)


def _adam(
    actor: torch.nn.Module, learning_rate: float, weight_decay: float = 0.0, *, fused: bool = False
) -> torch.optim.Adam:
    """The student's optimiser: Adam with ``foreach`` (one call over all the parameters rather than a Python loop
    over them; the same weights bit for bit, a few percent of a step on this small network). ``fused``: one
    kernel for the whole update, ~10% faster a step again, its weights a rounding apart from ``foreach``'s."""
    if fused:
        return torch.optim.Adam(actor.parameters(), lr=learning_rate, weight_decay=weight_decay, fused=True)
    return torch.optim.Adam(actor.parameters(), lr=learning_rate, weight_decay=weight_decay, foreach=True)


def _train_epoch(
    actor: ActorNet,
    optimizer: torch.optim.Optimizer,
    split: _Split,
    config: BCConfig,
    class_weights: np.ndarray,
    epoch: int,
) -> tuple[float, int]:
    actor.train()
    total, weight_sum, n = 0.0, 0.0, 0
    for features, labels, masks, weights in _minibatches(split, config, epoch):
        w = (weights if config.use_sample_weights else np.ones_like(weights)) * class_weights[labels]
        loss_sum, w_sum = _gradient_step(actor, optimizer, features, labels, masks, w)
        total += loss_sum
        weight_sum += w_sum
        n += len(labels)
    return total / max(weight_sum, 1e-12), n


def _gradient_step(
    actor: ActorNet,
    optimizer: torch.optim.Optimizer,
    features: np.ndarray,
    labels: np.ndarray,
    masks: np.ndarray,
    weights: np.ndarray,
) -> tuple[float, float]:
    """One step (see :func:`_tensor_step`); returns (weighted loss sum, weight sum)."""
    w = torch.from_numpy(weights)
    losses = _tensor_step(
        actor, optimizer, torch.from_numpy(features), torch.from_numpy(labels), torch.from_numpy(masks), w
    )
    return float((losses * w).sum()), float(w.sum())


def _tensor_step(
    actor: ActorNet,
    optimizer: torch.optim.Optimizer,
    features: torch.Tensor,
    labels: torch.Tensor,
    masks: torch.Tensor,
    weights: torch.Tensor,
) -> torch.Tensor:
    """One step on the weighted cross-entropy of the masked logits; returns the rows' losses (detached)."""
    logits = actor.masked_logits(features, masks)
    losses = torch.nn.functional.cross_entropy(logits, labels, reduction="none")
    loss = (losses * weights).sum() / weights.sum().clamp_min(1e-12)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return losses.detach()


def seeded_actor(policy: PolicySpec, seed: int) -> ActorNet:
    """The student's network as :func:`fit_rows` starts it for ``seed`` (torch's generator seeded with it)."""
    torch.manual_seed(seed)
    return ActorNet(policy)


def fit_rows(
    features: np.ndarray,
    labels: np.ndarray,
    masks: np.ndarray,
    weights: np.ndarray,
    rows: np.ndarray,
    *,
    policy: PolicySpec,
    steps: int,
    batch_size: int = 1024,
    learning_rate: float = 1e-3,
    schedule: LrSchedule = "constant",
    seed: int = 0,
    actor: ActorNet | None = None,
    stop: threading.Event | None = None,
) -> ActorNet:
    """The student's network trained in memory on ``rows`` of the given arrays, for ``steps`` gradient steps.

    The same loss as :func:`train_bc` (masked logits, weighted by ``weights``),
    on minibatches drawn by epochs of a permutation seeded with ``seed``: the
    k-fold models of ``distill check labels`` are this. Only the rows a
    minibatch needs are gathered, so the arrays are never copied whole.
    ``schedule``: the learning rate stays ``learning_rate``, or falls linearly from it, step by step, to
    ``learning_rate / steps`` at the last step (Adam with one fused kernel: these models are trained once, scored
    and dropped). ``features`` must be C-contiguous float32, ``labels`` int64, ``masks``
    bool and ``weights`` float32 (as :func:`read_split` returns them). ``actor``: the network to train, made by
    :func:`seeded_actor` with ``seed`` (default: made here), so that networks can be made one after another on one
    thread (torch's generator is the process's) and trained at once on several. ``stop``: once set, training
    ends at the next step (the network is then not fully trained: for a caller giving up on it).
    """
    rng = np.random.default_rng([seed, len(rows)])
    actor = seeded_actor(policy, seed) if actor is None else actor
    optimizer = _adam(actor, learning_rate, fused=True)
    actor.train()
    tensors = _tensor_views(features, labels, masks, weights)
    done = 0
    while done < steps:
        order = torch.from_numpy(rows[rng.permutation(len(rows))])
        for start in range(0, len(order), batch_size):
            if stop is not None and stop.is_set():
                return actor
            if schedule == "linear":
                for group in optimizer.param_groups:
                    group["lr"] = learning_rate * (steps - done) / steps
            batch = order[start : start + batch_size]
            _tensor_step(actor, optimizer, *(t.index_select(0, batch) for t in tensors))
            done += 1
            if done >= steps:
                break
    return actor


# ``warnings.catch_warnings`` swaps the process's warning filters in and out: two threads in it at once can leave
# a filter behind or lose one, so the views below are made by one thread at a time.
_QUIET_VIEWS = threading.Lock()


def _tensor_views(*arrays: np.ndarray) -> list[torch.Tensor]:
    """Tensors sharing the arrays' memory, nothing copied; read-only arrays (zero-copy from Arrow) are only ever
    read through them, so torch's warning about them is silenced."""
    with _QUIET_VIEWS, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return [torch.from_numpy(a) for a in arrays]


def masked_probabilities(actor: ActorNet, features: np.ndarray, masks: np.ndarray, chunk: int = 65_536) -> np.ndarray:
    """The actor's probabilities over the legal actions (illegal ones exactly 0, each row summing to 1), float64."""
    actor.eval()
    out = np.zeros((len(features), N_ACTIONS), np.float64)
    with torch.no_grad():
        for start in range(0, len(features), chunk):
            f, m = _tensor_views(
                np.ascontiguousarray(features[start : start + chunk]),
                np.ascontiguousarray(masks[start : start + chunk]),
            )
            out[start : start + chunk] = torch.softmax(actor.masked_logits(f, m).double(), 1).numpy()
    out *= masks
    out /= np.maximum(out.sum(1, keepdims=True), 1e-300)
    return out


def _measure(
    actor: ActorNet, holdout: tuple[np.ndarray, ...], epoch: int, train_loss: float, samples: int, seconds: float
) -> EpochMetrics:
    """Holdout loss (unweighted mean), accuracy and per-action recall."""
    features, labels, masks, _ = holdout
    common: dict[str, Any] = {
        "epoch": epoch,
        "train_loss": round(train_loss, 6),
        "samples": samples,
        "seconds": round(seconds, 3),
    }
    if not len(labels):
        return EpochMetrics(
            **common, holdout_loss=None, holdout_accuracy=None, recall={name: None for name in MACRO_ACTIONS}
        )
    actor.eval()
    with torch.no_grad():
        logits = actor.masked_logits(torch.from_numpy(features), torch.from_numpy(masks))
        loss = float(torch.nn.functional.cross_entropy(logits, torch.from_numpy(labels)))
        predicted = logits.argmax(1).numpy()
    hit = predicted == labels
    recall = {
        name: (round(float(hit[labels == a].mean()), 4) if (labels == a).any() else None)
        for a, name in enumerate(MACRO_ACTIONS)
    }
    return EpochMetrics(
        **common, holdout_loss=round(loss, 6), holdout_accuracy=round(float(hit.mean()), 4), recall=recall
    )
