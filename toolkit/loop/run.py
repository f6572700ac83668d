"""The generation driver: bootstrap, then self-play -> gates -> merge -> student -> evaluation -> ratings.

It composes the steps of ``toolkit.loop.steps`` (each a typed input and
result) and re-implements none. Generation 0 simulates (or reads) the
Forge-role logs, ingests and gates them, builds the first dataset and trains
the first student. Every generation after it:

1. self-play: PPO (continuing the last promoted PPO model, or starting from
   the promoted student) against the league; the trained policy's games
   are exported as the teacher's labels;
2. ingest the export (then delete it, by default: ``retention``); the PPO
   gate: the export floor (> 30% against three heuristics, fixed-size),
   then head to head against the previous promoted model in its own pod
   (paired deals, GSPRT; ``gates.head_to_head_gate``), then the scripted
   floor; the data gate; then the batch is merged (or rejected, kept with
   the reason, and the generation retried with a lower learning rate and
   more entropy);
3. build the student's dataset (Forge-role data and the latest teacher's
   decisions), train the student, guard its accuracy on the FIXED holdout
   and promote it only if it beats the previous promoted student head to
   head (and holds the scripted floor);
4. evaluate the promoted models on the same deals as every generation, rate
   this generation's models in the tournament, and probe the promoted
   student with an exploiter (its exploitability; every generation, 0
   included).

The league of step 1 keeps the latest promoted models and a seeded sample of
older ones, and weighs them by prioritised fictitious self-play on the
learner's win rates from the last training games (``toolkit.game.league``).

Every step's result is saved before the next starts (``state.json``), so
:func:`resume_loop` after a crash or a ``kill -9`` re-runs only the
interrupted step and reaches the same history: each step's seed derives
from the loop seed, the generation, the attempt and the step, never from
the clock.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
from pydantic import BaseModel

from toolkit.catalog.connect import WriterWait
from toolkit.errors import ConfigError
from toolkit.game.league import keep_past, pairwise_win_rate, pfsp_weights
from toolkit.ingest.handover import StagedShard
from toolkit.layout import Layout, generation_label
from toolkit.loop.config import LoopConfig
from toolkit.loop.gates import GuardVerdict
from toolkit.loop.record import GenerationRecord
from toolkit.loop.state import PAUSE, STOP, GenerationState, LoopState, PromotedModel, RunFolder, StepRecord, now
from toolkit.loop.steps import (
    batches,
    build,
    data_gate,
    evaluate,
    exploit,
    guard,
    ingest,
    ratings,
    retain,
    selfplay,
    simulate,
    strength,
    student,
)
from toolkit.loop.steps.base import SeedSlot, StepContext, StepName, derive_seed
from toolkit.loop.summary import generation_record
from toolkit.progress import Progress, ProgressFn

Result = TypeVar("Result", bound=BaseModel)
Input = TypeVar("Input", bound=BaseModel)
SEED_SLOTS = {
    StepName.SIMULATE: SeedSlot.SIMULATE,
    StepName.SELFPLAY: SeedSlot.SELFPLAY,
    StepName.PPO_GATE: SeedSlot.PPO_GATE,
    StepName.BUILD: SeedSlot.BUILD,
    StepName.TRAIN_STUDENT: SeedSlot.TRAIN_STUDENT,
    StepName.STUDENT_GATE: SeedSlot.STUDENT_GATE,
    StepName.RATINGS: SeedSlot.TOURNAMENT,
    StepName.EXPLOIT: SeedSlot.EXPLOIT,
}
STUDENT, PPO = "student", "ppo"


class _Halt(Exception):
    """A stop or pause request honoured at a step boundary."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def run_loop(layout: Layout, config: LoopConfig, *, progress: ProgressFn | None = None) -> LoopState:
    """Start a new loop run named ``config.name`` and run it until it finishes, converges, fails or halts.

    Raises:
        ConfigError: a run of that name exists (resume it, or choose another name).
    """
    layout.check(write=True)
    run = RunFolder(layout, config.name)
    if run.exists():
        raise _exists(config.name, run)
    config = config.recorded(layout)
    with run.hold():
        if run.exists():  # started by another process meanwhile
            raise _exists(config.name, run)
        run.clear_requests()
        run.write_config(config)
        state = LoopState(name=config.name, started_at=now(), updated_at=now())
        run.save(state)
        return _Loop(layout, config, run, state, progress).run()


