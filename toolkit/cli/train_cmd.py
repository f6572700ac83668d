"""``distill train bc``, ``distill train ppo`` and ``distill evaluate``: thin wrappers over toolkit.train."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from toolkit.cli.app import (
    AddressOpt,
    BackendOpt,
    EngineOpt,
    EngineProcessesOpt,
    FingerprintOpt,
    JsonOpt,
    ShardOpt,
    Table,
    WorkersOpt,
    app,
    backend_config,
    checkpoint,
    console,
    engine_config,
    layout,
    model_option,
    points,
    print_json,
    progress_bar,
    warn_truncations,
)
from toolkit.train.config import BCConfig, EvaluateConfig, ExportConfig, PPOConfig

if TYPE_CHECKING:  # for annotations only: the CLI imports stages when a command runs
    from toolkit.train.evaluate import EvaluationResult

train_app = typer.Typer(help="Train policies: behaviour cloning and PPO self-play.", no_args_is_help=True)
app.add_typer(train_app, name="train")

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="YAML config; flags override its fields.")]
OutOpt = Annotated[Path | None, typer.Option("--out", help="Folder for checkpoints (default: <home>/runs/train).")]


def _names(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _league(value: str | None) -> list[str] | None:
    """``--opponents``: player types and ``self`` as named; a checkpoint found as the other commands find one (as
    given, else under the data root)."""
    from toolkit.game import PLAYER_TYPES
    from toolkit.train.config import SELF

    names = _names(value)
    return [n if n in (*PLAYER_TYPES, SELF) else str(checkpoint(Path(n))) for n in names] if names else None


@train_app.command("bc")
def train_bc_command(
    dataset: Annotated[str | None, model_option(BCConfig, "dataset", "--dataset")] = None,
    config: ConfigOpt = None,
    fingerprint: FingerprintOpt = None,
    epochs: Annotated[int | None, model_option(BCConfig, "epochs", "--epochs")] = None,
    batch_size: Annotated[int | None, model_option(BCConfig, "batch_size", "--batch-size")] = None,
    lr: Annotated[float | None, model_option(BCConfig, "learning_rate", "--lr")] = None,
    class_weighting: Annotated[str | None, model_option(BCConfig, "class_weighting", "--class-weighting")] = None,
    patience: Annotated[int | None, model_option(BCConfig, "patience", "--patience")] = None,
    select: Annotated[str | None, model_option(BCConfig, "select", "--select")] = None,
    allow_retired: Annotated[
        bool | None, model_option(BCConfig, "allow_retired", "--allow-retired/--no-allow-retired")
    ] = None,
    seed: Annotated[int | None, model_option(BCConfig, "seed", "--seed")] = None,
    run_id: Annotated[str | None, model_option(BCConfig, "run_id", "--run-id")] = None,
    generation: Annotated[int | None, model_option(BCConfig, "generation", "--generation")] = None,
    out: OutOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Behaviour cloning on a built dataset; holdout accuracy, recall and loss after every epoch."""
    from toolkit.config import load_config
    from toolkit.train.bc import train_bc

    cfg = load_config(
        BCConfig,
        config,
        {
            "dataset": dataset,
            "fingerprint": fingerprint,
            "epochs": epochs,
            "batch_size": batch_size,
            "learning_rate": lr,
            "class_weighting": class_weighting,
            "patience": patience,
            "select": select,
            "allow_retired": allow_retired,
            "seed": seed,
            "run_id": run_id,
            "generation": generation,
        },
    )
    if as_json:
        print_json(train_bc(layout(), cfg, out).model_dump(mode="json"))
        return
    with progress_bar("train bc") as progress:
        result = train_bc(layout(), cfg, out, progress=progress)
    table = Table(title=f"bc on {result.dataset} ({result.train_rows:,} train / {result.holdout_rows:,} holdout rows)")
    for name in ("epoch", "train loss", "holdout loss", "holdout accuracy"):
        table.add_column(name, justify="right")
    for m in result.epochs:
        table.add_row(str(m.epoch), f"{m.train_loss:.4f}", _num(m.holdout_loss), _num(m.holdout_accuracy))
    console.print(table)
    console.print(
        f"best epoch {result.best_epoch}; {result.samples_per_second:,.0f} samples/s; wrote {result.checkpoint}"
    )


