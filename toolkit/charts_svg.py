"""Small, dependency-free SVG charts: pure functions from numbers to an SVG string.

Every chart has a title, axis labels and a ``<title>`` tooltip on each mark;
every text is escaped; the same input gives the same bytes. The SVG holds no
script, no style sheet and no link, so it renders offline inline in an HTML
page (add the namespace with :func:`standalone` to save it as a ``.svg``
file). Charts are horizontal: one row per item, so long labels stay readable.

Marks carry a class that pages can style and tests can count: ``bar``
(:func:`bar_chart`, :func:`grouped_bar_chart`), ``box``, ``whisker``,
``range``, ``median`` and ``mean`` (:func:`quantile_chart`), ``line`` and
``point`` (:func:`line_chart`), ``threshold`` (a reference line). An empty chart is an SVG saying "no data" (class
``empty``), never an error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Final

Format = Callable[[float], str]

WIDTH: Final = 720
PALETTE: Final = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#7f7f7f", "#f0e442")
_FONT: Final = 'font-family="system-ui, sans-serif" font-size="11" fill="#222"'
_TOP: Final = 30  # the title's band
_PLOT_TOP: Final = _TOP + 8
_BOTTOM: Final = 40  # tick labels and the value axis label
_RIGHT: Final = 28
_CHAR_PX: Final = 6.2  # rough width of one character at font-size 11
_MAX_LABEL: Final = 30
_MIN_PLOT: Final = 60  # pixels: room for a rotated category axis label
_SVG_NS: Final = "http://www.w3.org/2000/svg"


@dataclass(frozen=True)
class Bar:
    """One bar: its label, value and tooltip (``label: value`` when empty)."""

    label: str
    value: float
    note: str = ""


@dataclass(frozen=True)
class Series:
    """One series of a grouped bar chart: a value (and optional tooltip) per category."""

    name: str
    values: Sequence[float]
    notes: Sequence[str] = ()


@dataclass(frozen=True)
class Quantiles:
    """One row of a quantile chart: min, p05, p25, p50, p75, p95, max (and the mean, if known)."""

    label: str
    low: float
    p05: float
    p25: float
    p50: float
    p75: float
    p95: float
    high: float
    mean: float | None = None
    note: str = ""

    def values(self) -> list[float]:
        extra = [] if self.mean is None else [self.mean]
        return [self.low, self.p05, self.p25, self.p50, self.p75, self.p95, self.high, *extra]


@dataclass(frozen=True)
class _Scale:
    """Maps a value domain [lo, hi] onto pixels [x0, x1]."""

    lo: float
    hi: float
    x0: float
    x1: float

    def __call__(self, value: float) -> float:
        return self.x0 + (value - self.lo) / (self.hi - self.lo) * (self.x1 - self.x0)


def fmt(value: float) -> str:
    """A number as short text: ``1,234``, ``0.25``, ``3.1e-05``."""
    if math.isfinite(value) and float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.3g}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values (steps of 1, 2, 2.5 or 5 x 10^k) covering [lo, hi]."""
    if not hi > lo:  # one value: a range around it (from zero up when it is zero)
        lo, hi = (0.0, 1.0) if lo == 0 else (lo - abs(lo) / 2, hi + abs(hi) / 2)
    raw = (hi - lo) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start, stop = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(i * step, 12) for i in range(start, stop + 1)]


def standalone(svg: str) -> str:
    """An inline chart as a ``.svg`` file's text (adds the SVG namespace)."""
    return svg.replace("<svg ", f'<svg xmlns="{_SVG_NS}" ', 1)


