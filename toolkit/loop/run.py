"""The generation state machine: bootstrap, then self-play -> ingest -> gates -> build -> BC -> merge -> ratings.

It composes the stages (simulate, ingest, check, build, train, evaluate,
ratings) and re-implements none. Every step's result is saved before the
next starts (``state.json``), so :func:`resume_loop` after a crash or a
``kill -9`` re-runs only the interrupted step and reaches the same history:
each step's seed derives from the loop seed, the generation, the attempt and
the step, never from the clock.

A failed gate rejects the generation's batch in the catalog (kept, never
deleted, excluded from later builds, with the reason), then the generation
retries with a lower PPO learning rate and a higher entropy bonus, up to
``retry.max_retries``; after that it records the failure and goes on with
the old models or stops, as configured.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from toolkit.catalog.store import Catalog
from toolkit.errors import ConfigError
from toolkit.layout import Layout
from toolkit.loop.config import LoopConfig
from toolkit.loop.state import PAUSE, STOP, GenerationState, LoopState, RunFolder, StepRecord, now
from toolkit.ratings import RatingPool, TournamentConfig, play_tournament, standings
from toolkit.storage import write_text_atomic

Progress = Callable[[str], None]


class _Halt(Exception):
    """A stop or pause request honoured at a step boundary."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def run_loop(layout: Layout, config: LoopConfig, *, progress: Progress | None = None) -> LoopState:
    """Start a new loop run named ``config.name`` and run it until it finishes, converges, fails or halts.

    Raises:
        ConfigError: a run of that name exists (resume it, or choose another name).
    """
    run = RunFolder(layout, config.name)
    if run.exists():
        raise ConfigError(
            f"a loop run named {config.name!r} exists at {run.root}",
            hint=f"continue it with `distill loop resume --name {config.name}`, or pick another --name",
        )
    run.root.mkdir(parents=True, exist_ok=True)
    run.clear_requests()
    write_text_atomic(run.config_path, config.model_dump_json(indent=1))
    state = LoopState(name=config.name, started_at=now(), updated_at=now())
    run.save(state)
    return _Loop(layout, config, run, state, progress).run()


def resume_loop(layout: Layout, name: str, *, progress: Progress | None = None) -> LoopState:
    """Continue a run at its first pending step (after a crash, a kill, a stop or a pause)."""
    run = RunFolder(layout, name)
    state = run.load()
    config = LoopConfig.model_validate_json(run.config_path.read_text(encoding="utf-8"))
    run.clear_requests()
    if state.status in ("finished", "converged"):
        return state
    state.status, state.message = "running", None
    run.save(state)
    return _Loop(layout, config, run, state, progress).run()


def request(layout: Layout, name: str, kind: str) -> Path:
    """Ask the run ``name`` to stop or pause at its next step boundary; returns the request file."""
    run = RunFolder(layout, name)
    run.load()  # refuses an unknown run
    run.request(STOP if kind == "stop" else PAUSE)
    return run.root / (STOP if kind == "stop" else PAUSE)


def derive_seed(*parts: int) -> int:
    """A seed for one step, from the loop seed and the step's coordinates."""
    return int(np.random.SeedSequence(list(parts)).generate_state(1)[0] % (2**31))


