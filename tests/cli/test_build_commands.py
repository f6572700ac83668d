"""``distill build`` and ``distill datasets``: flags, output, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.datasets.conftest import game_records
from toolkit.cli.main import app
from toolkit.layout import Layout

runner = CliRunner()


def _distill(layout: Layout, *args: str):
    return runner.invoke(app, ["--home", str(layout.home), *args])


def _ingested(layout: Layout, write_log) -> None:
    rows = [row for i in range(40) for row in game_records(f"f-{i}")]
    rows += [row for i in range(20) for row in game_records(f"p-{i}", "ppo", returns=[0.5, 0.0, -1.0, 0.3])]
    assert _distill(layout, "ingest", str(write_log("a.jsonl", rows))).exit_code == 0


def test_build_with_flags_then_list_and_show(layout: Layout, write_log, tmp_path: Path) -> None:
    _ingested(layout, write_log)
    result = _distill(layout, "build", "--name", "mix", "--weight", "ppo=0.5", "--min-reward", "0.2", "--json")
    assert result.exit_code == 0, result.output
    built = json.loads(result.output)
    assert built["name"] == "mix" and not built["reused"] and built["train"]["rows"] > 0
    listed = json.loads(_distill(layout, "datasets", "list", "--json").output)
    assert [d["fingerprint"] for d in listed] == [built["fingerprint"]]
    shown = _distill(layout, "datasets", "show", "mix")
    assert shown.exit_code == 0 and "min_reward" in shown.output and built["fingerprint"] in shown.output
    manifest = json.loads(_distill(layout, "datasets", "show", "mix", "--json").output)
    assert manifest["config"]["weights"] == {"ppo": 0.5} and manifest["config"]["min_reward"] == 0.2
    again = json.loads(
        _distill(layout, "build", "--name", "mix", "--weight", "ppo=0.5", "--min-reward", "0.2", "--json").output
    )
    assert again["reused"] and again["fingerprint"] == built["fingerprint"]


def test_a_yaml_config_with_flag_overrides(layout: Layout, write_log, tmp_path: Path) -> None:
    _ingested(layout, write_log)
    config = tmp_path / "build.yaml"
    config.write_text("name: shares\nweight_mode: share\nweights: {forge: 0.5, ppo: 0.5}\n")
    result = _distill(layout, "build", "--config", str(config), "--seed", "4", "--json")
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.output)["shares"]) == {"forge", "ppo"}


def test_usage_errors_name_the_field_and_exit_2(layout: Layout, write_log) -> None:
    _ingested(layout, write_log)
    unknown = _distill(layout, "build", "--source", "nope")
    assert unknown.exit_code == 2 and "unknown source 'nope'" in unknown.output
    malformed = _distill(layout, "build", "--weight", "ppo")
    assert malformed.exit_code == 2 and "SOURCE=NUMBER" in malformed.output
    bad_mode = _distill(layout, "build", "--mode", "both")
    assert bad_mode.exit_code == 2 and "weight_mode" in bad_mode.output
    missing = _distill(layout, "datasets", "show", "nothing")
    assert missing.exit_code == 1 and "no dataset named 'nothing'" in missing.output
