"""The base of an ablation: the config every variant changes, and what it reads.

Two kinds of base, one field grammar. A loop base (``--loop RUN``,
``--loop-config FILE``) is varied as a :class:`~toolkit.loop.config.LoopConfig`
(``data.weights.forge``, ``data.wins_only``, ``student.epochs``...); each
variant's dataset is the one the loop's build step would make from it
(:func:`toolkit.loop.steps.build.dataset_config`) over the batches the run's
last build read, with the run's earlier teacher exports within each variant's
``data.teacher_generations`` window (so the window itself can be varied). A
build base (``--build NAME``, ``--build-config FILE``) is varied as :class:`BuildSubject`: ``data`` is the build config
(``data.weights.forge``, ``data.min_reward``...), ``student`` the loop's
student settings. A build named by ``--build`` keeps the batches it read, so
data ingested since changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.ablate.config import AblateConfig, read_yaml_model
from toolkit.catalog.lake import Lake
from toolkit.datasets.config import BuildConfig
from toolkit.errors import ConfigError
from toolkit.layout import Layout
from toolkit.loop.config import LoopConfig, StudentConfig
from toolkit.loop.state import RunFolder
from toolkit.loop.steps.base import StepName


class BuildSubject(BaseModel):
    """What a build base varies: the build config and the student trained on it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    data: BuildConfig = Field(description="The build (every `distill build` field).")
    student: StudentConfig = Field(default_factory=StudentConfig, description="The student (the loop's settings).")


@dataclass(frozen=True)
class Base:
    """A resolved base: the model its variants are validated as, its config as data, and the lake it reads."""

    kind: Literal["build", "loop"]
    description: str
    model: type[BaseModel]
    document: dict[str, Any]
    usable: list[tuple[str, list[str]]] = field(default_factory=list)  # loop base: (batch, sources) to build from
    generation: int = 1  # loop base: the generation whose build rule applies
    teacher: dict[str, int] = field(default_factory=dict)  # loop base: the run's self-play batches -> generation

    def window(self, teacher_generations: int) -> list[tuple[str, list[str]]]:
        """The usable batches a build of ``generation`` reads with a window of ``teacher_generations``: every
        batch but the run's self-play exports of generations before the window (as the loop leaves them out)."""
        oldest = self.generation - teacher_generations + 1
        return [(b, s) for b, s in self.usable if self.teacher.get(b, oldest) >= oldest]


def resolve_base(layout: Layout, config: AblateConfig) -> Base:
    """The base ``config`` names, read from the data root (nothing is written).

    Raises:
        ConfigError: the build, run or file does not exist or is invalid.
    """
    if config.build is not None:
        return _named_build(layout, config.build)
    if config.build_config is not None:
        subject = BuildSubject(data=config.build_config)
        return Base("build", "a build config", BuildSubject, subject.model_dump(mode="json"))
    if config.loop is not None:
        run = RunFolder(layout, config.loop)
        if not run.exists():
            raise ConfigError(
                f"no loop run named {config.loop!r} in {layout.home}",
                hint="name a run `distill loop status` lists with --loop, or give --loop-config FILE",
            )
        loop = run.config()
        return _loop_base(layout, loop, f"loop run {config.loop}")
    assert config.loop_config is not None  # the config's validator asks for exactly one base
    return _loop_base(layout, config.loop_config, f"loop config {config.loop_config.name}")


def load_base_file(kind: Literal["build", "loop"], path: Any) -> BuildConfig | LoopConfig:
    """The YAML file of ``--build-config`` or ``--loop-config``.

    Raises:
        ConfigError: unreadable or invalid.
    """
    if kind == "build":
        return read_yaml_model(BuildConfig, path, "--build-config")
    return read_yaml_model(LoopConfig, path, "--loop-config")


def _named_build(layout: Layout, ref: str) -> Base:
    from toolkit.datasets.dataset import open_dataset
    from toolkit.datasets.ref import BuildRef
    from toolkit.errors import BuildError

    try:
        build = BuildRef.parse(ref)
        dataset = open_dataset(layout, build.name, build.fingerprint)
    except BuildError as error:
        raise ConfigError(error.message, hint=error.hint or "name a build `distill datasets list` shows") from None
    data = dataset.manifest.config
    if data.batches is None:  # the batches it read, not whatever the lake holds now
        data = data.model_copy(update={"batches": [i.batch_id for i in dataset.manifest.inputs]})
    subject = BuildSubject(data=data)
    return Base("build", f"build {build.name}@{dataset.fingerprint}", BuildSubject, subject.model_dump(mode="json"))


def _loop_base(layout: Layout, loop: LoopConfig, description: str) -> Base:
    """A loop base over its run's last build's batches, or, without a run, every usable batch of the lake."""
    batches, generation = _last_build(layout, loop.name)
    with Lake.open(layout).at() as catalog:
        every = catalog.batches()
    teacher: dict[str, int] = {}
    if batches is None:
        usable = [(b.batch_id, list(b.sources)) for b in every if b.status != "rejected" and not b.retired]
    else:
        sources = {b.batch_id: list(b.sources) for b in every}
        missing = sorted(set(batches) - set(sources))
        if missing:
            raise ConfigError(
                f"the last build of loop run {loop.name!r} read batches the catalog no longer holds: {missing[:3]}",
                hint="restore them (distill lake restore), or give --build-config with the batches you want",
            )
        teacher = _teacher_batches(layout, loop.name, generation)
        held = {b.batch_id for b in every if b.status != "rejected" and not b.retired}
        earlier = sorted(b for b in teacher if b in held and b not in set(batches))
        usable = [(b, sources[b]) for b in [*batches, *earlier]]
    if not usable:
        raise ConfigError(f"the lake of {layout.home} holds no usable batch", hint="ingest logs or run a loop first")
    generation = max(1, generation)
    return Base("loop", description, LoopConfig, loop.model_dump(mode="json"), usable, generation, teacher)


def _teacher_batches(layout: Layout, name: str, upto: int) -> dict[str, int]:
    """The self-play exports of run ``name``'s generations 1..``upto``, each with its generation."""
    generations = RunFolder(layout, name).load().generations[1 : upto + 1]
    return {batch: gen.generation for gen in generations for batch in gen.batches()}


def _last_build(layout: Layout, name: str) -> tuple[list[str] | None, int]:
    """The batches and generation of the run ``name``'s last build step (None: no such run or build)."""
    run = RunFolder(layout, name)
    if not run.exists():
        return None, 1
    for gen in reversed(run.load().generations):
        builds = [s for s in gen.steps.values() if s.name == StepName.BUILD]
        if builds:
            last = max(builds, key=lambda s: s.attempt)
            return list(last.result["batches"]), gen.generation
    return None, 1
