"""The ablation driver: base -> grid -> builds -> one job per variant -> the paired table, JSON and HTML.

Everything the command line can get wrong (the base, a field, a value, a
table's player) is checked before anything is written. Then the driver
builds every variant's dataset (the build stage: deterministic, an identical
build reused by its fingerprint; builds are the driver's, as catalog reads
are), runs the variants that have no published folder yet as jobs on the
back end (:mod:`toolkit.ablate.job`), and pairs every student's games with
the first variant's (same deals, same seats; intervals over deals,
:func:`toolkit.train.evaluate.compare`). ``ablation.json`` and
``ablation.html`` are written atomically under ``ablations/<name>/``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from pathlib import Path

from toolkit import __version__
from toolkit.ablate.base import resolve_base
from toolkit.ablate.config import AblateConfig
from toolkit.ablate.grid import Variant, make_grid
from toolkit.ablate.job import VariantJob, finished, run_variant, seat_player
from toolkit.ablate.report import write_ablation
from toolkit.ablate.result import AblationResult, VariantResult, VariantRun, VariantTable
from toolkit.datasets.build import BuildInfo, build_dataset
from toolkit.errors import ConfigError
from toolkit.jobs.plan import shards
from toolkit.jobs.run import run_shards
from toolkit.layout import Layout
from toolkit.loop.steps.student import StudentInput, bc_config
from toolkit.progress import ProgressFn

STUDENT_RUN_ID = "student"


def run_ablation(layout: Layout, config: AblateConfig, *, progress: ProgressFn | None = None) -> AblationResult:
    """Run (or finish) the ablation ``config`` describes in the data root ``layout``.

    Args:
        layout: the data root (its lake, builds and runs are read; builds and ``ablations/`` written).
        config: the base, the grid, seeds, games, tables and back end.
        progress: told the variants finished so far.

    Returns:
        The table: every variant's dataset, holdout accuracy and strength, paired with the first variant.

    Raises:
        ConfigError: an unknown base, field or player, or a value a variant's config refuses (nothing written).
        BuildError: a variant's build selects nothing (e.g. a filter that keeps no episode).
        JobError: a variant's worker died more often than the back end retries.
    """
    started = time.perf_counter()
    base = resolve_base(layout, config)
    variants = make_grid(base, config)
    _check_players(layout, variants)
    layout.check(write=True)
    builds = _build_all(layout, variants)
    root = layout.ablation_dir(config.name)
    jobs = [_job(layout, root, config, v, info) for v, info in zip(variants, builds, strict=True)]
    done = {job.key: run for job in jobs if (run := finished(layout.resolve(job.folder))) is not None}
    todo = list({job.key: job for job in jobs if job.key not in done}.values())  # variants running the same: once
    ran = run_shards(run_variant, shards(len(todo), 1), todo, config.backend, progress=progress, unit="variants")
    runs = {**done, **{r.key: r for r in ran}}
    results = _results(layout, variants, builds, jobs, runs, resumed=set(done))
    table = AblationResult(
        name=config.name,
        base=base.description,
        fields=[v.field for v in config.vary],
        zip=config.zip,
        seed=config.seed,
        games=results[0].tables[next(iter(results[0].tables))].games,
        max_rounds=variants[0].max_rounds,
        tables={t: list(o) for t, o in variants[0].tables.items()},
        backend=config.backend.kind,
        same_holdout=len({r.holdout_content for r in results}) == 1,
        variants=results,
        code_version=__version__,
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        seconds=round(time.perf_counter() - started, 3),
    )
    return write_ablation(layout, root, table)


def _check_players(layout: Layout, variants: list[Variant]) -> None:
    """Every seat of every table is a player type or a checkpoint (as given, else under the data root)."""
    from toolkit.game import PLAYER_TYPES
    from toolkit.train.checkpoints import card_path

    problems = []
    for table, opponents in variants[0].tables.items():
        for name in dict.fromkeys(opponents):  # each unknown name once
            if name not in PLAYER_TYPES and not card_path(seat_player(layout, name)).is_file():
                problems.append(f"table {table}: {name!r} is neither a player type nor a checkpoint")
    if problems:
        raise ConfigError(
            "; ".join(problems),
            hint=f"seat player types ({', '.join(PLAYER_TYPES)}) or checkpoints (a card .json or its path without "
            "the suffix, as given or under the data root), e.g. --table past=runs/demo/.../student-best.json,...",
        )


def _build_all(layout: Layout, variants: list[Variant]) -> list[BuildInfo]:
    """Each variant's build; variants with the same build config share one (the build stage reuses it)."""
    built: dict[str, BuildInfo] = {}
    for variant in variants:
        key = variant.build.model_dump_json()
        if key not in built:
            built[key] = build_dataset(layout, variant.build)
    return [built[v.build.model_dump_json()] for v in variants]


