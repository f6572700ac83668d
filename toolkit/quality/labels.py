"""``distill check labels``: score every decision of a build and find the wrong labels.

``check_labels(layout, name, LabelCheckConfig())`` reads both splits of a
build and computes, per decision:

- out-of-sample probabilities of its legal actions: k-fold behaviour cloning
  with the student's network and features (:mod:`toolkit.quality.folds`,
  folds by game, seeded), masked to the legal actions and renormalised;
- confident learning on them with cleanlab (``cleanlab.filter.find_label_issues``
  and ``cleanlab.rank.get_label_quality_scores``), on the decisions with more
  than one legal action only (a forced move cannot be mislabelled);
- conflicting duplicates: the same feature vector with another label, within
  its source and across sources (:mod:`toolkit.quality.duplicates`);
- with a teacher checkpoint, the teacher's probability of the logged action and
  ``-log`` of it (the KL divergence between the logged one-hot choice and the teacher).

It writes the scores beside the build (:mod:`toolkit.datasets.scores`) and an HTML
report under ``reports/``, and returns a :class:`LabelCheckResult`: a summary per
source and generation (issue rate with a 95% Wilson interval) and the flagged
decisions. Same build, same config: the same scores, byte for byte. The defaults were
measured on the heuristic's own logs with planted flips (``bench/bench_labels.py``):
cleanlab's ``low_self_confidence`` filter separated planted flips from the
heuristic's own ambiguity best of its filters.
"""

from __future__ import annotations

import datetime as dt
import time

import numpy as np
import pyarrow as pa

from toolkit import __version__
from toolkit.datasets.dataset import FEATURES, LABEL, LEGAL_MASK, SAMPLE_WEIGHT, SPLITS, Dataset, open_dataset
from toolkit.datasets.scores import GroupRate, LabelScoresInfo, read_scores_info, write_scores
from toolkit.errors import LabelCheckError
from toolkit.features import FEATURE_SIZE
from toolkit.layout import Layout
from toolkit.progress import Progress, ProgressFn
from toolkit.quality.config import LabelCheckConfig
from toolkit.quality.duplicates import conflicts
from toolkit.quality.folds import assign_folds, fold_steps, out_of_sample_probabilities
from toolkit.quality.result import LabelCheckResult, LabelIssue
from toolkit.quality.teacher import load_teacher, teacher_kl, teacher_probability
from toolkit.schema import columns as col
from toolkit.schema import scores as sc
from toolkit.schema.vocab import MACRO_ACTIONS, N_ACTIONS
from toolkit.stats import wilson_interval

MIN_SCORED_PER_FOLD = 20
_KEYS = [col.GAME_ID, col.SEAT, col.DECISION_INDEX, col.SOURCE, col.GENERATION, col.BATCH_ID, col.SOURCE_LINE]


def check_labels(
    layout: Layout, name: str, config: LabelCheckConfig | None = None, progress: ProgressFn | None = None
) -> LabelCheckResult:
    """Score every decision of the build ``name`` (see the module docstring).

    Raises:
        BuildError: no such build.
        LabelCheckError: too few games or decisions for the folds, a single label, or a teacher that cannot be
            used (nothing is written).
    """
    import torch

    config = config or LabelCheckConfig()
    started = time.perf_counter()
    dataset = open_dataset(layout, name, config.fingerprint)
    teacher = load_teacher(config.teacher, dataset) if config.teacher is not None else None
    table, features, masks = _read_rows(dataset)
    labels = table.column(LABEL).to_numpy().astype(np.int64)
    weights = table.column(SAMPLE_WEIGHT).to_numpy().astype(np.float32)
    legal = masks.sum(1)
    scored = legal > 1
    game_codes, games = _codes(table.column(col.GAME_ID))
    _validate(dataset, len(games), labels, scored, config)
    # before the folds: its transient arrays are freed for them to reuse (the process's peak is the lower)
    within, across = conflicts(features, labels, _codes(table.column(col.SOURCE))[0])
    torch.set_num_threads(config.torch_threads)
    fold = assign_folds(games, config.folds, config.seed)[game_codes]  # a game's fold: a function of its id
    probs = out_of_sample_probabilities(
        features,
        labels,
        masks,
        weights,
        fold,
        folds=config.folds,
        policy=config.policy,
        steps=lambda n: fold_steps(n, config.batch_size, config.epochs, config.min_steps, config.max_steps),
        batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        schedule=config.schedule,
        seed=config.seed,
        workers=config.workers,
        on_fold=None if progress is None else lambda k: progress(Progress(k, config.folds, "folds")),
    )
    teacher_p = None if teacher is None else teacher_probability(teacher, features, masks, labels)
    del features, masks  # the vectors' last use: cleanlab's working set takes their place
    quality, flagged = _confident_learning(labels, probs, scored, config)
    rows = np.arange(len(labels))
    scores = _scores_table(dataset, table, labels, legal, scored, probs[rows, labels], probs.argmax(1))
    scores = _with_flags(scores, quality, flagged, within, across, teacher_p)
    return _finish(layout, dataset, config, scores, started)


