"""The sections each notebook (and its static report) shows, assembled from the analysis frames."""

from __future__ import annotations

import polars as pl

from toolkit.analysis import dataset as ds_analysis
from toolkit.analysis import lake as lake_analysis
from toolkit.analysis import loop as loop_analysis
from toolkit.analysis.report import Section
from toolkit.layout import Layout


def lake_sections(layout: Layout) -> list[Section]:
    """What the lake holds (see :mod:`toolkit.analysis.lake`)."""
    from toolkit.analysis import charts

    rows = lake_analysis.rows_by_source(layout)
    rejects = lake_analysis.rejects_by_reason(layout)
    by_source = rows.group_by("source").agg(pl.col("rows").sum()).sort("rows", descending=True)
    return [
        Section(
            "Rows and games by source and generation",
            rows,
            charts.bars(by_source, "source", "rows", title="rows by source"),
        ),
        Section("Dialects read", lake_analysis.dialects(layout)),
        Section(
            "Label sources",
            lake_analysis.label_sources(layout),
            note="How each label was obtained: logged by the engine, mapped from its raw action, or inferred "
            "(by the card-role table, a default or the mana rule) where the log did not say.",
        ),
        Section(
            "Quarantined lines by reason",
            rejects,
            charts.bars(rejects, "reason", "lines", title="quarantined lines") if rejects.height else None,
            note='Every rejected line is kept byte for byte: distill sql "FROM reject_reasons" counts them by reason '
            "code, and the rejects view has each line (its text, and its exact bytes in raw).",
        ),
        Section("Files and batches (lineage)", lake_analysis.lineage(layout)),
    ]


def dataset_sections(layout: Layout, name: str) -> list[Section]:
    """One build (see :mod:`toolkit.analysis.dataset`)."""
    from toolkit.analysis import charts

    dataset = ds_analysis.load(layout, name)
    composition = ds_analysis.build_composition(dataset)
    features = ds_analysis.feature_stats(dataset).sort("mean_gap", descending=True)
    holdout = dataset.manifest.holdout
    return [
        Section(
            f"Build {dataset.fingerprint[:12]} of {name}: composition",
            composition,
            charts.composition_plot(
                composition.with_columns(pl.col("achieved_share").alias("share"), pl.lit("train").alias("split")),
                x="split",
            ),
            note="Target share per source (the build config) against the share achieved in train.",
        ),
        Section("Filters: rows and games left after each step", ds_analysis.filters(dataset)),
        Section("Sample weights", ds_analysis.sample_weights(dataset)),
        Section(
            "The fixed holdout, build after build",
            ds_analysis.holdout_history(layout, name),
            note=f"{holdout.games} games of {', '.join(holdout.sources)}, chosen by "
            f"{holdout.rule} (salt {holdout.salt}, fraction {holdout.fraction}); "
            "kept_earlier: every game held out before is still held out.",
        ),
        Section(
            "Actions per source and split",
            ds_analysis.actions(dataset),
            charts.actions_plot(ds_analysis.actions(dataset)),
        ),
        Section(
            "Features: train against holdout (largest gaps first)",
            features.head(25),
            charts.bars(features.head(15), "feature", "mean_gap", title="mean gap, train vs holdout"),
        ),
        Section(
            "Drift against the previous build",
            ds_analysis.drift(layout, name),
            note="Jensen-Shannon divergence of the train labels per source, in bits (0 = same).",
        ),
        *_label_sections(layout, dataset),
    ]


def _label_sections(layout: Layout, dataset: ds_analysis.Dataset) -> list[Section]:
    """The label issues of a scored build (``distill check labels``), or how to score it."""
    from toolkit.analysis import charts

    rates = ds_analysis.label_issues(layout, dataset)
    if rates is None:
        return [
            Section(
                "Label issues",
                pl.DataFrame(),
                note=f"Not scored yet: distill check labels {dataset.name} --fingerprint {dataset.fingerprint}",
            )
        ]
    keyed = rates.with_columns(
        pl.format("{} / gen {}", "source", pl.col("generation").cast(pl.String).fill_null("-")).alias("group")
    )
    return [
        Section(
            "Label issues per source and generation",
            rates,
            charts.bars(keyed, "group", "rate", title="label-issue rate"),
            note="Decisions with a choice flagged by confident learning (cleanlab) on out-of-sample k-fold "
            "probabilities of the student's network; low-high: the 95% Wilson interval; conflicts: decisions in "
            "conflicting duplicates.",
        ),
        Section("The worst labels", ds_analysis.worst_labels(layout, dataset)),
    ]


def loop_sections(layout: Layout, name: str) -> list[Section]:
    """One loop run (see :mod:`toolkit.analysis.loop`)."""
    from toolkit.analysis import charts

    records = loop_analysis.load_records(layout, name)
    strength = loop_analysis.strength(records)
    gain = loop_analysis.student_gain(records)
    accuracy = loop_analysis.accuracy_vs_strength(records)
    ratings = loop_analysis.rating_table(records)
    composition = loop_analysis.generation_composition(records)
    tables = strength.get_column("table").unique(maintain_order=True).to_list()
    sections = [
        Section(
            f"Win rate against three {table} players",
            strength.filter(pl.col("table") == table),
            charts.win_rate_trend_plot(strength, table),
            note="Fixed-size evaluations of the promoted models, on the same deals every generation.",
        )
        for table in tables
    ]
    return sections + [
        Section(
            "The student's paired gain over generation 0",
            gain,
            charts.student_gain_plot(gain) if gain.height else None,
        ),
        Section(
            "Imitation accuracy against playing strength",
            accuracy,
            charts.accuracy_vs_strength_plot(accuracy),
            note="The question this product poses: does the student get stronger while it imitates the "
            "Forge-role holdout less? Each point is a promoted student.",
        ),
        Section("Gates per generation", loop_analysis.gates(records)),
        Section(
            "Rejected batches",
            loop_analysis.rejected_batches(layout, name),
            note="Kept in the lake with the reason, left out of every build.",
        ),
        Section("Data composition per generation", composition, charts.composition_plot(composition)),
        Section(
            "Ratings over generations",
            ratings.filter(pl.col("generation") == ratings["generation"].max()),
            charts.ratings_plot(ratings) if ratings.height else None,
            note="Table: the ratings after the last generation; chart: every generation's.",
        ),
    ]