def bar_chart(
    bars: Sequence[Bar],
    *,
    title: str,
    x_label: str,
    y_label: str = "",
    threshold: float | None = None,
    threshold_label: str = "threshold",
    value_format: Format = fmt,
    width: int = WIDTH,
) -> str:
    """Horizontal bars, one row per item, from zero to its value.

    Args:
        bars: the items, drawn top to bottom in this order.
        title: the chart's title.
        x_label: the value axis label.
        y_label: the category axis label.
        threshold: a value drawn as a dashed reference line (class ``threshold``), if any.
        threshold_label: what the reference line means (shown next to it).
        value_format: how values are written on the bars, ticks and tooltips.
        width: the chart's width in pixels.

    Returns:
        The chart as an ``<svg>`` element (one ``rect.bar`` per item).
    """
    if not bars:
        return _empty(title, width)
    _check_finite(title, [b.value for b in bars] + ([] if threshold is None else [threshold]))
    row = max(22.0, _MIN_PLOT / len(bars))  # a lone bar still leaves room for the axis label
    thickness = min(row - 6, 16)
    left = _left_margin([b.label for b in bars], y_label)
    height = _PLOT_TOP + row * len(bars) + _BOTTOM
    room = max(len(value_format(b.value)) for b in bars) * _CHAR_PX  # values are written past their bar
    scale = _value_scale(
        [0.0, *(b.value for b in bars), *([] if threshold is None else [threshold])], left, width - room
    )
    body = [
        _axis(scale, _PLOT_TOP, height - _BOTTOM, x_label, value_format),
        _y_label(y_label, _PLOT_TOP, height - _BOTTOM),
    ]
    for i, bar in enumerate(bars):
        y = _PLOT_TOP + i * row
        body.append(_row_label(bar.label, left, y + row / 2))
        note = bar.note or f"{bar.label}: {value_format(bar.value)}"
        body.append(_bar_rect(scale, bar.value, y + (row - thickness) / 2, thickness, PALETTE[0], note))
        body.append(_value_text(scale, bar.value, y + row / 2, value_format(bar.value)))
    if threshold is not None:
        body.append(
            _threshold(scale, threshold, _TOP + 4, height - _BOTTOM, f"{threshold_label} {value_format(threshold)}")
        )
    return _svg(title, width, height, body)


def grouped_bar_chart(
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str = "",
    value_format: Format = fmt,
    width: int = WIDTH,
) -> str:
    """Horizontal grouped bars: one row per category, one bar per series in it, and a legend.

    Args:
        categories: the rows, top to bottom.
        series: the bars in each row, in this order and colour; each has one value per category.
        title: the chart's title.
        x_label: the value axis label.
        y_label: the category axis label.
        value_format: how values are written on the ticks and tooltips.
        width: the chart's width in pixels.

    Returns:
        The chart as an ``<svg>`` element (one ``rect.bar`` per category and series).

    Raises:
        ValueError: when a series has not exactly one value per category.
    """
    for s in series:
        if len(s.values) != len(categories):
            raise ValueError(f"series {s.name!r} has {len(s.values)} values for {len(categories)} categories")
    if not categories or not series:
        return _empty(title, width)
    _check_finite(title, [v for s in series for v in s.values])
    bar, gap = 9, 10
    left = _left_margin(categories, y_label)
    legend, legend_height = _legend([s.name for s in series], left, width)
    top = _TOP + legend_height
    height = top + len(categories) * (bar * len(series) + gap) + _BOTTOM
    scale = _value_scale([0.0, *(v for s in series for v in s.values)], left, width)
    body = [
        legend,
        _axis(scale, top, height - _BOTTOM, x_label, value_format),
        _y_label(y_label, top, height - _BOTTOM),
    ]
    for i, category in enumerate(categories):
        y = top + gap / 2 + i * (bar * len(series) + gap)
        body.append(_row_label(category, left, y + bar * len(series) / 2))
        for j, s in enumerate(series):
            note = s.notes[i] if i < len(s.notes) else f"{s.name}, {category}: {value_format(s.values[i])}"
            body.append(_bar_rect(scale, s.values[i], y + j * bar, bar - 1, PALETTE[j % len(PALETTE)], note))
    return _svg(title, width, height, body)


