"""The SVG chart functions: marks proportional to values, escaped text, same input same bytes, "no data" when empty."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from toolkit.charts_svg import (
    Bar,
    Quantiles,
    Series,
    bar_chart,
    grouped_bar_chart,
    line_chart,
    nice_ticks,
    quantile_chart,
    standalone,
)

NS = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    """The chart as XML (fails on anything unescaped)."""
    return ET.fromstring(standalone(svg))


def marks(svg: str, css: str) -> list[ET.Element]:
    return [e for e in parse(svg).iter() if e.get("class") == css]


def widths(svg: str) -> list[float]:
    return [float(e.get("width", "nan")) for e in marks(svg, "bar")]


def test_bar_lengths_are_proportional_to_values() -> None:
    svg = bar_chart([Bar("a", 1), Bar("b", 2), Bar("c", 4), Bar("zero", 0)], title="t", x_label="x")
    a, b, c, zero = widths(svg)
    assert b == pytest.approx(2 * a, abs=0.2) and c == pytest.approx(4 * a, abs=0.2) and zero == 0


def test_every_bar_has_a_tooltip_and_the_chart_a_title_and_axis_labels() -> None:
    svg = bar_chart([Bar("a", 1, note="a has one"), Bar("b", 3)], title="Counts", x_label="how many", y_label="letter")
    root = parse(svg)
    assert root.find(f"{NS}title").text == "Counts"  # type: ignore[union-attr]
    assert [m.find(f"{NS}title").text for m in marks(svg, "bar")] == ["a has one", "b: 3"]  # type: ignore[union-attr]
    assert [e.text for e in root.iter(f"{NS}text") if e.get("class") == "axis-label"] == ["how many", "letter"]


def test_a_threshold_is_a_line_inside_the_axis() -> None:
    svg = bar_chart([Bar("g", 0.05), Bar("h", 0.02)], title="drift", x_label="bits", threshold=0.1)
    (line,) = marks(svg, "threshold")
    bars = marks(svg, "bar")
    x_zero = float(bars[0].get("x"))  # type: ignore[arg-type]
    assert float(line.get("x1")) - x_zero == pytest.approx(2 * float(bars[0].get("width")), abs=0.2)  # type: ignore[arg-type]


def test_grouped_bars_have_one_bar_per_category_and_series_and_a_legend() -> None:
    series = [Series("forge", [1, 0, 3]), Series("ppo", [2, 2, 0])]
    svg = grouped_bar_chart(["x", "y", "z"], series, title="actions", x_label="share")
    assert len(marks(svg, "bar")) == 6 and len(marks(svg, "swatch")) == 2
    assert widths(svg)[0] * 3 == pytest.approx(widths(svg)[4], abs=0.2)  # forge z = 3 x forge x


def test_grouped_bars_refuse_a_series_of_the_wrong_length() -> None:
    with pytest.raises(ValueError, match="has 1 values for 2 categories"):
        grouped_bar_chart(["x", "y"], [Series("s", [1])], title="t", x_label="x")


def test_a_quantile_row_puts_its_box_from_p25_to_p75_and_the_median_inside() -> None:
    row = Quantiles("reward", low=-1, p05=-0.5, p25=0, p50=0.25, p75=0.5, p95=1, high=2, mean=0.3)
    svg = quantile_chart([row], title="reward", x_label="reward")
    (box,), (median,) = marks(svg, "box"), marks(svg, "median")
    left, width, mid = float(box.get("x")), float(box.get("width")), float(median.get("x1"))  # type: ignore[arg-type]
    assert mid == pytest.approx(left + width / 2, abs=0.2)
    assert len(marks(svg, "whisker")) == 3 and len(marks(svg, "mean")) == 1
    assert "median 0.25" in parse(svg).find(f"{NS}g/{NS}title").text  # type: ignore[union-attr,operator]


@pytest.mark.parametrize(
    "chart",
    [
        lambda: bar_chart([], title="Nothing", x_label="x"),
        lambda: grouped_bar_chart([], [], title="Nothing", x_label="x"),
        lambda: quantile_chart([], title="Nothing", x_label="x"),
    ],
)
def test_no_data_is_a_readable_svg_not_a_crash(chart) -> None:
    svg = chart()
    (empty,) = marks(svg, "empty")
    assert empty.text == "no data" and parse(svg).find(f"{NS}title").text == "Nothing"  # type: ignore[union-attr]


def test_all_zero_values_draw_zero_length_bars() -> None:
    assert widths(bar_chart([Bar("a", 0), Bar("b", 0)], title="t", x_label="x")) == [0, 0]


def test_text_is_escaped() -> None:
    evil = '<script>alert("x")</script> & co'
    svg = bar_chart([Bar(evil, 1, note=evil)], title=evil, x_label=evil, y_label=evil)
    assert "<script" not in svg and parse(svg).find(f"{NS}title").text == evil  # type: ignore[union-attr]


def test_same_input_gives_the_same_bytes() -> None:
    def make() -> str:
        return quantile_chart([Quantiles("g", -1, -0.9, -0.1, 0, 0.2, 0.9, 1)], title="t", x_label="x")

    assert make() == make()


def test_non_finite_values_are_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        bar_chart([Bar("a", float("nan"))], title="t", x_label="x")


def test_ticks_are_round_and_cover_the_range() -> None:
    assert nice_ticks(0, 0.596) == [0, 0.2, 0.4, 0.6]
    assert nice_ticks(-1, 1.102) == [-1, -0.5, 0, 0.5, 1, 1.5]
    assert nice_ticks(0, 0) == [0, 0.2, 0.4, 0.6, 0.8, 1]
    assert nice_ticks(5, 5)[0] <= 5 <= nice_ticks(5, 5)[-1]


def test_inline_charts_link_nothing() -> None:
    svg = bar_chart([Bar("a", 1)], title="t", x_label="x")
    assert not re.search(r"https?:", svg) and "<script" not in svg and "xmlns" in standalone(svg)


def test_a_line_chart_marks_every_point_and_draws_its_references_at_their_values() -> None:
    svg = line_chart(
        [0, 10, 20],
        [Series("llr", [0.0, 1.0, 3.0]), Series("one <point>", [2.0, 2.0, 2.0])],
        title="trace",
        x_label="deals",
        y_label="LLR",
        references=[("upper", 2.89), ("lower", -2.25)],
    )
    assert len(marks(svg, "line")) == 2 and len(marks(svg, "point")) == 6
    ys = [float(p.get("cy")) for p in marks(svg, "point")[:3]]
    assert ys[0] > ys[1] > ys[2], "larger values are drawn higher"
    upper, lower = (float(line.get("y1")) for line in marks(svg, "threshold"))
    assert lower > ys[0] > upper  # -2.25 below 0, 2.89 above 1
    assert svg == line_chart(
        [0, 10, 20],
        [Series("llr", [0.0, 1.0, 3.0]), Series("one <point>", [2.0, 2.0, 2.0])],
        title="trace",
        x_label="deals",
        y_label="LLR",
        references=[("upper", 2.89), ("lower", -2.25)],
    )
    single = line_chart([4], [Series("s", [1.5])], title="one", x_label="x", y_label="y")
    assert len(marks(single, "point")) == 1, "a one-point series shows"
    with pytest.raises(ValueError, match="values for"):
        line_chart([1, 2], [Series("s", [1.0])], title="t", x_label="x", y_label="y")
