"""``distill build``: build a training dataset (``distill datasets ...`` looks at builds: ``datasets_cmd``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from toolkit.cli.app import AsOfOpt, JsonOpt, Table, app, console, layout, model_option, print_json, progress_bar
from toolkit.datasets.config import BuildConfig, LabelIssueFilter
from toolkit.errors import ConfigError

if TYPE_CHECKING:  # for annotations only: the CLI imports stages when a command runs
    from toolkit.datasets.dataset import Manifest


def _pairs(values: list[str] | None, flag: str) -> dict[str, float] | None:
    """``["forge=1.0", "ppo=0.5"]`` -> ``{"forge": 1.0, "ppo": 0.5}``."""
    if not values:
        return None
    out: dict[str, float] = {}
    for value in values:
        source, sep, number = value.partition("=")
        try:
            out[source.strip()] = float(number)
        except ValueError:
            raise ConfigError(f"{flag} {value!r} is not SOURCE=NUMBER", hint=f"e.g. {flag} forge=1.0") from None
        if not sep:
            raise ConfigError(f"{flag} {value!r} is not SOURCE=NUMBER", hint=f"e.g. {flag} forge=1.0")
    return out


@app.command("build")
def build_command(
    config_file: Annotated[
        Path | None, typer.Option("--config", help="A build.yaml; flags override its fields.")
    ] = None,
    name: Annotated[str | None, model_option(BuildConfig, "name", "--name")] = None,
    source: Annotated[list[str] | None, model_option(BuildConfig, "sources", "--source")] = None,
    generation: Annotated[list[int] | None, model_option(BuildConfig, "generations", "--generation")] = None,
    batch: Annotated[list[str] | None, model_option(BuildConfig, "batches", "--batch")] = None,
    weight: Annotated[list[str] | None, model_option(BuildConfig, "weights", "--weight")] = None,
    mode: Annotated[str | None, model_option(BuildConfig, "weight_mode", "--mode")] = None,
    min_reward: Annotated[float | None, model_option(BuildConfig, "min_reward", "--min-reward")] = None,
    wins_only: Annotated[list[str] | None, model_option(BuildConfig, "wins_only", "--wins-only")] = None,
    min_length: Annotated[int | None, model_option(BuildConfig, "min_episode_length", "--min-length")] = None,
    exclude_labels: Annotated[
        list[str] | None, model_option(BuildConfig, "exclude_label_sources", "--exclude-labels")
    ] = None,
    pod_size: Annotated[list[int] | None, model_option(BuildConfig, "pod_sizes", "--pod-size")] = None,
    seed: Annotated[int | None, model_option(BuildConfig, "seed", "--seed")] = None,
    generation_decay: Annotated[
        float | None, model_option(BuildConfig, "generation_decay", "--generation-decay")
    ] = None,
    drop_label_issues: Annotated[
        bool,
        typer.Option(
            "--drop-label-issues",
            help="Leave out of the train split the decisions `distill check labels` flagged (the holdout stays).",
        ),
    ] = False,
    min_label_quality: Annotated[
        float | None, model_option(LabelIssueFilter, "min_quality", "--min-label-quality")
    ] = None,
    label_scores: Annotated[str | None, model_option(LabelIssueFilter, "scores", "--label-scores")] = None,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Build a training dataset from the lake: weighted, filtered, deduplicated, with a fixed holdout."""
    from toolkit.config import load_config
    from toolkit.datasets.build import build_dataset

    config = load_config(
        BuildConfig,
        config_file,
        dict(
            name=name,
            sources=source or None,
            generations=generation or None,
            batches=batch or None,
            weights=_pairs(weight, "--weight"),
            weight_mode=mode,
            min_reward=min_reward,
            wins_only=wins_only or None,
            min_episode_length=min_length,
            exclude_label_sources=exclude_labels or None,
            pod_sizes=pod_size or None,
            seed=seed,
            generation_decay=generation_decay,
            label_issues=_label_issues(drop_label_issues, min_label_quality, label_scores),
        ),
    )
    with progress_bar("build: scanning the lake", enabled=not as_json) as progress:
        info = build_dataset(layout(), config, progress=progress, as_of=as_of)
    if as_json:
        print_json(
            {"reused": info.reused, "latest": info.latest, "path": str(info.dataset.root), **_summary(info.manifest)}
        )
        return
    verb = "reused identical build" if info.reused else f"built in {info.seconds:.1f}s"
    console.print(
        f"[bold]{escape(config.name)}[/bold] {info.manifest.fingerprint}: {verb} -> {escape(str(info.dataset.root))}",
        markup=True,
    )
    if not info.latest:
        console.print(
            f"(a build of the lake's past: the latest build of {config.name} is unchanged; open this one with "
            f"--fingerprint {info.manifest.fingerprint})"
        )
    show_manifest(info.manifest)


def _label_issues(drop: bool, min_quality: float | None, scores: str | None) -> dict[str, Any] | None:
    """The ``label_issues`` section the cleaning flags ask for (None: no flag given)."""
    if not drop and min_quality is None:
        if scores is not None:
            raise ConfigError(
                "--label-scores names scores to clean by", hint="add --drop-label-issues or --min-label-quality Q"
            )
        return None
    return {"drop_flagged": drop, "min_quality": min_quality, "scores": scores}


def _summary(manifest: Manifest) -> dict[str, Any]:
    return {
        "name": manifest.name,
        "fingerprint": manifest.fingerprint,
        "lake_version": manifest.lake_version,
        "train": {"rows": manifest.splits["train"].rows, "games": manifest.splits["train"].games},
        "holdout": {"rows": manifest.splits["holdout"].rows, "games": manifest.splits["holdout"].games},
        "shares": {s: share.model_dump() for s, share in manifest.shares.items()},
        "duplicates": manifest.duplicates,
        "label_scores": None if manifest.label_scores is None else manifest.label_scores.model_dump(),
    }


def show_manifest(manifest: Manifest) -> None:
    """A build's filter trail per source, its splits and labels."""
    table = Table(title="rows (games) per source after each step")
    steps = list(dict.fromkeys(step.step for trail in manifest.filters.values() for step in trail))
    table.add_column("source")
    for step in steps:
        table.add_column(step, justify="right")
    table.add_column("share", justify="right")
    for source, trail in manifest.filters.items():
        by_step = {s.step: f"{s.rows:,} ({s.games:,})" for s in trail}
        share = manifest.shares[source]
        target = f" / {share.target:.1%}" if share.target is not None else ""
        table.add_row(source, *(by_step.get(step, "") for step in steps), f"{share.achieved:.1%}{target}")
    console.print(table)
    train, holdout = manifest.splits["train"], manifest.splits["holdout"]
    console.print(
        f"train {train.rows:,} rows / {train.games:,} games (weighted {train.weighted_rows:,.0f}); "
        f"holdout {holdout.rows:,} rows / {holdout.games:,} games "
        f"({manifest.holdout.fraction:.0%} of {', '.join(manifest.holdout.sources)} games, salt "
        f"{manifest.holdout.salt!r}); duplicates dropped {manifest.duplicates:,}"
    )
    if manifest.label_scores is not None:
        used = manifest.label_scores
        console.print(
            f"label issues: {used.rows_dropped:,} train rows dropped ({used.rule}) by the scores of "
            f"{used.dataset} {used.fingerprint} ({used.path})"
        )
    labels = ", ".join(f"{k} {v:,}" for k, v in train.label_sources.items())
    console.print(f"labels (train): {labels}; features v{manifest.features.version} ({manifest.features.size} floats)")