def quantile_chart(
    rows: Sequence[Quantiles],
    *,
    title: str,
    x_label: str,
    y_label: str = "",
    value_format: Format = fmt,
    width: int = WIDTH,
) -> str:
    """Horizontal box plots: min-max whisker, p05-p95 line, p25-p75 box, median tick, mean dot.

    Args:
        rows: the distributions, top to bottom.
        title: the chart's title.
        x_label: the value axis label.
        y_label: the category axis label.
        value_format: how values are written on the ticks and tooltips.
        width: the chart's width in pixels.

    Returns:
        The chart as an ``<svg>`` element (one ``rect.box`` per row).
    """
    if not rows:
        return _empty(title, width)
    _check_finite(title, [v for r in rows for v in r.values()])
    row, key = max(28.0, _MIN_PLOT / len(rows)), 16
    left = _left_margin([r.label for r in rows], y_label)
    height = _PLOT_TOP + row * len(rows) + _BOTTOM + key
    bottom = height - _BOTTOM - key
    scale = _value_scale([v for r in rows for v in r.values()], left, width)
    body = [_axis(scale, _PLOT_TOP, bottom, x_label, value_format), _y_label(y_label, _PLOT_TOP, bottom)]
    for i, q in enumerate(rows):
        mid = _PLOT_TOP + i * row + row / 2
        body.append(_row_label(q.label, left, mid))
        body.append(_quantile_marks(scale, q, mid, value_format))
    body.append(_quantile_key(left, height - 6))
    return _svg(title, width, height, body)


box_chart = quantile_chart


def line_chart(
    x: Sequence[float],
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    references: Sequence[tuple[str, float]] = (),
    value_format: Format = fmt,
    width: int = WIDTH,
    height: int = 260,
) -> str:
    """Lines over a numeric x axis, every point marked (a one-point series shows), with horizontal reference lines.

    Args:
        x: the x values, shared by every series.
        series: the lines, in this order and colour; each has one value per x.
        title: the chart's title.
        x_label: the x axis label (with its unit).
        y_label: the value axis label (with its unit).
        references: (label, value) drawn as dashed horizontal lines (class ``threshold``), e.g. a test's bounds.
        value_format: how values are written on the ticks and tooltips.
        width: the chart's width in pixels.
        height: the chart's height in pixels.

    Returns:
        The chart as an ``<svg>`` element (one ``polyline.line`` per series, one ``circle.point`` per value).

    Raises:
        ValueError: when a series has not exactly one value per x.
    """
    for s in series:
        if len(s.values) != len(x):
            raise ValueError(f"series {s.name!r} has {len(s.values)} values for {len(x)} x values")
    if not x or not series:
        return _empty(title, width)
    values = [v for s in series for v in s.values] + [v for _, v in references]
    _check_finite(title, [*x, *values])
    left = 58.0
    legend, legend_height = _legend([s.name for s in series], left, width)
    top, bottom = _TOP + legend_height, height - _BOTTOM
    xs = _value_scale(list(x), left, width)
    ys = _value_scale(values, bottom, top + _RIGHT)  # maps onto pixels bottom (low) .. top (high)
    body = [legend, _axis(xs, top, bottom, x_label, fmt), _value_axis(ys, left, xs.x1, y_label, value_format)]
    for label, value in references:
        y, text = _n(ys(value)), escape(f"{label} {value_format(value)}")
        body.append(
            f'<line class="threshold" x1="{_n(left)}" y1="{y}" x2="{_n(xs.x1)}" y2="{y}" stroke="#b00020" '
            f'stroke-width="1.2" stroke-dasharray="5 3"><title>{text}</title></line>\n'
            f'<text x="{_n(xs.x1)}" y="{_n(ys(value) - 3)}" text-anchor="end" fill="#b00020">{text}</text>'
        )
    for j, s in enumerate(series):
        colour = PALETTE[j % len(PALETTE)]
        points = " ".join(f"{_n(xs(a))},{_n(ys(b))}" for a, b in zip(x, s.values, strict=True))
        body.append(f'<polyline class="line" points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for i, (a, b) in enumerate(zip(x, s.values, strict=True)):
            note = s.notes[i] if i < len(s.notes) else f"{s.name} at {fmt(a)}: {value_format(b)}"
            body.append(
                f'<circle class="point" cx="{_n(xs(a))}" cy="{_n(ys(b))}" r="3.5" fill="{colour}">'
                f"<title>{escape(note)}</title></circle>"
            )
    return _svg(title, width, height, body)


def _value_axis(scale: _Scale, left: float, right: float, label: str, value_format: Format) -> str:
    """Horizontal grid lines and tick labels along a vertical value axis, and its rotated label."""
    parts = []
    for tick in nice_ticks(scale.lo, scale.hi):
        y = _n(scale(tick))
        parts.append(f'<line x1="{_n(left)}" y1="{y}" x2="{_n(right)}" y2="{y}" stroke="#e3e3e3"/>')
        parts.append(
            f'<text x="{_n(left - 6)}" y="{y}" text-anchor="end" dominant-baseline="middle" fill="#555">'
            f"{escape(value_format(tick))}</text>"
        )
    parts.append(_y_label(label, scale.x1, scale.x0))
    return "\n".join(parts)


# -- pieces -----------------------------------------------------------------------------------------


def _svg(title: str, width: int, height: float, body: list[str]) -> str:
    head = (
        f'<svg class="chart" viewBox="0 0 {width} {_n(height)}" width="{width}" height="{_n(height)}" '
        f'role="img" {_FONT}>'
    )
    heading = f'<text x="8" y="18" font-size="13" font-weight="bold">{escape(title)}</text>'
    return "\n".join([head, f"<title>{escape(title)}</title>", heading, *[b for b in body if b], "</svg>"])


def _empty(title: str, width: int) -> str:
    text = f'<text class="empty" x="{width / 2:.1f}" y="52" text-anchor="middle" fill="#666">no data</text>'
    return _svg(title, width, 72, [text])


def _check_finite(title: str, values: Sequence[float]) -> None:
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"chart {title!r}: values must be finite numbers")


