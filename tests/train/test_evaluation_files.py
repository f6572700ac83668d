"""An evaluation's file carries its format version: one an older Distill wrote (the loop's reference evaluation of
generation 0, an ablation variant's) is read as today's, one a newer Distill wrote is refused.

``tests/data/formats/evaluation-v1`` holds a tiny loop's generation-0 evaluation as written before the file
carried a version; it stays here for good.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkit.errors import ConfigError
from toolkit.layout import EVALUATION_FORMAT_VERSION
from toolkit.train.evaluate import EvaluationResult, read_evaluation, write_evaluation

OLD = Path(__file__).parents[1] / "data" / "formats" / "evaluation-v1" / "student-heuristic.json"


def test_an_evaluation_an_older_distill_wrote_reads_as_written_and_writes_back_versioned(tmp_path: Path) -> None:
    assert "format_version" not in json.loads(OLD.read_text())
    result = read_evaluation(OLD)
    assert result == EvaluationResult.model_validate_json(OLD.read_text())
    path = tmp_path / "student-heuristic.json"
    write_evaluation(path, result)
    assert next(iter(json.loads(path.read_text()))) == "format_version"
    assert read_evaluation(path) == result


def test_an_evaluation_from_a_newer_distill_is_refused_naming_file_version_and_range(tmp_path: Path) -> None:
    path = tmp_path / "student-heuristic.json"
    path.write_text(json.dumps({"format_version": EVALUATION_FORMAT_VERSION + 1, **json.loads(OLD.read_text())}))
    with pytest.raises(ConfigError) as refused:
        read_evaluation(path)
    assert refused.value.message == (
        f"{path} is a saved evaluation of format version {EVALUATION_FORMAT_VERSION + 1}; this Distill reads "
        f"versions 1 to {EVALUATION_FORMAT_VERSION}"
    )
