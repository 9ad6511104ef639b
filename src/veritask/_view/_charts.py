"""Small inline SVG charts: horizontal bars, a histogram and a line over steps.

Every chart is a self-contained ``<svg>`` element (no script, no external file), so pages stay
readable from disk. Labels are escaped; numbers are formatted with the site's one number
format (``number``). A bar chart's label column is as wide as its longest label needs (up to a
limit: a longer label ends in an ellipsis), every label carries its full text as a tooltip, and
the chart scales down to its container (``viewBox``) instead of running past it.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from veritask._view._pages import number

_BAR_HEIGHT = 18
_BAR_WIDTH = 240
_CHAR_WIDTH = 7
"""Width of one label character at the charts' 12px font (a generous average)."""
_LABEL_CHARS = (8, 44)
"""Fewest and most label characters the label column is sized for."""
_VALUE_WIDTH = 56


def _number(value: float) -> str:
    return number(value)


def _label(text: str, chars: int) -> str:
    """``text`` cut to ``chars`` characters with an ellipsis when longer."""
    return text if len(text) <= chars else text[: chars - 1] + "\u2026"


def bars(items: Sequence[tuple[str, float]], *, scale: float | None = None) -> Markup:
    """Horizontal bars, one per ``(label, value)``; ``scale`` is the value of a full bar
    (default: the largest value)."""
    top = scale if scale is not None else max((v for _, v in items), default=0)
    chars = min(max((len(label) for label, _ in items), default=0), _LABEL_CHARS[1])
    left = max(chars, _LABEL_CHARS[0]) * _CHAR_WIDTH + 8
    height = _BAR_HEIGHT * max(len(items), 1) + 4
    width = left + _BAR_WIDTH + _VALUE_WIDTH
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'role="img">'
    ]
    for i, (label, value) in enumerate(items):
        y = i * _BAR_HEIGHT + 2
        length = _BAR_WIDTH * value / top if top else 0
        parts.append(
            f"<g><title>{escape(label)}: {_number(value)}</title>"
            f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">'
            f"{escape(_label(label, _LABEL_CHARS[1]))}</text>"
            f'<rect x="{left}" y="{y + 2}" width="{length:.1f}" height="{_BAR_HEIGHT - 5}"/>'
            f'<text x="{left + length + 4:.1f}" y="{y + 13}">{_number(value)}</text></g>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def histogram(
    values: Sequence[float], *, bins: int = 10, low: float = 0.0, high: float = 1.0
) -> Markup:
    """Counts of ``values`` in ``bins`` equal bins over ``[low, high]`` (the top edge is in the
    last bin), drawn as labelled bars."""
    counts = [0] * bins
    span = (high - low) or 1.0
    for value in values:
        index = min(int((value - low) / span * bins), bins - 1)
        counts[max(index, 0)] += 1
    width = span / bins
    labels = [f"{low + i * width:.1f}-{low + (i + 1) * width:.1f}" for i in range(bins)]
    return bars(list(zip(labels, [float(c) for c in counts], strict=True)))


def line(values: Sequence[float], *, label: str) -> Markup:
    """A line with one point per value (x: position, y: value), the axis from 0 to the largest
    value (or from the smallest when negative), with the values written under the points."""
    if not values:
        return Markup("")
    low, high = min(min(values), 0.0), max(max(values), 0.0)
    span = (high - low) or 1.0
    step = 40
    width, height = step * max(len(values) - 1, 1) + 40, 110
    points = [(20 + i * step, 10 + (high - v) / span * 70) for i, v in enumerate(values)]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    parts = [
        f'<svg class="chart line" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(label)}">',
        f'<polyline points="{path}" fill="none"/>',
    ]
    for (x, y), value in zip(points, values, strict=True):
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3"/>')
        parts.append(f'<text x="{x:.1f}" y="100" text-anchor="middle">{_number(value)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