def _exists(name: str, run: RunFolder) -> ConfigError:
    return ConfigError(
        f"a loop run named {name!r} exists at {run.root}",
        hint=f"continue it with `distill loop resume --name {name}`, or pick another --name",
    )


def resume_loop(layout: Layout, name: str, *, progress: ProgressFn | None = None) -> LoopState:
    """Continue a run at its first pending step (after a crash, a kill, a stop or a pause)."""
    layout.check(write=True)
    run = RunFolder(layout, name)
    run.load()  # refuses an unknown run before taking its lock
    with run.hold():
        state = run.load()
        config = run.own_config()
        run.clear_requests()
        if state.status in ("finished", "converged"):
            return state
        state.status, state.message = "running", None
        run.save(state)
        return _Loop(layout, config, run, state, progress).run()


def stop_idle(layout: Layout, name: str) -> LoopState:
    """Mark a run that no process is running (paused, or interrupted by a crash) stopped; resume still continues it.

    Raises:
        ConfigError: a process is running it (ask it with :func:`request` instead).
    """
    run = RunFolder(layout, name)
    run.load()
    with run.hold():
        state = run.load()
        if state.status in ("paused", "running", "failed"):
            was = "interrupted" if state.status == "running" else state.status
            state.status, state.message = "stopped", f"stopped while {was}"
            run.clear_requests()
            run.save(state)
        return state


def request(layout: Layout, name: str, kind: str) -> Path:
    """Ask the run ``name`` to stop or pause at its next step boundary; returns the request file."""
    run = RunFolder(layout, name)
    run.load()  # refuses an unknown run
    run.request(STOP if kind == "stop" else PAUSE)
    return run.root / (STOP if kind == "stop" else PAUSE)


