"""Checkpoints: exact round trip, names that cannot collide, and cards that refuse what they cannot vouch for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.train.conftest import SMALL, save_actor
from toolkit.errors import TrainError
from toolkit.train import checkpoints
from toolkit.train.agents import load_agent
from toolkit.train.policy import ActorNet


def test_weights_round_trip_bit_exact_with_a_complete_card(tmp_path: Path) -> None:
    actor = ActorNet(SMALL)
    path = save_actor(tmp_path, actor)
    card, tensors = checkpoints.load_tensors(path)
    assert all(torch.equal(tensors[k], v) for k, v in actor.state_dict().items())
    assert card.kind == "bc" and card.dataset.name == "tiny" and card.code_version and card.feature_version == 1
    assert load_agent(path.with_suffix(".safetensors")).actor is not None  # either file names the checkpoint


def test_names_differ_across_kinds_and_runs_and_never_overwrite(tmp_path: Path) -> None:
    tensors = ActorNet(SMALL).state_dict()
    arch = SMALL.model_dump(mode="json")
    a = checkpoints.save_checkpoint(
        tmp_path, tensors, kind="bc", run_id=checkpoints.new_run_id(), tag="best", arch=arch
    )
    b = checkpoints.save_checkpoint(
        tmp_path, tensors, kind="bc", run_id=checkpoints.new_run_id(), tag="best", arch=arch
    )
    c = checkpoints.save_checkpoint(tmp_path, tensors, kind="ppo", run_id="r1", tag="best", arch=arch)
    d = checkpoints.save_checkpoint(tmp_path, tensors, kind="bc", run_id="r1", tag="best", arch=arch)
    assert len({a, b, c, d}) == 4
    with pytest.raises(TrainError, match="already exists"):
        checkpoints.save_checkpoint(tmp_path, tensors, kind="bc", run_id="r1", tag="best", arch=arch)
    checkpoints.save_checkpoint(tmp_path, tensors, kind="bc", run_id="r1", tag="best", arch=arch, replace=True)
    assert not list(tmp_path.glob("*.tmp"))


def test_changed_weights_are_refused(tmp_path: Path) -> None:
    path = save_actor(tmp_path, ActorNet(SMALL))
    weights = path.with_suffix(".safetensors")
    weights.write_bytes(weights.read_bytes()[:-4] + b"\0\0\0\0")
    with pytest.raises(TrainError, match="sha256"):
        load_agent(path)


def test_a_card_for_other_features_is_refused(tmp_path: Path) -> None:
    path = save_actor(tmp_path, ActorNet(SMALL))
    card = json.loads(path.read_text())
    card["feature_version"] = 99
    path.write_text(json.dumps(card))
    with pytest.raises(TrainError, match="features v99"):
        load_agent(path)


@pytest.mark.parametrize(
    "weights",
    ["../elsewhere.safetensors", "/tmp/elsewhere.safetensors", "sub/w.safetensors", "w.pt", ".hidden.safetensors"],
)
def test_a_card_whose_weights_are_not_next_to_it_is_refused(tmp_path: Path, weights: str) -> None:
    path = save_actor(tmp_path / "ckpt", ActorNet(SMALL))
    outside = tmp_path / "elsewhere.safetensors"
    outside.write_bytes(path.with_suffix(".safetensors").read_bytes())  # same bytes: the hash would match
    card = json.loads(path.read_text())
    card["weights"] = weights if not weights.startswith("/tmp") else str(outside)
    path.write_text(json.dumps(card))
    with pytest.raises(TrainError, match="next to the card"):
        load_agent(path)


def test_a_link_from_the_card_folder_to_weights_elsewhere_is_refused(tmp_path: Path) -> None:
    path = save_actor(tmp_path / "ckpt", ActorNet(SMALL))
    weights = path.with_suffix(".safetensors")
    outside = tmp_path / "outside.safetensors"
    weights.rename(outside)
    weights.symlink_to(outside)
    with pytest.raises(TrainError, match="outside its folder"):
        load_agent(path)


def test_corrupt_weights_with_a_matching_hash_raise_our_error(tmp_path: Path) -> None:
    path = save_actor(tmp_path, ActorNet(SMALL))
    weights = path.with_suffix(".safetensors")
    weights.write_bytes(b"\xff" * 64)  # not safetensors at all
    card = json.loads(path.read_text())
    card["weights_sha256"] = checkpoints.file_sha256(weights)  # a card rewritten to match
    path.write_text(json.dumps(card))
    with pytest.raises(TrainError, match="not valid safetensors"):
        load_agent(path)


def test_weights_are_as_readable_as_their_card(tmp_path: Path) -> None:
    path = save_actor(tmp_path, ActorNet(SMALL))
    assert path.stat().st_mode & 0o777 == path.with_suffix(".safetensors").stat().st_mode & 0o777
