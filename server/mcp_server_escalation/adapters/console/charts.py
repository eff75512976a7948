"""The stats page's chart of escalations per day as data for its template (pure, no I/O): each
day a column of bars stacked by type, in SVG units, and the legend.

Each type keeps one colour on every page (its place in ``rules/wording/words.KIND_WORDS``, a class of
the stylesheet); the page's table of the same counts is the chart's text alternative.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...models.reports import DayCount
from ...rules.wording.words import KIND_WORDS

# The chart's frame, in SVG units: the bars' full height, a column's width and the margins.
BARS_HEIGHT = 150
COLUMN = 40
BAR = 26
LEFT = 8
TOP = 16
# A type the words do not know yet still gets a colour: the last one.
COLOURS = len(KIND_WORDS) + 1


@dataclass(frozen=True)
class Segment:
    """One type's part of a day's column."""

    kind: str
    colour: int
    count: int
    x: int
    y: int
    height: int


@dataclass(frozen=True)
class Column:
    """One day: its label, its total and its stacked segments (the first type at the bottom)."""

    day: str
    label: str
    total: int
    x: int
    top: int
    segments: list[Segment]


@dataclass(frozen=True)
class DayChart:
    """The whole chart: its columns, its size and the types it shows (for the legend)."""

    columns: list[Column]
    width: int
    height: int
    kinds: list[tuple[str, int]]


def colour_of(kind: str) -> int:
    """The type's colour class number (fixed for the type)."""
    names = list(KIND_WORDS)
    return names.index(kind) if kind in names else COLOURS - 1


def day_chart(days: list[DayCount]) -> DayChart:
    """The columns of ``days``; the tallest day fills ``BARS_HEIGHT``."""
    tallest = max([day.total for day in days] + [1])
    columns = []
    for index, day in enumerate(days):
        x = LEFT + index * COLUMN + (COLUMN - BAR) // 2
        bottom = TOP + BARS_HEIGHT
        segments = []
        for kind, count in sorted(day.by_type.items(), key=lambda item: colour_of(item[0])):
            height = max(1, round(count / tallest * BARS_HEIGHT))
            bottom -= height
            segments.append(Segment(kind, colour_of(kind), count, x, bottom, height))
        columns.append(Column(day.day, day.day[5:], day.total, x, bottom, segments))
    shown = sorted({kind for day in days for kind in day.by_type}, key=colour_of)
    return DayChart(
        columns=columns,
        width=LEFT * 2 + COLUMN * len(days),
        height=TOP + BARS_HEIGHT + 22,
        kinds=[(kind, colour_of(kind)) for kind in shown],
    )
