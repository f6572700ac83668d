"""A built dataset as a Minari dataset, for offline-RL libraries.

One episode per (game, seat) of the chosen split, its steps in decision order:

- ``observations``: the feature vectors (``toolkit.features``), one per decision,
  plus a final one (Minari stores N+1): the seat's state after its last decision
  is not logged, so the last decision's vector is repeated;
- ``actions``: the macro-action labels (the metadata names them); ``rewards``:
  the per-step reward as the writer logged it, which for our game is the
  env's own reward (shaping plus the terminal +1 win / -1 otherwise), what
  ``recover_environment()`` gives; a step logged without one counts 0, and
  the metadata says how many did;
- ``terminations`` / ``truncations``: read from the lake through each row's
  lineage (batch id, source line): true on the seat's last decision when its game
  ended / hit the turn limit. An episode whose last row in the build is neither
  (rows the build filtered out) ends truncated;
- ``infos``: ``legal_mask`` (the 8 legal actions), ``sample_weight`` and
  ``decision_index`` per observation (the final observation repeats the last);
- each episode's metadata: ``game_id``, ``seat``, ``source`` and ``outcome``:
  +1 the seat won the game, -1 it did not (a draw, the turn limit), null
  when the lake does not know; the result alone, without shaping.

The dataset's metadata carries the build's fingerprint, the contract version, the
holdout rule and the feature names. The dataset is written under a staging root
beside the target and moved into place whole, so a crash leaves no half-written
dataset; exporting the same build again finds it and does nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import duckdb
import gymnasium as gym
import numpy as np
import pyarrow as pa
from pydantic import BaseModel, Field

from toolkit.catalog.lake import Lake
from toolkit.datasets.dataset import Dataset, open_dataset
from toolkit.errors import ExportError
from toolkit.export.config import MinariExportConfig
from toolkit.layout import Layout
from toolkit.schema.vocab import MACRO_ACTIONS, N_ACTIONS, SCHEMA_VERSION

NAMESPACE = "distill"
MINARI_PATH_ENV = "MINARI_DATASETS_PATH"
# The game the rows come from, as a Gymnasium env (``dataset.recover_environment()``): one learning seat against
# three heuristic players, with ``action_masks()``.
ENV_SPEC = gym.envs.registration.EnvSpec(
    id="distill/Commander-v0",
    entry_point="toolkit.game.env:CommanderEnv",
    kwargs={"opponents": ["heuristic", "heuristic", "heuristic"]},
)
_COLUMNS = [
    "game_id",
    "seat",
    "decision_index",
    "source",
    "features",
    "label",
    "legal_mask",
    "sample_weight",
    "reward",
    "seat_won",
    "batch_id",
    "source_line",
]
REWARDS: Final = (
    "the per-step reward as its writer logged it: for Distill's game the env's reward, small shaped terms "
    "(+0.002 per point of damage dealt, +0.05 per elimination) plus +1 for the winner and -1 for every other "
    "seat on its last step, the turn limit included; episode metadata `outcome` holds that result alone"
)


class MinariExportResult(BaseModel):
    """What was written (or found already written)."""

    dataset_id: str
    root: Path = Field(description="The Minari datasets root: set MINARI_DATASETS_PATH to it to load the dataset.")
    path: Path
    fingerprint: str
    episodes: int
    steps: int
    reused: bool
    seconds: float


def dataset_id(name: str, split: str, version: int = 0) -> str:
    """``distill/<name>-<split>-v<version>``: the id ``minari.load_dataset`` takes."""
    return f"{NAMESPACE}/{name}-{split}-v{version}"


def default_root() -> Path:
    """Where Minari looks for datasets: ``$MINARI_DATASETS_PATH``, else ``~/.minari/datasets``."""
    return Path(os.environ.get(MINARI_PATH_ENV) or Path.home() / ".minari" / "datasets")


def export_minari(layout: Layout, config: MinariExportConfig) -> MinariExportResult:
    """Write the build ``config.name`` (split ``config.split``) as a Minari dataset.

    Raises:
        BuildError: no such build.
        ExportError: Minari is not installed; the split is empty; a row's lineage is missing from the lake; a
            different build already holds the dataset id.
    """
    minari = _import_minari()
    started = time.perf_counter()
    dataset = open_dataset(layout, config.name, config.fingerprint)
    root = (config.out or default_root()).expanduser().resolve()
    ident = dataset_id(dataset.name, config.split, config.version)
    target = root / ident
    found = _existing(target)
    if found is not None:
        if found.get("fingerprint") != dataset.fingerprint:
            raise ExportError(
                f"{ident} under {root} holds build {found.get('fingerprint')}, not {dataset.fingerprint}",
                hint=f"remove {target}, or export with another --version",
            )
        meta = _read_metadata(target)
        return MinariExportResult(
            dataset_id=ident,
            root=root,
            path=target,
            fingerprint=dataset.fingerprint,
            episodes=meta["total_episodes"],
            steps=meta["total_steps"],
            reused=True,
            seconds=time.perf_counter() - started,
        )

    rows = _rows_with_ends(layout, dataset, config.split)
    episodes, keys, filled = _episodes(rows)
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".distill-export-", dir=root))
    try:
        with _minari_root(staging), warnings.catch_warnings():
            # Minari warns that no author e-mail and no evaluation env were given: neither applies here.
            warnings.filterwarnings("ignore", category=UserWarning, module=r"minari\.")
            width = len(dataset.manifest.features.names)
            created = minari.create_dataset_from_buffers(
                dataset_id=ident,
                buffer=[],
                env=ENV_SPEC,
                # The logged features are not clipped to the env's bounds (a Forge life total can exceed them).
                observation_space=gym.spaces.Box(-np.inf, np.inf, (width,), np.float32),
                action_space=gym.spaces.Discrete(N_ACTIONS),
                algorithm_name=f"distill build ({', '.join(sorted(set(rows['source'].to_pylist())))})",
                author={"Distill"},
                description=_description(dataset, config.split),
                data_format="arrow",
            )
            _write_episodes(created.storage, episodes, keys)
            created.storage.update_metadata({"distill": _distill_metadata(dataset, config.split, filled)})
        _install(staging, root, ident)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return MinariExportResult(
        dataset_id=ident,
        root=root,
        path=target,
        fingerprint=dataset.fingerprint,
        episodes=len(episodes),
        steps=rows.num_rows,
        reused=False,
        seconds=time.perf_counter() - started,
    )


def _import_minari() -> Any:
    try:
        import minari
    except ImportError:
        raise ExportError("the Minari export needs the minari package", hint='pip install -e ".[minari]"') from None
    return minari


def _rows_with_ends(layout: Layout, dataset: Dataset, split: str) -> pa.Table:
    """The split's rows in (game, seat, decision) order, with ``is_terminal`` / ``truncated`` from the lake."""
    table = dataset.read(split, columns=_COLUMNS)
    if table.num_rows == 0:
        raise ExportError(
            f"build {dataset.name} {dataset.fingerprint} has no {split} rows",
            hint="export the other split (--split), or build with more data",
        )
    with Lake.open(layout).at() as catalog:
        flags = catalog.end_flags(sorted(set(table["batch_id"].to_pylist())))
    with duckdb.connect() as con:
        con.register("export_rows", table)
        con.register("end_flags", flags)
        joined = con.sql(
            """
            SELECT r.*, d.is_terminal AS is_terminal, d.truncated AS truncated
            FROM export_rows r LEFT JOIN end_flags d ON d.batch_id = r.batch_id AND d.source_line = r.source_line
            ORDER BY r.game_id, r.seat, r.decision_index
            """
        ).to_arrow_table()
    missing = joined.filter(pa.compute.is_null(joined["is_terminal"]))
    if missing.num_rows:
        first = missing.slice(0, 1).to_pylist()[0]
        raise ExportError(
            f"{missing.num_rows} rows of build {dataset.fingerprint} have no decision in the lake "
            f"(first: batch {first['batch_id']}, line {first['source_line']})",
            hint="the build's input batches were removed from the lake; rebuild the dataset",
        )
    return joined


