"""The decision exporter: filters episodes, counts what it skips, and writes rows the lake accepts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson

from toolkit.catalog import Catalog
from toolkit.catalog.query import run_query
from toolkit.game.env import CommanderEnv, EpisodeRecord
from toolkit.game.players import make_player
from toolkit.ingest.ingest import ingest_paths
from toolkit.layout import Layout
from toolkit.schema.models import DecisionSnapshot
from toolkit.train.config import SELF, EvaluateConfig, ExportConfig
from toolkit.train.evaluate import evaluate
from toolkit.train.export import DecisionExporter, draw_lineups, export_league_games


def _episodes(n: int, seed: int = 0, illegal_every: int = 0) -> list[EpisodeRecord]:
    """Episodes of a heuristic learner in the recording env (every k-th action deliberately illegal)."""
    env = CommanderEnv(("random", "random", "heuristic"), learner_seat=None, record=True)
    learner = make_player("heuristic")
    out, step = [], 0
    obs, _ = env.reset(seed=seed)
    from toolkit.game.players import DecisionBatch

    while len(out) < n:
        batch = DecisionBatch(
            env.state, np.zeros(1, np.intp), env.state.seat[:1], env.action_masks()[None], env.np_random
        )
        action = int(learner.act(batch)[0][0])
        step += 1
        if illegal_every and step % illegal_every == 0:
            illegal = np.flatnonzero(~env.action_masks())
            action = int(illegal[0]) if len(illegal) else action
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            out.append(info["episode_record"])
            env.reset()
    return out


def _lines(paths: list[Path]) -> list[dict]:
    return [orjson.loads(line) for p in paths for line in p.read_bytes().splitlines()]


def test_the_wins_only_filter_keeps_won_episodes_of_three_decisions(tmp_path: Path) -> None:
    episodes = _episodes(30)
    exporter = DecisionExporter(
        tmp_path, batch="b1", generation=4, seed=9, config=ExportConfig(only_wins=True, min_decisions=3)
    )
    kept = [exporter.add_episode(e) for e in episodes]
    counts = exporter.close()
    won = [e.finished.winner[0] == e.learner_seat and not e.finished.truncated[0] for e in episodes]
    long = [len(e.finished.log["game"]) >= 3 for e in episodes]
    assert kept == [w and lg for w, lg in zip(won, long)]
    assert 0 < counts.exported_episodes < len(episodes)
    assert counts.exported_episodes + counts.skipped_loss + counts.skipped_short == len(episodes)
    rows = _lines(counts.files)
    assert len(rows) == counts.exported_decisions
    assert counts.files[0].name == "ml-decisions-ppo-b1-part-0000.jsonl"
    for row in rows:
        DecisionSnapshot.model_validate(row)
        assert row["source"] == "ppo" and row["model_version"] == "gen-004" and row["generation"] == 4
        assert row["seat_won"] and row["legal_actions"][row["action"]["index"]]
    by_game: dict[str, list[dict]] = {}
    for row in rows:
        by_game.setdefault(row["game_id"], []).append(row)
    for game in by_game.values():
        assert len(game) >= 3 and len({r["seat"] for r in game}) == 1  # the learner's decisions only
        assert game[-1]["is_terminal"] and game[-1]["placement"] == 1
        assert np.isclose(sum(r["reward"] for r in game), game[0]["episode_return"])


def test_by_default_every_episode_is_kept_losses_included(tmp_path: Path) -> None:
    episodes = _episodes(20, seed=2)
    exporter = DecisionExporter(tmp_path, batch="b0", generation=1, seed=2, config=ExportConfig(min_decisions=1))
    assert all(exporter.add_episode(e) for e in episodes)
    counts = exporter.close()
    assert counts.exported_episodes == 20 and counts.skipped_loss == 0
    assert counts.exported_decisions == sum(len(e.finished.log["game"]) for e in episodes)


def test_exports_ingest_with_zero_rejects_losses_included(tmp_path: Path) -> None:
    exporter = DecisionExporter(
        tmp_path / "out", batch="b2", generation=0, seed=1, config=ExportConfig(only_wins=False, min_decisions=1)
    )
    for e in _episodes(20, seed=5, illegal_every=7):
        exporter.add_episode(e)
    counts = exporter.close()
    rows = _lines(counts.files)
    asked = [r for r in rows if r["action"]["requested_index"] is not None]
    assert asked and all(
        r["action"]["macro"] == "pass" and not r["legal_actions"][r["action"]["requested_index"]] for r in asked
    )  # requested and executed actions both kept
    assert any(not r["seat_won"] for r in rows)
    result = ingest_paths(counts.files, Layout.at(tmp_path / "home"))
    assert result.rows_rejected == 0 and result.rows_valid == len(rows) == counts.exported_decisions


def test_evaluation_games_are_exported_under_their_own_source(tmp_path: Path) -> None:
    exporter = DecisionExporter(
        tmp_path, batch="b3", generation=2, seed=3, source="ppo-eval", config=ExportConfig(only_wins=False)
    )
    config = EvaluateConfig(opponents=("random",) * 3, games=8, seed=2)
    result = evaluate(lambda: make_player("heuristic"), config, exporter=exporter)
    counts = exporter.close()
    rows = _lines(counts.files)
    assert counts.files[0].name.startswith("ml-decisions-ppo-eval-b3")
    assert {r["source"] for r in rows} == {"ppo-eval"}
    assert counts.exported_episodes + counts.skipped_short == result.games
    assert ingest_paths(counts.files, Layout.at(tmp_path / "home")).rows_rejected == 0


def test_league_games_export_every_seat_the_player_holds(tmp_path: Path) -> None:
    # the teacher also fills some seats (self-play)
    counts = export_league_games(
        "heuristic",
        [SELF, "random"],
        tmp_path,
        weights=[1, 1],
        games=24,
        seed=4,
        batch="b4",
        generation=3,
        config=ExportConfig(min_decisions=1),
    )
    rows = _lines(counts.files)
    seats_per_game: dict[str, set[int]] = {}
    for row in rows:
        seats_per_game.setdefault(row["game_id"], set()).add(row["seat"])
    assert counts.exported_episodes == sum(len(s) for s in seats_per_game.values())
    assert len(seats_per_game) == 24 and max(len(s) for s in seats_per_game.values()) > 1  # self-play seats too
    assert {r["source"] for r in rows} == {"ppo"} and any(not r["seat_won"] for r in rows)
    assert ingest_paths(counts.files, Layout.at(tmp_path / "home")).rows_rejected == 0


def test_mirror_games_seat_one_league_entry_in_every_other_seat() -> None:
    lineups = draw_lineups(3, [1, 1, 1], games=400, seed=2, pod_size=4, mirror=0.5)
    others = np.array([[x for x in row if x != 0] for row in lineups])
    assert (lineups == 0).sum(axis=1).tolist() == [1] * 400  # the teacher holds its one seat, k % pod_size
    mirrored = (others == others[:, :1]).all(axis=1).mean()
    assert 0.5 < mirrored < 0.65  # half by the draw, 1 in 9 of the rest by chance
    assert (
        draw_lineups(3, [1, 1, 1], games=40, seed=2, pod_size=4)
        == draw_lineups(3, [1, 1, 1], games=40, seed=2, pod_size=4, mirror=0.0)
    ).all()


def _by_episode(rows: list[dict]) -> dict[tuple[str, int], list[dict]]:
    episodes: dict[tuple[str, int], list[dict]] = {}
    for row in rows:
        episodes.setdefault((row["game_id"], row["seat"]), []).append(row)
    return episodes


def test_league_rows_name_who_held_every_seat_so_every_winner_is_known(tmp_path: Path) -> None:
    counts = export_league_games(
        "tuned",
        [SELF, "random", "heuristic"],
        tmp_path,
        games=24,
        seed=4,
        batch="b5",
        generation=3,
        config=ExportConfig(min_decisions=1),
    )
    rows = _lines(counts.files)
    for row in rows:
        lineup = row["lineup"]
        assert [e["seat"] for e in lineup] == list(range(row["pod_size"]))
        assert lineup[row["seat"]] == {
            "seat": row["seat"],
            "kind": "tuned",
            "model_version": "gen-003",
            "name": "tuned",
        }
        others = [e for e in lineup if e["model_version"] is None]
        assert all(e["kind"] in ("random", "heuristic") and e["kind"] == e["name"] for e in others)
    games = {row["game_id"]: row for row in rows}
    won_by_others = [
        r
        for r in games.values()
        if r["winner_seat"] is not None and r["lineup"][r["winner_seat"]]["model_version"] is None
    ]
    assert won_by_others, "some games are won by a league seat the lake has no rows for"
    home = Layout.at(tmp_path / "home")
    assert ingest_paths(counts.files, home).rows_rejected == 0
    with Catalog.open(home, sandbox=True) as catalog:
        wins = run_query(
            catalog,
            "SELECT lineup[winner_seat + 1].kind AS kind, count(DISTINCT game_id) AS games FROM decisions "
            "WHERE winner_seat IS NOT NULL GROUP BY ALL ORDER BY kind",
        ).to_pylist()
    assert sum(w["games"] for w in wins) == sum(r["winner_seat"] is not None for r in games.values())
    assert {w["kind"] for w in wins} <= {"tuned", "random", "heuristic"}


def test_the_outcome_is_the_result_alone_and_the_reward_adds_the_shaping_to_it(tmp_path: Path) -> None:
    exporter = DecisionExporter(tmp_path, batch="b6", generation=1, seed=2, config=ExportConfig(min_decisions=1))
    for e in _episodes(20, seed=3):
        exporter.add_episode(e)
    rows = _lines(exporter.close().files)
    assert {r["outcome"] for r in rows} == {1, -1}
    for episode in _by_episode(rows).values():
        last = episode[-1]
        assert all(r["outcome"] == (1 if r["seat_won"] else -1) == last["outcome"] for r in episode)
        shaping = [r["reward"] for r in episode[:-1]] + [last["reward"] - last["outcome"]]
        assert all(0 <= s < 1 for s in shaping)  # damage and eliminations only ever add
        assert np.isclose(last["episode_return"], last["outcome"] + sum(shaping), atol=1e-5)


def test_env_episodes_name_the_pools_players_and_the_learner(tmp_path: Path) -> None:
    exporter = DecisionExporter(tmp_path, batch="b7", generation=2, seed=1, config=ExportConfig(min_decisions=1))
    for e in _episodes(6, seed=4):
        exporter.add_episode(e)
    rows = _lines(exporter.close().files)
    for row in rows:
        kinds = [e["kind"] for e in row["lineup"]]
        assert kinds[row["seat"]] == "ppo" and row["lineup"][row["seat"]]["model_version"] == "gen-002"
        assert sorted(k for s, k in enumerate(kinds) if s != row["seat"]) == ["heuristic", "random", "random"]


def test_evaluation_rows_name_the_opponents_and_the_learner(tmp_path: Path) -> None:
    exporter = DecisionExporter(
        tmp_path,
        batch="b8",
        generation=2,
        seed=3,
        source="ppo-eval",
        config=ExportConfig(min_decisions=1),
        kind="ppo-recurrent",
        name="ppo-recurrent-run1",
    )
    evaluate(
        lambda: make_player("heuristic"),
        EvaluateConfig(opponents=("random", "tuned", "random"), games=8, seed=2),
        exporter=exporter,
    )
    rows = _lines(exporter.close().files)
    for row in rows:
        me = row["lineup"][row["seat"]]
        assert (me["kind"], me["name"], me["model_version"]) == ("ppo-recurrent", "ppo-recurrent-run1", "gen-002")
        assert sorted(e["kind"] for e in row["lineup"] if e is not me) == ["random", "random", "tuned"]