def _n(value: float) -> str:
    """A coordinate with one decimal: the same bytes for the same input."""
    return f"{value:.1f}"


def _clip(label: str) -> str:
    return label if len(label) <= _MAX_LABEL else label[: _MAX_LABEL - 1] + "\u2026"


def _left_margin(labels: Sequence[str], y_label: str) -> float:
    longest = max((len(_clip(label)) for label in labels), default=0)
    return max(40.0, 12 + longest * _CHAR_PX) + (18 if y_label else 0)


def _value_scale(values: Sequence[float], left: float, width: float) -> _Scale:
    ticks = nice_ticks(min(values), max(values))
    return _Scale(ticks[0], ticks[-1], left, width - _RIGHT)


def _axis(scale: _Scale, top: float, bottom: float, label: str, value_format: Format) -> str:
    """Grid lines and tick labels along the value axis, and its label."""
    parts = []
    for tick in nice_ticks(scale.lo, scale.hi):
        x = _n(scale(tick))
        parts.append(f'<line x1="{x}" y1="{_n(top)}" x2="{x}" y2="{_n(bottom)}" stroke="#e3e3e3"/>')
        parts.append(
            f'<text x="{x}" y="{_n(bottom + 14)}" text-anchor="middle" fill="#555">{escape(value_format(tick))}</text>'
        )
    parts.append(f'<line x1="{_n(scale.x0)}" y1="{_n(bottom)}" x2="{_n(scale.x1)}" y2="{_n(bottom)}" stroke="#888"/>')
    middle = _n((scale.x0 + scale.x1) / 2)
    parts.append(
        f'<text class="axis-label" x="{middle}" y="{_n(bottom + 32)}" text-anchor="middle">{escape(label)}</text>'
    )
    return "\n".join(parts)


def _y_label(label: str, top: float, bottom: float) -> str:
    if not label:
        return ""
    y = _n((top + bottom) / 2)
    return (
        f'<text class="axis-label" x="12" y="{y}" text-anchor="middle" '
        f'transform="rotate(-90 12 {y})">{escape(label)}</text>'
    )


def _row_label(label: str, left: float, y: float) -> str:
    tip = f"<title>{escape(label)}</title>" if _clip(label) != label else ""
    return (
        f'<text x="{_n(left - 6)}" y="{_n(y)}" text-anchor="end" dominant-baseline="middle">'
        f"{escape(_clip(label))}{tip}</text>"
    )


def _bar_rect(scale: _Scale, value: float, y: float, height: float, colour: str, note: str) -> str:
    x0, x1 = sorted((scale(0.0), scale(value)))
    return (
        f'<rect class="bar" x="{_n(x0)}" y="{_n(y)}" width="{_n(x1 - x0)}" height="{_n(height)}" '
        f'fill="{colour}"><title>{escape(note)}</title></rect>'
    )


