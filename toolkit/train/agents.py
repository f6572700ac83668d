"""Checkpoints as players: load any of our checkpoint kinds and seat it at a table.

:func:`load_agent` reads a checkpoint's card and builds the matching
network: an :class:`~toolkit.train.policy.ActorNet` for ``bc`` and ``ppo``
(a PPO checkpoint's actor; its critic is not needed to play), an sb3-contrib
recurrent policy for ``ppo-recurrent``. :meth:`Agent.player` gives a fresh
player (a recurrent one keeps per-game LSTM state, so never share one
between tables).

Illegal actions: the flat policies mask their logits and never ask for one.
The recurrent policy has no masking in sb3-contrib; its illegal requests are
replaced by ``pass`` (always legal; the same fallback the env applies) and
counted in ``illegal``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field

from toolkit.errors import ConfigError, TrainError
from toolkit.game import rules
from toolkit.game.lineup import Entrant, entrant_of
from toolkit.game.players import PLAYER_TYPES, DecisionBatch, Player, PolicyPlayer, make_player, policy_targets
from toolkit.jobs.worker import cached
from toolkit.layout import generation_label
from toolkit.train.checkpoints import ModelCard, card_path, load_tensors, read_weights, tensors_from_bytes
from toolkit.train.config import PolicySpec
from toolkit.train.policy import ActorNet, actor_state_from_sb3, check_spec, greedy_policy, sb3_policy_kwargs

FALLBACK_ACTION = rules.PASS  # what an illegal request becomes: always legal
DEFAULT_LSTM_HIDDEN = 128  # a recurrent card that names no LSTM size


@dataclass
class Agent:
    """A loaded checkpoint: its card and its network."""

    card: ModelCard
    path: Path
    actor: ActorNet | None = None
    recurrent: Any = None  # sb3-contrib RecurrentActorCriticPolicy

    @property
    def name(self) -> str:
        return self.path.name.removesuffix(".json")

    def player(self, source: str = "ppo") -> Player:
        """A fresh player of this agent."""
        if self.actor is not None:
            return PolicyPlayer(greedy_policy(self.actor), source=source)
        return RecurrentPlayer(self.recurrent, source=source)


def load_agent(path: Path) -> Agent:
    """The checkpoint at ``path`` (card, weights or stem), ready to play.

    Raises:
        TrainError: the checkpoint is missing, corrupt, or for other features.
    """
    card, tensors = load_tensors(Path(path))
    return _agent(card, tensors, Path(path))


class PolicyBlob(BaseModel):
    """A checkpoint as game jobs carry it to their workers: its card and its weights' safetensors bytes.

    Plain data (no pickled model): a worker rebuilds the network from the
    bytes once (:func:`agent_from_blob`, kept under the weights' sha256).
    """

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="The checkpoint's stem, as reports name it.")
    card: str = Field(description="The card, as JSON.")
    weights: bytes
    sha256: str = Field(description="sha256 of the weights, checked against the card.")


PlayerRef = str | PolicyBlob
"""A seat's player in a game job: a player type (``heuristic``...) or a checkpoint."""


def policy_blob(path: Path) -> PolicyBlob:
    """The checkpoint at ``path`` as a :class:`PolicyBlob` (card and weights checked as :func:`load_agent` does).

    Raises:
        TrainError: the checkpoint is missing, corrupt, or for other features.
    """
    card, data = read_weights(Path(path))
    return PolicyBlob(
        name=card_path(Path(path)).stem, card=card.model_dump_json(), weights=data, sha256=card.weights_sha256
    )


def agent_from_blob(blob: PolicyBlob) -> Agent:
    """The agent of ``blob``, built once per process (kept under its kind and weights' sha256)."""

    def build() -> Agent:
        card = ModelCard.model_validate_json(blob.card)
        if hashlib.sha256(blob.weights).hexdigest() != card.weights_sha256:
            raise TrainError(f"weights of {blob.name} do not match their card's sha256", hint="re-send the checkpoint")
        return _agent(card, tensors_from_bytes(blob.weights, blob.name), Path(blob.name))

    return cached(f"agent:{blob.sha256}:{blob.card}", build)


def player_from_ref(ref: PlayerRef, source: str = "ppo") -> Player:
    """A fresh player of ``ref``: a player type by name, or a checkpoint's policy (loaded once per process).

    Raises:
        ConfigError: an unknown player type.
        TrainError: a checkpoint that does not load.
    """
    if isinstance(ref, str):
        return make_player(ref)
    return agent_from_blob(ref).player(source)


def entrant(ref: PlayerRef) -> Entrant:
    """``ref`` as a record's lineup names it: a player type by its name; a checkpoint by its card's kind,
    its generation's model version (none outside a loop) and its stem."""
    if isinstance(ref, str):
        return entrant_of(ref)
    card = ModelCard.model_validate_json(ref.card)
    version = None if card.generation is None else generation_label(card.generation)
    return Entrant(card.kind, ref.name, version)


def player_ref(name: str) -> PlayerRef:
    """A player type stays its name; anything else names a checkpoint (card, weights or stem), read into a blob."""
    return name if name in PLAYER_TYPES else policy_blob(Path(name))


ENGINE_AI: Final = "ai:"  # a seat the engine's own AI plays, by its profile name (with --engine only)


def player_refs(
    names: Sequence[str], *, option: str, locate: Callable[[Path], Path] = Path, engine_ai: bool = False
) -> list[PlayerRef]:
    """A table of players named as a command line names them: a player type stays its name; anything else is a
    checkpoint (its card, weights or stem) found by ``locate`` (the CLI's: as given, else under the data root)
    and read into a blob, once however many seats it holds. Types and checkpoints mix freely. With
    ``engine_ai`` (games played in an engine), ``ai:PROFILE`` names any AI profile of that engine (kept as
    ``PROFILE``; the engine's hello says which it has).

    Raises:
        ConfigError: names that are neither a player type nor a checkpoint with a card (all of them, naming
            ``option``, the flag or field that gave them).
        TrainError: a checkpoint that does not load.
    """
    profiles = {name: name.removeprefix(ENGINE_AI) for name in names if engine_ai and name.startswith(ENGINE_AI)}
    where = {name: locate(Path(name)) for name in names if name not in PLAYER_TYPES and name not in profiles}
    unknown = [name for name, path in where.items() if not card_path(path).is_file()]
    if unknown or not all(profiles.values()):
        raise ConfigError(
            f"{option}: {', '.join(map(repr, unknown or names))} {'is' if len(unknown) == 1 else 'are'} neither a "
            "player type nor a checkpoint",
            hint=f"{option} takes player types ({', '.join(PLAYER_TYPES)}) and checkpoints (a card .json, its "
            ".safetensors, or their path without the suffix), mixed as you like; with --engine, ai:PROFILE seats "
            "the engine's own AI of that profile",
        )
    blobs = {name: policy_blob(path) for name, path in where.items()}
    return [blobs.get(name, profiles.get(name, name)) for name in names]


def ref_name(ref: PlayerRef) -> str:
    """How reports name a seat's player: a player type by its name, a checkpoint by its stem."""
    return ref if isinstance(ref, str) else ref.name


def _agent(card: ModelCard, tensors: dict[str, torch.Tensor], path: Path) -> Agent:
    spec = card.arch.spec
    if card.kind == "ppo-recurrent":
        _check_recurrent_sizes(card, tensors, path)
        policy = make_recurrent_policy(spec, card.arch.lstm_hidden or DEFAULT_LSTM_HIDDEN)
        try:
            policy.load_state_dict(tensors, strict=True)
        except RuntimeError as error:
            raise TrainError(
                f"{path}: weights do not fit a recurrent policy of {card.arch.model_dump()}: {error}",
                hint="re-train the checkpoint",
            ) from None
        policy.set_training_mode(False)
        return Agent(card, path, recurrent=policy)
    state = tensors if card.kind == "bc" else actor_state_from_sb3(tensors)
    check_spec(state, spec)
    actor = ActorNet(spec)
    actor.load_state_dict(state, strict=True)
    actor.eval()
    return Agent(card, path, actor=actor)


def _check_recurrent_sizes(card: ModelCard, tensors: dict[str, torch.Tensor], path: Path) -> None:
    """Refuse a recurrent card whose layer sizes are not its weights' before a network of its sizes is built
    (the weights were checked against the card's sha256: sizes they confirm are sizes that fit in memory)."""
    said = {
        "mlp_extractor.policy_net": card.arch.pi,
        "mlp_extractor.value_net": card.arch.vf,
        "lstm_actor": (card.arch.lstm_hidden or DEFAULT_LSTM_HIDDEN,),
    }
    found = {
        "mlp_extractor.policy_net": _layer_sizes(tensors, "mlp_extractor.policy_net"),
        "mlp_extractor.value_net": _layer_sizes(tensors, "mlp_extractor.value_net"),
        "lstm_actor": tuple(int(t.shape[-1]) for k, t in tensors.items() if k == "lstm_actor.weight_hh_l0"),
    }
    if found != said:
        raise TrainError(
            f"{path}: the card's network {said} is not its weights' {found}",
            hint="the checkpoint's card and weights disagree: re-export the checkpoint",
        )


def _layer_sizes(tensors: dict[str, torch.Tensor], net: str) -> tuple[int, ...]:
    """The output sizes of the linear layers ``net.0``, ``net.2``, ... (an activation sits between them)."""
    sizes = []
    while (weight := tensors.get(f"{net}.{2 * len(sizes)}.weight")) is not None:
        sizes.append(int(weight.shape[0]))
    return tuple(sizes)


def make_recurrent_policy(spec: PolicySpec, lstm_hidden: int) -> Any:
    """An untrained sb3-contrib LSTM actor-critic of our spaces and ``spec`` (to load weights into)."""
    from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy

    from toolkit.game.env import CommanderEnv

    env = CommanderEnv()
    return RecurrentActorCriticPolicy(
        env.observation_space, env.action_space, lambda _: 0.0, lstm_hidden_size=lstm_hidden, **sb3_policy_kwargs(spec)
    )


@dataclass
class _Memory:
    deck: bytes  # the seat's library order: identifies the game in a slot
    hidden: np.ndarray  # [layers, hidden]
    cell: np.ndarray


@dataclass
class RecurrentPlayer:
    """A recurrent policy at a table: LSTM state per game slot, reset when the slot holds a new game.

    A game is recognised by the acting seat's library order (dealt anew per
    game, fixed within it), so the player works in the batched core (many
    slots) and in the env (one slot) alike.
    """

    policy: Any
    source: str = "ppo"
    illegal: int = 0
    decisions: int = 0
    episode_starts: int = 0
    memory: dict[int, _Memory] = field(default_factory=dict)

    def act(self, batch: DecisionBatch) -> tuple[np.ndarray, np.ndarray | None]:
        obs = batch.observations()
        m = len(batch.games)
        layers, size = self.policy.lstm_actor.num_layers, self.policy.lstm_actor.hidden_size
        hidden, cell = np.zeros((layers, m, size), np.float32), np.zeros((layers, m, size), np.float32)
        starts = np.zeros(m, np.float32)
        for i, (g, s) in enumerate(zip(batch.games.tolist(), batch.seats.tolist(), strict=True)):
            deck = batch.state.library[g, s].tobytes()
            mem = self.memory.get(g)
            if mem is None or mem.deck != deck:
                starts[i] = 1.0
            else:
                hidden[:, i], cell[:, i] = mem.hidden, mem.cell
        with torch.no_grad():
            actions, (hidden, cell) = self.policy.predict(
                obs, state=(hidden, cell), episode_start=starts, deterministic=True
            )
        for i, (g, s) in enumerate(zip(batch.games.tolist(), batch.seats.tolist(), strict=True)):
            self.memory[g] = _Memory(batch.state.library[g, s].tobytes(), hidden[:, i].copy(), cell[:, i].copy())
        actions = np.asarray(actions, np.intp).reshape(m)
        illegal = ~batch.mask[np.arange(m), actions]
        self.illegal += int(illegal.sum())
        self.decisions += m
        self.episode_starts += int(starts.sum())
        actions = np.where(illegal, FALLBACK_ACTION, actions)
        return actions, policy_targets(batch, actions)