def _read_rows(dataset: Dataset) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """Both splits' rows, train first: their keys, label and weight with a ``split`` column, and their feature
    vectors [N, FEATURE_SIZE] float32 and legal masks [N, actions] bool, streamed batch by batch into the arrays
    (the vectors are held once, never as an Arrow table beside them)."""
    parts = []
    for split in SPLITS:
        part = dataset.read(split, [*_KEYS, LABEL, SAMPLE_WEIGHT])
        parts.append(part.append_column(sc.SPLIT, pa.array([split] * part.num_rows, pa.string())))
    table = pa.concat_tables(parts).combine_chunks()
    features = np.empty((table.num_rows, FEATURE_SIZE), np.float32)
    masks = np.empty((table.num_rows, N_ACTIONS), bool)
    at = 0
    for split in SPLITS:
        for batch in dataset.iter_batches(split, [FEATURES, LEGAL_MASK]):
            rows = slice(at, at + batch.num_rows)
            features[rows] = _values(batch.column(FEATURES)).reshape(batch.num_rows, FEATURE_SIZE)
            masks[rows] = _values(batch.column(LEGAL_MASK)).reshape(batch.num_rows, N_ACTIONS)
            at += batch.num_rows
    pa.default_memory_pool().release_unused()  # the decoded row groups' pages, kept by the pool for reuse
    return table, features, masks


