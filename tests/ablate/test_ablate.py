"""``distill ablate`` on a tiny lake: the paired table, the same on every back end, resumable, bad input refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolkit.ablate.config import AblateConfig, Vary, parse_vary
from toolkit.ablate.run import run_ablation
from toolkit.cli.main import app
from toolkit.datasets.config import BuildConfig
from toolkit.jobs.config import BackendConfig
from toolkit.layout import Layout

runner = CliRunner()
TABLES = {"heuristic": ("heuristic",) * 3, "random": ("random",) * 3}


def _lake(root: Path, logs: list[Path]) -> Layout:
    from toolkit.ingest.ingest import ingest_paths

    layout = Layout.at(root / "home")
    ingest_paths(logs, layout)
    return layout


@pytest.fixture(scope="module")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Layout, Layout]:
    """Two data roots holding the same tiny lake: 40 simulated games of the Forge stand-in."""
    from toolkit.game.config import SimulateConfig
    from toolkit.game.simulate import simulate

    root = tmp_path_factory.mktemp("ablate")
    logs = simulate(
        SimulateConfig(games=40, seed=5, players=("heuristic", "tuned", "heuristic", "random"), out=root / "logs")
    ).files
    return _lake(root / "a", logs), _lake(root / "b", logs)


def _config(kind: str, **changes: Any) -> AblateConfig:
    base = dict(
        name="tiny",
        build_config=BuildConfig(name="base", sources=["forge"]),
        vary=[Vary(field="data.weights.forge", values=[1.0, 0.5]), Vary(field="student.hidden", values=[[16, 16]])],
        games=32,
        tables=TABLES,
        backend=BackendConfig(kind=kind, workers=2),
    )
    return AblateConfig.model_validate({**base, **changes})


def _comparable(table: dict[str, Any]) -> dict[str, Any]:
    """The record without what differs between runs of the same ablation: timings, the back end, resumption."""
    table = {k: v for k, v in table.items() if k not in {"seconds", "created_at", "backend"}}
    volatile = {"seconds", "resumed", "build_reused"}
    table["variants"] = [{k: v for k, v in x.items() if k not in volatile} for x in table["variants"]]
    return table


@pytest.fixture(scope="module")
def ablated(lakes: tuple[Layout, Layout]) -> tuple[Any, Any]:
    """The same ablation in-process on one root, on a process pool on the other."""
    one, other = lakes
    return run_ablation(one, _config("inprocess")), run_ablation(other, _config("pool"))


def test_every_variant_is_paired_with_the_first_on_the_same_deals(ablated: tuple[Any, Any]) -> None:
    result, _ = ablated
    first, second = result.variants
    assert [v.settings for v in result.variants] == [
        {"data.weights.forge": 1.0, "student.hidden": [16, 16]},
        {"data.weights.forge": 0.5, "student.hidden": [16, 16]},
    ]
    assert second.train_rows < first.train_rows  # half the games drawn
    assert result.same_holdout and first.holdout_rows == second.holdout_rows > 0
    assert 0 <= first.holdout_accuracy <= 1 and 0 <= second.holdout_accuracy <= 1
    for name in TABLES:
        base, other = first.tables[name], second.tables[name]
        assert base.games == other.games == 32
        assert base.diff is None and base.deals is None
        assert other.deals == 8  # 32 games in pods of 4, seats rotated: 8 deals
        assert other.diff == pytest.approx(other.win_rate - base.win_rate, abs=1e-3)
        assert other.diff_low <= other.diff <= other.diff_high
        assert base.win_low <= base.win_rate <= base.win_high


def test_the_pool_gives_the_same_table_as_one_process(ablated: tuple[Any, Any]) -> None:
    in_process, pool = ablated
    assert (in_process.backend, pool.backend) == ("inprocess", "pool")
    assert _comparable(in_process.model_dump(mode="json")) == _comparable(pool.model_dump(mode="json"))


def test_the_table_is_written_as_json_and_html(lakes: tuple[Layout, Layout], ablated: tuple[Any, Any]) -> None:
    layout, (result, _) = lakes[0], ablated
    record = json.loads((layout.home / result.paths["json"]).read_text(encoding="utf-8"))
    assert _comparable(record) == _comparable(result.model_dump(mode="json"))
    page = (layout.home / result.paths["html"]).read_text(encoding="utf-8")
    assert "data.weights.forge=0.5" in page and "baseline" in page and "<svg" in page
    assert not (layout.ablation_dir("tiny") / "variants" / ".staging").exists()  # nothing left staged


def test_a_finished_variant_is_not_run_again(lakes: tuple[Layout, Layout], ablated: tuple[Any, Any]) -> None:
    layout, (before, _) = lakes[0], ablated
    again = run_ablation(layout, _config("inprocess"))
    assert [v.resumed for v in again.variants] == [True, True]
    assert _comparable(again.model_dump(mode="json")) == _comparable(before.model_dump(mode="json"))


def _cli(layout: Layout, *args: str) -> Any:
    return runner.invoke(app, ["--home", str(layout.home), "ablate", "--build", "nothing-built", *args])


@pytest.mark.parametrize(
    ("vary", "says"),
    [
        ("data.weigths.forge=0,1", "data has no field 'weigths'"),
        ("data.weights.forge=-1,1", "--vary data.weights.forge=-1"),
        ("student.epochs=4,zero", "--vary student.epochs=zero"),
        ("data.weights=0.5", "--vary data.weights=0.5"),
        ("data.min_episode_length", "is not FIELD=V1,V2"),
    ],
)
def test_a_bad_vary_is_refused_before_anything_is_written(
    lakes: tuple[Layout, Layout], tmp_path: Path, vary: str, says: str
) -> None:
    config = tmp_path / "build.yaml"
    config.write_text("name: base\nsources: [forge]\n", encoding="utf-8")
    result = runner.invoke(
        app, ["--home", str(lakes[1].home), "ablate", "--build-config", str(config), "--name", "bad", "--vary", vary]
    )
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert not lakes[1].ablation_dir("bad").exists() and not (lakes[1].builds / "ablate-bad").exists()


def test_an_unknown_base_build_is_refused(lakes: tuple[Layout, Layout]) -> None:
    result = _cli(lakes[1], "--vary", "data.seed=1,2")
    assert result.exit_code == 2 and "nothing-built" in result.output


def test_values_are_yaml_split_at_commas_outside_brackets() -> None:
    assert parse_vary("data.wins_only=[],[ppo]").values == [[], ["ppo"]]
    assert parse_vary("data.wins_only=[ppo, forge],[]").values == [["ppo", "forge"], []]
    assert parse_vary("data.weights.forge=0,0.05,0.3").values == [0, 0.05, 0.3]
    assert parse_vary("data.min_reward=null,0.5").values == [None, 0.5]


def test_a_loop_base_varies_the_loop_config_and_builds_as_the_loop_does(loop_home: Layout) -> None:
    from toolkit.ablate.base import resolve_base
    from toolkit.ablate.grid import make_grid

    config = AblateConfig(
        loop="tiny",
        vary=[Vary(field="data.weights.forge", values=[0.0, 0.3]), Vary(field="data.wins_only", values=[[], ["ppo"]])],
    )
    variants = make_grid(resolve_base(loop_home, config), config)
    assert [v.build.weights.get("forge") for v in variants] == [0.0, 0.0, 0.3, 0.3]
    assert [v.build.wins_only for v in variants] == [[], ["ppo"], [], ["ppo"]]
    assert {v.build.name for v in variants} == {"ablate-ablation"} and all(v.build.batches for v in variants)
    assert variants[0].tables == {"heuristic": ("heuristic",) * 3, "tuned": ("tuned",) * 3}


def test_a_loop_bases_teacher_window_reads_the_runs_earlier_exports_as_the_loop_would(loop_home: Layout) -> None:
    from toolkit.ablate.base import Base, resolve_base
    from toolkit.loop.config import LoopConfig

    base = resolve_base(loop_home, AblateConfig(loop="tiny", vary=[Vary(field="student.epochs", values=[1, 2])]))
    assert base.teacher and set(base.teacher.values()) == {1}  # the tiny run's one generation of exports
    assert base.window(1) == base.usable  # its last build read them all
    usable = [("boot", ["forge"]), ("g1", ["ppo"]), ("g2", ["ppo"]), ("g3", ["ppo"])]
    later = Base("loop", "a run", LoopConfig, {}, usable, generation=3, teacher={"g1": 1, "g2": 2, "g3": 3})
    assert [b for b, _ in later.window(1)] == ["boot", "g3"]
    assert [b for b, _ in later.window(2)] == ["boot", "g2", "g3"]
    assert [b for b, _ in later.window(8)] == ["boot", "g1", "g2", "g3"]


def test_a_table_seats_checkpoints_named_as_the_loops_records_name_them(loop_home: Layout) -> None:
    from toolkit.ablate.base import resolve_base
    from toolkit.ablate.grid import make_grid
    from toolkit.ablate.job import seat_player
    from toolkit.ablate.run import _check_players
    from toolkit.loop.state import RunFolder

    student = RunFolder(loop_home, "tiny").records()[-1]["student"]  # relative to the data root
    assert not Path(student).is_absolute() and seat_player(loop_home, student) == loop_home.resolve(Path(student))
    assert seat_player(loop_home, "tuned") == "tuned"
    config = AblateConfig(
        loop="tiny", vary=[Vary(field="student.epochs", values=[1, 2])], tables={"past": (student, student, "tuned")}
    )
    _check_players(loop_home, make_grid(resolve_base(loop_home, config), config))  # accepted: nothing raised


def test_an_unknown_player_is_refused_before_anything_is_written(lakes: tuple[Layout, Layout], tmp_path: Path) -> None:
    config = tmp_path / "build.yaml"
    config.write_text("name: base\nsources: [forge]\n", encoding="utf-8")
    args = [
        "--build-config",
        str(config),
        "--name",
        "players",
        "--vary",
        "data.seed=1,2",
        "--table",
        "t=heuristic,nobody,nobody",
    ]
    result = runner.invoke(app, ["--home", str(lakes[1].home), "ablate", *args])
    assert result.exit_code == 2 and result.output.count("'nobody' is neither a player type nor a checkpoint") == 1
    assert not lakes[1].ablation_dir("players").exists() and not (lakes[1].builds / "ablate-players").exists()


def test_the_command_prints_the_table_of_a_finished_ablation(
    lakes: tuple[Layout, Layout], ablated: tuple[Any, Any], tmp_path: Path
) -> None:
    config = tmp_path / "build.yaml"
    config.write_text("name: base\nsources: [forge]\n", encoding="utf-8")
    args = ["--build-config", str(config), "--name", "tiny", "--games", "32", "--backend", "inprocess"]
    args += ["--vary", "data.weights.forge=1.0,0.5", "--vary", "student.hidden=[16, 16]"]
    args += ["--table", "heuristic=heuristic,heuristic,heuristic", "--table", "random=random,random,random"]
    result = runner.invoke(app, ["--home", str(lakes[0].home), "ablate", *args])
    assert result.exit_code == 0, result.output
    assert "0.5, [16," in result.output and "baseline" in result.output
    assert "2 variants (2 finished earlier)" in result.output
