"""``distill tournament`` reports the games that ended at the turn limit, as the rated games say."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from toolkit.cli.main import app
from toolkit.ratings import NOBODY

ENTRANTS = ["heuristic", "tuned", "random", "h2=heuristic", "t2=tuned"]  # 5 lineups of 4


def test_truncations_are_counted_overall_per_lineup_and_per_player_as_the_games_ended(tmp_path: Path) -> None:
    pool = tmp_path / "pool.json"
    done = CliRunner().invoke(
        app, ["tournament", *ENTRANTS, "--deals", "2", "--max-rounds", "10", "--pool", str(pool), "--json"]
    )
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    games = json.loads(pool.read_text())["games"]  # every game as the pool rated it: winner -1 at the turn limit
    ended = [g for g in games if g["winner"] == NOBODY]
    truncations = report["truncations"]
    assert truncations["games"] == len(games) == 40 and truncations["max_rounds"] == 10
    assert truncations["truncated"] == len(ended) and 0 < len(ended) < len(games)
    assert truncations["share"] == round(len(ended) / len(games), 4)
    assert len(truncations["by_lineup"]) == 5
    for lineup in truncations["by_lineup"]:
        mine = [g for g in games if set(g["players"]) == set(lineup["players"])]
        assert lineup["games"] == len(mine) == 8
        assert lineup["truncated"] == sum(g["winner"] == NOBODY for g in mine)
    for standing in report["standings"]:
        assert standing["truncated"] == sum(standing["name"] in g["players"] for g in ended)
    assert len(ended) / len(games) >= 0.25 and "warning:" in done.stderr and "turn limit (10 rounds)" in done.stderr


def test_the_table_states_the_turn_limit_and_only_a_large_share_warns(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["tournament", *ENTRANTS[:4], "--deals", "2", "--max-rounds", "200"])
    assert done.exit_code == 0, done.output
    shown = " ".join(done.stdout.split())
    assert "truncated" in shown and "ended at the turn limit (200 rounds)" in shown
    assert "warning" not in done.stderr