def _value_text(scale: _Scale, value: float, y: float, text: str) -> str:
    x, anchor = (scale(value) + 4, "start") if value >= 0 else (scale(value) - 4, "end")
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" dominant-baseline="middle" text-anchor="{anchor}" '
        f'fill="#555">{escape(text)}</text>'
    )


def _threshold(scale: _Scale, value: float, top: float, bottom: float, label: str) -> str:
    x = _n(scale(value))
    return (
        f'<line class="threshold" x1="{x}" y1="{_n(top)}" x2="{x}" y2="{_n(bottom)}" stroke="#b00020" '
        f'stroke-width="1.5" stroke-dasharray="5 3"><title>{escape(label)}</title></line>\n'
        f'<text x="{x}" y="{_n(top - 2)}" text-anchor="end" fill="#b00020">{escape(label)}</text>'
    )


def _legend(names: Sequence[str], left: float, width: int) -> tuple[str, float]:
    """Colour swatches with series names, wrapped to the plot's width; returns the SVG and its height."""
    parts, x, y = [], left, _TOP - 4
    for j, name in enumerate(names):
        step = 16 + len(_clip(name)) * _CHAR_PX + 14
        if x + step > width - _RIGHT and x > left:
            x, y = left, y + 16
        colour = PALETTE[j % len(PALETTE)]
        parts.append(f'<rect class="swatch" x="{_n(x)}" y="{_n(y)}" width="10" height="10" fill="{colour}"/>')
        parts.append(
            f'<text x="{_n(x + 14)}" y="{_n(y + 9)}">{escape(_clip(name))}<title>{escape(name)}</title></text>'
        )
        x += step
    return "\n".join(parts), y + 16 - (_TOP - 4) + 8


def _quantile_marks(scale: _Scale, q: Quantiles, mid: float, value_format: Format) -> str:
    x = {
        k: _n(scale(v))
        for k, v in (
            ("low", q.low),
            ("p05", q.p05),
            ("p25", q.p25),
            ("p50", q.p50),
            ("p75", q.p75),
            ("p95", q.p95),
            ("high", q.high),
        )
    }
    note = q.note or (
        f"{q.label}: min {value_format(q.low)}, p05 {value_format(q.p05)}, p25 {value_format(q.p25)}, "
        f"median {value_format(q.p50)}, p75 {value_format(q.p75)}, p95 {value_format(q.p95)}, "
        f"max {value_format(q.high)}" + ("" if q.mean is None else f", mean {value_format(q.mean)}")
    )
    y, top, h = _n(mid), _n(mid - 7), _n(14)
    marks = [
        f'<line class="whisker" x1="{x["low"]}" y1="{y}" x2="{x["high"]}" y2="{y}" stroke="#999"/>',
        *(
            f'<line class="whisker" x1="{x[k]}" y1="{_n(mid - 4)}" x2="{x[k]}" y2="{_n(mid + 4)}" stroke="#999"/>'
            for k in ("low", "high")
        ),
        f'<line class="range" x1="{x["p05"]}" y1="{y}" x2="{x["p95"]}" y2="{y}" stroke="#0072b2" stroke-width="3"/>',
        (
            f'<rect class="box" x="{x["p25"]}" y="{top}" width="{_n(scale(q.p75) - scale(q.p25))}" height="{h}" '
            f'fill="#cfe3f3" stroke="#0072b2"/>'
        ),
        f'<line class="median" x1="{x["p50"]}" y1="{top}" x2="{x["p50"]}" y2="{_n(mid + 7)}" stroke="#222" '
        f'stroke-width="2"/>',
    ]
    if q.mean is not None:
        marks.append(f'<circle class="mean" cx="{_n(scale(q.mean))}" cy="{y}" r="2.5" fill="#d55e00"/>')
    return f'<g class="quantiles"><title>{escape(note)}</title>\n' + "\n".join(marks) + "\n</g>"


def _quantile_key(left: float, y: float) -> str:
    text = (
        "thin line: min to max \u00b7 thick line: p05 to p95 \u00b7 box: p25 to p75 \u00b7 bar: median \u00b7 dot: mean"
    )
    return f'<text x="{_n(left)}" y="{_n(y)}" font-size="10" fill="#666">{escape(text)}</text>'