class _Loop:
    def __init__(self, layout: Layout, config: LoopConfig, run: RunFolder, state: LoopState, progress: Progress | None) -> None:
        self.layout, self.config, self.run_folder, self.state = layout, config, run, state
        self.progress = progress or (lambda message: None)

    # -- driver ------------------------------------------------------------------------------

    def run(self) -> LoopState:
        try:
            while self.state.status == "running":
                g = self.state.generation
                if g == 0:
                    self._bootstrap()
                else:
                    self._generation(g)
                self._rate(g)
                self._record(g)
                self._advance(g)
        except _Halt as halt:
            self.state.status = "stopped" if halt.kind == STOP else "paused"
            self.state.message = f"{self.state.status} at a step boundary on request"
            self.run_folder.clear_requests()
        self.run_folder.save(self.state)
        return self.state

    def _step(self, name: str, fn: Callable[[], Any]) -> dict[str, Any]:
        """Run one step once: a step already recorded returns its result without running."""
        gen = self._gen()
        key = f"{gen.attempt}:{name}"
        if key in gen.steps:
            return gen.steps[key].result
        requested = self.run_folder.requested()
        if requested:
            raise _Halt(requested)
        self.progress(f"gen-{gen.generation:03d} attempt {gen.attempt}: {name}")
        started = time.perf_counter()
        value = fn()
        result = value.model_dump(mode="json") if isinstance(value, BaseModel) else _jsonable(value)
        record = StepRecord(name=name, attempt=gen.attempt, seconds=round(time.perf_counter() - started, 3),
                            finished_at=now(), result=result)
        gen.steps[key] = record
        self.run_folder.save(self.state)
        self.run_folder.append(self.run_folder.events_path, {"generation": gen.generation, **record.model_dump(exclude={"result"})})
        return result

    def _gen(self) -> GenerationState:
        return self.state.gen(self.state.generation)

    def _seed(self, step: int) -> int:
        gen = self._gen()
        return derive_seed(self.config.seed, gen.generation, gen.attempt, step)

    def _folder(self, name: str) -> Path:
        """A step's output folder, emptied first (a re-run after a crash starts clean)."""
        gen = self._gen()
        folder = self.run_folder.gen_dir(gen.generation, gen.attempt) / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder

    # -- generation 0 ------------------------------------------------------------------------

    def _bootstrap(self) -> None:
        logs = self._step("simulate", self._simulate)
        batches = self._step("ingest", lambda: self._ingest([Path(p) for p in logs["files"]]))["batches"]
        verdict = self._step("data_gate", lambda: self._data_gate(batches))
        if not verdict["passed"]:
            self._reject(batches, f"data gate: {verdict['reason']}")
            self._gen().outcome, self._gen().reason = "failed", f"bootstrap data rejected: {verdict['reason']}"
            self.state.status, self.state.message = "failed", self._gen().reason
            return
        self._step("accept", lambda: self._set_status(batches, "accepted", "bootstrap data"))
        built = self._step("build", self._build)
        bc = self._step("train_bc", lambda: self._train_bc(built))
        regression = self._step("regression_gate", lambda: self._regression(bc, built))
        gen = self._gen()
        gen.outcome = "passed" if regression["passed"] else "failed"
        gen.reason = regression["reason"]
        self.state.current_bc = bc["checkpoint"]
        self.run_folder.save(self.state)

    def _simulate(self) -> dict[str, Any]:
        from toolkit.game.simulate import SimulateConfig, simulate

        boot = self.config.bootstrap
        if boot.logs:
            return {"files": [str(p) for p in boot.logs], "simulated": False}
        out = self._folder("bootstrap-logs")
        result = simulate(SimulateConfig(games=boot.games, players=boot.players, seed=self._seed(1), out=out,
                                         max_rounds=self.config.max_rounds))
        return {"files": [str(p) for p in result.files], "simulated": True, "games": result.games,
                "decisions": result.decisions}

    # -- generations 1.. ---------------------------------------------------------------------

    def _generation(self, g: int) -> None:
        gen = self._gen()
        while gen.outcome == "pending":
            passed, reason = self._attempt(g)
            if passed:
                gen.outcome, gen.reason = "passed", reason
            elif gen.attempt < self.config.retry.max_retries:
                gen.attempt += 1
            else:
                gen.outcome, gen.reason = "failed", reason
            self.run_folder.save(self.state)
        if gen.outcome == "failed" and self.config.retry.on_failure == "stop":
            self.state.status, self.state.message = "failed", f"generation {g} failed: {gen.reason}"

    def _attempt(self, g: int) -> tuple[bool, str]:
        ppo = self._step("selfplay", lambda: self._selfplay(g))
        batches = self._step("ingest", lambda: self._ingest([Path(p) for p in ppo["export"]["files"]]))["batches"]
        win = self._step("win_rate_gate", lambda: self._win_rate(ppo))
        if not win["passed"]:
            return self._reject(batches, f"win-rate gate: {win['reason']}")
        data = self._step("data_gate", lambda: self._data_gate(batches))
        if not data["passed"]:
            return self._reject(batches, f"data gate: {data['reason']}")
        built = self._step("build", self._build)
        bc = self._step("train_bc", lambda: self._train_bc(built))
        regression = self._step("regression_gate", lambda: self._regression(bc, built))
        if not regression["passed"]:
            return self._reject(batches, f"regression gate: {regression['reason']}")
        self._step("accept", lambda: self._set_status(batches, "accepted", f"generation {g} passed every gate"))
        self.state.current_bc, self.state.current_ppo = bc["checkpoint"], ppo["final"]
        self.run_folder.save(self.state)
        return True, f"{win['reason']}; {regression['reason']}"

    def _reject(self, batches: list[str], reason: str) -> tuple[bool, str]:
        self._step("reject", lambda: self._set_status(batches, "rejected", reason))
        return False, reason

    def _hyperparameters(self) -> dict[str, float]:
        attempt, retry, ppo = self._gen().attempt, self.config.retry, self.config.ppo
        return {"learning_rate": ppo.learning_rate * retry.lr_factor**attempt,
                "ent_coef": ppo.ent_coef + retry.ent_coef_step * attempt}

    def _selfplay(self, g: int) -> dict[str, Any]:
        from toolkit.train.export import ExportConfig
        from toolkit.train.policy import PolicySpec
        from toolkit.train.ppo import PPOConfig, train_ppo

        p, gen = self.config.ppo, self._gen()
        hp = self._hyperparameters()
        config = PPOConfig(
            run_id=f"{self.config.name}-g{g:03d}-a{gen.attempt}", seed=self._seed(2), total_steps=p.total_steps,
            n_envs=p.n_envs, n_steps=p.n_steps, batch_size=p.batch_size, n_epochs=p.n_epochs,
            learning_rate=hp["learning_rate"], ent_coef=hp["ent_coef"], warm_start=self._ppo_start(),
            opponents=p.opponents, max_rounds=self.config.max_rounds, eval_every=0, eval_games=p.eval_games,
            generation=g, export=ExportConfig(export_eval=False, only_wins=not p.export_losses),
            policy=PolicySpec(pi=self.config.bc.hidden, vf=self.config.bc.hidden),
        )
        result = train_ppo(config, self._folder("ppo"))
        return {**result.model_dump(mode="json", exclude={"updates", "evaluations"}), "hyperparameters": hp,
                "last_update": result.updates[-1].model_dump() if result.updates else None}

    def _ppo_start(self) -> Path:
        """The checkpoint this generation's PPO starts from (see ``PPOStepConfig.warm_start``)."""
        if self.config.ppo.warm_start == "ppo" and self.state.current_ppo:
            return Path(self.state.current_ppo)
        return Path(self.state.current_bc or "")

    def _win_rate(self, ppo: dict[str, Any]) -> BaseModel:
        from toolkit.loop.gates import win_rate_gate
        from toolkit.train.agents import load_agent

        agent = load_agent(Path(ppo["final"]))
        return win_rate_gate(agent.player, self.config.win_rate_gate, seed=self._seed(3), max_rounds=self.config.max_rounds)

    # -- steps shared by every generation ------------------------------------------------------

    def _ingest(self, files: list[Path]) -> dict[str, Any]:
        from toolkit.catalog.ingest import IngestConfig, ingest_paths

        if not files:
            return {"batches": [], "rows": 0, "rejected": 0}
        result = ingest_paths(files, self.layout, IngestConfig())
        batches = sorted({f.batch_id for f in result.files if f.batch_id})
        return {"batches": batches, "rows": result.rows_valid, "rejected": result.rows_rejected,
                "files": [f.as_dict() for f in result.files]}

    def _data_gate(self, batches: list[str]) -> dict[str, Any]:
        if not self.config.data_gate or not batches:
            return {"passed": True, "reason": "no new batch" if not batches else "data gate disabled", "reports": []}
        from toolkit.checks.gate import CheckConfig, LakeScope, check_lake

        config = CheckConfig(suite=self.config.data_gate_suite, entropy_floor=self.config.data_gate_entropy_floor)
        reports = [check_lake(self.layout, LakeScope(batch=b), config) for b in batches]
        failures = [f"{r.scope.get('batch')}: {', '.join(x.id for x in r.blocking_failures)}"
                    for r in reports if not r.passed]
        return {"passed": not failures, "reason": "; ".join(failures) or f"{len(reports)} batch(es) passed the lake suite",
                "reports": [r.paths.get("json") for r in reports],
                "warnings": sum(len(r.warnings) for r in reports)}

    def _set_status(self, batches: list[str], status: str, reason: str) -> dict[str, Any]:
        with Catalog.open(self.layout) as catalog:
            for batch in batches:
                catalog.set_batch_status(batch, status, reason)
        return {"batches": batches, "status": status, "reason": reason}

    def _build(self) -> dict[str, Any]:
        from toolkit.build.build import build_dataset
        from toolkit.build.config import BuildConfig

        data = self.config.data
        with Catalog.open(self.layout, read_only=True) as catalog:
            foreign = self._other_runs_batches(catalog) if data.other_runs == "exclude" else set()
            usable = [(batch, sources) for batch, sources in catalog.con.execute(
                "SELECT batch_id, sources FROM batches WHERE status != 'rejected' ORDER BY batch_id").fetchall()
                if batch not in foreign]
        present = {s for _, sources in usable for s in sources}
        weights = {s: w for s, w in data.weights.items() if s in present}
        config = BuildConfig(name=self.config.dataset, weight_mode=data.weight_mode, weights=weights,
                             min_reward=data.min_reward, wins_only=[s for s in data.wins_only if s in present],
                             holdout=data.holdout, seed=self._seed(4),
                             batches=[batch for batch, _ in usable] if foreign else None)
        info = build_dataset(self.layout, config)
        m = info.manifest
        return {"name": m.name, "fingerprint": m.fingerprint, "path": str(info.dataset.root), "reused": info.reused,
                "train_rows": m.splits["train"].rows, "holdout_rows": m.splits["holdout"].rows,
                "rows_by_source": m.splits["train"].rows_by_source, "games_by_source": m.splits["train"].games_by_source,
                "shares": m.shares, "duplicates": m.duplicates, "holdout_content": m.holdout["content"],
                "batches": [i["batch_id"] for i in m.inputs]}

    def _other_runs_batches(self, catalog: Catalog) -> set[str]:
        """Batches of files that other loop runs of this data root wrote (their
        bootstrap logs and self-play exports, under ``runs/<other>/``), unless
        this run ingested the same content itself. Read from the catalog, which
        records each batch's file in the same transaction as the batch."""
        runs = str(self.layout.runs.resolve()) + os.sep
        files = catalog.con.execute("SELECT batch_id, path FROM files").fetchall()
        theirs = {batch for batch, path in files
                  if path.startswith(runs) and path[len(runs):].split(os.sep, 1)[0] != self.config.name}
        return theirs - self.state.batches()

    def _train_bc(self, built: dict[str, Any]) -> dict[str, Any]:
        from toolkit.train.bc import BCConfig, train_bc
        from toolkit.train.policy import PolicySpec

        b, gen = self.config.bc, self._gen()
        config = BCConfig(dataset=built["name"], fingerprint=built["fingerprint"],
                          run_id=f"{self.config.name}-g{gen.generation:03d}-a{gen.attempt}", seed=self._seed(5),
                          epochs=b.epochs, batch_size=b.batch_size, learning_rate=b.learning_rate, patience=b.patience,
                          policy=PolicySpec(pi=b.hidden, vf=b.hidden), generation=gen.generation)
        result = train_bc(self.layout, config, self._folder("bc"))
        return {"checkpoint": str(result.checkpoint), "holdout_accuracy": result.holdout_accuracy,
                "best_epoch": result.best_epoch, "epochs": len(result.epochs), "train_rows": result.train_rows,
                "samples_per_second": result.samples_per_second}

    def _regression(self, bc: dict[str, Any], built: dict[str, Any]) -> BaseModel:
        from toolkit.build.dataset import open_dataset
        from toolkit.loop.gates import regression_gate

        dataset = open_dataset(self.layout, built["name"], built["fingerprint"])
        previous = Path(self.state.current_bc) if self.state.current_bc and self._gen().generation > 0 else None
        return regression_gate(Path(bc["checkpoint"]), previous, dataset, self.config.regression_gate)

    # -- ratings, record, convergence -----------------------------------------------------------

    def _rate(self, g: int) -> None:
        if self._models_of(g):  # a generation that trained nothing has nothing to rate
            self._step("ratings", lambda: self._tournament(g))

    def _tournament(self, g: int) -> dict[str, Any]:
        from toolkit.game.players import make_player
        from toolkit.train.agents import load_agent

        entrants: dict[str, Callable[[], Any]] = {name: (lambda n=name: make_player(n)) for name in self.config.tournament.baselines}
        focus = []
        for name, card in self._models_of(g).items():
            agent = load_agent(Path(card))
            entrants[name] = lambda a=agent, s=name: a.player(source=s.split("-")[-1])
            focus.append(name)
        for name, card in self._models_of(g - 1).items():
            agent = load_agent(Path(card))
            entrants[name] = lambda a=agent, s=name: a.player(source=s.split("-")[-1])
        pool = RatingPool(self.run_folder.ratings_path)
        tournament = f"gen-{g:03d}"
        if not pool.has(tournament):
            games = play_tournament(entrants, focus, TournamentConfig(
                deals_per_lineup=self.config.tournament.deals_per_lineup, max_rounds=self.config.max_rounds,
                seed=derive_seed(self.config.seed, g, 7)))
            pool.rate(tournament, games)
            pool.save()
        return {"tournament": tournament, "entrants": sorted(entrants), "focus": focus, "games": pool.data.games,
                "standings": standings(pool)}

    def _models_of(self, g: int) -> dict[str, str]:
        """The models generation ``g`` produced in its last attempt (PPO final, BC best), by rating name."""
        if g < 0 or g >= len(self.state.generations):
            return {}
        gen = self.state.generations[g]
        models = {}
        ppo = gen.steps.get(f"{gen.attempt}:selfplay")
        bc = gen.steps.get(f"{gen.attempt}:train_bc")
        if ppo is not None:
            models[f"gen-{g:03d}-ppo"] = ppo.result["final"]
        if bc is not None:
            models[f"gen-{g:03d}-bc"] = bc.result["checkpoint"]
        return models

    def _record(self, g: int) -> None:
        gen = self.state.generations[g]
        record = generation_record(gen, self.state, self.config)
        self.run_folder.append(self.run_folder.generations_path, record)

    def _advance(self, g: int) -> None:
        if self.state.status != "running":
            return
        verdict = converged(self.run_folder.records(), self.config)
        if g >= self.config.max_generations:
            self.state.status, self.state.message = "finished", f"reached max_generations {self.config.max_generations}"
        elif verdict:
            self.state.status, self.state.message = "converged", verdict
        else:
            self.state.generation = g + 1
        self.run_folder.save(self.state)


