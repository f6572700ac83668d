"""Tiny lakes for build tests: games written as canonical records, then really ingested."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.factories import make_snapshot
from toolkit.datasets.dataset import MANIFEST_FILE, Dataset, read_manifest
from toolkit.ingest.config import IngestConfig
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout


def game_records(
    game_id: str,
    source: str | Sequence[str] = "forge",
    *,
    seats: int = 4,
    per_seat: int = 3,
    winner: int | None = 0,
    returns: Sequence[float] | None = None,
    label_source: str = "logged",
    generation: int | None = None,
) -> list[dict[str, Any]]:
    """Every decision of one game: ``per_seat`` decisions per seat, in turn order, seat ``winner`` wins."""
    sources = [source] * seats if isinstance(source, str) else list(source)
    rows = []
    for d in range(per_seat * seats):
        seat = d % seats
        won = winner is not None and seat == winner
        rows.append(
            make_snapshot(
                game_id=game_id,
                seat=seat,
                decision_index=d,
                pod_size=seats,
                source=sources[seat],
                turn=1 + d // seats,
                winner_seat=winner,
                seat_won=won,
                placement=1 if won else 2,
                episode_return=returns[seat] if returns is not None else (1.0 if won else -1.0),
                is_terminal=d >= (per_seat - 1) * seats,
                generation=generation,
                action={**make_snapshot()["action"], "label_source": label_source},
            )
        )
    return rows


@pytest.fixture
def lake(layout: Layout, write_log: Callable[..., Path]) -> Callable[..., Path]:
    """Ingest games into the test data root: ``lake("name.jsonl", [rows...], ...)``; returns the file."""

    def add(name: str, *games: list[dict[str, Any]]) -> Path:
        path = write_log(name, [row for game in games for row in game])
        result = ingest_paths([path], layout, IngestConfig())
        assert result.rows_rejected == 0, result
        return path

    return add


def restamp(dataset: Dataset, created_at: str | None, *, drop: Sequence[str] = ()) -> Dataset:
    """Rewrite a build's manifest with another ``created_at`` (None: absent), without the fields in ``drop``
    (as manifests written before those fields were recorded), and return it reopened."""
    body = dataset.manifest.model_dump(mode="json") | {"created_at": created_at}
    for field in drop:
        body.pop(field, None)
    (dataset.root / MANIFEST_FILE).write_text(json.dumps(body), encoding="utf-8")
    return Dataset(dataset.root, read_manifest(dataset.root))
