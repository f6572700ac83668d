"""The run page shows the label-issue rate per generation once the run's dataset is scored."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.quality.test_labels import TINY_NET
from tests.serve.conftest import client_for
from toolkit.layout import Layout
from toolkit.quality.labels import check_labels
from toolkit.serve import views


def test_the_run_page_shows_the_label_issue_rate_per_generation(loop_home: Layout, tmp_path: Path) -> None:
    layout = Layout.at(tmp_path / "home")
    shutil.copytree(loop_home.home, layout.home)  # scores are written beside the build: a copy of the shared root
    assert views.label_issue_rates(layout, "tiny") == []
    assert "table-label-issues" not in client_for(layout).get("/runs/tiny").text
    result = check_labels(layout, "loop-tiny", TINY_NET.model_copy(update={"folds": 2}))
    rates = views.label_issue_rates(layout, "tiny")
    assert [(g.source, g.generation, g.flagged) for g in rates] == [
        (g.source, g.generation, g.flagged) for g in result.groups
    ]
    page = client_for(layout).get("/runs/tiny")
    assert page.status_code == 200 and "table-label-issues" in page.text
    assert page.text.count("<tr><td>", page.text.index("table-label-issues")) >= len(rates)
