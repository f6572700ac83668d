"""Altair charts of the analysis frames (imported only where charts are drawn: notebooks and reports)."""

from __future__ import annotations

import altair as alt
import polars as pl

WIDTH, HEIGHT = 460, 240


def _base(frame: pl.DataFrame) -> alt.Chart:
    return alt.Chart(frame.to_pandas()).properties(width=WIDTH, height=HEIGHT)


def win_rate_trend_plot(strength: pl.DataFrame, table: str) -> alt.LayerChart:
    """Each promoted model's win rate against ``table`` per generation, with its 95% band."""
    frame = strength.filter(pl.col("table") == table)
    base = _base(frame).encode(x=alt.X("generation:O", title="generation"), color=alt.Color("model:N", title="model"))
    band = base.mark_area(opacity=0.2).encode(
        y=alt.Y("low:Q", title=f"win rate vs {table} table", axis=alt.Axis(format="%")), y2="high:Q"
    )
    line = base.mark_line(point=True).encode(y="win_rate:Q", tooltip=["generation", "model", "win_rate", "low", "high"])
    return (band + line).properties(title=f"win rate against three {table} players (95% interval)")


def student_gain_plot(gain: pl.DataFrame) -> alt.LayerChart:
    """The promoted student's paired gain over generation 0, per table, with its 95% interval."""
    base = _base(gain).encode(x=alt.X("generation:O"), color=alt.Color("table:N"))
    rule = base.mark_errorbar().encode(
        y=alt.Y("low:Q", title="gain over gen 0", axis=alt.Axis(format="+%")), y2="high:Q"
    )
    return (rule + base.mark_point(filled=True).encode(y="gain:Q")).properties(
        title="student's paired gain over the generation-0 student"
    )


def composition_plot(frame: pl.DataFrame, x: str = "generation") -> alt.Chart:
    """Shares of the training rows by source, stacked, per ``x``."""
    return (
        _base(frame)
        .mark_bar()
        .encode(
            x=alt.X(f"{x}:O"),
            y=alt.Y("share:Q", stack="normalize", axis=alt.Axis(format="%"), title="share of rows"),
            color=alt.Color("source:N"),
            tooltip=[x, "source", "rows", "share"],
        )
        .properties(title="data composition")
    )


def ratings_plot(frame: pl.DataFrame) -> alt.LayerChart:
    """Every player's Elo after each generation, with a band of two standard errors."""
    frame = frame.with_columns(
        (pl.col("elo") - 2 * pl.col("elo_se")).alias("lo"), (pl.col("elo") + 2 * pl.col("elo_se")).alias("hi")
    )
    base = _base(frame).encode(x=alt.X("generation:O"), color=alt.Color("name:N", title="player"))
    band = base.mark_area(opacity=0.12).encode(
        y=alt.Y("lo:Q", title="Elo (heuristic = 1500)", scale=alt.Scale(zero=False)), y2="hi:Q"
    )
    return (
        band + base.mark_line(point=True).encode(y="elo:Q", tooltip=["generation", "name", "elo", "elo_se"])
    ).properties(title="ratings over generations (winner vs rest)")


def accuracy_vs_strength_plot(frame: pl.DataFrame) -> alt.LayerChart:
    """Each promoted student: imitation accuracy on the Forge holdout against its win rate."""
    base = _base(frame).encode(
        x=alt.X("holdout_accuracy:Q", title="accuracy on the FIXED Forge holdout", scale=alt.Scale(zero=False))
    )
    bars = base.mark_errorbar().encode(
        y=alt.Y("low:Q", title="win rate vs three heuristics", axis=alt.Axis(format="%")), y2="high:Q"
    )
    points = base.mark_point(filled=True, size=60).encode(
        y="win_rate:Q", tooltip=["generation", "holdout_accuracy", "win_rate"]
    )
    labels = base.mark_text(dx=12, align="left").encode(y="win_rate:Q", text=alt.Text("generation:O"))
    return (bars + points + labels).properties(
        title="imitation is not strength: accuracy against win rate, per generation"
    )


def bars(frame: pl.DataFrame, x: str, y: str, color: str | None = None, title: str = "") -> alt.Chart:
    """A plain bar chart of ``y`` by ``x`` (optionally coloured)."""
    encoding = {"x": alt.X(f"{x}:N", sort="-y"), "y": alt.Y(f"{y}:Q"), "tooltip": list(frame.columns)}
    if color:
        encoding["color"] = alt.Color(f"{color}:N")
    return _base(frame).mark_bar().encode(**encoding).properties(title=title)


def actions_plot(frame: pl.DataFrame) -> alt.Chart:
    """Share of each macro action per source, one panel per split."""
    return (
        alt.Chart(frame.to_pandas())
        .mark_bar()
        .encode(
            x=alt.X("action:N"),
            y=alt.Y("share:Q", axis=alt.Axis(format="%")),
            color="source:N",
            xOffset="source:N",
            column=alt.Column("split:N"),
            tooltip=["split", "source", "action", "rows", "share"],
        )
        .properties(width=WIDTH // 2, height=HEIGHT, title="labels by action")
    )
