"""One metrics writer for every trainer: JSON lines (the full record), CSV, and TensorBoard when installed.

A run writes ``<stem>.jsonl`` (every record, whole: what Distill itself
reads back), one ``<stem>-<kind>.csv`` per kind of record (``epoch`` for
behaviour cloning; ``update`` and ``evaluation`` for PPO: the scalar fields
of the kind's first record are its columns), and, when the optional
``tensorboard`` package is importable, TensorBoard event files under
``tensorboard/<run_id>/`` beside them, one scalar per numeric field tagged
``<trainer>/<kind>/<field>``. So ``tensorboard --logdir <home>/runs/<loop>``
shows every generation's students and PPO runs side by side. Each record is
flushed as it is written: a crash loses at most the one being written.
Writing metrics never changes what is trained.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
from pathlib import Path
from typing import IO, Any

from toolkit.errors import TrainError


def tensorboard_available() -> bool:
    return importlib.util.find_spec("tensorboard") is not None


class MetricsWriter:
    """The metrics of one run of ``trainer`` (``bc``, ``ppo``), named by ``stem`` in ``folder``.

    Args:
        tensorboard: write event files too (True: required; None: when the package is installed; False: never).

    Raises:
        TrainError: ``stem.jsonl`` exists (that run already ran here), or tensorboard=True and it is not installed.
    """

    def __init__(self, folder: Path, stem: str, trainer: str, run_id: str, *, tensorboard: bool | None = None) -> None:
        if tensorboard and not tensorboard_available():
            raise TrainError(
                "TensorBoard event files were asked for, but the tensorboard package is not installed",
                hint="pip install 'distill[tensorboard]' (CSV and JSON lines are written without it)",
            )
        self.folder, self.stem, self.trainer = folder, stem, trainer
        self.path = folder / f"{stem}.jsonl"
        try:
            self._jsonl: IO[str] = open(self.path, "x", encoding="utf-8")  # noqa: SIM115 - closed by close()
        except FileExistsError:
            raise TrainError(
                f"{self.path} exists: run {run_id} already ran here", hint="choose another --run-id"
            ) from None
        self._csv: dict[str, tuple[IO[str], csv.DictWriter]] = {}
        self._board = None
        if tensorboard is not False and tensorboard_available():
            from torch.utils.tensorboard import SummaryWriter

            self._board = SummaryWriter(log_dir=str(folder / "tensorboard" / run_id))

    def write(self, kind: str, step: int, record: dict[str, Any], *, typed: bool = True) -> None:
        """Record one ``kind`` of record at ``step`` (``typed``: the JSON line carries ``"type": kind``)."""
        self._jsonl.write(json.dumps({"type": kind, **record} if typed else record) + "\n")
        self._jsonl.flush()
        scalars = {k: v for k, v in record.items() if isinstance(v, int | float | str | bool) or v is None}
        self._row(kind, scalars)
        if self._board is not None:
            for key, value in scalars.items():
                if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                    self._board.add_scalar(f"{self.trainer}/{kind}/{key}", value, global_step=step)
            self._board.flush()

    def _row(self, kind: str, scalars: dict[str, Any]) -> None:
        if kind not in self._csv:
            handle = open(self.folder / f"{self.stem}-{kind}.csv", "w", encoding="utf-8", newline="")  # noqa: SIM115
            writer = csv.DictWriter(handle, fieldnames=list(scalars), extrasaction="ignore")
            writer.writeheader()
            self._csv[kind] = (handle, writer)
        handle, writer = self._csv[kind]
        writer.writerow(scalars)
        handle.flush()

    def close(self) -> None:
        self._jsonl.close()
        for handle, _ in self._csv.values():
            handle.close()
        if self._board is not None:
            self._board.close()

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