def _episodes(rows: pa.Table) -> tuple[list[Any], list[dict[str, Any]], int]:
    """Minari episode buffers, their metadata, and how many steps had no logged reward."""
    from minari.data_collector import EpisodeBuffer

    game = rows["game_id"].to_numpy(zero_copy_only=False)
    seat = rows["seat"].to_numpy()
    starts = np.flatnonzero(np.r_[True, (game[1:] != game[:-1]) | (seat[1:] != seat[:-1])])
    ends = np.r_[starts[1:], rows.num_rows]
    width = rows.schema.field("features").type.list_size
    features = rows["features"].combine_chunks().flatten().to_numpy().reshape(-1, width)
    masks = rows["legal_mask"].combine_chunks().flatten().to_numpy(zero_copy_only=False).reshape(-1, N_ACTIONS)
    labels = rows["label"].to_numpy().astype(np.int64)
    reward_column = rows["reward"]
    filled = reward_column.null_count
    rewards = reward_column.fill_null(0.0).to_numpy().astype(np.float64)
    weights = rows["sample_weight"].to_numpy().astype(np.float32)
    index = rows["decision_index"].to_numpy().astype(np.int64)
    terminal = rows["is_terminal"].to_numpy(zero_copy_only=False).astype(bool)
    truncated = rows["truncated"].to_numpy(zero_copy_only=False).astype(bool)
    source = rows["source"].to_numpy(zero_copy_only=False)
    won = rows["seat_won"].to_pylist()

    buffers, keys = [], []
    for episode, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        last = np.r_[np.arange(a, b), b - 1]  # N observations and the repeated final one
        ended = terminal[a:b].copy()
        cut = truncated[a:b].copy()
        if not (ended[-1] or cut[-1]):
            cut[-1] = True
        buffers.append(
            EpisodeBuffer(
                id=episode,
                observations=features[last],
                actions=labels[a:b],
                rewards=rewards[a:b],
                terminations=ended,
                truncations=cut,
                # Per-step scalars go in as lists: Minari 0.5's Arrow storage cannot read back a 1-D array in infos.
                infos={
                    "legal_mask": masks[last],
                    "sample_weight": weights[last].tolist(),
                    "decision_index": index[last].tolist(),
                },
            )
        )
        outcome = None if won[b - 1] is None else (1 if won[b - 1] else -1)  # the outcome column, as v1 rows lack it
        keys.append({"game_id": str(game[a]), "seat": int(seat[a]), "source": str(source[a]), "outcome": outcome})
    return buffers, keys, filled