@train_app.command("ppo")
def train_ppo_command(
    config: ConfigOpt = None,
    policy: Annotated[str | None, model_option(PPOConfig, "policy_kind", "--policy")] = None,
    steps: Annotated[int | None, model_option(PPOConfig, "total_steps", "--steps")] = None,
    envs: Annotated[int | None, model_option(PPOConfig, "n_envs", "--envs")] = None,
    warm_start: Annotated[Path | None, model_option(PPOConfig, "warm_start", "--warm-start")] = None,
    opponents: Annotated[str | None, model_option(PPOConfig, "opponents", "--opponents")] = None,
    weights: Annotated[str | None, model_option(PPOConfig, "opponent_weights", "--opponent-weights")] = None,
    mirror: Annotated[float | None, model_option(PPOConfig, "opponent_mirror", "--mirror")] = None,
    eval_every: Annotated[int | None, model_option(PPOConfig, "eval_every", "--eval-every")] = None,
    eval_games: Annotated[int | None, model_option(PPOConfig, "eval_games", "--eval-games")] = None,
    eval_vs: Annotated[str | None, model_option(PPOConfig, "eval_opponents", "--eval-vs")] = None,
    max_rounds: Annotated[int | None, model_option(PPOConfig, "max_rounds", "--max-rounds")] = None,
    lr: Annotated[float | None, model_option(PPOConfig, "learning_rate", "--lr")] = None,
    ent_coef: Annotated[float | None, model_option(PPOConfig, "ent_coef", "--ent-coef")] = None,
    lstm_hidden: Annotated[int | None, model_option(PPOConfig, "lstm_hidden", "--lstm-hidden")] = None,
    export: Annotated[bool | None, model_option(ExportConfig, "enabled", "--export/--no-export")] = None,
    export_games: Annotated[int | None, model_option(ExportConfig, "games", "--export-games")] = None,
    wins_only: Annotated[bool | None, model_option(ExportConfig, "only_wins", "--wins-only/--all-games")] = None,
    seed: Annotated[int | None, model_option(PPOConfig, "seed", "--seed")] = None,
    run_id: Annotated[str | None, model_option(PPOConfig, "run_id", "--run-id")] = None,
    generation: Annotated[int | None, model_option(PPOConfig, "generation", "--generation")] = None,
    out: OutOpt = None,
    backend: BackendOpt = None,
    workers: WorkersOpt = None,
    address: AddressOpt = None,
    shard_games: ShardOpt = None,
    engine: EngineOpt = None,
    engine_processes: EngineProcessesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """PPO self-play on the Distill game (or, with --engine, in that engine: league player types as its AI
    profiles, outcome rewards only): evaluation in pods, best checkpoint, decision export."""
    from toolkit.config import load_config
    from toolkit.train.ppo import train_ppo

    cfg = load_config(
        PPOConfig,
        config,
        {
            "policy_kind": policy,
            "total_steps": steps,
            "n_envs": envs,
            "warm_start": checkpoint(warm_start) if warm_start else None,
            "opponents": _league(opponents),
            "opponent_weights": _names(weights),
            "opponent_mirror": mirror,
            "eval_every": eval_every,
            "eval_games": eval_games,
            "eval_opponents": _names(eval_vs),
            "max_rounds": max_rounds,
            "learning_rate": lr,
            "ent_coef": ent_coef,
            "lstm_hidden": lstm_hidden,
            "seed": seed,
            "run_id": run_id,
            "generation": generation,
            "export.enabled": export,
            "export.only_wins": wins_only,
            "export.games": export_games,
        },
    )
    folder = out or layout().inside(layout().runs / "train")
    where = backend_config(backend, workers, address, shard_games)
    on = engine_config(engine, engine_processes)
    if as_json:
        print_json(train_ppo(cfg, folder, backend=where, layout=layout(), engine=on).model_dump(mode="json"))
        return
    with progress_bar(f"train {cfg.kind}") as progress:
        result = train_ppo(cfg, folder, progress=progress, backend=where, layout=layout(), engine=on)
    table = Table(
        title=f"{result.kind} {result.run_id}: {result.steps:,} steps, {result.steps_per_second:,.0f} steps/s"
    )
    for name in ("steps", "win rate", "95% interval", "placement score"):
        table.add_column(name, justify="right")
    for point in result.evaluations:
        r = point.result
        table.add_row(
            f"{point.steps:,}", f"{r.win_rate:.1%}", f"{r.win_low:.1%}-{r.win_high:.1%}", f"{r.placement_score:.3f}"
        )
    console.print(table)
    if result.export:
        e = result.export
        console.print(
            f"exported {e.exported_episodes} episodes ({e.exported_decisions} decisions); skipped "
            f"{e.skipped_loss} not won, {e.skipped_short} short"
        )
    console.print(f"best {result.best} (win rate {result.best_win_rate:.1%})\nfinal {result.final}")


@app.command("evaluate")
def evaluate_command(
    policy: Annotated[Path, typer.Option("--policy", help="Checkpoint (.json or .safetensors) of any kind.")],
    vs: Annotated[str | None, model_option(EvaluateConfig, "opponents", "--vs")] = None,
    games: Annotated[int | None, model_option(EvaluateConfig, "games", "--games")] = None,
    seed: Annotated[int | None, model_option(EvaluateConfig, "seed", "--seed")] = None,
    max_rounds: Annotated[int | None, model_option(EvaluateConfig, "max_rounds", "--max-rounds")] = None,
    compare: Annotated[
        Path | None,
        typer.Option("--compare", help="A second checkpoint, on the same deals; the difference in percentage points."),
    ] = None,
    backend: BackendOpt = None,
    workers: WorkersOpt = None,
    address: AddressOpt = None,
    shard_games: ShardOpt = None,
    engine: EngineOpt = None,
    engine_processes: EngineProcessesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Play a checkpoint in every seat of 4-player pods: win rate (Wilson 95%) against chance, placement, per seat.

    Head to head, one command: --policy gen2.json --vs gen1.json,gen1.json,gen1.json (better: above chance, 25%).
    """
    from toolkit.config import load_config
    from toolkit.train.agents import player_refs, policy_blob
    from toolkit.train.evaluate import compare as compare_results
    from toolkit.train.evaluate import evaluate

    cfg = load_config(
        EvaluateConfig,
        None,
        {"opponents": None if vs is None else _names(vs) or [], "games": games, "seed": seed, "max_rounds": max_rounds},
    )
    opponents = player_refs(list(cfg.opponents), option="--vs", locate=checkpoint, engine_ai=engine is not None)
    where = backend_config(backend, workers, address, shard_games)
    cards = [checkpoint(p) for p in [policy] + ([compare] if compare else [])]
    on = engine_config(engine, engine_processes)
    results = [evaluate(policy_blob(card), cfg, opponents=opponents, backend=where, engine=on) for card in cards]
    for r in results:
        warn_truncations(r.truncations, r.games, cfg.max_rounds)
    if compare is not None and len(results) == 2:
        diff = compare_results(*results)
        if as_json:
            print_json(diff.model_dump(mode="json", exclude={"a": {"outcomes"}, "b": {"outcomes"}}))
            return
    elif as_json:
        print_json(results[0].model_dump(mode="json", exclude={"outcomes"}))
        return
    for path, r in zip([policy, compare], results):
        _print_evaluation(path, r)
    if compare is not None:
        console.print(
            f"difference {policy.name} - {compare.name} over {diff.deals} paired deals: win rate "
            f"{points(diff.win_rate_diff, diff.win_rate_diff_low, diff.win_rate_diff_high)} (percentage points), "
            f"placement score {diff.score_diff:+.3f} [{diff.score_diff_low:+.3f}, {diff.score_diff_high:+.3f}]"
        )


def _print_evaluation(path: Path | None, r: EvaluationResult) -> None:
    table = Table(title=f"{path} vs {', '.join(r.opponents)}: {r.games} games, {r.games_per_second:,.0f} games/s")
    for name in ("seat", "games", "wins", "win rate", "placement score", "truncated"):
        table.add_column(name, justify="right")
    for s in r.per_seat:
        table.add_row(
            str(s.seat),
            str(s.games),
            str(s.wins),
            f"{s.win_rate:.1%}",
            f"{s.placement_score:.3f}",
            f"{s.truncations} ({s.truncations / max(s.games, 1):.0%})",
        )
    console.print(table)
    console.print(
        f"win rate {r.win_rate:.1%} [{r.win_low:.1%}, {r.win_high:.1%}]; chance {r.chance:.1%} "
        f"(1 in {len(r.opponents) + 1} seats): {_against_chance(r)}"
    )
    console.print(
        f"placement score {r.placement_score:.3f}, mean placement {r.mean_placement:.2f}, truncated "
        f"{r.truncations} ({r.truncation_share:.1%}, nobody's win), illegal actions {r.illegal_actions}"
    )


def _against_chance(r: EvaluationResult) -> str:
    if r.win_low > r.chance:
        return "better than chance"
    if r.win_high < r.chance:
        return "worse than chance"
    return "not distinguishable from chance (the interval holds it)"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
