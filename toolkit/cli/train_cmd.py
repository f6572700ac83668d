"""``distill train bc``, ``distill train ppo`` and ``distill evaluate``: thin wrappers over toolkit.train."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from toolkit.cli.app import (
    AddressOpt,
    BackendOpt,
    ConfigMaxRoundsOpt,
    EngineOpt,
    EngineProcessesOpt,
    FingerprintOpt,
    JsonOpt,
    MaxRoundsOpt,
    ShardOpt,
    Table,
    WorkersOpt,
    app,
    backend_config,
    checkpoint,
    console,
    engine_config,
    layout,
    points,
    print_json,
    progress_bar,
    warn_truncations,
)
from toolkit.game import DEFAULT_MAX_ROUNDS
from toolkit.limits import (
    MAX_BATCH,
    MAX_COEF,
    MAX_ENVS,
    MAX_EPOCHS,
    MAX_GAMES,
    MAX_GENERATION,
    MAX_LAYER,
    MAX_RATE,
    MAX_SEED,
    MAX_STEPS,
)

if TYPE_CHECKING:  # for annotations only: the CLI imports stages when a command runs
    from toolkit.train.evaluate import EvaluationResult

train_app = typer.Typer(help="Train policies: behaviour cloning and PPO self-play.", no_args_is_help=True)
app.add_typer(train_app, name="train")

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="YAML config; flags override its fields.")]
OutOpt = Annotated[Path | None, typer.Option("--out", help="Folder for checkpoints (default: <home>/runs/train).")]
SeedOpt = Annotated[int | None, typer.Option("--seed", max=MAX_SEED, help="Seed (same seed, same weights).")]
RunOpt = Annotated[str | None, typer.Option("--run-id", help="Names this run's files (default: time + random).")]
GenOpt = Annotated[
    int | None, typer.Option("--generation", max=MAX_GENERATION, help="Loop generation stamped on cards and exports.")
]


def _names(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _league(value: str | None) -> list[str] | None:
    """``--opponents``: player types and ``self`` as named; a checkpoint found as the other commands find one (as
    given, else under the data root)."""
    from toolkit.game.players import PLAYER_TYPES
    from toolkit.train.config import SELF

    names = _names(value)
    return [n if n in (*PLAYER_TYPES, SELF) else str(checkpoint(Path(n))) for n in names] if names else None


@train_app.command("bc")
def train_bc_command(
    dataset: Annotated[
        str | None, typer.Option("--dataset", help="The build: NAME (its latest) or NAME@FINGERPRINT.")
    ] = None,
    config: ConfigOpt = None,
    fingerprint: FingerprintOpt = None,
    epochs: Annotated[int | None, typer.Option("--epochs", max=MAX_EPOCHS, help="Most epochs.")] = None,
    batch_size: Annotated[int | None, typer.Option("--batch-size", max=MAX_BATCH, help="Rows per step.")] = None,
    lr: Annotated[float | None, typer.Option("--lr", max=MAX_RATE, help="Learning rate.")] = None,
    class_weighting: Annotated[str | None, typer.Option("--class-weighting", help="none or balanced.")] = None,
    patience: Annotated[
        int | None, typer.Option("--patience", max=MAX_EPOCHS, help="Early-stopping patience, epochs.")
    ] = None,
    select: Annotated[str | None, typer.Option("--select", help="holdout_loss (early stopping) or last_epoch.")] = None,
    allow_retired: Annotated[
        bool | None,
        typer.Option(
            "--allow-retired/--no-allow-retired",
            help="Train on a build that read batches retired from the lake since (refused otherwise).",
            show_default=False,
        ),
    ] = None,
    seed: SeedOpt = None,
    run_id: RunOpt = None,
    generation: GenOpt = None,
    out: OutOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Behaviour cloning on a built dataset; holdout accuracy, recall and loss after every epoch."""
    from toolkit.config import load_config
    from toolkit.train.bc import train_bc
    from toolkit.train.config import BCConfig

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
    policy: Annotated[
        str | None, typer.Option("--policy", help="flat (MaskablePPO) or recurrent (RecurrentPPO).")
    ] = None,
    steps: Annotated[int | None, typer.Option("--steps", max=MAX_STEPS, help="Learner decisions to train on.")] = None,
    envs: Annotated[int | None, typer.Option("--envs", max=MAX_ENVS, help="Envs stepped together.")] = None,
    warm_start: Annotated[Path | None, typer.Option("--warm-start", help="BC checkpoint to start from.")] = None,
    opponents: Annotated[
        str | None, typer.Option("--opponents", help="League: heuristic,tuned,random,self,CKPT.json")
    ] = None,
    weights: Annotated[str | None, typer.Option("--opponent-weights", help="League weights, e.g. 1,1,2.")] = None,
    mirror: Annotated[
        float | None,
        typer.Option("--mirror", min=0, max=1, help="Share of games with one drawn opponent in every other seat."),
    ] = None,
    eval_every: Annotated[
        int | None, typer.Option("--eval-every", max=MAX_STEPS, help="Steps between evaluations.")
    ] = None,
    eval_games: Annotated[int | None, typer.Option("--eval-games", max=MAX_GAMES, help="Games per evaluation.")] = None,
    eval_vs: Annotated[str | None, typer.Option("--eval-vs", help="Evaluation opponents, comma-separated.")] = None,
    max_rounds: ConfigMaxRoundsOpt = None,
    lr: Annotated[float | None, typer.Option("--lr", max=MAX_RATE, help="Initial learning rate.")] = None,
    ent_coef: Annotated[float | None, typer.Option("--ent-coef", max=MAX_COEF, help="Entropy bonus.")] = None,
    lstm_hidden: Annotated[
        int | None, typer.Option("--lstm-hidden", max=MAX_LAYER, help="LSTM size (recurrent).")
    ] = None,
    no_export: Annotated[bool, typer.Option("--no-export", help="Do not write the learner's decisions.")] = False,
    export_games: Annotated[
        int | None, typer.Option("--export-games", max=MAX_GAMES, help="Games the final policy plays and exports.")
    ] = None,
    wins_only: Annotated[bool, typer.Option("--wins-only", help="Export only the games it won.")] = False,
    seed: SeedOpt = None,
    run_id: RunOpt = None,
    generation: GenOpt = None,
    out: OutOpt = None,
    backend: BackendOpt = None,
    workers: WorkersOpt = None,
    address: AddressOpt = None,
    shard_games: ShardOpt = None,
    engine: EngineOpt = None,
    engine_processes: EngineProcessesOpt = 1,
    as_json: JsonOpt = False,
) -> None:
    """PPO self-play on the Distill game (or, with --engine, in that engine: league player types as its AI
    profiles, outcome rewards only): evaluation in pods, best checkpoint, decision export."""
    from toolkit.config import load_config
    from toolkit.train.config import PPOConfig
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
            "export.enabled": False if no_export else None,
            "export.only_wins": True if wins_only else None,
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
    vs: Annotated[
        str,
        typer.Option(
            "--vs",
            help="The other seats, comma-separated, in seat order: player types (random, heuristic, tuned) and "
            "checkpoints (card .json, .safetensors or their stem; relative paths are looked up here, then under "
            "the data root), mixed as you like; with --engine, ai:PROFILE seats the engine's own AI of that profile. "
            "Head to head: --policy gen2.json --vs gen1.json,gen1.json,gen1.json.",
        ),
    ] = "heuristic,heuristic,heuristic",
    games: Annotated[
        int, typer.Option("--games", max=MAX_GAMES, help="Games (rounded up to a multiple of the pod size).")
    ] = 200,
    seed: Annotated[int, typer.Option("--seed", max=MAX_SEED, help="Seed of the deals.")] = 0,
    max_rounds: MaxRoundsOpt = DEFAULT_MAX_ROUNDS,
    compare: Annotated[
        Path | None,
        typer.Option("--compare", help="A second checkpoint, on the same deals; the difference in percentage points."),
    ] = None,
    backend: BackendOpt = None,
    workers: WorkersOpt = None,
    address: AddressOpt = None,
    shard_games: ShardOpt = None,
    engine: EngineOpt = None,
    engine_processes: EngineProcessesOpt = 1,
    as_json: JsonOpt = False,
) -> None:
    """Play a checkpoint in every seat of 4-player pods: win rate (Wilson 95%) against chance, placement, per seat.

    Head to head, one command: --policy gen2.json --vs gen1.json,gen1.json,gen1.json (better: above chance, 25%).
    """
    from toolkit.config import load_config
    from toolkit.train.agents import player_refs, policy_blob
    from toolkit.train.config import EvaluateConfig
    from toolkit.train.evaluate import compare as compare_results
    from toolkit.train.evaluate import evaluate

    names = _names(vs) or []
    cfg = load_config(
        EvaluateConfig, None, {"opponents": names, "games": games, "seed": seed, "max_rounds": max_rounds}
    )
    opponents = player_refs(names, option="--vs", locate=checkpoint, engine_ai=engine is not None)
    where = backend_config(backend, workers, address, shard_games)
    cards = [checkpoint(p) for p in [policy] + ([compare] if compare else [])]
    on = engine_config(engine, engine_processes)
    results = [evaluate(policy_blob(card), cfg, opponents=opponents, backend=where, engine=on) for card in cards]
    for r in results:
        warn_truncations(r.truncations, r.games, max_rounds)
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