def _job(layout: Layout, root: Path, config: AblateConfig, variant: Variant, info: BuildInfo) -> VariantJob:
    step = StudentInput(dataset=info.dataset.name, fingerprint=info.dataset.fingerprint, run_id=STUDENT_RUN_ID)
    bc = bc_config(variant.student, step, seed=config.seed, generation=None).model_copy(update={"tensorboard": False})
    what = {
        "code_version": __version__,
        "fingerprint": info.dataset.fingerprint,
        "bc": bc.model_dump(mode="json"),
        "tables": variant.tables,
        "games": config.games,
        "seed": config.seed,
        "max_rounds": variant.max_rounds,
    }
    key = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]
    return VariantJob(
        home=str(layout.home),
        lake=layout.lake_uri,
        folder=layout.stored(root / "variants" / key),
        key=key,
        bc=bc.model_dump(mode="json"),
        tables=variant.tables,
        games=config.games,
        seed=config.seed,
        max_rounds=variant.max_rounds,
    )


def _results(
    layout: Layout,
    variants: list[Variant],
    builds: list[BuildInfo],
    jobs: list[VariantJob],
    runs: dict[str, VariantRun],
    *,
    resumed: set[str],
) -> list[VariantResult]:
    from toolkit.train.evaluate import EvaluationResult, compare, read_evaluation

    def evaluations(job: VariantJob) -> dict[str, EvaluationResult]:
        folder = layout.resolve(job.folder)
        return {
            table: read_evaluation(layout.inside(folder / name)) for table, name in runs[job.key].evaluations.items()
        }

    first = evaluations(jobs[0])
    out = []
    for variant, info, job in zip(variants, builds, jobs, strict=True):
        run, mine = runs[job.key], evaluations(job)
        tables = {}
        for table, played in mine.items():
            paired = compare(played, first[table]) if variant.index else None
            tables[table] = VariantTable(
                opponents=played.opponents,
                games=played.games,
                wins=played.wins,
                win_rate=played.win_rate,
                win_low=played.win_low,
                win_high=played.win_high,
                truncations=played.truncations,
                deals=paired.deals if paired else None,
                diff=paired.win_rate_diff if paired else None,
                diff_low=paired.win_rate_diff_low if paired else None,
                diff_high=paired.win_rate_diff_high if paired else None,
            )
        out.append(_variant_result(layout, variant, info, job, run, tables, job.key in resumed))
    return out


def _variant_result(
    layout: Layout,
    variant: Variant,
    info: BuildInfo,
    job: VariantJob,
    run: VariantRun,
    tables: dict[str, VariantTable],
    resumed: bool,
) -> VariantResult:
    m = info.manifest
    train = m.splits["train"]
    return VariantResult(
        index=variant.index,
        label=variant.label,
        settings=variant.settings,
        key=job.key,
        dataset=m.name,
        fingerprint=m.fingerprint,
        build_reused=info.reused,
        train_rows=train.rows,
        train_games=train.games,
        rows_by_source=train.rows_by_source,
        shares={source: share.achieved for source, share in m.shares.items()},
        holdout_rows=m.splits["holdout"].rows,
        holdout_content=m.holdout.content,
        holdout_accuracy=run.holdout_accuracy,
        checkpoint=layout.stored(layout.resolve(job.folder) / run.checkpoint),
        resumed=resumed,
        seconds=run.seconds,
        tables=tables,
    )