def generation_record(gen: GenerationState, state: LoopState, config: LoopConfig) -> dict[str, Any]:
    """The complete record of a finished generation (one line of generations.jsonl)."""
    attempts = []
    for attempt in range(gen.attempt + 1):
        steps = {r.name: r for k, r in gen.steps.items() if k.startswith(f"{attempt}:")}
        decided = steps.get("accept") or steps.get("reject")
        attempts.append({
            "attempt": attempt,
            "hyperparameters": steps["selfplay"].result.get("hyperparameters") if "selfplay" in steps else None,
            "ppo": _pick(steps, "selfplay", ("final", "steps", "steps_per_second", "best_win_rate", "export", "last_update")),
            "win_rate_gate": _pick(steps, "win_rate_gate", None),
            "data_gate": _pick(steps, "data_gate", None),
            "build": _pick(steps, "build", None),
            "bc": _pick(steps, "train_bc", None),
            "regression_gate": _pick(steps, "regression_gate", None),
            "batches": (steps["ingest"].result.get("batches") if "ingest" in steps else []),
            "batch_status": decided.result if decided else None,
            "timings": {name: r.seconds for name, r in steps.items()},
        })
    ratings = next((r.result for k, r in gen.steps.items() if r.name == "ratings"), None)
    last = attempts[-1]
    return {
        "loop": config.name, "generation": gen.generation, "outcome": gen.outcome, "reason": gen.reason,
        "attempts": attempts, "retries": gen.attempt,
        "win_rate": (last["win_rate_gate"] or {}).get("win_rate"),
        "win_low": (last["win_rate_gate"] or {}).get("win_low"), "win_high": (last["win_rate_gate"] or {}).get("win_high"),
        "bc_holdout_accuracy": (last["bc"] or {}).get("holdout_accuracy"),
        "baseline_accuracy": (last["regression_gate"] or {}).get("previous_accuracy"),
        "ratings": ratings["standings"] if ratings else None,
        "models": {"bc": state.current_bc, "ppo": state.current_ppo},
        "seconds": round(sum(r.seconds for r in gen.steps.values()), 3),
        "recorded_at": now(),
    }


def converged(records: list[dict[str, Any]], config: LoopConfig) -> str | None:
    """Why the loop should stop early, or None (plateau of the gated win rate, or a small rating gain)."""
    c = config.convergence
    rates = [r["win_rate"] for r in records if r.get("win_rate") is not None]
    if len(rates) >= c.window and max(rates[-c.window:]) - rates[-c.window] < c.min_win_rate_gain:
        return f"the gated win rate plateaued over {c.window} generations ({rates[-c.window:]})"
    if c.min_rating_gain is not None and len(records) >= 2:
        best = [max((s["ordinal"] for s in (r.get("ratings") or []) if s["name"].startswith(f"gen-{r['generation']:03d}")),
                    default=None) for r in records[-2:]]
        if None not in best and best[1] - best[0] < c.min_rating_gain:  # type: ignore[operator]
            return f"the best rating rose {best[1] - best[0]:.2f} < {c.min_rating_gain}"  # type: ignore[operator]
    return None


def _pick(steps: dict[str, Any], name: str, keys: tuple[str, ...] | None) -> dict[str, Any] | None:
    if name not in steps:
        return None
    result = steps[name].result
    return result if keys is None else {k: result.get(k) for k in keys}


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
