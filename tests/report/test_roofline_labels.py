"""The PDF roofline's labels: every tick label inside the chart, ceiling labels clear of one another
and of the other ceilings' lines."""

from __future__ import annotations

import pytest

from workbench.core.project import Project
from workbench.core.scenario import Scenario


@pytest.fixture(scope="module")
def estimates():  # type: ignore[no-untyped-def]
    from workbench.catalog.resolve import resolve_scenario
    from workbench.pluginhost import default_engine

    engine = default_engine()
    scenarios = [
        Scenario(model="llama-3.1-8b", gpu="h100-sxm", batch_size=16),
        Scenario(model="mixtral-8x7b", gpu="a100-80gb-sxm", num_gpus=2, parallel={"tp": 2}),
        Scenario(model="llama-3.1-70b", gpu="l40s", workload="finetune", method="qlora", num_gpus=2,
                 parallel={"pp": 2}),
    ]
    return [engine.run(resolve_scenario(s, Project())) for s in scenarios]


def _paint(chart, monkeypatch, width: float = 680):  # type: ignore[no-untyped-def]
    """Paint ``chart``; returns (chart rectangle, [(text, rectangle) drawn], ceiling label rectangles)."""
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QColor, QImage, QPainter

    from workbench.report import charts

    drawn = []
    original = charts._text

    def recording(painter, font, x, y, text, *args, **kwargs):  # type: ignore[no-untyped-def]
        rect = original(painter, font, x, y, text, *args, **kwargs)
        drawn.append((text, painter.transform().mapRect(rect)))
        return rect

    monkeypatch.setattr(charts, "_text", recording)
    rect = QRectF(0, 0, width, chart.height_for(width))
    image = QImage(int(rect.width()), int(rect.height()), QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    try:
        chart.paint(painter, rect)
    finally:
        painter.end()
    return rect, drawn


def test_the_last_decade_label_is_not_cut_at_the_right_edge(qapp, estimates, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from workbench.report.charts import RooflineChart

    chart = RooflineChart(estimates[0])
    chart.x_range = (0.1, 10_000.0)  # the range ends on a decade: its label sits on the plot's edge
    rect, drawn = _paint(chart, monkeypatch)
    tick = [r for text, r in drawn if text == "10,000"]
    assert tick, [t for t, _ in drawn]
    for r in tick:
        assert rect.contains(r), (r, rect)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_ceiling_labels_are_clear_of_each_other_and_of_other_ceilings(qapp, estimates, monkeypatch, index) -> None:  # type: ignore[no-untyped-def]
    from workbench.report.charts import RooflineChart

    chart = RooflineChart(estimates[index])
    placed = []
    original = RooflineChart._paint_ceiling_labels

    def recording(self, painter, plot, rows, *args):  # type: ignore[no-untyped-def]
        rects = original(self, painter, plot, rows, *args)
        placed.append((plot, rows, rects))
        return rects

    monkeypatch.setattr(RooflineChart, "_paint_ceiling_labels", recording)
    _paint(chart, monkeypatch)
    (plot, rows, rects), = placed
    assert len(rects) == len(rows) == len(chart.ceilings)
    for n, rect in enumerate(rects):
        assert plot.contains(rect)
        for other in rects[n + 1:]:
            assert not rect.intersects(other)
        for start, end, _, _ in rows:
            crosses = rect.top() < start.y() < rect.bottom() and rect.right() > start.x() and rect.left() < end.x()
            own = abs(rect.center().y() - start.y()) < 0.5
            assert own or not crosses
