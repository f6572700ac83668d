"""distill build --drop-label-issues: exactly the flagged train rows go, the manifest says which scores."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest

from tests.quality.conftest import Noisy
from toolkit.datasets.build import build_dataset
from toolkit.datasets.config import BuildConfig
from toolkit.datasets.dataset import HOLDOUT, TRAIN
from toolkit.datasets.scores import read_scores
from toolkit.errors import BuildError
from toolkit.schema import columns as col
from toolkit.schema import scores as sc


def _lines(table) -> set[tuple[str, int]]:
    return set(zip(table.column(col.BATCH_ID).to_pylist(), table.column(col.SOURCE_LINE).to_pylist(), strict=True))


def test_drop_label_issues_removes_exactly_the_flagged_train_rows(noisy: Noisy) -> None:
    config = BuildConfig(name="noisy-clean", label_issues={"drop_flagged": True, "scores": "noisy"})
    clean = build_dataset(noisy.layout, config).dataset
    scores = read_scores(noisy.layout, noisy.dataset)
    flagged_train = _lines(scores.filter(pc.and_(scores.column(sc.FLAGGED), pc.equal(scores.column(sc.SPLIT), TRAIN))))
    before, after = (_lines(d.read(TRAIN, [col.BATCH_ID, col.SOURCE_LINE])) for d in (noisy.dataset, clean))
    assert flagged_train and before - after == flagged_train and after <= before
    assert clean.manifest.splits[HOLDOUT].files == noisy.dataset.manifest.splits[HOLDOUT].files  # the yardstick stays
    used = clean.manifest.label_scores
    assert used is not None and used.rows_dropped == len(flagged_train) and used.rule == "flagged"
    assert (used.dataset, used.fingerprint) == ("noisy", noisy.dataset.fingerprint)
    assert used.path == f"builds/noisy/{noisy.dataset.fingerprint}/label-scores.parquet"
    assert clean.fingerprint != noisy.dataset.fingerprint
    again = build_dataset(noisy.layout, config)
    assert again.reused and again.dataset.fingerprint == clean.fingerprint


def test_a_quality_floor_drops_more_and_names_its_rule(noisy: Noisy) -> None:
    config = BuildConfig(name="noisy-floor", label_issues={"drop_flagged": True, "min_quality": 0.5, "scores": "noisy"})
    clean = build_dataset(noisy.layout, config).dataset
    used = clean.manifest.label_scores
    assert used is not None and used.rule == "flagged or label_quality < 0.5"
    rows = read_scores(noisy.layout, noisy.dataset).to_pylist()
    low = [r for r in rows if r[sc.SPLIT] == TRAIN and (r[sc.FLAGGED] or (r[sc.LABEL_QUALITY] or 1) < 0.5)]
    assert used.rows_dropped == len(low) > sum(r[sc.SPLIT] == TRAIN and r[sc.FLAGGED] for r in rows)


def test_by_default_a_build_cleans_by_its_own_names_newest_scores(noisy: Noisy) -> None:
    """Without --label-scores, a cleaning build of ``noisy`` reads the newest scored build of ``noisy``."""
    named = build_dataset(noisy.layout, BuildConfig(name="noisy-clean", label_issues={"scores": "noisy"})).dataset
    try:
        default = build_dataset(noisy.layout, BuildConfig(name="noisy", label_issues={})).dataset
        assert default.manifest.label_scores == named.manifest.label_scores
    finally:  # the session's other tests read the latest build of "noisy": the scored one
        noisy.layout.latest_pointer("noisy").write_text(noisy.dataset.fingerprint + "\n")


def test_cleaning_without_scores_names_the_command(noisy: Noisy) -> None:
    with pytest.raises(BuildError, match="no label scores") as error:
        build_dataset(noisy.layout, BuildConfig(name="other", label_issues={"drop_flagged": True}))
    assert "distill check labels other" in (error.value.hint or "")
