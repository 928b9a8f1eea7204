"""Short tick labels (50k, 1.5M) and the label placement the charts share."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor, QImage, QPainter

import math

from workbench.gui.charts.axes import LogCompactAxis, compact
from workbench.gui.charts.compare_chart import CompareBarChart
from workbench.gui.charts.label_layout import Segment, around_point, hits, place


@pytest.mark.parametrize(("value", "spacing", "text"), [
    (0, 50_000, "0"), (50_000, 50_000, "50k"), (100_000, 50_000, "100k"), (150_000, 50_000, "150k"),
    (2_500, 500, "2.5k"), (1_500_000, 500_000, "1.5M"), (3e9, 1e9, "3G"), (0.25, 0.05, "0.25"),
    (0.1, 0.02, "0.1"), (400, 100, "400"), (-20_000, 10_000, "-20k"), (12_345, 1, "12.345k"),
])
def test_compact_tick_labels(value: float, spacing: float, text: str) -> None:
    assert compact(value, spacing) == text


def test_log_axis_labels_the_1_2_5_ticks_of_each_decade(qtbot) -> None:  # type: ignore[no-untyped-def]
    axis = LogCompactAxis("bottom")
    values = [math.log10(v) for v in (10, 20, 30, 50, 70, 100, 200, 1000, 2000, 0.2, 0.5)]
    assert axis.logTickStrings(values, 1.0, 1.0) == ["10", "20", "", "50", "", "100", "200", "1k", "2k", "0.2", "0.5"]
    # A range with none of them (a short span ticked linearly in log space): every tick is labelled.
    assert axis.logTickStrings([math.log10(3), math.log10(4)], 1.0, 0.1) == ["3", "4"]


def _drawn_ticks(axis) -> list[tuple[QRectF, str]]:  # type: ignore[no-untyped-def]
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(rect, text) for rect, _, text in specs[2]]


def test_the_compare_throughput_axis_prints_short_apart_labels(qtbot) -> None:  # type: ignore[no-untyped-def]
    chart = CompareBarChart()
    qtbot.addWidget(chart)
    chart.resize(430, 260)  # the Compare tab at 1280x800
    chart.show()
    qtbot.waitExposed(chart)
    grey = QColor("#9a9a9a")
    chart.speed.update(["A", "B", "C"], [52_000.0, 101_000.0, 148_000.0], [grey] * 3, str)
    qtbot.wait(20)
    ticks = _drawn_ticks(chart.speed.plot.getAxis("bottom"))
    texts = [text for _, text in ticks]
    assert texts and all(t.endswith("k") and len(t) <= 5 for t in texts if t != "0"), texts
    assert "50k" in texts or "100k" in texts
    for n, (rect, text) in enumerate(ticks):
        for other, other_text in ticks[n + 1:]:
            assert not rect.intersects(other), (text, other_text)
    # Each bar's value label inside its plot; the chart asks for no more width than a laptop's tab has.
    chart.speed.update(["A", "B", "C"], [52_000.0, 101_000.0, 148_000.0], [grey] * 3, lambda v: f"{v:,.0f}")
    chart.cost.update(["H100 SXM5 80 GB", "A100 80 GB SXM4", "L4"], [0.0359, 0.122, 0.286], [grey] * 3,
                      lambda v: f"${v:.3g}")
    chart.resize(305, 260)  # and the narrowest the tab gets it
    qtbot.wait(20)
    for bar_plot in (chart.cost, chart.speed):
        view = bar_plot.plot.vb.sceneBoundingRect()
        for label in bar_plot.labels[:3]:
            assert view.contains(label.sceneBoundingRect()), label.toPlainText()
    assert chart.minimumSizeHint().width() <= 330


def test_segments_and_rectangles_hit() -> None:
    rect = QRectF(10, 10, 20, 10)
    assert hits(rect, Segment(QPointF(0, 15), QPointF(50, 15)))  # straight through
    assert hits(rect, Segment(QPointF(12, 12), QPointF(14, 14)))  # inside
    assert not hits(rect, Segment(QPointF(0, 25), QPointF(50, 25)))  # below
    assert not hits(rect, Segment(QPointF(0, 0), QPointF(8, 30)))  # beside
    assert hits(rect, QRectF(25, 15, 20, 20)) and not hits(rect, QRectF(31, 10, 5, 5))


def test_place_takes_the_first_free_candidate_and_keeps_labels_apart() -> None:
    area = QRectF(0, 0, 200, 100)
    line = Segment(QPointF(0, 50), QPointF(200, 50))
    first = [QRectF(150, 40, 40, 12)]  # on the line: allowed, the label names it
    second = [QRectF(150, 40, 40, 12), QRectF(150, 30, 40, 12), QRectF(150, 60, 40, 12), QRectF(100, 60, 40, 12)]
    third = [QRectF(190, 20, 40, 12), QRectF(150, 55, 40, 12), QRectF(10, 10, 40, 12)]
    chosen = place(area, [first, second, third], [line], own=[[0], [], []])
    assert chosen == [0, 2, 2]  # 2nd: not over the first, nor across the line; 3rd: inside, apart
    # Around a point: the first candidate is right of it and below, none covers the point.
    for rect in around_point(50, 50, 30, 10, 8):
        assert not rect.contains(QPointF(50, 50))
