"""MaskablePPO's actor-critic with its masked distribution computed directly: the same numbers, less machinery.

sb3-contrib's :class:`MaskableActorCriticPolicy` builds a ``MaskableCategorical``
for every rollout step and every minibatch: three ``Categorical`` constructions
(each normalising the logits and validating them), a mask applied by
re-construction, a lazily computed ``probs``. :class:`DirectMaskablePolicy`
overrides the two calls PPO makes in its loop, :meth:`forward` (a rollout
step) and :meth:`evaluate_actions` (a minibatch of the update), with the same
tensor operations in the same order, so the actions, values, log-probabilities,
entropies and gradients are the same bit for bit (``tests/train/test_maskable.py``
holds them equal to the parent's, gradients included: autograd sums a
tensor's gradients in the order its uses were created, so the order is kept
too). What goes is the per-call object and validation work: ~20% of a rollout
forward of 512 rows, ~7% of a minibatch's forward and backward (issue 26).

The distributions' argument validation caught NaN logits (a diverged update);
:meth:`forward` keeps that guard, one check per rollout step. Everything else
(prediction, ``get_distribution``, saving) is the parent's.
"""

from __future__ import annotations

import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

from toolkit.errors import TrainError

# sb3-contrib's MaskableCategorical: the logit of a masked action, and the entropy term it zeroes.
_MASKED = torch.tensor(-1e8)
_ZERO = torch.tensor(0.0)


class DirectMaskablePolicy(MaskableActorCriticPolicy):
    """sb3-contrib's MLP actor-critic, its rollout forward and its minibatch evaluation computed directly."""

    def forward(
        self, obs: torch.Tensor, deterministic: bool = False, action_masks: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Actions, values and log-probabilities of a rollout step (as the parent's, bit for bit)."""
        latent_pi, latent_vf = self._latents(obs)
        values = self.value_net(latent_vf)
        logits = self._masked_logits(latent_pi, action_masks)
        if torch.isnan(logits).any():
            raise TrainError(
                "the policy's logits are NaN: the last update diverged",
                hint="lower the learning rate or raise max_grad_norm's clipping",
            )
        if deterministic:
            actions = logits.softmax(-1).argmax(dim=1)
        else:
            actions = torch.multinomial(logits.softmax(-1), 1, True).T.reshape(-1)
        return actions, values, self._log_prob(logits, actions)

    def evaluate_actions(
        self, obs: torch.Tensor, actions: torch.Tensor, action_masks: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Values, log-probabilities and entropies of a minibatch (as the parent's, gradients included)."""
        latent_pi, latent_vf = self._latents(obs)
        logits = self._masked_logits(latent_pi, action_masks)
        log_prob = self._log_prob(logits, actions)
        values = self.value_net(latent_vf)
        if action_masks is None:  # Categorical's own entropy
            p_log_p = logits.clamp(min=torch.finfo(logits.dtype).min) * logits.softmax(-1)
        else:
            p_log_p = torch.where(self._mask(action_masks, logits), logits * logits.softmax(-1), _ZERO)
        return values, log_prob, -p_log_p.sum(-1)

    def _latents(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.extract_features(obs)
        if self.share_features_extractor:
            return self.mlp_extractor(features)
        pi_features, vf_features = features
        return self.mlp_extractor.forward_actor(pi_features), self.mlp_extractor.forward_critic(vf_features)

    def _masked_logits(self, latent_pi: torch.Tensor, action_masks: torch.Tensor | None) -> torch.Tensor:
        """The normalised logits of the masked distribution: normalised, masked, normalised again."""
        raw = self.action_net(latent_pi).view(-1, self.action_dist.action_dim)
        logits = raw - raw.logsumexp(dim=-1, keepdim=True)
        if action_masks is None:
            return logits - logits.logsumexp(dim=-1, keepdim=True)
        masked = torch.where(self._mask(action_masks, logits), logits, _MASKED)
        return masked - masked.logsumexp(dim=-1, keepdim=True)

    @staticmethod
    def _mask(action_masks: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(action_masks, dtype=torch.bool).reshape(logits.shape)

    @staticmethod
    def _log_prob(logits: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        value, log_pmf = torch.broadcast_tensors(actions.long().unsqueeze(-1), logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)