def _values(column: pa.Array) -> np.ndarray:
    """The values of a list column's rows, end to end."""
    return column.flatten().to_numpy(zero_copy_only=False)


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A string column as (each row's code, the distinct values): no Python string per row."""
    encoded = column.combine_chunks().dictionary_encode()
    return encoded.indices.to_numpy(zero_copy_only=False), encoded.dictionary.to_numpy(zero_copy_only=False)


def _validate(dataset: Dataset, games: int, labels: np.ndarray, scored: np.ndarray, config: LabelCheckConfig) -> None:
    """Refuse a build the folds cannot score, naming what to change; every problem at once."""
    where = f"dataset {dataset.name} ({dataset.fingerprint})"
    problems = []
    if games < config.folds:
        problems.append(f"{games} games for {config.folds} folds (each fold holds out whole games)")
    need = MIN_SCORED_PER_FOLD * config.folds
    if int(scored.sum()) < need:
        problems.append(
            f"{int(scored.sum())} decisions with more than one legal action; {config.folds} folds need {need} "
            f"({MIN_SCORED_PER_FOLD} a fold)"
        )
    if problems:
        raise LabelCheckError(
            f"{where} is too small to score: " + "; ".join(problems),
            hint=f"lower --folds (now {config.folds}, at least 2), or build {dataset.name} from more games",
        )
    present = np.unique(labels[scored])
    if len(present) < 2:
        only = MACRO_ACTIONS[int(present[0])] if len(present) else "none"
        raise LabelCheckError(
            f"{where} has a single label ({only}) on its decisions with a choice: there is nothing to tell apart",
            hint="score a build whose decisions choose more than one action (check --source / --exclude-labels)",
        )


def _confident_learning(
    labels: np.ndarray, probs: np.ndarray, scored: np.ndarray, config: LabelCheckConfig
) -> tuple[np.ndarray, np.ndarray]:
    """cleanlab's label quality (NaN where not scored) and issue flags (False where not scored)."""
    from cleanlab.filter import find_label_issues
    from cleanlab.rank import get_label_quality_scores

    quality = np.full(len(labels), np.nan)
    flagged = np.zeros(len(labels), bool)
    y, p = labels[scored], probs[scored]
    quality[scored] = get_label_quality_scores(y, p, method=config.quality_method)
    flagged[scored] = find_label_issues(y, p, filter_by=config.filter_by, n_jobs=1)
    return quality, flagged


def _scores_table(
    dataset: Dataset,
    table: pa.Table,
    labels: np.ndarray,
    legal: np.ndarray,
    scored: np.ndarray,
    p_label: np.ndarray,
    predicted: np.ndarray,
) -> dict[str, pa.Array]:
    n = table.num_rows
    return {
        sc.DATASET: pa.array([dataset.name] * n, pa.string()),
        sc.FINGERPRINT: pa.array([dataset.fingerprint] * n, pa.string()),
        **{name: table.column(name).combine_chunks() for name in _KEYS},
        sc.LAKE_VERSION: pa.array([dataset.manifest.lake_version] * n, pa.int64()),
        sc.SPLIT: table.column(sc.SPLIT).combine_chunks(),
        sc.LABEL: pa.array(labels, pa.int64()),
        sc.LEGAL_COUNT: pa.array(legal.astype(np.int8)),
        sc.SCORED: pa.array(scored),
        sc.P_LABEL: pa.array(p_label, pa.float64()),
        sc.PREDICTED: pa.array(predicted.astype(np.int64)),
    }


def _with_flags(
    columns: dict[str, pa.Array],
    quality: np.ndarray,
    flagged: np.ndarray,
    within: np.ndarray,
    across: np.ndarray,
    teacher_p: np.ndarray | None,
) -> pa.Table:
    n = len(flagged)
    columns = {
        **columns,
        sc.LABEL_QUALITY: pa.array(quality, pa.float64(), from_pandas=True),  # NaN -> null: not scored
        sc.FLAGGED: pa.array(flagged),
        sc.CONFLICT_WITHIN_SOURCE: pa.array(within),
        sc.CONFLICT_ACROSS_SOURCES: pa.array(across),
        sc.TEACHER_P_LABEL: pa.nulls(n, pa.float64()) if teacher_p is None else pa.array(teacher_p),
        sc.TEACHER_KL: pa.nulls(n, pa.float64()) if teacher_p is None else pa.array(teacher_kl(teacher_p)),
    }
    return pa.Table.from_pydict({name: columns[name] for name in sc.SCHEMA.names}).cast(sc.SCHEMA)


def group_rates(scores: pa.Table) -> list[GroupRate]:
    """The issue rate per source and generation (with a 95% Wilson interval), sorted."""
    import pyarrow.compute as pc

    conflicted = pc.or_(scores.column(sc.CONFLICT_WITHIN_SOURCE), scores.column(sc.CONFLICT_ACROSS_SOURCES))
    grouped = (
        scores.select([col.SOURCE, col.GENERATION, sc.SCORED, sc.FLAGGED])
        .append_column("conflicted", conflicted)
        .group_by([col.SOURCE, col.GENERATION])
        .aggregate([(sc.SCORED, "count"), (sc.SCORED, "sum"), (sc.FLAGGED, "sum"), ("conflicted", "sum")])
        .to_pylist()
    )
    out = []
    for g in sorted(grouped, key=lambda g: (g[col.SOURCE], -1 if g[col.GENERATION] is None else g[col.GENERATION])):
        scored, flagged = int(g[f"{sc.SCORED}_sum"] or 0), int(g[f"{sc.FLAGGED}_sum"] or 0)
        low, high = wilson_interval(flagged, scored)
        out.append(
            GroupRate(
                source=g[col.SOURCE],
                generation=g[col.GENERATION],
                decisions=int(g[f"{sc.SCORED}_count"]),
                scored=scored,
                flagged=flagged,
                rate=round(flagged / scored, 6) if scored else 0.0,
                low=round(low, 6),
                high=round(high, 6),
                conflicts=int(g["conflicted_sum"] or 0),
            )
        )
    return out


def _finish(
    layout: Layout, dataset: Dataset, config: LabelCheckConfig, scores: pa.Table, started: float
) -> LabelCheckResult:
    import pyarrow.compute as pc

    from toolkit.quality.report_html import write_labels_report

    def count(name: str) -> int:
        return int(pc.sum(scores.column(name)).as_py() or 0)

    scored, flagged = count(sc.SCORED), count(sc.FLAGGED)
    hit = pc.and_(scores.column(sc.SCORED), pc.equal(scores.column(sc.PREDICTED), scores.column(sc.LABEL)))
    teacher_p = scores.column(sc.TEACHER_P_LABEL)
    result = LabelCheckResult(
        dataset=dataset.name,
        fingerprint=dataset.fingerprint,
        rows=scores.num_rows,
        scored=scored,
        flagged=flagged,
        rate=round(flagged / scored, 6) if scored else 0.0,
        rate_interval=tuple(round(x, 6) for x in wilson_interval(flagged, scored)),  # type: ignore[arg-type]
        conflicts_within_source=count(sc.CONFLICT_WITHIN_SOURCE),
        conflicts_across_sources=count(sc.CONFLICT_ACROSS_SOURCES),
        out_of_sample_accuracy=round(int(pc.sum(hit).as_py() or 0) / max(scored, 1), 6),
        teacher=None if config.teacher is None else layout.stored(config.teacher),
        teacher_mean_p_label=None if config.teacher is None else round(pc.mean(teacher_p).as_py(), 6),
        groups=group_rates(scores),
        issues=_issues(scores),
        config=config,
        seconds=0.0,
    )
    result.seconds = round(time.perf_counter() - started, 3)  # the work; writing is the record's
    if config.write:
        info = write_scores(layout, dataset, scores, _info(dataset, config, result))
        html = write_labels_report(layout, result, info)
        result.paths = {
            "scores": layout.stored(layout.label_scores(dataset.name, dataset.fingerprint)),
            "record": layout.stored(layout.label_scores_info(dataset.name, dataset.fingerprint)),
            "html": layout.stored(html),
        }
    return result


def _issues(scores: pa.Table) -> list[LabelIssue]:
    """The flagged decisions, worst label quality first (ties by key)."""
    flagged = scores.filter(scores.column(sc.FLAGGED)).to_pylist()
    flagged.sort(key=lambda r: (r[sc.LABEL_QUALITY], r[col.GAME_ID], r[col.SEAT], r[col.DECISION_INDEX]))
    return [
        LabelIssue(
            game_id=r[col.GAME_ID],
            seat=r[col.SEAT],
            decision_index=r[col.DECISION_INDEX],
            source=r[col.SOURCE],
            split=r[sc.SPLIT],
            label=MACRO_ACTIONS[r[sc.LABEL]],
            predicted=MACRO_ACTIONS[r[sc.PREDICTED]],
            score=round(r[sc.LABEL_QUALITY], 6),
        )
        for r in flagged
    ]


def _info(dataset: Dataset, config: LabelCheckConfig, result: LabelCheckResult) -> LabelScoresInfo:
    return LabelScoresInfo(
        dataset=dataset.name,
        fingerprint=dataset.fingerprint,
        scores_sha256="",
        created_at=dt.datetime.now(dt.UTC),
        code_version=__version__,
        lake_version=dataset.manifest.lake_version,
        config=config.model_dump(mode="json", exclude={"write"}),
        rows=result.rows,
        scored=result.scored,
        flagged=result.flagged,
        conflicts_within_source=result.conflicts_within_source,
        conflicts_across_sources=result.conflicts_across_sources,
        teacher=result.teacher,
        groups=result.groups,
    )


__all__ = ["LabelCheckConfig", "LabelCheckResult", "LabelIssue", "check_labels", "group_rates", "read_scores_info"]
