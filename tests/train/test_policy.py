"""The BC network is the PPO actor by construction: a warm start copies it exactly and keeps training it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.train.conftest import SMALL
from toolkit.errors import TrainError
from toolkit.game import core, rules
from toolkit.game.env import CommanderEnv
from toolkit.game.players import make_player
from toolkit.train.config import PolicySpec
from toolkit.train.policy import (
    ActorNet,
    actor_state_from_sb3,
    greedy_forward,
    greedy_policy,
    sb3_greedy_policy,
    sb3_policy_kwargs,
    warm_start,
)


def _observations(n_games: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Real decision states: observations and masks of heuristic games."""
    obs, masks = [], []

    class Spy:
        source = "forge"

        def __init__(self) -> None:
            self.inner = make_player("heuristic")

        def act(self, batch):
            obs.append(batch.observations())
            masks.append(batch.mask.copy())
            return self.inner.act(batch)

    spy = Spy()
    for _ in core.play([spy] * 4, n_games, seed=11):
        pass
    return np.concatenate(obs), np.concatenate(masks)


def _ppo(spec: PolicySpec):
    from sb3_contrib import MaskablePPO

    return MaskablePPO("MlpPolicy", CommanderEnv(), policy_kwargs=sb3_policy_kwargs(spec), seed=0, device="cpu")


def test_warm_started_ppo_policy_gives_the_bc_logits_and_actions() -> None:
    torch.manual_seed(0)
    actor = ActorNet(SMALL)
    model = _ppo(SMALL)
    obs, masks = _observations()
    before = sb3_greedy_policy(model.policy)(obs, masks)
    warm_start(model.policy, actor)
    x, m = torch.as_tensor(obs), torch.as_tensor(masks)
    with torch.no_grad():
        raw = model.policy.action_net(model.policy.mlp_extractor.forward_actor(x))
        dist = model.policy.get_distribution(x, action_masks=masks)
        ours = torch.log_softmax(actor.masked_logits(x, m), dim=1)
    assert torch.equal(raw, actor(x))  # bit for bit
    assert torch.allclose(dist.distribution.logits, ours, rtol=0, atol=1e-5)
    after = sb3_greedy_policy(model.policy)(obs, masks)
    assert np.array_equal(after, greedy_policy(actor)(obs, masks))
    assert not np.array_equal(before, after)  # the copy changed the play (the test can fail)
    assert masks[np.arange(len(after)), after].all()


def test_warm_start_keeps_the_optimizer_on_the_loaded_tensors() -> None:
    model = _ppo(SMALL)
    optimised = {id(p) for group in model.policy.optimizer.param_groups for p in group["params"]}
    warm_start(model.policy, ActorNet(SMALL))
    assert {id(p) for p in model.policy.action_net.parameters()} <= optimised
    assert {id(p) for p in model.policy.mlp_extractor.policy_net.parameters()} <= optimised


def test_actor_round_trips_through_an_sb3_state_dict() -> None:
    actor = ActorNet(SMALL)
    model = _ppo(SMALL)
    warm_start(model.policy, actor)
    state = actor_state_from_sb3(model.policy.state_dict())
    assert state.keys() == actor.state_dict().keys()
    assert all(torch.equal(state[k], v) for k, v in actor.state_dict().items())


def test_warm_start_refuses_a_network_of_another_shape() -> None:
    model = _ppo(SMALL)
    with pytest.raises(TrainError, match="does not fit"):
        warm_start(model.policy, ActorNet(PolicySpec(pi=(16,), vf=(32, 32))))


def test_masked_logits_never_prefer_an_illegal_action() -> None:
    actor = ActorNet(SMALL)
    obs, masks = _observations(2)
    actions = greedy_policy(actor)(obs, masks)
    assert masks[np.arange(len(actions)), actions].all()


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_greedy_play_picks_the_legal_action_of_the_largest_logit_of_the_module_forward(activation: str) -> None:
    torch.manual_seed(1)
    actor = ActorNet(PolicySpec(pi=(32, 16), vf=(8,), activation=activation))
    obs, masks = _observations()
    with torch.no_grad():
        expected = actor.masked_logits(torch.as_tensor(obs), torch.as_tensor(masks)).argmax(1).numpy()
    actions = greedy_policy(actor)(obs, masks)
    assert np.array_equal(actions, expected) and len(set(actions.tolist())) > 2


def test_greedy_play_of_a_live_policy_follows_its_weights_as_they_change() -> None:
    model = _ppo(SMALL)
    act = sb3_greedy_policy(model.policy)
    obs, masks = _observations()
    before = act(obs, masks)
    with torch.no_grad():  # what an optimiser step does: update the parameters in place
        model.policy.action_net.bias[rules.PASS] += 100.0
    assert not np.array_equal(before, act(obs, masks))
    assert (act(obs, masks) == rules.PASS).all()


def test_greedy_play_refuses_a_layer_it_cannot_compute() -> None:
    with pytest.raises(TrainError, match="no greedy play for a Sigmoid layer"):
        greedy_forward([torch.nn.Linear(4, 4), torch.nn.Sigmoid()])
