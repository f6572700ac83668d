"""``distill check lake`` and ``distill check dataset``: run a quality gate, print a one-screen verdict.

Exit codes: 0 passed, 1 a blocking expectation failed, 2 the gate could not
run (bad suite, nothing in scope).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.text import Text

from toolkit.checks.config import CheckConfig
from toolkit.cli.app import (
    BuildArg,
    FingerprintOpt,
    JsonOpt,
    Table,
    app,
    console,
    flags_given,
    layout,
    model_option,
    print_json,
    progress_bar,
)
from toolkit.config import validation_message
from toolkit.limits import MAX_GENERATION
from toolkit.quality.config import LabelCheckConfig

if TYPE_CHECKING:  # for annotations only: the CLI imports stages when a command runs
    from toolkit.checks.report import GateReport

check_app = typer.Typer(
    help="Quality gates: expectation suites and data-quality metrics, with reports.", no_args_is_help=True
)
app.add_typer(check_app, name="check")

SuiteOpt = Annotated[Path | None, model_option(CheckConfig, "suite", "--suite")]
FloorOpt = Annotated[float | None, model_option(CheckConfig, "entropy_floor", "--entropy-floor")]
BaselineOpt = Annotated[Path | None, model_option(CheckConfig, "baseline", "--baseline")]
WriteOpt = Annotated[bool | None, model_option(CheckConfig, "write", "--write/--no-write")]
ChunkOpt = Annotated[int | None, model_option(CheckConfig, "chunk_rows", "--chunk-rows")]
SampleOpt = Annotated[int | None, model_option(CheckConfig, "sample_rows", "--sample-rows")]


def _config(
    suite: Path | None,
    entropy_floor: float | None,
    baseline: Path | None,
    write: bool | None,
    chunk_rows: int | None,
    sample_rows: int | None,
) -> CheckConfig:
    """The gate's config from the flags given (None: not given, the field's default)."""
    from pydantic import ValidationError

    from toolkit.errors import ConfigError

    given = flags_given(
        suite=suite,
        entropy_floor=entropy_floor,
        baseline=baseline,
        write=write,
        chunk_rows=chunk_rows,
        sample_rows=sample_rows,
    )
    try:
        return CheckConfig(**given)
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, as_flags=True)) from None


@check_app.command("lake")
def check_lake_command(
    source: Annotated[str | None, typer.Option("--source", help="Only this source.")] = None,
    generation: Annotated[
        int | None, typer.Option("--generation", max=MAX_GENERATION, help="Only this generation.")
    ] = None,
    batch: Annotated[str | None, typer.Option("--batch", help="Only this batch id.")] = None,
    suite: SuiteOpt = None,
    entropy_floor: FloorOpt = None,
    baseline: BaselineOpt = None,
    as_json: JsonOpt = False,
    write: WriteOpt = None,
    chunk_rows: ChunkOpt = None,
    sample_rows: SampleOpt = None,
) -> None:
    """Check the decision lake (or a source / generation / batch of it); exit 1 if a blocking expectation fails."""
    from toolkit.checks.config import LakeScope
    from toolkit.checks.gate import check_lake as run

    report = run(
        layout(),
        LakeScope(source=source, generation=generation, batch=batch),
        _config(suite, entropy_floor, baseline, write, chunk_rows, sample_rows),
    )
    _finish(report, as_json)


@check_app.command("dataset")
def check_dataset_command(
    build: BuildArg,
    fingerprint: FingerprintOpt = None,
    suite: SuiteOpt = None,
    entropy_floor: FloorOpt = None,
    baseline: BaselineOpt = None,
    as_json: JsonOpt = False,
    write: WriteOpt = None,
    chunk_rows: ChunkOpt = None,
    sample_rows: SampleOpt = None,
) -> None:
    """Check a built dataset; exit 1 if a blocking expectation fails."""
    from toolkit.checks.gate import check_dataset as run
    from toolkit.datasets.ref import BuildRef

    ref = BuildRef.parse(build, fingerprint)
    config = _config(suite, entropy_floor, baseline, write, chunk_rows, sample_rows)
    report = run(layout(), ref.name, config, ref.fingerprint)
    _finish(report, as_json)


def _finish(report: GateReport, as_json: bool) -> None:
    if as_json:
        print_json(report.model_dump(mode="json"))
    else:
        _render(report)
    raise typer.Exit(0 if report.passed else 1)


def _render(report: GateReport) -> None:
    from toolkit.checks.report import short

    failed = [r for r in report.results if not r.success]
    verdict = "[green]PASSED[/green]" if report.passed else "[red]FAILED[/red]"
    scope = ", ".join(f"{k}={v}" for k, v in report.scope.items() if v is not None) or "everything"
    console.print(
        f"{report.target} gate {verdict}  ({scope}; {report.rows:,} rows; "
        f"{len(report.results) - len(failed)}/{len(report.results)} expectations met; "
        f"{report.timings['total']:.1f} s: GX {report.timings['gx']:.1f}, DuckDB {report.timings['duckdb']:.1f}, "
        f"Arrow {report.timings['arrow']:.1f})",
        markup=True,
    )
    if failed:
        table = Table(title="not met", title_justify="left")
        for name in ("severity", "expectation", "observed", "offending rows (sample)"):
            table.add_column(name, overflow="fold")
        for r in sorted(failed, key=lambda r: r.severity != "blocking"):
            colour = "red" if r.severity == "blocking" else "yellow"
            sample = short(r.sample[0], 160) if r.sample else ""
            table.add_row(
                Text(r.severity, style=colour), f"{r.id}\n({r.type})", short(r.error or r.observed, 100), sample
            )
        console.print(table)
    for r in report.caveats:
        console.print(f"[yellow]warning:[/yellow] {escape(r.id)}: {escape(r.caveat)}", soft_wrap=True, markup=True)
    metrics = Table(title="data quality", title_justify="left")
    for name in ("group", "rows", "bits", "ratio", "win rate", "95% CI", "ep. len", "JS drift"):
        metrics.add_column(name, justify="left" if name == "group" else "right")
    for m in report.metrics:
        win = "-" if m.win_rate is None else f"{m.win_rate:.3f}"
        interval = "-" if m.win_rate is None else f"{m.win_rate_interval[0]:.2f}-{m.win_rate_interval[1]:.2f}"
        length = "-" if m.episode_decisions.mean is None else f"{m.episode_decisions.mean:.1f}"
        drift = "-" if m.drift is None else f"{m.drift.js_bits:.4f}"
        metrics.add_row(
            m.key, f"{m.rows:,}", f"{m.entropy_bits:.3f}", f"{m.entropy_ratio:.3f}", win, interval, length, drift
        )
    console.print(metrics)
    if report.paths:
        html, json_file = (layout().resolve(report.paths[kind]) for kind in ("html", "json"))
        console.print(f"report: {html}  (JSON: {json_file})", markup=False, soft_wrap=True)


@check_app.command("labels")
def check_labels_command(
    build: BuildArg,
    fingerprint: FingerprintOpt = None,
    teacher: Annotated[Path | None, model_option(LabelCheckConfig, "teacher", "--teacher")] = None,
    folds: Annotated[int | None, model_option(LabelCheckConfig, "folds", "--folds")] = None,
    seed: Annotated[int | None, model_option(LabelCheckConfig, "seed", "--seed")] = None,
    epochs: Annotated[int | None, model_option(LabelCheckConfig, "epochs", "--epochs")] = None,
    min_steps: Annotated[int | None, model_option(LabelCheckConfig, "min_steps", "--min-steps")] = None,
    max_steps: Annotated[int | None, model_option(LabelCheckConfig, "max_steps", "--max-steps")] = None,
    learning_rate: Annotated[float | None, model_option(LabelCheckConfig, "learning_rate", "--learning-rate")] = None,
    schedule: Annotated[str | None, model_option(LabelCheckConfig, "schedule", "--schedule")] = None,
    filter_by: Annotated[str | None, model_option(LabelCheckConfig, "filter_by", "--filter-by")] = None,
    workers: Annotated[int | None, model_option(LabelCheckConfig, "workers", "--workers")] = None,
    as_json: JsonOpt = False,
    write: Annotated[bool | None, model_option(LabelCheckConfig, "write", "--write/--no-write")] = None,
) -> None:
    """Score every decision of a build: label issues by k-fold BC + cleanlab, conflicting duplicates, a teacher's view.

    Writes label-scores.parquet and .json beside the build (the `label_scores` SQL view reads them) and an HTML
    report; `distill build --drop-label-issues` drops the flagged rows. Exit 2 when the build cannot be scored.
    """
    from pydantic import ValidationError

    from toolkit.datasets.ref import BuildRef
    from toolkit.errors import ConfigError
    from toolkit.quality.labels import check_labels as run

    ref = BuildRef.parse(build, fingerprint)
    try:
        given = flags_given(
            teacher=teacher,
            folds=folds,
            seed=seed,
            epochs=epochs,
            min_steps=min_steps,
            max_steps=max_steps,
            learning_rate=learning_rate,
            schedule=schedule,
            filter_by=filter_by,
            workers=workers,
            write=write,
        )
        config = LabelCheckConfig(fingerprint=ref.fingerprint, **given)
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, as_flags=True)) from None
    with progress_bar("check labels: k-fold models", enabled=not as_json) as progress:
        result = run(layout(), ref.name, config, progress)
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    low, high = result.rate_interval
    console.print(
        f"{escape(result.dataset)} {result.fingerprint}: [bold]{result.flagged:,}[/bold] label issues in "
        f"{result.scored:,} decisions with a choice ({result.rate:.2%}, 95% interval {low:.2%}-{high:.2%}); "
        f"out-of-sample accuracy {result.out_of_sample_accuracy:.3f}; conflicting duplicates: "
        f"{result.conflicts_within_source:,} within a source, {result.conflicts_across_sources:,} across "
        f"({result.seconds:.1f} s)",
        markup=True,
    )
    console.print(f"what it means: {result.reading}", markup=False)
    table = Table(title="by source and generation", title_justify="left")
    for column in ("source", "gen", "decisions", "with a choice", "flagged", "rate", "95% CI", "in conflicts"):
        table.add_column(column, justify="left" if column == "source" else "right")
    for g in result.groups:
        table.add_row(
            g.source,
            "-" if g.generation is None else str(g.generation),
            f"{g.decisions:,}",
            f"{g.scored:,}",
            f"{g.flagged:,}",
            f"{g.rate:.2%}",
            f"{g.low:.2%}-{g.high:.2%}",
            f"{g.conflicts:,}",
        )
    console.print(table)
    if result.teacher is not None:
        console.print(
            f"teacher {result.teacher}: mean probability of the logged action {result.teacher_mean_p_label:.3f}"
        )
    if result.paths:
        console.print(
            f"scores: {layout().resolve(result.paths['scores'])}  report: {layout().resolve(result.paths['html'])}",
            markup=False,
            soft_wrap=True,
        )
    console.print("next:", markup=False)
    for step in result.next_steps:
        console.print(f"  {step}", markup=False, soft_wrap=True)
