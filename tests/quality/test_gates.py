"""The lake and dataset gates read the label scores: an expectation on the label-issue rate."""

from __future__ import annotations

from tests.quality.conftest import Noisy
from toolkit.checks.gate import CheckConfig, LakeScope, check_dataset, check_lake


def _issue_rate(report):  # noqa: ANN001, ANN202
    (result,) = [r for r in report.results if r.type == "label_issue_rate_at_most"]
    return result


def test_the_gates_measure_the_label_issue_rate(noisy: Noisy) -> None:
    config = CheckConfig(write=False)
    dataset = _issue_rate(check_dataset(noisy.layout, "noisy", config))
    lake = _issue_rate(check_lake(noisy.layout, LakeScope(source="forge"), config))
    for result in (dataset, lake):
        assert result.observed["flagged"] == noisy.result.flagged
        assert result.observed["scored"] == noisy.result.scored
        assert result.severity == "warning"
    assert dataset.success == (noisy.result.rate <= 0.05)


def test_the_dataset_notebook_shows_the_label_issues(noisy: Noisy) -> None:
    from toolkit.analysis.sections import dataset_sections

    sections = {s.title: s for s in dataset_sections(noisy.layout, "noisy")}
    rates = sections["Label issues per source and generation"].table
    assert rates["flagged"].sum() == noisy.result.flagged
    assert sections["The worst labels"].table.height == min(20, noisy.result.flagged)
