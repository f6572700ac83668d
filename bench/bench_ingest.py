"""Benchmark ``distill ingest`` against a naive Pydantic baseline and the raw JSON parse limit.

Usage::

    .venv/bin/python bench/bench_ingest.py                      # 1M rows (+100k for memory)
    .venv/bin/python bench/bench_ingest.py --rows 200000 --small-rows 50000 --dirty 0.001 0.01 --sim-games 1000

Generates (once, cached under ``bench/out/data``) a deterministic JSONL file of
realistic canonical records, the simulator's own log of ``--sim-games``
heuristic games (one file, as ``distill simulate`` writes it) and a PPO-export
log of ``--export-games`` games (the loop's self-play export, zstd JSONL), then
measures, each in a fresh process:

(a) ``ingest``: ``ingest_paths`` end to end into a fresh data root;
(b) ``naive``: Pydantic ``model_validate_json`` per line -> dicts -> pyarrow ->
    Parquet, in batches, GC left on (the obvious way to do it);
(c) ``raw``: read lines + ``orjson.loads`` per line, nothing else (the baseline);
(d) ``parse``: the floor of parsing: reading the file and ``pyarrow.json`` on
    two threads as the fast path calls it, nothing else;
(e) ``encode``: the floor of writing: the parsed rows with lineage encoded to
    one lake Parquet file (only the writing timed).

(a) and (c) run on all three inputs (raw decompresses the export's zstd stream
first), (d) and (e) on the generated rows at full size.
Prints rec/s, the ratios ingest/naive and ingest/raw (target 1.0x on each input,
issue 26), under each the ratio ingest could reach with the cores to itself
(from CPU time: wall ratios fall with the machine's load), the floor (d + e
shared over the cores), peak RSS at the small, a middle and the full size, and
PASS/FAIL against the targets; the report also goes to ``bench/out/``. Where
the time goes, thread by thread: ``bench/profile_ingest.py`` and
``bench/PROFILES.md``.

Last runs, issue 26 (quiet 2 cores, load ~1, 17:07-17:16 UTC, 4 Dec 2026;
the full bench once, then twice with ``--dirty --mid-rows 0
--skip-naive-small``): ingest / raw orjson 0.55x / 0.57x / 0.56x on 1M
generated rows (90-93k vs 163-165k rec/s; 21 vs 6.1 CPU-s: at most 0.57x
on 2 free cores); simulator log 0.59x / 0.61x / 0.62x; PPO-export log
(16,000 games, 1,031,562 decisions, 66 MB of zstd) 0.61x / 0.61x / 0.61x
(raw decompresses the stream too); floor 0.66x (parse 14.7 + encoding 3.9
CPU-s, 87% of ingest's CPU). Peak RSS 462 / 502 / 555 MiB at 100k / 300k /
1M rows (1.20x, PASS); 0.1% / 1% bad lines 1.11x / 1.19x the clean time
(PASS); naive 15,815 rec/s (ingest 5.7x). FAIL against 1.0x: see PROFILES.md.

Last runs, issue 26 (2 cores under another benchmark, load 5-6, 14:03-14:12
UTC; 1M generated rows of 2.07 KB; the simulator's log of 7,800 games, 907,120
decisions of 2.57 KB): ingest 17,588 rec/s vs raw 65,815: 0.27x by wall
(FAIL), 22.0 vs 6.2 CPU-s: at most 0.56x on 2 free cores; simulator log
33,410 vs 87,510: 0.38x (FAIL), 23.7 vs 7.1 CPU-s: at most 0.60x. Floor:
parse alone 15.2 CPU-s + encoding alone 3.8 CPU-s: at most 0.65x raw, 86% of
ingest's CPU. pyarrow.json alone costs 2.0x orjson's CPU on the same lines,
so on 2 cores the parse alone only ties raw: 1.0x is out of reach here (see
PROFILES.md). Naive 9,316 rec/s: ingest 1.89x by wall (target 3x; ~3.0x by
CPU). Peak RSS 456 / 486 MiB at 100k / 1M.
Second run (14:32, load 2.3: one core left to the bench; ingest and the
parse floor each got ~1.0 core): ingest 46,923 vs raw 159,651 rec/s, 0.29x
(FAIL), 20.8 vs 6.0 CPU-s: at most 0.57x; simulator log 39,621 vs 121,018,
0.33x (FAIL), 25.2 vs 7.8 CPU-us/row: at most 0.62x; floor 14.7 + 3.7 CPU-s:
at most 0.65x, 88% of ingest's CPU; naive 15,795 rec/s (2.97x, FAIL).

Earlier runs (2 cores, nothing else running; 1M rows of ~2.07 KB, 2.07 GB):
ingest 104,323 / 97,763 / 101,007 rec/s, raw orjson 163,222 / 155,526 /
159,396: 0.64x / 0.63x / 0.63x (target then 0.6x); naive ~16k rec/s: ~6.3x; peak
RSS 100k / 300k / 1M rows 504 / 507 / 603, 497 / 508 / 564 and 497 / 496 /
579 MiB: 1.20x / 1.13x / 1.16x from 100k to 1M (target 1.25x). With 0.1% /
1% corrupted lines (last two runs, each input read once before it is timed):
103,340 / 92,082 and 106,031 / 92,804 rec/s against 122,117 and 117,788
clean: 1.18x / 1.33x and 1.11x / 1.27x the clean time (targets 1.2x / 1.5x);
what is left is mostly the search for the file's learned faults, ~8 ms per
16 MB chunk for two patterns, and the first chunks, parsed before any fault
is learned. (Before: an RE2 search, ~25 ms a chunk, a copy of every dirty
chunk and a second one of its rows: 1.37x-1.53x / 1.47x-1.63x.) Peak RSS
579 / 576 MiB.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Measurement, Tee, Timer, best_of, ratio, report_child, run_child, timed, verdict  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
SEED = 20240601
POD = 4

TARGET_VS_NAIVE = 3.0
TARGET_VS_RAW = 1.0  # issue 26: ingest end to end at least as fast as orjson's line-by-line parse
SIM_GAMES = 7_800  # heuristic games of the simulator's own logs: ~0.9M decisions, ~2.3 GB
EXPORT_GAMES = 16_000  # games of a PPO-export log (the loop's self-play export, zstd): ~0.9M decisions
TARGET_RSS_MB = 1536.0
FLAT_RSS_GROWTH = 1.25  # peak RSS at full size may be at most this times the small-size peak
DIRTY_TIME_TARGETS = {0.001: 1.2, 0.01: 1.5}  # a file with this share of bad lines: at most this times the clean time

# -- realistic records ---------------------------------------------------------------

CARDS = (
    "Sol Ring",
    "Arcane Signet",
    "Command Tower",
    "Llanowar Elves",
    "Elvish Mystic",
    "Birds of Paradise",
    "Cultivate",
    "Kodama's Reach",
    "Rampant Growth",
    "Three Visits",
    "Nature's Lore",
    "Farseek",
    "Swords to Plowshares",
    "Path to Exile",
    "Beast Within",
    "Chaos Warp",
    "Generous Gift",
    "Anguished Unmaking",
    "Counterspell",
    "Negate",
    "Swan Song",
    "Fierce Guardianship",
    "Rhystic Study",
    "Mystic Remora",
    "Phyrexian Arena",
    "Night's Whisper",
    "Sign in Blood",
    "Harmonize",
    "Beast Whisperer",
    "Guardian Project",
    "Cyclonic Rift",
    "Evolving Wilds",
    "Terramorphic Expanse",
    "Forest",
    "Island",
    "Swamp",
    "Mountain",
    "Plains",
    "Breeding Pool",
    "Hallowed Fountain",
    "Overgrown Tomb",
    "Watery Grave",
    "Temple Garden",
    "Godless Shrine",
    "Lim-Dûl's Vault",
    "Jötun Grunt",
    "Séance",
    "Ghazbán Ogre",
    "Dandân",
    "Æther Vial",
    "Márton Stromgald",
    "Atraxa, Praetors' Voice",
    "Ezuri, Renegade Leader",
    "Kenrith, the Returned King",
    "Korvold, Fae-Cursed King",
    "Muldrotha, the Gravetide",
    "The Ur-Dragon",
    "Edgar Markov",
    "Meren of Clan Nel Toth",
    "Prossh, Skyraider of Kher",
    "Craterhoof Behemoth",
    "Avenger of Zendikar",
    "Terastodon",
    "Eternal Witness",
    "Reclamation Sage",
    "Acidic Slime",
    "Wood Elves",
    "Solemn Simulacrum",
    "Burnished Hart",
    "Sakura-Tribe Elder",
    "Yavimaya Elder",
    "Elvish Archdruid",
    "Priest of Titania",
    "Heritage Druid",
    "Wirewood Symbiote",
    "Lightning Greaves",
    "Swiftfoot Boots",
    "Skullclamp",
    "Sword of Feast and Famine",
    "Blade of Selves",
    "Doubling Season",
    "Parallel Lives",
    "Anointed Procession",
    "Cathars' Crusade",
    "Smothering Tithe",
    "Esper Sentinel",
    "Demonic Tutor",
    "Vampiric Tutor",
    "Worldly Tutor",
    "Enlightened Tutor",
    "Mystical Tutor",
    "Toxic Deluge",
    "Damnation",
    "Wrath of God",
    "Blasphemous Act",
    "Vandalblast",
    "Austere Command",
    "Merciless Eviction",
    "Dockside Extortionist",
    "Deadly Rollick",
    "Deflecting Swat",
    "Teferi's Protection",
    "Heroic Intervention",
    "Tamiyo's Safekeeping",
    "Boros Charm",
    "Assassin's Trophy",
    "Putrefy",
    "Mortify",
    "Anguished Unmaking",
    "Grim Flayer",
    "Tireless Tracker",
    "Sylvan Library",
    "Mirari's Wake",
    "Exploration",
    "Azusa, Lost but Seeking",
    "Oracle of Mul Daya",
    "Ramunap Excavator",
    "Crucible of Worlds",
    "Lotus Cobra",
    "Tatyova, Benthic Druid",
)
COMMANDERS = (
    "Atraxa, Praetors' Voice",
    "Ezuri, Renegade Leader",
    "Kenrith, the Returned King",
    "Korvold, Fae-Cursed King",
    "Muldrotha, the Gravetide",
    "The Ur-Dragon",
    "Edgar Markov",
    "Meren of Clan Nel Toth",
    "Tatyova, Benthic Druid",
    "Azusa, Lost but Seeking",
    "Prossh, Skyraider of Kher",
    "Márton Stromgald",
)
DECKS = ("Elves", "Superfriends", "Dragons Tribal", "Aristocrats", "Landfall", "Voltron", "Spellslinger", "Tokens")
ARCHETYPES = ("aggro", "control", "midrange", "combo", "ramp")
MACROS = (
    "cast_creature",
    "cast_removal",
    "cast_draw",
    "cast_ramp",
    "cast_commander",
    "attack_opponent",
    "hold_mana",
    "pass",
)
RAW_TYPES = (
    "cast_spell",
    "cast_spell",
    "cast_spell",
    "cast_spell",
    "cast_commander",
    "declare_attackers",
    "pass_priority",
    "pass_priority",
)
MAIN_WEIGHTS = np.array([0.22, 0.1, 0.1, 0.14, 0.04, 0.0, 0.15, 0.25])
COMBAT_WEIGHTS = np.array([0.0, 0.03, 0.0, 0.0, 0.0, 0.6, 0.07, 0.3])
PHASES = ("main_1", "combat", "main_2", "end")
SOURCES = (
    ("forge", "forge-1.6.60", None),
    ("sim", "distill-sim", None),
    ("ppo", "distill-ppo", 1),
    ("ppo", "distill-ppo", 2),
    ("ppo", "distill-ppo", 3),
)
SOURCE_WEIGHTS = np.array([0.45, 0.25, 0.1, 0.1, 0.1])


def _cards(rng: np.random.Generator, n: int) -> list[str]:
    return [CARDS[i] for i in rng.integers(0, len(CARDS), n)]


def _game_sequence(rng: np.random.Generator) -> list[tuple[int, str, int]]:
    """(turn, phase, acting seat) of every decision of one game, in order."""
    turns = int(rng.integers(7, 16))
    sequence = []
    for turn in range(1, turns + 1):
        active = (turn - 1) % POD
        for phase in PHASES:
            decisions = int(rng.integers(1, 4)) if phase != "end" else 1
            for _ in range(decisions):
                # Mostly the active seat; sometimes an opponent responds.
                seat = active if rng.random() < 0.8 else int(rng.integers(0, POD))
                sequence.append((turn, phase, seat))
    return sequence


def generate_game(rng: np.random.Generator, game_no: int) -> list[dict[str, Any]]:
    """Every decision of one 4-seat game as canonical records."""
    source, engine, generation = SOURCES[rng.choice(len(SOURCES), p=SOURCE_WEIGHTS)]
    model_version = f"gen-{generation:03d}" if generation is not None else None
    game_id = f"{source}-{game_no:08d}"
    outcome = rng.random()
    timed_out = outcome < 0.06
    is_draw = 0.06 <= outcome < 0.09
    winner = None if (timed_out or is_draw) else int(rng.integers(0, POD))
    placements = [None] * POD
    if winner is not None:
        others = [s for s in range(POD) if s != winner]
        rng.shuffle(others)
        placements[winner] = 1
        for place, s in enumerate(others, start=2):
            placements[s] = place
    decks = [int(i) for i in rng.integers(0, len(DECKS), POD)]
    commanders = [COMMANDERS[i] for i in rng.integers(0, len(COMMANDERS), POD)]
    hands = [_cards(rng, 7) for _ in range(POD)]
    fields: list[list[str]] = [[] for _ in range(POD)]
    yards: list[list[str]] = [[] for _ in range(POD)]
    life = [40] * POD
    tax = [0] * POD
    damage = [0] * POD
    sequence = _game_sequence(rng)
    last_of_seat = {seat: i for i, (_, _, seat) in enumerate(sequence)}
    episode = [0.0] * POD
    records = []
    for index, (turn, phase, seat) in enumerate(sequence):
        weights = COMBAT_WEIGHTS if phase == "combat" else MAIN_WEIGHTS
        a = int(rng.choice(8, p=weights))
        legal = (rng.random(8) < 0.55).tolist()
        legal[a] = True
        legal[7] = True
        card = target = target_seat = None
        if a <= 4:
            card = commanders[seat] if a == 4 else (hands[seat].pop() if hands[seat] else _cards(rng, 1)[0])
            if a == 4:
                tax[seat] += 2
            if a == 1:
                victim = int(rng.integers(0, POD))
                if fields[victim]:
                    target = fields[victim].pop()
                    yards[victim].append(target)
                else:
                    target = commanders[victim]
            (fields[seat] if a != 2 else yards[seat]).append(card)
        elif a == 5:
            target_seat = int((seat + rng.integers(1, POD)) % POD)
            hit = int(rng.integers(0, 9))
            life[target_seat] = max(1, life[target_seat] - hit)
            damage[target_seat] += int(rng.integers(0, 2)) * hit
        if rng.random() < 0.3:
            hands[seat].extend(_cards(rng, 1))
        terminal = index == last_of_seat[seat] and not timed_out
        truncated = index == last_of_seat[seat] and timed_out
        reward = 0.0
        if terminal and winner is not None:
            reward = 1.0 if winner == seat else -1.0
        episode[seat] += reward
        requested = None
        if source == "ppo" and rng.random() < 0.02:
            illegal = [i for i, ok in enumerate(legal) if not ok]
            requested = illegal[0] if illegal else None
        players = []
        for s in range(POD):
            lands = sum(1 for c in fields[s] if c in ("Forest", "Island", "Swamp", "Mountain", "Plains")) + turn // 2
            players.append(
                {
                    "seat": s,
                    "life": life[s],
                    "commander_damage_taken": damage[s],
                    "mana_available": int(min(lands, 12)),
                    "commander_tax": tax[s],
                    "hand_size": len(hands[s]),
                    "graveyard_size": len(yards[s]),
                    "creatures": len(fields[s]) // 2,
                    "lands": lands,
                    "permanents": len(fields[s]) + lands,
                    "total_power": 2 * (len(fields[s]) // 2),
                    "eliminated": False,
                    "hand": hands[s][-4:] if s == seat else None,  # opponents' hands are hidden
                    "battlefield": fields[s][-3:],
                    "graveyard": yards[s][-2:],
                    "command_zone": [commanders[s]],
                }
            )
            if source == "sim":  # the simulator logs counts, not zone contents
                players[-1].update(hand=None, battlefield=None, graveyard=None, total_power=None)
        records.append(
            {
                "schema_version": 1,
                "source": source,
                "dialect": "canonical",
                "engine": engine,
                "game_id": game_id,
                "decision_index": index,
                "turn": turn,
                "phase": phase,
                "seat": seat,
                "pod_size": POD,
                "players": players,
                "action": {
                    "macro": MACROS[a],
                    "index": a,
                    "label_source": "logged",
                    "raw_type": RAW_TYPES[a],
                    "card": card,
                    "target": target,
                    "target_seat": target_seat,
                    # Only Forge keeps its engine log line.
                    "raw": f"T{turn} {phase} seat{seat}: {RAW_TYPES[a]} {card or ''}".rstrip()
                    if source == "forge"
                    else None,
                    "requested_index": requested,
                },
                "legal_actions": legal,
                "reward": reward,
                "episode_return": episode[seat],
                "winner_seat": winner,
                "is_draw": is_draw,
                "timed_out": timed_out,
                "seat_won": (winner == seat) if winner is not None else False,
                "placement": placements[seat],
                "is_terminal": terminal,
                "truncated": truncated,
                "model_version": model_version,
                "generation": generation,
                "deck_name": DECKS[decks[seat]],
                "commander": commanders[seat],
                "archetype": ARCHETYPES[decks[seat] % len(ARCHETYPES)],
                "raw_outcome": None,
                "flags": None,
            }
        )
    return records


def _corrupt(record: dict[str, Any], kind: int) -> bytes:
    """A realistic bad line: each kind breaks one thing a writer gets wrong."""
    if kind == 0:
        record["turn"] = str(record["turn"])  # number written as text
    elif kind == 1:
        record["players"][0]["life"] = 250_000  # out of range
    elif kind == 2:
        record["legal_actions"][record["action"]["index"]] = False  # chosen action illegal
    elif kind == 3:
        record["seat_won"] = not record["seat_won"] if record["winner_seat"] is not None else True
    elif kind == 4:
        record["players"][1]["unexpected"] = 1  # unknown field
    elif kind == 5:
        record["action"]["macro"] = "cast_sorcery"  # unknown enum value
    line = orjson.dumps(record)
    if kind == 6:
        return line[: len(line) // 2]  # truncated write
    if kind == 7:
        return line.replace(b'"reward":0.0', b'"reward":NaN', 1)
    return line


def generate_file(path: Path, rows: int, seed: int = SEED, dirty: float = 0.0) -> dict[str, Any]:
    """Write ``rows`` canonical records to ``path`` (JSONL), corrupting a ``dirty`` fraction.

    Deterministic in (rows, seed, dirty): same arguments, same bytes.
    """
    rng = np.random.default_rng(seed)
    dirt = np.random.default_rng([seed, 1])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    written = bad = 0
    game_no = 0
    with open(tmp, "wb", buffering=1 << 20) as out:
        while written < rows:
            records = generate_game(rng, game_no)[: rows - written]
            game_no += 1
            lines = []
            for record in records:
                if dirty and dirt.random() < dirty:
                    lines.append(_corrupt(record, int(dirt.integers(0, 8))))
                    bad += 1
                else:
                    lines.append(orjson.dumps(record))
            out.write(b"\n".join(lines) + b"\n")
            written += len(records)
    tmp.replace(path)
    meta = {
        "rows": rows,
        "seed": seed,
        "dirty": dirty,
        "corrupted": bad,
        "games": game_no,
        "bytes": path.stat().st_size,
    }
    path.with_suffix(".meta.json").write_text(json.dumps(meta))
    return meta


def data_file(rows: int, dirty: float = 0.0) -> tuple[Path, dict[str, Any]]:
    """The cached data file for these parameters, generated if missing."""
    path = OUT / "data" / f"records-{rows}-s{SEED}-d{dirty:g}.jsonl"
    meta_path = path.with_suffix(".meta.json")
    if path.exists() and meta_path.exists():
        return path, json.loads(meta_path.read_text())
    return path, generate_file(path, rows, dirty=dirty)


def sim_file(games: int) -> tuple[Path, dict[str, Any]]:
    """The simulator's own log of ``games`` heuristic games (one file, as ``distill simulate`` writes
    it), simulated once and cached under ``bench/out/data``."""
    from toolkit.game.config import SimulateConfig
    from toolkit.game.simulate import simulate
    from toolkit.jobs.config import BackendConfig

    path, folder, cached = _cache_slot(f"sim-{games}-s{SEED}", ".jsonl")
    if cached is not None:
        return path, cached
    # One shard: one file, as a single `distill simulate` run of this many games writes it.
    result = simulate(SimulateConfig(games=games, seed=SEED, out=folder), backend=BackendConfig(shard_games=games))
    return _joined(result.files, path, folder, {"games": games, "seed": SEED, "rows": result.decisions})


def export_file(games: int) -> tuple[Path, dict[str, Any]]:
    """A PPO-export log of ``games`` games, written once and cached under ``bench/out/data``: the loop's self-play
    export (``export_league_games``: the teacher's seats of games against a league that seats the teacher too,
    source ``ppo``, zstd JSONL as the loop writes it), its shards' files joined into one multi-frame file. The
    teacher is the tuned heuristic (no trained model to load: the rows, their dialect and compression are the
    export's)."""
    from toolkit.jobs.config import BackendConfig
    from toolkit.train.config import SELF, ExportConfig
    from toolkit.train.export import export_league_games

    path, folder, cached = _cache_slot(f"export-{games}-s{SEED}", ".jsonl.zst")
    if cached is not None:
        return path, cached
    counts = export_league_games(
        "tuned",
        [SELF, "heuristic", "tuned"],
        folder,
        games=games,
        seed=SEED,
        batch="bench",
        generation=1,
        config=ExportConfig(compression="zstd"),
        backend=BackendConfig(shard_games=max(1, games // 4)),
    )
    return _joined(counts.files, path, folder, {"games": games, "seed": SEED, "rows": counts.exported_decisions})


def _joined(parts: list[Path], path: Path, folder: Path, meta: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    """``parts`` joined in name order into ``path`` (written whole, then renamed), ``folder`` removed, and the
    ``meta`` of the cached file (its size added) written beside it."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as out:
        for part in sorted(parts):
            with open(part, "rb") as handle:
                shutil.copyfileobj(handle, out, 16 << 20)
    tmp.replace(path)
    shutil.rmtree(folder, ignore_errors=True)
    meta = {**meta, "bytes": path.stat().st_size}
    _meta_path(path).write_text(json.dumps(meta))
    return path, meta


def _cache_slot(name: str, suffix: str) -> tuple[Path, Path, dict[str, Any] | None]:
    """The cached file ``name + suffix`` under ``bench/out/data``, the empty folder its parts are written to, and
    its meta when the file is already there (None: make it)."""
    path, folder = OUT / "data" / f"{name}{suffix}", OUT / "data" / f"{name}.parts"
    if path.exists() and _meta_path(path).exists():
        return path, folder, json.loads(_meta_path(path).read_text())
    shutil.rmtree(folder, ignore_errors=True)
    return path, folder, None


def _meta_path(path: Path) -> Path:
    return path.parent / (path.name.split(".")[0] + ".meta.json")


def check_sample(path: Path, every: int = 997, first: int = 2000) -> int:
    """Validate the first ``first`` lines and every ``every``-th after with Pydantic.

    Raises:
        pydantic.ValidationError: a sampled clean record is not accepted.
    """
    from toolkit.schema.models import DecisionSnapshot

    checked = 0
    with open(path, "rb") as handle:
        for i, line in enumerate(handle):
            if i < first or i % every == 0:
                DecisionSnapshot.model_validate_json(line)
                checked += 1
    return checked


# -- the measured paths (each runs in a child process) ---------------------------------


def _child_ingest(path: Path, home: Path) -> None:
    from toolkit.ingest.ingest import ingest_paths
    from toolkit.layout import Layout

    shutil.rmtree(home, ignore_errors=True)
    with timed() as t:
        result = ingest_paths([path], Layout.at(home))
    report_child(result.rows_valid + result.rows_rejected, t, valid=result.rows_valid, rejected=result.rows_rejected)
    shutil.rmtree(home, ignore_errors=True)


def _child_naive(path: Path, home: Path, batch_rows: int = 16_384) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pydantic import ValidationError

    from toolkit.catalog.parquet import PARQUET_OPTIONS
    from toolkit.schema.arrow import snapshot_schema
    from toolkit.schema.models import DecisionSnapshot

    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    schema = snapshot_schema()
    valid = rejected = 0
    with timed() as t:
        writer = pq.ParquetWriter(home / "naive.parquet", schema, **PARQUET_OPTIONS)
        rows: list[dict[str, Any]] = []
        with open(path, "rb") as handle:
            for line in handle:
                try:
                    rows.append(DecisionSnapshot.model_validate_json(line).model_dump())
                except ValidationError:
                    rejected += 1
                    continue
                if len(rows) == batch_rows:
                    writer.write_table(pa.Table.from_pylist(rows, schema=schema))
                    valid += len(rows)
                    rows = []
        if rows:
            writer.write_table(pa.Table.from_pylist(rows, schema=schema))
            valid += len(rows)
        writer.close()
    report_child(valid + rejected, t, valid=valid, rejected=rejected)
    shutil.rmtree(home, ignore_errors=True)


def _child_raw(path: Path) -> None:
    """orjson line by line; a ``.zst`` file decompressed as a stream first (zstandard, across its frames)."""
    import io

    import zstandard

    loads = orjson.loads
    n = 0
    with timed() as t:
        with open(path, "rb") as handle:
            lines: Any = handle
            if path.name.endswith(".zst"):
                stream = zstandard.ZstdDecompressor().stream_reader(handle, read_across_frames=True)
                lines = io.BufferedReader(stream, 1 << 20)
            for line in lines:
                loads(line)
                n += 1
    report_child(n, t)


def _line_chunks(path: Path, size: int = 16 << 20) -> Any:
    """The file's bytes in blocks of about ``size`` that end at a newline (as ingest's chunks do)."""
    tail = b""
    with open(path, "rb") as handle:
        while block := handle.read(size):
            data = tail + block
            cut = data.rfind(b"\n") + 1
            if cut:
                yield data[:cut]
                tail = data[cut:]
            else:
                tail = data
    if tail:
        yield tail


def _parsed_chunks(path: Path, workers: int) -> Any:
    """Each chunk parsed as ingest's fast path parses a clean one (pyarrow.json, its explicit schema, one
    thread per chunk, ``workers`` chunks at a time, the UTF-8 check), in order."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    from toolkit.ingest.fastpath import _parse_block

    with ThreadPoolExecutor(max_workers=workers) as pool:
        in_flight: deque[Any] = deque()
        for data in _line_chunks(path):
            in_flight.append(pool.submit(_parse_block, data, data.count(b"\n") + (not data.endswith(b"\n"))))
            if len(in_flight) > workers:
                yield in_flight.popleft().result()
        while in_flight:
            yield in_flight.popleft().result()


def _child_parse(path: Path) -> None:
    """The floor of parsing: reading the file and pyarrow.json on two threads, nothing else."""
    from toolkit.ingest.config import ReadOptions

    n = 0
    with timed() as t:
        for table in _parsed_chunks(path, ReadOptions().workers):
            n += table.num_rows
    report_child(n, t)


def _child_encode(path: Path, home: Path) -> None:
    """The floor of writing: the parsed rows (parsed first, untimed), with their lineage columns, to one
    lake Parquet file as ingest encodes it, in row groups of ``ROW_GROUP_ROWS``; only the writing is timed."""
    import time

    import pyarrow as pa
    import pyarrow.parquet as pq

    from toolkit.catalog.parquet import lake_parquet_options
    from toolkit.ingest.staging import ROW_GROUP_ROWS
    from toolkit.schema import columns as col
    from toolkit.schema.arrow import lake_schema

    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    schema = lake_schema()
    writer = pq.ParquetWriter(home / "encode.parquet", schema, **lake_parquet_options())
    wall = cpu = 0.0
    n = 0
    held: list[pa.Table] = []

    def write(tables: list[pa.Table]) -> tuple[float, float]:
        table = pa.concat_tables(tables)
        rows = table.num_rows
        lineage = {
            col.BATCH_ID: pa.repeat(pa.scalar("b0123456789abcdef", pa.string()), rows),
            col.SOURCE_FILE: pa.repeat(pa.scalar(path.name, pa.string()), rows),
            col.SOURCE_LINE: pa.array(np.arange(n + 1, n + 1 + rows), pa.int64()),
            col.FILE_SHA256: pa.repeat(pa.scalar("0" * 64, pa.string()), rows),
        }
        w, c = time.perf_counter(), time.process_time()
        for name, values in lineage.items():
            table = table.append_column(name, values)
        writer.write_table(table.cast(schema), row_group_size=rows)
        return time.perf_counter() - w, time.process_time() - c

    for table in _parsed_chunks(path, 1):
        held.append(table)
        if sum(t.num_rows for t in held) >= ROW_GROUP_ROWS:
            dw, dc = write(held)
            wall, cpu, n = wall + dw, cpu + dc, n + sum(t.num_rows for t in held)
            held = []
    if held:
        dw, dc = write(held)
        wall, cpu, n = wall + dw, cpu + dc, n + sum(t.num_rows for t in held)
    writer.close()
    timer = Timer()
    timer.wall, timer.cpu = wall, cpu
    report_child(n, timer)
    shutil.rmtree(home, ignore_errors=True)


def _read_through(path: Path) -> None:
    """Read ``path`` once, unmeasured, so that the run timed next finds it in the page cache.

    Every measurement starts from the same state: the clean file used to be warm only because
    the raw pass had just read it, while a dirty file, last read minutes before, had been
    partly evicted on a small machine (reading 2 GB from disk cost its ingest 1.5-2 s more).
    """
    with open(path, "rb", buffering=0) as handle:
        block = bytearray(16 << 20)
        while handle.readinto(block):
            pass


def _measure(kind: str, path: Path, repeat: int) -> Measurement:
    home = OUT / "homes" / f"{kind}-{os.getpid()}"
    argv = [str(Path(__file__).resolve()), "--child", kind, "--input", str(path), "--home", str(home)]
    runs = []
    for _ in range(repeat):
        _read_through(path)
        runs.append(run_child(kind, argv))
    return best_of(runs)


# -- report ---------------------------------------------------------------------------------


def _cpu_bound(ingest: Measurement, raw: Measurement) -> str:
    """The ratio ingest could reach with every core of this machine to itself, from the CPU time of each
    (the ratio of walls falls with the machine's load: raw runs on one thread, ingest needs them all)."""
    ingest_us, raw_us = ingest.cpu_s / ingest.rows * 1e6, raw.cpu_s / raw.rows * 1e6
    cores = os.cpu_count() or 1
    return (
        f"CPU: ingest {ingest_us:.1f} us/row, raw {raw_us:.1f} us/row: at most {cores * raw_us / ingest_us:.2f}x "
        f"raw on {cores} free cores (ingest used {ingest.cpu_s / ingest.wall_s:.2f} cores of them here)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the main data file")
    parser.add_argument("--small-rows", type=int, default=100_000, help="rows of the small file (memory check)")
    parser.add_argument(
        "--mid-rows",
        type=int,
        default=300_000,
        help="rows of a middle file (memory curve: ingest and raw only; 0 to skip)",
    )
    parser.add_argument(
        "--dirty",
        type=float,
        nargs="*",
        default=sorted(DIRTY_TIME_TARGETS),
        metavar="FRACTION",
        help="also ingest files with this fraction of corrupted lines (e.g. 0.001 0.01)",
    )
    parser.add_argument(
        "--sim-games",
        type=int,
        default=SIM_GAMES,
        help="also ingest the simulator's own log of this many games (0 to skip)",
    )
    parser.add_argument(
        "--export-games",
        type=int,
        default=EXPORT_GAMES,
        help="also ingest a PPO-export log (zstd, as the loop writes it) of this many games (0 to skip)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement; the fastest counts")
    parser.add_argument("--skip-naive-small", action="store_true", help="do not run the naive path at small size")
    parser.add_argument("--child", choices=("ingest", "naive", "raw", "parse", "encode"), help=argparse.SUPPRESS)
    parser.add_argument("--input", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        {
            "ingest": lambda: _child_ingest(args.input, args.home),
            "naive": lambda: _child_naive(args.input, args.home),
            "raw": lambda: _child_raw(args.input),
            "parse": lambda: _child_parse(args.input),
            "encode": lambda: _child_encode(args.input, args.home),
        }[args.child]()
        return 0

    out = Tee()
    out(
        f"# ingest benchmark  {dt.datetime.now().isoformat(timespec='seconds')}  "
        f"python {platform.python_version()}  cpus {os.cpu_count()}  load {os.getloadavg()[0]:.2f}"
    )
    sizes = sorted({args.small_rows, args.rows} | ({args.mid_rows} if args.mid_rows else set()))
    files: dict[int, Path] = {}
    for rows in sizes:
        with timed() as t:
            path, meta = data_file(rows)
        files[rows] = path
        checked = check_sample(path)
        out(
            f"data {path.name}: {rows:,} rows, {meta['games']:,} games, {meta['bytes'] / rows:,.0f} B/row "
            f"({t.wall:.0f}s to prepare); {checked:,} sampled lines accepted by DecisionSnapshot"
        )

    results: dict[tuple[str, int], Measurement] = {}
    for rows in sizes:
        for kind in ("raw", "ingest", "naive", "parse", "encode"):
            if kind == "naive" and rows != args.rows and (args.skip_naive_small or rows == args.mid_rows):
                continue
            if kind in ("parse", "encode") and rows != args.rows:  # the floor: at full size only
                continue
            m = _measure(kind, files[rows], args.repeat)
            results[(kind, rows)] = m
            out(
                f"  measured {kind:6s} {rows:>9,} rows: {m.rate:>9,.0f} rec/s  wall {m.wall_s:6.1f}s  "
                f"cpu {m.cpu_s:6.1f}s  peak RSS {m.peak_rss_mb:7.0f} MiB  {m.extra or ''}"
            )
            if kind == "ingest" and m.extra.get("valid") != rows:
                out(f"  !! ingest accepted {m.extra.get('valid')} of {rows} clean rows")

    dirty_results = []
    for fraction in args.dirty:
        path, meta = data_file(args.rows, fraction)
        m = _measure("ingest", path, args.repeat)
        dirty_results.append((fraction, meta, m))
        out(
            f"  measured ingest {args.rows:,} rows dirty {fraction:g} ({meta['corrupted']:,} corrupted): "
            f"{m.rate:,.0f} rec/s  peak RSS {m.peak_rss_mb:.0f} MiB  {m.extra}"
        )

    # Distill's own logs, end to end as the CLI ingests them: the simulator's and a PPO export's.
    own: dict[str, tuple[dict[str, Any], Measurement, Measurement]] = {}
    for label, games, make in (
        ("simulator log", args.sim_games, sim_file),
        ("PPO-export log", args.export_games, export_file),
    ):
        if not games:
            continue
        with timed() as t:
            path, meta = make(games)
        out(
            f"data {path.name}: {meta['rows']:,} decisions of {meta['games']:,} games, {meta['bytes']:,} bytes "
            f"({t.wall:.0f}s to prepare)"
        )
        log_raw, log_ingest = _measure("raw", path, args.repeat), _measure("ingest", path, args.repeat)
        for kind, m in (("raw", log_raw), ("ingest", log_ingest)):
            out(
                f"  measured {kind:6s} {label} {m.rows:>9,} rows: {m.rate:>9,.0f} rec/s  wall {m.wall_s:6.1f}s  "
                f"cpu {m.cpu_s:6.1f}s  peak RSS {m.peak_rss_mb:7.0f} MiB  {m.extra or ''}"
            )
        if log_ingest.extra.get("valid") != meta["rows"]:
            out(f"  !! ingest accepted {log_ingest.extra.get('valid')} of {meta['rows']} rows of the {label}")
        own[label] = (meta, log_raw, log_ingest)

    big, small = args.rows, args.small_rows
    ingest, naive, raw = results[("ingest", big)], results[("naive", big)], results[("raw", big)]
    vs_naive, vs_raw = ingest.rate / naive.rate, ingest.rate / raw.rate
    rss_small, rss_big = results[("ingest", small)].peak_rss_mb, ingest.peak_rss_mb
    out()
    out(f"{'path':<34}{'rec/s':>10}{'peak RSS ' + format(small, ','):>18}{'peak RSS ' + format(big, ','):>18}")
    labels = {"ingest": "(a) distill ingest", "naive": "(b) naive Pydantic -> Parquet", "raw": "(c) raw orjson parse"}
    labels |= {"parse": "(d) parse alone (floor)", "encode": "(e) Parquet encode alone"}
    for kind, label in labels.items():
        s = results.get((kind, small))
        small_rss = f"{s.peak_rss_mb:,.0f} MiB" if s else "-"
        out(
            f"{label:<34}{results[(kind, big)].rate:>10,.0f}{small_rss:>18}"
            f"{results[(kind, big)].peak_rss_mb:>14,.0f} MiB"
        )
    for fraction, meta, m in dirty_results:
        out(
            f"{'(a) ingest, ' + format(fraction, 'g') + ' dirty':<34}{m.rate:>10,.0f}{'-':>18}"
            f"{m.peak_rss_mb:>14,.0f} MiB"
            f"   ({m.rate / ingest.rate:.2f}x clean, {m.extra.get('rejected'):,} rejected)"
        )
    out()
    judged = verdict("ingest / naive Pydantic", vs_naive, TARGET_VS_NAIVE, unit="x", against="naive Pydantic")
    out(f"ingest / naive = {vs_naive:5.2f}x   target >= {TARGET_VS_NAIVE}x      {judged}")
    judged = verdict("ingest / raw orjson", vs_raw, TARGET_VS_RAW, unit="x", against="orjson line by line")
    out(f"ingest / raw   = {vs_raw:5.2f}x   target >= {TARGET_VS_RAW}x      {judged}")
    out(f"  {_cpu_bound(ingest, raw)}")
    own_vs_raw: dict[str, float] = {}
    for label, (_, log_raw, log_ingest) in own.items():
        own_vs_raw[label] = log_ingest.rate / log_raw.rate
        out(
            f"ingest / raw, {label} = {own_vs_raw[label]:5.2f}x   target >= {TARGET_VS_RAW}x      "
            f"{verdict(f'ingest / raw, {label}', own_vs_raw[label], TARGET_VS_RAW, unit='x', against='orjson')}"
        )
        out(f"  {_cpu_bound(log_ingest, log_raw)}")
    parse, encode = results[("parse", big)], results[("encode", big)]
    # The floor on this machine, from CPU time (load-independent): the parse alone (reading included) and the
    # Parquet encoding alone, shared evenly over every core, with no other work and no wait.
    cores = os.cpu_count() or 1
    floor_vs_raw = cores * raw.cpu_s / (parse.cpu_s + encode.cpu_s)
    ratio("floor: parse + encode over 2 cores / raw", floor_vs_raw, "orjson line by line (CPU)")
    out(
        f"floor: parse alone (read + pyarrow.json, 2 threads) {parse.cpu_s:.1f} CPU-s "
        f"({parse.rate / raw.rate:.2f}x raw by wall here); Parquet encoding alone {encode.cpu_s:.1f} CPU-s; "
        f"both over {cores} free cores at most {floor_vs_raw:.2f}x raw ({raw.cpu_s:.1f} CPU-s); "
        f"ingest {ingest.cpu_s:.1f} CPU-s, the floor's work {(parse.cpu_s + encode.cpu_s) / ingest.cpu_s:.0%} of it"
    )
    for fraction, _, m in dirty_results:
        slower = m.wall_s / ingest.wall_s
        limit = DIRTY_TIME_TARGETS.get(fraction)
        judged = (
            verdict(f"ingest, {fraction:g} bad lines / clean", slower, limit, at_most=True, unit="x", against="clean")
            if limit
            else "(no target)"
        )
        out(f"ingest time, {fraction:g} bad lines / clean = {slower:4.2f}x   target <= {limit or '-'}x   {judged}")
    out(
        f"peak RSS {big:,} = {rss_big:,.0f} MiB   target < {TARGET_RSS_MB:,.0f} MiB   "
        f"{verdict(f'ingest peak RSS, {big:,} rows', rss_big, TARGET_RSS_MB, at_most=True, unit='MiB')}"
    )
    growth = rss_big / rss_small
    out(
        f"peak RSS growth {small:,} -> {big:,} rows = {growth:.2f}x   target <= {FLAT_RSS_GROWTH}x (flat)   "
        f"{verdict('ingest peak RSS growth', growth, FLAT_RSS_GROWTH, at_most=True, unit='x', against=f'{small} rows')}"
    )
    curve = [(rows, results[("ingest", rows)].peak_rss_mb) for rows in sizes]
    out("peak RSS curve (ingest): " + "  ".join(f"{rows:,} rows {mb:,.0f} MiB" for rows, mb in curve))
    plateau = None
    if len(curve) > 2:
        plateau = curve[-1][1] / curve[-2][1]
        out(
            f"peak RSS growth {curve[-2][0]:,} -> {big:,} rows = {plateau:.2f}x (the buffers are full by then: "
            f"what is left is growth with input)"
        )
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out.write(OUT / f"bench_ingest-{stamp}.txt")
    (OUT / f"bench_ingest-{stamp}.json").write_text(
        json.dumps(
            {
                "rows": big,
                "small_rows": small,
                "mid_rows": args.mid_rows,
                "results": {
                    f"{k}@{n}": {
                        "rate": m.rate,
                        "wall_s": m.wall_s,
                        "cpu_s": m.cpu_s,
                        "peak_rss_mb": m.peak_rss_mb,
                        **m.extra,
                    }
                    for (k, n), m in results.items()
                },
                "own_logs": {
                    label: {
                        "games": meta["games"],
                        "rows": meta["rows"],
                        "raw": {"rate": r.rate, "wall_s": r.wall_s, "cpu_s": r.cpu_s},
                        "ingest": {"rate": i.rate, "wall_s": i.wall_s, "cpu_s": i.cpu_s, **i.extra},
                    }
                    for label, (meta, r, i) in own.items()
                },
                "dirty": [
                    {"fraction": f, "rate": m.rate, "peak_rss_mb": m.peak_rss_mb, **m.extra}
                    for f, _, m in dirty_results
                ],
                "ratios": {
                    "ingest_vs_naive": vs_naive,
                    "ingest_vs_raw": vs_raw,
                    "parse_vs_raw": parse.rate / raw.rate,
                    "floor_vs_raw": floor_vs_raw,
                    **{f"ingest_vs_raw, {label}": v for label, v in own_vs_raw.items()},
                    "rss_growth": growth,
                    "rss_growth_from_mid": plateau,
                },
            },
            indent=2,
        )
    )
    gc.collect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
