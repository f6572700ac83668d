"""The leakage check every build runs before it publishes (and anyone can run on a published one).

It reads what is on disk, not what the build meant to write: every Parquet
file under ``train/`` and ``holdout/``. A dataset leaks when a game sits in
both splits, when a holdout row's game is not one the rule holds out or is
not of a reference source, or when the files disagree with the manifest.
"""

from __future__ import annotations

import duckdb

from toolkit.datasets.dataset import HOLDOUT, SPLITS, TRAIN, Dataset
from toolkit.errors import LeakageError
from toolkit.holdout import HoldoutRule, holdout_sql
from toolkit.layout import sql_literal
from toolkit.schema import columns as col

_SAMPLE = 5


def check_leakage(dataset: Dataset) -> None:
    """Raise :class:`LeakageError` naming the games at fault if ``dataset`` leaks; return otherwise."""
    holdout = dataset.manifest.holdout
    rule = HoldoutRule(salt=holdout.salt, fraction=holdout.fraction)
    splits = {split: sorted((dataset.root / split).glob("*.parquet")) for split in SPLITS}
    with duckdb.connect() as con:
        for split, files in splits.items():
            quoted = ", ".join(f"'{sql_literal(str(dataset.inside(f)))}'" for f in files)
            relation = f"read_parquet([{quoted}])" if files else _EMPTY
            con.execute(f"CREATE TEMP VIEW {split} AS SELECT {col.GAME_ID}, {col.SOURCE} FROM {relation}")
        problems = _problems(con, rule, holdout.sources)
        for split in SPLITS:
            (rows,) = con.execute(f"SELECT count(*) FROM {split}").fetchall()[0]
            expected = dataset.manifest.splits[split].rows
            if rows != expected:
                problems.append(f"{split} holds {rows} rows on disk, the manifest says {expected}")
    if problems:
        raise LeakageError(
            f"dataset {dataset.name} ({dataset.fingerprint}) leaks: " + "; ".join(problems),
            hint="do not train on it; rebuild it with `distill build` (a build that leaks is a bug: report it)",
        )


_EMPTY = f"(SELECT NULL::VARCHAR AS {col.GAME_ID}, NULL::VARCHAR AS {col.SOURCE} WHERE false)"


def _problems(con: duckdb.DuckDBPyConnection, rule: HoldoutRule, sources: list[str]) -> list[str]:
    references = ", ".join("'" + s.replace("'", "''") + "'" for s in sources)
    checks = {
        "games in both train and holdout": f"SELECT DISTINCT {col.GAME_ID} FROM {TRAIN} "
        f"INTERSECT SELECT DISTINCT {col.GAME_ID} FROM {HOLDOUT}",
        "holdout games the rule does not hold out": f"SELECT DISTINCT {col.GAME_ID} FROM {HOLDOUT} "
        f"WHERE NOT {holdout_sql(col.GAME_ID, rule)}",
        "holdout rows of a source that is not a reference": f"SELECT DISTINCT {col.GAME_ID} FROM {HOLDOUT} "
        f"WHERE {col.SOURCE} NOT IN ({references})",
        "reference-source train games the rule holds out": f"SELECT DISTINCT {col.GAME_ID} FROM {TRAIN} "
        f"WHERE {col.SOURCE} IN ({references}) AND {holdout_sql(col.GAME_ID, rule)}",
    }
    problems = []
    for what, query in checks.items():
        games = [row[0] for row in con.execute(f"SELECT * FROM ({query}) ORDER BY 1").fetchall()]
        if games:
            problems.append(f"{len(games)} {what} (e.g. {', '.join(games[:_SAMPLE])})")
    return problems
