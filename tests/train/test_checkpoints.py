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
from toolkit.train.config import PolicySpec
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


def _set(field: str, value: object):
    """A change to a card's JSON: ``field`` (dotted) set to ``value``."""

    def change(card: dict) -> None:
        *parents, leaf = field.split(".")
        for part in parents:
            card = card[part]
        card[leaf] = value

    return change


def _text(change):
    """A change to a card's text (for shapes ``json.dumps`` cannot write)."""
    change.raw = True
    return change


DEPTH = 100_000
# Every way a card can be malformed: the JSON itself, its shape, a field out of its range or type.
HOSTILE = {
    "nested 100,000 deep": _text(
        lambda text: text.replace('"metrics": {}', '"metrics": {"x": ' + "[" * DEPTH + "]" * DEPTH + "}")
    ),
    "a key twice": _text(lambda text: text.replace("{", '{"n_actions": 8, ', 1)),
    "not JSON": _text(lambda text: text[:-5]),
    "not an object": _text(lambda text: "[" + text + "]"),
    "no format version": lambda card: card.pop("format_version"),
    "a format version that is text": _set("format_version", "1"),
    "an unknown activation": _set("arch.activation", "gelu"),
    "a negative n_actions": _set("n_actions", -1),
    "no actions": _set("n_actions", 0),
    "a feature size of 0": _set("feature_size", 0),
    "a hidden size of 0": _set("arch.pi", [0, 32]),
    "a negative hidden size": _set("arch.pi", [-32, 32]),
    "no hidden layer": _set("arch.pi", []),
    "a hidden size that is text": _set("arch.vf", ["many"]),
    "a negative LSTM size": _set("arch.lstm_hidden", -5),
    "an arch that is not an object": _set("arch", "big"),
    "an unknown arch field": _set("arch.dropout", 0.5),
    "an unknown field": _set("evil", True),
    "an unknown kind": _set("kind", "dqn"),
    "a sha256 that is not one": _set("weights_sha256", "../../etc/passwd"),
    "a negative generation": _set("generation", -1),
    "a dataset without a fingerprint": _set("dataset", {"name": "d"}),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_malformed_card_is_one_clear_error_naming_the_file(tmp_path: Path, name: str) -> None:
    path = save_actor(tmp_path, ActorNet(SMALL))
    change = HOSTILE[name]
    if getattr(change, "raw", False):
        path.write_text(change(path.read_text()))
    else:
        card = json.loads(path.read_text())
        change(card)
        path.write_text(json.dumps(card))
    for read in (checkpoints.read_card, load_agent):
        with pytest.raises(TrainError, match="is not a valid checkpoint card: ") as refused:
            read(path)
        assert str(path) in refused.value.message and refused.value.hint
        assert "\n" not in refused.value.message  # one message, not a traceback or a report


def test_a_card_for_another_number_of_actions_is_refused(tmp_path: Path) -> None:
    path = save_actor(tmp_path, ActorNet(SMALL))
    card = json.loads(path.read_text())
    card["n_actions"] = 16
    path.write_text(json.dumps(card))
    with pytest.raises(TrainError, match="16 actions; this code's game has 8"):
        load_agent(path)


def test_a_card_naming_a_network_far_larger_than_its_weights_is_refused_before_building_it(tmp_path: Path) -> None:
    path = save_actor(tmp_path, ActorNet(SMALL))
    card = json.loads(path.read_text())
    card["arch"]["pi"] = [65_536, 65_536]  # the largest layers a spec takes: 16 GiB to build, or the machine
    path.write_text(json.dumps(card))
    with pytest.raises(TrainError, match="do not match the network spec"):
        load_agent(path)
    card["arch"]["pi"] = [10**12, 32]  # past any layer's bound: refused as a card field
    path.write_text(json.dumps(card))
    with pytest.raises(TrainError, match=r"arch\.pi\.0: Input should be less than or equal to 65536"):
        load_agent(path)


def test_a_recurrent_card_naming_other_sizes_than_its_weights_is_refused_before_building_it(tmp_path: Path) -> None:
    from toolkit.train.agents import make_recurrent_policy

    spec = PolicySpec(pi=(8,), vf=(8,))
    arch = {**spec.model_dump(mode="json"), "lstm_hidden": 4}
    tensors = make_recurrent_policy(spec, 4).state_dict()
    path = checkpoints.save_checkpoint(tmp_path, tensors, kind="ppo-recurrent", run_id="r", tag="final", arch=arch)
    assert load_agent(path).recurrent is not None
    for field, value in (("lstm_hidden", 10**9), ("pi", [65_536]), ("vf", [8, 8])):
        card = json.loads(path.read_text())
        card["arch"][field] = value
        path.with_name("hostile.json").write_text(json.dumps(card))
        with pytest.raises(TrainError, match="is not its weights'"):
            load_agent(path.with_name("hostile.json"))


def test_a_card_written_before_arch_was_typed_still_reads(tmp_path: Path) -> None:
    path = save_actor(tmp_path, ActorNet(SMALL))
    card = json.loads(path.read_text())
    del card["arch"]["lstm_hidden"]  # cards of earlier runs have no such key
    path.write_text(json.dumps(card))
    assert checkpoints.read_card(path).arch.spec == SMALL
