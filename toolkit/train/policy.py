"""The policy network shared by behaviour cloning and PPO, by construction.

:class:`ActorNet` is exactly the actor of an sb3 ``ActorCriticPolicy`` built
with ``net_arch=dict(pi=spec.pi, vf=spec.vf)`` and ``activation_fn`` of
``spec.activation``: ``policy_net`` is ``mlp_extractor.policy_net`` (Linear,
activation, ...) and ``action_net`` is ``action_net``. So BC weights copy
into a MaskablePPO policy with a strict ``load_state_dict`` (see
:func:`warm_start`): identical logits, identical play, and a PPO
checkpoint's actor loads back into an :class:`ActorNet` for evaluation.

Logits of illegal actions are replaced by :data:`MASKED_LOGIT` (sb3-contrib's
masking value), so a masked policy never prefers an illegal action.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

import numpy as np
import torch
from torch import nn

from toolkit.errors import TrainError
from toolkit.features import FEATURE_SIZE
from toolkit.schema.vocab import N_ACTIONS
from toolkit.train.config import PolicySpec

MASKED_LOGIT: Final = -1e8  # what sb3-contrib's MaskableCategorical writes for illegal actions
ACTIVATIONS: Final[dict[str, type[nn.Module]]] = {"tanh": nn.Tanh, "relu": nn.ReLU}
_SB3_ACTOR = {"mlp_extractor.policy_net.": "policy_net.", "action_net.": "action_net."}


def sb3_policy_kwargs(spec: PolicySpec) -> dict:
    """``policy_kwargs`` that make an sb3 policy of ``spec``'s shape."""
    return {"net_arch": {"pi": list(spec.pi), "vf": list(spec.vf)}, "activation_fn": ACTIVATIONS[spec.activation]}


class ActorNet(nn.Module):
    """The actor MLP over the feature vector: ``policy_net`` then ``action_net`` (logits over the 8 actions)."""

    def __init__(self, spec: PolicySpec, obs_size: int = FEATURE_SIZE, n_actions: int = N_ACTIONS) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        last = obs_size
        for size in spec.pi:
            layers += [nn.Linear(last, size), ACTIVATIONS[spec.activation]()]
            last = size
        self.spec = spec
        self.policy_net = nn.Sequential(*layers)
        self.action_net = nn.Linear(last, n_actions)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.action_net(self.policy_net(obs))

    def masked_logits(self, obs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Logits with every illegal action at :data:`MASKED_LOGIT`."""
        return torch.where(mask, self(obs), torch.full((), MASKED_LOGIT, dtype=obs.dtype))


def actor_state_from_sb3(policy_state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The :class:`ActorNet` tensors of an sb3 actor-critic policy's ``state_dict`` (the critic is left out)."""
    out = {}
    for key, tensor in policy_state.items():
        for prefix, ours in _SB3_ACTOR.items():
            if key.startswith(prefix):
                out[ours + key[len(prefix) :]] = tensor
    return out


def warm_start(sb3_policy: nn.Module, actor: ActorNet) -> None:
    """Copy ``actor``'s weights into an sb3 policy's actor, strictly and in place.

    In place (``load_state_dict`` copies into the existing parameters), so the
    policy's optimizer keeps updating the very tensors that were loaded.

    Raises:
        TrainError: when the shapes differ (the BC and PPO specs must match).
    """
    try:
        sb3_policy.mlp_extractor.policy_net.load_state_dict(actor.policy_net.state_dict(), strict=True)
        sb3_policy.action_net.load_state_dict(actor.action_net.state_dict(), strict=True)
    except (RuntimeError, AttributeError) as error:
        raise TrainError(
            f"the BC network does not fit the PPO policy: {error}",
            hint="train PPO with the BC checkpoint's network shape (--net-arch / policy.pi)",
        ) from None


def greedy_policy(actor: ActorNet) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``(observations [M,116], masks [M,8]) -> actions [M]``: the most likely legal action (see
    :func:`greedy_forward`)."""
    return greedy_forward([*actor.policy_net, actor.action_net])


def sb3_greedy_policy(sb3_policy: nn.Module) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The same for a live sb3 (Maskable) actor-critic policy, without copying it: the optimiser's in-place
    updates are seen by the next call."""
    return greedy_forward([*sb3_policy.mlp_extractor.policy_net, sb3_policy.action_net])


_ACTIVATE: Final[dict[type[nn.Module], Callable[[torch.Tensor], torch.Tensor]]] = {
    nn.Tanh: torch.Tensor.tanh_,
    nn.ReLU: torch.Tensor.relu_,
}


def greedy_forward(modules: Sequence[nn.Module]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Greedy play of an actor given as its layers in order (Linear and the activations of
    :data:`ACTIVATIONS`): the legal action of the largest logit, the logits those modules compute, bit for bit.

    The forward pass is the modules' own kernels called directly (``addmm`` as ``nn.Linear`` calls it, the
    activation in place) over detached views of the weights, which share the parameters' memory: a policy
    that is still training plays with its current weights, and no autograd or module machinery runs. The
    players act between the game's numpy calls, where that machinery ran cold: the module forward of ~37 rows
    cost ~250 us there, this ~130 (issue 26: PPO's league seats the live policy, ~5% of a run). Every greedy
    player (PPO's league, evaluation, the accuracy guard) acts through here.
    """
    steps: list[tuple[torch.Tensor, torch.Tensor] | Callable[[torch.Tensor], torch.Tensor]] = []
    for module in modules:
        if isinstance(module, nn.Linear):
            steps.append((module.bias.detach(), module.weight.detach().T))
        elif type(module) in _ACTIVATE:
            steps.append(_ACTIVATE[type(module)])
        else:
            raise TrainError(
                f"no greedy play for a {type(module).__name__} layer",
                hint=f"actors are Linear layers and {', '.join(ACTIVATIONS)} activations",
            )

    def act(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        x = torch.as_tensor(obs, dtype=torch.float32)
        for step in steps:
            x = torch.addmm(step[0], x, step[1]) if isinstance(step, tuple) else step(x)
        return np.where(np.asarray(mask, bool), x.numpy(), np.float32(MASKED_LOGIT)).argmax(1)

    return act


def check_spec(state: Mapping[str, torch.Tensor], spec: PolicySpec) -> None:
    """Raise :class:`TrainError` unless ``state`` holds exactly an :class:`ActorNet` of ``spec``.

    The spec's network is laid out on the ``meta`` device (shapes, no
    memory), so a spec far larger than its weights (a hostile card) costs
    nothing to refuse.
    """
    with torch.device("meta"):
        expected = {key: tuple(t.shape) for key, t in ActorNet(spec).state_dict().items()}
    found = {key: tuple(t.shape) for key, t in state.items()}
    if found != expected:
        differ = sorted(k for k in expected.keys() | found.keys() if expected.get(k) != found.get(k))
        raise TrainError(
            f"weights do not match the network spec {spec.model_dump()}: "
            + "; ".join(f"{k}: the spec has {expected.get(k)}, the weights {found.get(k)}" for k in differ[:4]),
            hint="the checkpoint's card and weights disagree: re-export the checkpoint",
        )
