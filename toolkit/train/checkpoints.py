"""Checkpoints: weights as safetensors plus a JSON card that says what made them.

A checkpoint is two files in one folder, named ``<kind>-<run_id>-<tag>``::

    bc-20250101T120000Z-3f2a9c-best.safetensors    the tensors (safetensors: no pickle on load)
    bc-20250101T120000Z-3f2a9c-best.json           the card (:class:`ModelCard`)

``kind`` is ``bc``, ``ppo`` or ``ppo-recurrent``; ``run_id`` is unique per
run (UTC time + random suffix, or given by the caller, e.g. the loop's
``gen-003-try1``); ``tag`` names the checkpoint within its run (``best``,
``final``, ``epoch-4``). Names therefore never collide across runs or
model kinds; within a run a tag may be replaced (``best`` is). Weights are
published before the card, each by an atomic rename, so a card always
points at complete weights, and the card carries their sha256.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator
from safetensors.torch import load, save_file

from toolkit import __version__
from toolkit.errors import TrainError
from toolkit.features import FEATURE_SIZE, FEATURE_VERSION
from toolkit.layout import CARD_FORMAT_VERSION, FINGERPRINT_PATTERN, NAME_PATTERN, Layout
from toolkit.schema.vocab import N_ACTIONS
from toolkit.storage import file_sha256, read_versioned, temporary_sibling, write_text_atomic
from toolkit.train.config import PolicySpec

Kind = Literal["bc", "ppo", "ppo-recurrent"]
KINDS: Final = ("bc", "ppo", "ppo-recurrent")
WEIGHTS_SUFFIX: Final = ".safetensors"
CARD_SUFFIX: Final = ".json"


class DatasetRef(BaseModel):
    """The built dataset a model learned from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME_PATTERN)
    fingerprint: str = Field(pattern=FINGERPRINT_PATTERN)


class Arch(PolicySpec):
    """The network a card describes: the policy's shape, plus the LSTM's size for a recurrent one."""

    lstm_hidden: PositiveInt | None = Field(None, description="LSTM hidden size (ppo-recurrent; None: 128).")

    @property
    def spec(self) -> PolicySpec:
        """The policy's shape alone."""
        return PolicySpec(pi=self.pi, vf=self.vf, activation=self.activation)


class ModelCard(BaseModel):
    """Everything needed to trust, reload and compare a checkpoint."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = CARD_FORMAT_VERSION
    kind: Kind
    run_id: str
    tag: str
    created: str = Field(description="UTC time the checkpoint was written, ISO 8601.")
    code_version: str = Field(__version__, description="toolkit.__version__ of the code that wrote it.")
    feature_version: PositiveInt = FEATURE_VERSION
    feature_size: PositiveInt = FEATURE_SIZE
    n_actions: PositiveInt = Field(N_ACTIONS, description="Actions the policy chooses among (the game's).")
    arch: Arch = Field(description="Network shape: PolicySpec fields, plus lstm_hidden for recurrent.")
    dataset: DatasetRef | None = Field(None, description="The dataset trained on (BC), or the BC model's (PPO).")
    generation: int | None = Field(None, ge=0, description="Loop generation the model belongs to.")
    parent: str | None = Field(None, description="Checkpoint this one was warm-started from (file name).")
    config: dict[str, Any] = Field(default_factory=dict, description="The training config, as run.")
    metrics: dict[str, Any] = Field(default_factory=dict, description="Holdout / evaluation figures at this point.")
    weights: str = Field(description="File name of the safetensors weights, next to the card.")
    weights_sha256: str = Field(pattern="^[0-9a-f]{64}$")

    @field_validator("weights")
    @classmethod
    def _next_to_the_card(cls, name: str) -> str:
        """A bare file name: weights are only ever read from the card's own folder."""
        if not name.endswith(WEIGHTS_SUFFIX) or Path(name).name != name or "\\" in name or name.startswith("."):
            raise ValueError(f"weights must name a {WEIGHTS_SUFFIX} file next to the card, not {name!r}")
        return name


def new_run_id() -> str:
    """A run id that no other run shares: UTC second plus 24 random bits."""
    return f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def checkpoint_stem(kind: str, run_id: str, tag: str) -> str:
    """``<kind>-<run_id>-<tag>``: the file name of a checkpoint without suffix."""
    return f"{kind}-{run_id}-{tag}"


def save_checkpoint(
    folder: Path,
    tensors: dict[str, torch.Tensor],
    *,
    kind: Kind,
    run_id: str,
    tag: str,
    arch: dict[str, Any],
    replace: bool = False,
    **card_fields: Any,
) -> Path:
    """Write weights then card atomically; returns the card's path.

    Args:
        folder: where to write (created if needed).
        tensors: the state dict to store (shared tensors are cloned apart).
        kind, run_id, tag: name the checkpoint (see the module docstring).
        arch: the network shape for the card.
        replace: allow replacing this run's checkpoint of the same tag (e.g. ``best``).
        card_fields: further :class:`ModelCard` fields (dataset, generation, parent, config, metrics).

    Raises:
        TrainError: if the checkpoint exists and ``replace`` is false.
    """
    folder.mkdir(parents=True, exist_ok=True)
    stem = checkpoint_stem(kind, run_id, tag)
    weights, card_path = folder / (stem + WEIGHTS_SUFFIX), folder / (stem + CARD_SUFFIX)
    if not replace and (weights.exists() or card_path.exists()):
        raise TrainError(f"checkpoint {card_path} already exists", hint="use a new run id (omit --run-id)")
    seen: set[int] = set()
    plain = {}
    for key, tensor in tensors.items():  # safetensors refuses shared storage; a copy is exact
        t = tensor.detach().contiguous()
        plain[key] = t.clone() if t.data_ptr() in seen else t
        seen.add(t.data_ptr())
    tmp = temporary_sibling(weights)
    save_file(plain, str(tmp))
    os.chmod(tmp, 0o666 & ~_umask())  # safetensors writes 0600; weights are as readable as their card
    digest = file_sha256(tmp)
    os.replace(tmp, weights)
    card = ModelCard(
        kind=kind,
        run_id=run_id,
        tag=tag,
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        arch=arch,
        weights=weights.name,
        weights_sha256=digest,
        **card_fields,
    )
    write_text_atomic(card_path, card.model_dump_json(indent=2) + "\n")
    return card_path