class _Loop:
    def __init__(
        self, layout: Layout, config: LoopConfig, run: RunFolder, state: LoopState, progress: ProgressFn | None
    ) -> None:
        self.layout, self.config, self.run_folder, self.state = layout, config, run, state
        self.progress = progress or (lambda event: None)

    # -- driver ------------------------------------------------------------------------------

    def run(self) -> LoopState:
        try:
            while self.state.status == "running":
                g = self.state.generation
                if g == 0:
                    self._bootstrap()
                else:
                    self._generation(g)
                if self.state.current_student:
                    self._evaluate(g)
                    self._rate(g)
                    self._exploit(g)
                self._record(g)
                self._advance(g)
        except _Halt as halt:
            self.state.status = "stopped" if halt.kind == STOP else "paused"
            self.state.message = f"{self.state.status} at a step boundary on request"
            self.run_folder.clear_requests()
        self.run_folder.save(self.state)
        return self.state

    def _step(
        self, name: StepName, fn: Callable[[StepContext, Input], Result], step_input: Input, result_type: type[Result]
    ) -> Result:
        """Run one step once: a step already recorded returns its saved result, as its type, without running."""
        gen = self._gen()
        key = f"{gen.attempt}:{name}"
        if key in gen.steps:
            return result_type.model_validate(gen.steps[key].result)
        requested = self.run_folder.requested()
        if requested:
            raise _Halt(requested)
        self.progress(
            Progress(
                gen.generation,
                self.config.max_generations + 1,
                "generations",
                f"{generation_label(gen.generation)} attempt {gen.attempt}: {name}",
            )
        )
        folder = self.layout.inside(self.run_folder.gen_dir(gen.generation, gen.attempt) / name)
        shutil.rmtree(folder, ignore_errors=True)  # a re-run after a crash starts clean
        slot = SEED_SLOTS.get(name, 0)
        context = StepContext(
            self.layout,
            self.config,
            folder,
            derive_seed(self.config.seed, gen.generation, gen.attempt, slot),
            gen.generation,
            gen.attempt,
            WriterWait(None, on_wait=lambda seconds: self._say_waiting(name, seconds)),
        )
        self.state.running_step = key  # what "running" is doing now, for the status and the dashboard
        self.run_folder.save(self.state)
        started = time.perf_counter()
        result = fn(context, step_input)
        record = StepRecord(
            name=name,
            attempt=gen.attempt,
            seconds=round(time.perf_counter() - started, 3),
            finished_at=now(),
            input=step_input.model_dump(mode="json"),
            result=result.model_dump(mode="json"),
        )
        gen.steps[key] = record
        self.state.running_step = None
        self.run_folder.save(self.state)
        self.run_folder.append(
            self.run_folder.events_path,
            {"generation": gen.generation, **record.model_dump(exclude={"input", "result"})},
        )
        return result

    def _say_waiting(self, name: StepName, seconds: float) -> None:
        """Progress of a step waiting for the catalog, which another process (another loop) writes; a stop or
        pause asked meanwhile is honoured at once (the step has written nothing yet, and runs again on resume)."""
        gen = self._gen()
        self.progress(
            Progress(
                gen.generation,
                self.config.max_generations + 1,
                "generations",
                f"{generation_label(gen.generation)} attempt {gen.attempt}: {name}: waiting for the catalog, which "
                f"another process writes ({seconds:.0f} s)",
            )
        )
        requested = self.run_folder.requested()
        if requested:
            raise _Halt(requested)

    def _gen(self) -> GenerationState:
        return self.state.gen(self.state.generation)

    def _promote(self, kind: str, checkpoint: str) -> None:
        """Promote ``checkpoint`` (a no-op when it already is: a resumed generation passes here again)."""
        g = self.state.generation
        if any(m.checkpoint == checkpoint and m.kind == kind for m in self.state.promoted):
            return
        self.state.promoted.append(
            PromotedModel(generation=g, kind=kind, name=f"{generation_label(g)}-{kind}", checkpoint=checkpoint)
        )
        if kind == STUDENT:
            self.state.current_student = checkpoint
        else:
            self.state.current_ppo = checkpoint
        self.run_folder.save(self.state)

    def _set_status(self, found: list[str], status: str, reason: str) -> None:
        name = StepName.ACCEPT if status == "accepted" else StepName.REJECT
        self._step(
            name,
            batches.batches_step,
            batches.BatchStatusInput(batches=found, status=status, reason=reason),
            batches.BatchStatusResult,
        )

    # -- generation 0 ------------------------------------------------------------------------

    def _bootstrap(self) -> None:
        boot, gen = self.config.bootstrap, self._gen()
        logs = self._step(
            StepName.SIMULATE,
            simulate.simulate_step,
            simulate.SimulateInput(games=boot.games, players=list(boot.players), logs=[str(p) for p in boot.logs]),
            simulate.SimulateStepResult,
        )
        ingested = self._ingest(logs.files, own=logs.simulated, staged=logs.staged)
        found = ingested.batches  # the batches this run ingested: its gates set their status, never another run's
        if ingested.rows == 0 and not ingested.held:
            self._set_status(found, "rejected", "no valid decisions")
            gen.outcome, gen.reason = "failed", _no_decisions(ingested)
            self.state.status, self.state.message = "failed", gen.reason
            self.run_folder.save(self.state)
            return
        data = self._step(  # gated: all the data the run trains on, the lake's copies of its games included
            StepName.DATA_GATE,
            data_gate.data_gate_step,
            data_gate.DataGateInput(batches=sorted({*found, *ingested.held_by})),
            data_gate.DataGateResult,
        )
        if not data.passed:
            self._set_status(found, "rejected", f"data gate: {data.reason}")
            gen.outcome, gen.reason = "failed", f"bootstrap data rejected: {data.reason}"
            self.state.status, self.state.message = "failed", gen.reason
            return
        self._set_status(found, "accepted", "bootstrap data")
        trained, verdict = self._train_student()
        if verdict.passed:
            self._promote(STUDENT, trained.checkpoint)
            gen.outcome, gen.reason = "passed", verdict.reason
        else:
            gen.outcome, gen.reason = "failed", f"accuracy guard: {verdict.reason}"
            self.state.status, self.state.message = "failed", f"the first student failed its {gen.reason}"
        self.run_folder.save(self.state)

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
        """Self-play, gate and merge the teacher's data, then train and gate the student."""
        play = self._step(StepName.SELFPLAY, selfplay.selfplay_step, self._selfplay_input(g), selfplay.SelfPlayResult)
        found = self._ingest([str(f) for f in play.export.files], own=True, staged=play.export.staged).batches
        baseline = self.state.current_ppo or self.state.current_student
        gate = self._step(
            StepName.PPO_GATE,
            strength.ppo_gate,
            strength.StrengthInput(candidate=play.final, baseline=baseline or "", past=self._past_cards()),
            strength.PPOGateResult,
        )
        if not gate.passed:
            return self._reject(found, f"PPO gate: {gate.reason}")
        data = self._step(
            StepName.DATA_GATE,
            data_gate.data_gate_step,
            data_gate.DataGateInput(batches=found),
            data_gate.DataGateResult,
        )
        if not data.passed:
            return self._reject(found, f"data gate: {data.reason}")
        self._set_status(found, "accepted", f"generation {g}: the teacher passed its gates")
        if self.state.current_ppo != play.final:
            self._promote(PPO, play.final)
        trained, verdict = self._train_student()
        if not verdict.passed:
            return True, f"teacher promoted; student kept: accuracy guard: {verdict.reason}"
        beat = self._step(
            StepName.STUDENT_GATE,
            strength.student_gate,
            strength.StrengthInput(
                candidate=trained.checkpoint, baseline=self.state.current_student or "", past=self._past_cards()
            ),
            strength.StudentGateResult,
        )
        if not beat.passed:
            return True, f"teacher promoted; student kept: {beat.reason}"
        if self.state.current_student != trained.checkpoint:
            self._promote(STUDENT, trained.checkpoint)
        return True, f"teacher and student promoted: {beat.reason}"

    def _ingest(self, files: list[str], *, own: bool, staged: list[StagedShard]) -> ingest.IngestStepResult:
        """Ingest ``files`` (``staged`` at a shared lake by the game job's workers: committed as one version); then,
        with ``retention: delete``, delete them if the loop wrote them (``own``) and they were read (a file that
        could not be read stays)."""
        step = ingest.IngestInput(files=files, staged=staged)
        ingested = self._step(StepName.INGEST, ingest.ingest_step, step, ingest.IngestStepResult)
        done = [f for f in files if f not in set(ingested.failed)] if own else []
        if self.config.retention == "delete" and done:
            self._step(StepName.RETAIN, retain.retain_step, retain.RetainInput(files=done), retain.RetainResult)
        return ingested

    def _reject(self, found: list[str], reason: str) -> tuple[bool, str]:
        self._set_status(found, "rejected", reason)
        return False, reason

    def _selfplay_input(self, g: int) -> selfplay.SelfPlayInput:
        attempt, retry, ppo = self._gen().attempt, self.config.retry, self.config.ppo
        from_ppo = ppo.warm_start == "ppo" and self.state.current_ppo is not None
        start = self.state.current_ppo if from_ppo else self.state.current_student
        return selfplay.SelfPlayInput(
            run_id=f"{self.config.name}-g{g:03d}-a{attempt}",
            warm_start=start or "",
            critic_warmup_updates=0 if from_ppo else ppo.critic_warmup_updates,
            learning_rate=ppo.learning_rate * retry.lr_factor**attempt,
            ent_coef=ppo.ent_coef + retry.ent_coef_step * attempt,
            league=self._league(),
        )

    def _league(self) -> list[selfplay.LeagueEntry]:
        """The league's entries with their weights: the fixed players, then the past models kept (the latest
        ``past_models`` and a seeded sample of ``older_models`` before them), ``past`` split among them evenly or
        by PFSP on the learner's win rates from the last training games that seated each."""
        league = self.config.ppo.league
        entries = [
            selfplay.LeagueEntry(name=n, player=n, weight=w)
            for n, w in (
                ("heuristic", league.heuristic),
                ("tuned", league.tuned),
                ("random", league.random),
                ("self", league.self),
            )
            if w > 0
        ]
        past = self._past_models()
        if league.past <= 0 or not past:
            return entries
        measured = self._measured_win_rates()
        rates = [measured.get(m.name) for m in past]
        shares = (
            pfsp_weights(rates, league.pfsp_power) if league.past_weighting == "pfsp" else [1 / len(past)] * len(past)
        )
        entries += [
            selfplay.LeagueEntry(name=m.name, player=m.checkpoint, weight=league.past * float(share), win_rate=rate)
            for m, share, rate in zip(past, shares, rates, strict=True)
        ]
        return entries

    def _past_models(self) -> list[PromotedModel]:
        """The promoted models the league keeps (oldest first): the latest ``past_models`` and a sample of
        ``older_models`` of the ones before them, drawn from the loop seed and the generation."""
        league = self.config.ppo.league
        names = [m.name for m in self.state.promoted]
        rng = np.random.default_rng(derive_seed(self.config.seed, self.state.generation, SeedSlot.LEAGUE))
        kept = set(keep_past(names, league.past_models, league.older_models, rng))
        return [m for m in self.state.promoted if m.name in kept]

    def _past_cards(self) -> list[str]:
        """The league's past models, latest first: the head-to-head gate's mixed tables take the first ones."""
        return [m.checkpoint for m in reversed(self._past_models())]

    def _measured_win_rates(self) -> dict[str, float]:
        """The learner's pairwise win rate against each league entry, from the latest training games that seated
        it (the latest generation's learner is the next one's start)."""
        rates: dict[str, float] = {}
        for gen in self.state.generations[1 : self.state.generation]:
            play = gen.steps.get(f"{gen.attempt}:{StepName.SELFPLAY}")
            if play is None:
                continue
            for record in selfplay.SelfPlayResult.model_validate(play.result).opponents:
                rates[record.name] = pairwise_win_rate(record.wins, record.games)
        return rates

    # -- the student (every generation) --------------------------------------------------------

    def _train_student(self) -> tuple[student.StudentResult, GuardVerdict]:
        gen = self._gen()
        built = self._step(
            StepName.BUILD,
            build.build_step,
            build.BuildInput(own_batches=sorted(self.state.batches()), leave_out=sorted(self._old_teacher_batches())),
            build.BuildStepResult,
        )
        trained = self._step(
            StepName.TRAIN_STUDENT,
            student.student_step,
            student.StudentInput(
                dataset=built.name,
                fingerprint=built.fingerprint,
                run_id=f"{self.config.name}-g{gen.generation:03d}-a{gen.attempt}",
            ),
            student.StudentResult,
        )
        verdict = self._step(
            StepName.ACCURACY_GUARD,
            guard.guard_step,
            guard.GuardInput(
                candidate=trained.checkpoint,
                previous=self.state.current_student,
                dataset=built.name,
                fingerprint=built.fingerprint,
            ),
            GuardVerdict,
        )
        return trained, verdict

    def _old_teacher_batches(self) -> set[str]:
        """This run's self-play exports from generations before the teacher window (``data.teacher_generations``)."""
        oldest = self.state.generation - self.config.data.teacher_generations + 1
        return {b for gen in self.state.generations[1 : max(1, oldest)] for b in gen.batches()}

    # -- evaluation, ratings, record, convergence ----------------------------------------------

    def _evaluate(self, g: int) -> None:
        models = {STUDENT: self.state.current_student or ""}
        if self.state.current_ppo:
            models[PPO] = self.state.current_ppo
        reference = None
        if g > 0:
            first = self.state.generations[0]
            saved = first.steps.get(f"{first.attempt}:{StepName.EVALUATE}")
            reference = saved.result["folder"] if saved else None
        self._step(
            StepName.EVALUATE,
            evaluate.evaluate_step,
            evaluate.EvaluateInput(
                models=models, reference=reference, seed=derive_seed(self.config.seed, SeedSlot.EVALUATION)
            ),
            evaluate.EvaluationStepResult,
        )

    def _exploit(self, g: int) -> None:
        """The exploiter probe of the promoted student (``exploiter.total_steps`` 0: none)."""
        probe = self.config.exploiter
        if probe.total_steps <= 0 or not self.state.current_student:
            return
        first = self.state.generations[0]
        saved = first.steps.get(f"{first.attempt}:{StepName.TRAIN_STUDENT}")
        start = saved.result["checkpoint"] if saved and probe.start == "bootstrap_student" else None
        self._step(
            StepName.EXPLOIT,
            exploit.exploit_step,
            exploit.ExploitInput(
                target=self.state.current_student,
                start=start,
                run_id=f"{self.config.name}-g{g:03d}-exploiter",
            ),
            exploit.ExploitResult,
        )

    def _rate(self, g: int) -> None:
        self._step(
            StepName.RATINGS,
            ratings.ratings_step,
            ratings.RatingsInput(
                pool=self.layout.stored(self.run_folder.ratings_path),
                tournament=generation_label(g),
                focus=self._candidates(g),
                others=self._candidates(g - 1),
            ),
            ratings.RatingsResult,
        )

    def _candidates(self, g: int) -> dict[str, str]:
        """The cards of the models generation ``g`` trained in its last attempt (promoted or not), by rating name."""
        if g < 0 or g >= len(self.state.generations):
            return {}
        gen = self.state.generations[g]
        found = {}
        play = gen.steps.get(f"{gen.attempt}:{StepName.SELFPLAY}")
        trained = gen.steps.get(f"{gen.attempt}:{StepName.TRAIN_STUDENT}")
        if play is not None:
            found[f"{generation_label(g)}-{PPO}"] = play.result["final"]
        if trained is not None:
            found[f"{generation_label(g)}-{STUDENT}"] = trained.result["checkpoint"]
        return found

    def _record(self, g: int) -> None:
        record = generation_record(self.state.generations[g], self.state, self.config.name)
        self.run_folder.append(self.run_folder.generations_path, record.model_dump(mode="json"))

    def _advance(self, g: int) -> None:
        if self.state.status != "running":
            return
        verdict = converged([GenerationRecord.model_validate(r) for r in self.run_folder.records()], self.config)
        if g >= self.config.max_generations:
            self.state.status, self.state.message = "finished", f"reached max_generations {self.config.max_generations}"
        elif verdict:
            self.state.status, self.state.message = "converged", verdict
        else:
            self.state.generation = g + 1
        self.run_folder.save(self.state)


def _no_decisions(ingested: ingest.IngestStepResult) -> str:
    """Why a bootstrap whose logs gave no lake row cannot train a first student."""
    unreadable = f"; {len(ingested.failed)} file(s) could not be read: {', '.join(ingested.failed)}"
    return (
        f"the bootstrap logs gave no valid decisions: {ingested.rejected} lines rejected, counted by reason in "
        f'`distill sql "FROM reject_reasons"`{unreadable if ingested.failed else ""}'
    )


def converged(records: list[GenerationRecord], config: LoopConfig) -> str | None:
    """Why the loop should stop early, or None: the promoted student's evaluated win rate plateaued."""
    c = config.convergence
    rates = [r.student_win_rate for r in records if r.student_win_rate is not None]
    if len(rates) >= c.window and max(rates[-c.window :]) - rates[-c.window] < c.min_win_rate_gain:
        return f"the student's evaluated win rate plateaued over {c.window} generations ({rates[-c.window :]})"
    return None
