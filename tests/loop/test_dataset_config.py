"""What each generation's build asks for (toolkit.loop.steps.build.dataset_config)."""

from __future__ import annotations

from toolkit.loop.config import LoopConfig
from toolkit.loop.steps.build import dataset_config

USABLE = [("b-forge", ["forge"]), ("b-ppo-1", ["ppo"]), ("b-ppo-2", ["ppo"])]


def test_the_teacher_decay_weighs_the_window_from_generation_1_on() -> None:
    config = LoopConfig.model_validate({"data": {"teacher_generations": 3, "teacher_decay": 0.5}})
    assert dataset_config(config, 0, USABLE, seed=1, pin=False).generation_decay is None  # the bootstrap data
    later = dataset_config(config, 2, USABLE, seed=1, pin=False)
    assert later.generation_decay == 0.5 and later.weights == {"forge": 0.0, "ppo": 1.0}


def test_without_a_decay_the_build_config_is_what_it_was() -> None:
    built = dataset_config(LoopConfig(), 2, USABLE, seed=1, pin=False)
    assert built.generation_decay is None and "generation_decay" not in built.model_dump()