def locate_checkpoint(path: Path, root: Callable[[], Layout]) -> Path:
    """A checkpoint as a person names it (its card, weights or stem): as given, or, when that is a relative path
    not found here, under the data root ``root()`` (loop state, records and cards name checkpoints relative to
    it). ``root`` is called only then."""
    if path.is_absolute() or path.exists() or card_path(path).exists():
        return path
    return root().resolve(path)


def card_path(path: Path) -> Path:
    """The card of a checkpoint given by its card, its weights, or its stem."""
    path = Path(path)
    if path.name.endswith(WEIGHTS_SUFFIX):
        return path.with_name(path.name[: -len(WEIGHTS_SUFFIX)] + CARD_SUFFIX)
    if path.suffix == CARD_SUFFIX:
        return path
    return path.with_name(path.name + CARD_SUFFIX)


READ_CARD_HINT: Final = "pass the .json or .safetensors of a checkpoint, or re-train it"


def read_card_as_written(path: Path, hint: str = READ_CARD_HINT) -> ModelCard:
    """The card of the checkpoint at ``path`` (card, weights or stem) as written, whatever features it was
    trained on (:func:`read_card` checks them).

    Raises:
        TrainError: missing or unreadable; not a valid checkpoint card (not JSON, nested too deep, a key twice, a
            field out of its range: each named); of an unknown format. ``hint`` says what to do.
    """
    return read_versioned(
        card_path(path), ModelCard, CARD_FORMAT_VERSION, what="checkpoint card", error=TrainError, hint=hint
    )


def read_card(path: Path) -> ModelCard:
    """The card of the checkpoint at ``path`` (card, weights or stem), for the features this code encodes.

    Raises:
        TrainError: as :func:`read_card_as_written`; or for other features or actions than this code's.
    """
    card_file = card_path(path)
    card = read_card_as_written(path)
    if (card.feature_version, card.feature_size) != (FEATURE_VERSION, FEATURE_SIZE):
        raise TrainError(
            f"{card_file} was trained on features v{card.feature_version} ({card.feature_size} floats); "
            f"this code encodes v{FEATURE_VERSION} ({FEATURE_SIZE})",
            hint="retrain on a dataset built by this version (distill build, then distill train)",
        )
    if card.n_actions != N_ACTIONS:
        raise TrainError(
            f"{card_file} chooses among {card.n_actions} actions; this code's game has {N_ACTIONS}",
            hint="retrain on a dataset built by this version (distill build, then distill train)",
        )
    return card


def load_tensors(path: Path) -> tuple[ModelCard, dict[str, torch.Tensor]]:
    """The card and tensors of a checkpoint, after checking the weights' sha256 against the card.

    The weights are read only from the card's own folder (a link that leads
    elsewhere is refused too).

    Raises:
        TrainError: see :func:`read_card`; or the weights are missing, outside
            the card's folder, do not match the card, or are not valid safetensors.
    """
    card, data = read_weights(path)
    return card, tensors_from_bytes(data, str(card_path(path).parent / card.weights))


def read_weights(path: Path) -> tuple[ModelCard, bytes]:
    """The card of a checkpoint and its weights' bytes (safetensors), checked against the card's sha256.

    Raises:
        TrainError: as :func:`load_tensors`, short of parsing the weights.
    """
    card = read_card(path)
    folder = card_path(path).parent
    weights = folder / card.weights
    if weights.resolve().parent != folder.resolve():
        raise TrainError(
            f"weights {weights} of card {card_path(path)} lead outside its folder",
            hint="keep a checkpoint's weights next to its card",
        )
    if not weights.is_file():
        raise TrainError(
            f"weights {weights} of card {card_path(path)} are missing", hint="restore or re-train the checkpoint"
        )
    data = weights.read_bytes()
    if hashlib.sha256(data).hexdigest() != card.weights_sha256:
        raise TrainError(f"weights {weights} do not match their card's sha256", hint="the file changed: re-train it")
    return card, data


def tensors_from_bytes(data: bytes, where: str) -> dict[str, torch.Tensor]:
    """The tensors of safetensors ``data`` (read from ``where``, for the error).

    Raises:
        TrainError: the bytes are not valid safetensors.
    """
    try:
        return load(data)
    except Exception as error:  # safetensors raises its own SafetensorError on bad bytes
        raise TrainError(
            f"weights {where} are not valid safetensors: {error}",
            hint="the file is corrupt: restore or re-train the checkpoint",
        ) from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
