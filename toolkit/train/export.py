"""The decision exporter: a learning agent's decisions -> canonical JSONL for the lake.

PPO training hands every finished episode of its learner (the env's
``info["episode_record"]``) to a :class:`DecisionExporter`; evaluation hands
it the games it played through ``core.play`` (only the policy's seat is
kept). The exporter filters episodes (by default: won games only, and at
least 3 decisions), renumbers the kept games, and writes them with the game's
own decision logger (``records.build_jsonl``) through a ``DecisionWriter``:

    <out>/ml-decisions-<source>-<batch>-part-0000.jsonl

``source`` is ``ppo`` for training rollouts and ``ppo-eval`` for evaluation
games, so the two never mix in the lake; ``model_version`` is
``gen-NNN`` and ``generation`` NNN; game ids are
``<source>-<batch>-<seed>-<k>``, unique per batch (and batches are unique per
run). Rows carry the per-step reward, episode return, legal mask, placement
and terminal / truncation flags, and ``action.requested_index`` where the
policy's illegal request was replaced by ``pass``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from toolkit.game import records
from toolkit.game.core import Finished
from toolkit.game.env import EpisodeRecord

_GAME_FIELDS = ("game", "winner", "truncated", "placement", "archetype", "commander", "decisions")


class ExportConfig(BaseModel):
    """Which decisions the exporter writes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(True, description="Write the learner's decisions at all (--no-export turns it off).")
    only_wins: bool = Field(True, description="Keep only episodes the learner won (--export-losses keeps all).")
    min_decisions: int = Field(3, ge=1, description="Skip episodes with fewer learner decisions than this.")
    episodes_per_flush: int = Field(256, ge=1, description="Episodes buffered before rows are built and written.")
    compression: records.Compression = Field("none", description="none, gzip or zstd.")
    export_eval: bool = Field(True, description="Also write evaluation games, as source `<source>-eval`.")


@dataclass
class ExportCounts:
    """What an exporter wrote and skipped (skipped_loss counts every episode not won, truncations included)."""

    source: str
    exported_episodes: int = 0
    exported_decisions: int = 0
    skipped_loss: int = 0
    skipped_short: int = 0
    files: list[Path] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"source": self.source, "exported_episodes": self.exported_episodes,
                "exported_decisions": self.exported_decisions, "skipped_loss": self.skipped_loss,
                "skipped_short": self.skipped_short, "files": [str(f) for f in self.files]}


@dataclass
class _Pending:
    finished: Finished
    keep: np.ndarray  # [R] rows to write
    requested: np.ndarray  # [R]


class DecisionExporter:
    """Filters episodes of one agent and writes the kept ones as canonical decision records."""

    def __init__(self, out: Path, *, batch: str, generation: int, seed: int, source: str = "ppo",
                 config: ExportConfig | None = None) -> None:
        """Args:
            out: folder of the JSONL files.
            batch: names this export (the run id, plus a suffix per evaluation if needed).
            generation: the loop generation (``model_version`` ``gen-NNN``).
            seed: the run's seed, part of every game id.
            source: the rows' source role (``ppo``, ``ppo-eval``).
            config: filters and writing options.
        """
        self.config = config or ExportConfig()
        self.counts = ExportCounts(source)
        self.generation, self.seed, self.source = generation, seed, source
        self.model_version = f"gen-{generation:03d}"
        self.game_prefix = f"{source}-{batch}"
        self.writer = records.DecisionWriter(out, f"ml-decisions-{source}-{batch}", self.config.compression)
        self._pending: list[_Pending] = []
        self._next_game = 0

    def add_episode(self, record: EpisodeRecord) -> bool:
        """Offer one env episode of the learner; returns whether it will be written."""
        f = record.finished
        rows = len(f.log["game"])
        if not self._accept(bool(f.winner[0] == record.learner_seat and not f.truncated[0]), rows):
            return False
        self._queue(_Pending(f, np.ones(rows, bool), record.requested))
        return True

    def add_games(self, finished: Finished, seat: int) -> int:
        """Offer games from ``core.play(record=True)`` where the agent sat at ``seat``; returns games kept."""
        log = finished.log
        mine = log["seat"] == seat
        counts = np.bincount(np.searchsorted(finished.game, log["game"][mine]), minlength=len(finished.game))
        won = (finished.winner == seat) & ~finished.truncated
        accepted = np.array([self._accept(bool(w), int(c)) for w, c in zip(won, counts, strict=True)], bool)
        if not accepted.any():
            return 0
        games = finished.game[accepted]
        rows = np.isin(log["game"], games)
        sub = Finished(**{k: getattr(finished, k)[accepted] for k in _GAME_FIELDS},
                       log={k: v[rows] for k, v in log.items()})
        self._queue(_Pending(sub, sub.log["seat"] == seat, np.full(int(rows.sum()), -1, np.int64)))
        return int(accepted.sum())

    def _accept(self, won: bool, decisions: int) -> bool:
        if decisions < self.config.min_decisions:
            self.counts.skipped_short += 1
            return False
        if self.config.only_wins and not won:
            self.counts.skipped_loss += 1
            return False
        return True

    def _queue(self, pending: _Pending) -> None:
        self._pending.append(pending)
        if sum(len(p.finished.game) for p in self._pending) >= self.config.episodes_per_flush:
            self.flush()

    def flush(self) -> None:
        """Build and queue the rows of every buffered episode."""
        if not self._pending:
            return
        parts, self._pending = self._pending, []
        games, logs = [], []
        for part in parts:  # renumber: games of the export are 0, 1, 2... in the order they were kept
            f = part.finished
            numbers = np.arange(self._next_game, self._next_game + len(f.game))
            self._next_game += len(f.game)
            games.append(Finished(**{k: getattr(f, k) for k in _GAME_FIELDS if k != "game"}, game=numbers))
            logs.append({**f.log, "game": numbers[np.searchsorted(f.game, f.log["game"])]})
        merged = Finished(**{k: np.concatenate([getattr(g, k) for g in games]) for k in _GAME_FIELDS},
                          log={k: np.concatenate([log[k] for log in logs]) for k in logs[0]})
        keep = np.concatenate([p.keep for p in parts])
        requested = np.concatenate([p.requested for p in parts])
        n_seats = merged.placement.shape[1]
        blocks = records.build_jsonl(merged, seed=self.seed, sources=[self.source] * n_seats,
                                     model_version=self.model_version, generation=self.generation, keep=keep,
                                     requested=requested, game_prefix=self.game_prefix)
        rows = int(keep.sum())
        self.writer.write(blocks, rows)
        self.counts.exported_episodes += len(merged.game)
        self.counts.exported_decisions += rows

    def close(self) -> ExportCounts:
        """Write what is buffered, publish the files and return the counts."""
        self.flush()
        self.writer.close()
        self.counts.files = list(self.writer.files)
        return self.counts
