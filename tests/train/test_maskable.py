"""DirectMaskablePolicy computes what sb3-contrib's MaskableActorCriticPolicy computes, bit for bit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

from tests.train.test_policy import _observations
from toolkit.errors import TrainError
from toolkit.features import FEATURE_SIZE
from toolkit.game.rules import N_ACTIONS
from toolkit.train.config import PolicySpec
from toolkit.train.maskable import DirectMaskablePolicy
from toolkit.train.policy import sb3_policy_kwargs


def _pair(activation: str) -> tuple[MaskableActorCriticPolicy, DirectMaskablePolicy]:
    """The parent and ours with the same weights (PPO's defaults but for the activation)."""
    spec = PolicySpec(pi=(32, 16), vf=(24,), activation=activation)  # type: ignore[arg-type]
    spaces = (gym.spaces.Box(-np.inf, np.inf, (FEATURE_SIZE,), np.float32), gym.spaces.Discrete(N_ACTIONS))
    torch.manual_seed(0)
    parent = MaskableActorCriticPolicy(*spaces, lambda _: 3e-4, **sb3_policy_kwargs(spec))
    ours = DirectMaskablePolicy(*spaces, lambda _: 3e-4, **sb3_policy_kwargs(spec))
    ours.load_state_dict(parent.state_dict())
    return parent, ours


def _grads(policy: MaskableActorCriticPolicy, outputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    policy.zero_grad()
    values, log_prob, entropy = outputs
    (values.square().sum() + (log_prob * torch.linspace(-1, 1, len(log_prob))).sum() + entropy.sum()).backward()
    return [p.grad.clone() for p in policy.parameters()]


@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("masked", [True, False])
def test_a_minibatchs_values_log_probs_entropies_and_gradients_are_the_parents(activation: str, masked: bool) -> None:
    parent, ours = _pair(activation)
    obs, masks = _observations()
    x, m = torch.as_tensor(obs), torch.as_tensor(masks) if masked else None
    actions = torch.as_tensor([np.random.default_rng(i).choice(np.flatnonzero(row)) for i, row in enumerate(masks)])
    theirs = parent.evaluate_actions(x, actions, action_masks=m)
    mine = ours.evaluate_actions(x, actions, action_masks=m)
    assert all(torch.equal(a, b) for a, b in zip(theirs, mine, strict=True))
    their_grads, my_grads = _grads(parent, theirs), _grads(ours, mine)
    assert all(torch.equal(a, b) for a, b in zip(their_grads, my_grads, strict=True))


@pytest.mark.parametrize("deterministic", [False, True])
def test_a_rollout_steps_actions_values_and_log_probs_are_the_parents(deterministic: bool) -> None:
    parent, ours = _pair("tanh")
    obs, masks = _observations()
    x = torch.as_tensor(obs)
    with torch.no_grad():
        torch.manual_seed(7)
        theirs = parent(x, deterministic=deterministic, action_masks=masks)
        torch.manual_seed(7)
        mine = ours(x, deterministic=deterministic, action_masks=masks)
    assert all(torch.equal(a, b) for a, b in zip(theirs, mine, strict=True))
    assert masks[np.arange(len(masks)), mine[0].numpy()].all()  # legal actions only


def test_nan_logits_stop_the_rollout_as_the_distributions_validation_did() -> None:
    _, ours = _pair("tanh")
    obs, masks = _observations(2)
    with torch.no_grad():
        ours.action_net.weight.fill_(float("nan"))
        with pytest.raises(TrainError, match="NaN"):
            ours(torch.as_tensor(obs), action_masks=masks)