def _write_episodes(storage: Any, episodes: list[Any], keys: list[dict[str, Any]]) -> None:
    """Append the episodes and their metadata to a new Minari storage.

    Minari 0.5's Arrow storage re-measures the whole dataset folder after each episode (``get_size``), which
    makes a write quadratic in the episodes (3,500 episodes: 278 s); it is measured once, at the end, here.
    """
    measure = storage.get_size
    storage.get_size = lambda: 0.0
    try:
        storage.update_episodes(episodes)
        storage.update_episode_metadata(keys, range(len(keys)))
    finally:
        del storage.get_size
    storage.update_metadata({"dataset_size": measure()})


def _description(dataset: Dataset, split: str) -> str:
    return (
        f"Distill build {dataset.name} {dataset.fingerprint}, {split} split: one episode per (game, seat) of a "
        "4-player Commander-like game; observations are Distill's feature vectors, actions its macro actions "
        f"({', '.join(MACRO_ACTIONS)}), the legal-action mask in infos['legal_mask']."
    )


def _distill_metadata(dataset: Dataset, split: str, filled: int) -> dict[str, Any]:
    holdout = dataset.manifest.holdout
    return {
        "dataset": dataset.name,
        "fingerprint": dataset.fingerprint,
        "split": split,
        "contract_version": dataset.manifest.contract_version or SCHEMA_VERSION,
        "code_version": dataset.manifest.code_version,
        "holdout": holdout.model_dump(include={"rule", "salt", "fraction", "sources", "content"}),
        "features": dataset.manifest.features.names,
        "actions": dataset.manifest.actions or list(MACRO_ACTIONS),
        "rewards": REWARDS,
        "rewards_missing": filled,
        "final_observation": "the seat's last decision's features, repeated (its state after it is not logged)",
    }


def _metadata_file(target: Path) -> Path:
    return target / "data" / "metadata.json"


def _read_metadata(target: Path) -> dict[str, Any]:
    return json.loads(_metadata_file(target).read_text(encoding="utf-8"))


def _existing(target: Path) -> dict[str, Any] | None:
    """The Distill metadata of a dataset already at ``target`` (None when there is none)."""
    if not _metadata_file(target).exists():
        if target.exists():
            raise ExportError(f"{target} exists but is not a Minari dataset", hint=f"remove {target}")
        return None
    try:
        return _read_metadata(target).get("distill") or {}
    except (OSError, json.JSONDecodeError) as exc:
        raise ExportError(f"{_metadata_file(target)} is unreadable: {exc}", hint=f"remove {target}") from None


@contextmanager
def _minari_root(path: Path) -> Iterator[None]:
    """Point Minari (which reads its root from the environment) at ``path`` for the duration."""
    before = os.environ.get(MINARI_PATH_ENV)
    os.environ[MINARI_PATH_ENV] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(MINARI_PATH_ENV, None)
        else:
            os.environ[MINARI_PATH_ENV] = before


def _install(staging: Path, root: Path, ident: str) -> None:
    """Move the staged dataset (and its namespace's metadata, if the root lacks it) into ``root`` in one rename."""
    namespace = ident.split("/", 1)[0]
    meta = staging / namespace / "namespace_metadata.json"
    (root / namespace).mkdir(exist_ok=True)
    if meta.exists() and not (root / namespace / meta.name).exists():
        shutil.copyfile(meta, root / namespace / meta.name)
    os.replace(staging / ident, root / ident)
