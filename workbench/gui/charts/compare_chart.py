"""Bars per candidate: the scenario's cost metric ($/M tokens or $ per run) and throughput.

Horizontal bars, best-ranked candidate on top, the recommendation green, candidates that meet the
targets blue, the rest grey. Plot items are created once; an update moves them (setOpts/setData).
"""

from __future__ import annotations

from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QResizeEvent
from PySide6.QtWidgets import QHBoxLayout, QVBoxLayout, QWidget

from workbench.engine.compare import CandidateResult, ScenarioComparison
from workbench.gui import theme
from workbench.gui.charts.axes import CompactAxis
from workbench.gui.compare.compare_format import number, short_name, usd
from workbench.gui.elided_label import WholeLinesLabel

#: Candidates drawn at most (best-ranked first); the table holds the rest.
MAX_BARS = 12
BAR_HEIGHT = 0.66
#: The least height a bar (and its label) gets; a lower chart shows fewer candidates.
BAR_PIXELS = 17


class _BarPlot:
    """One horizontal bar plot with a value label per bar (labels kept and reused)."""

    def __init__(self, view: pg.GraphicsLayoutWidget, col: int) -> None:
        self.plot = view.addPlot(row=0, col=col, axisItems={"bottom": CompactAxis("bottom")})
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.showGrid(x=True, y=False, alpha=0.2)
        self.plot.invertY(True)
        self.plot.getAxis("left").setStyle(tickLength=0)
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.bars = pg.BarGraphItem(x0=[], y=[], width=[], height=BAR_HEIGHT, brushes=[], pen=pg.mkPen(None))
        self.plot.addItem(self.bars)
        self.labels: list[pg.TextItem] = []
        self.values: list[float] = []
        self.names: list[str] = []
        self._label_px = 0
        self.plot.vb.sigResized.connect(lambda *_: self._fit_range())

    def _fit_range(self) -> None:
        """Room right of the longest bar for its value label, whatever the plot's width."""
        top = max(self.values, default=1.0) or 1.0
        pixels = self.plot.vb.width()
        share = self._label_px / pixels if pixels > 0 else 0.3
        # A narrow plot gets short bars and whole labels.
        self.plot.setXRange(0, top / (1 - min(share, 0.8)) * 1.02, padding=0)

    def update(self, names: list[str], values: list[float | None], brushes: list[QColor],
               text: Callable[[float], str]) -> None:
        shown = [(i, v) for i, v in enumerate(values) if v is not None]
        self.names = names
        self.values = [float(v) for _, v in shown]
        ys = [i for i, _ in shown]
        self.bars.setOpts(x0=[0.0] * len(ys), y=ys, width=self.values, height=BAR_HEIGHT,
                          brushes=[brushes[i] for i in ys])
        self.plot.getAxis("left").setTicks([[(i, n) for i, n in enumerate(names)]])
        top = max(self.values, default=1.0) or 1.0
        metrics = QFontMetrics(QFont())
        self._label_px = max((metrics.horizontalAdvance(text(v)) for v in self.values), default=0) + 12
        self._fit_range()
        self.plot.setYRange(-0.6, max(len(names), 1) - 0.4, padding=0)
        while len(self.labels) < len(shown):
            label = pg.TextItem("", anchor=(0, 0.5))
            self.plot.addItem(label, ignoreBounds=True)
            self.labels.append(label)
        fg = theme.chart_foreground()
        for n, label in enumerate(self.labels):
            if n < len(shown):
                y, value = shown[n]
                label.setText(text(value))
                label.setColor(fg)
                label.setPos(value + top * 0.01, y)
                label.setVisible(True)
            else:
                label.setVisible(False)


class CompareBarChart(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("compare_chart")
        self.title = WholeLinesLabel("", self)
        self.view = pg.GraphicsLayoutWidget(self)
        self.view.setMinimumHeight(120)
        self.cost = _BarPlot(self.view, 0)
        self.speed = _BarPlot(self.view, 1)
        self.speed.plot.getAxis("left").setStyle(showValues=False)
        self.speed.plot.getAxis("left").setWidth(4)
        legend = QHBoxLayout()
        legend.addWidget(self.title, 3)
        # One wrapping label: on a narrow tab the key breaks into lines instead of widening the tab.
        self.key = WholeLinesLabel(" ".join(
            f"<span style='white-space:nowrap'><span style='color:{colour}'>■</span>&nbsp;{text}</span>"
            for colour, text in ((theme.OK_COLOUR, "recommended"), (theme.SERIES_COLOURS[0], "meets the targets"),
                                 ("#9a9a9a", "misses a target"))), self)
        self.key.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        legend.addWidget(self.key, 2)
        legend.setContentsMargins(0, 0, 6, 0)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(legend)
        layout.addWidget(self.view, 1)
        self.comparison: ScenarioComparison | None = None
        self.results: list[CandidateResult] = []
        self.restyle()

    def update_comparison(self, comparison: ScenarioComparison | None) -> None:
        """Draw the best-ranked candidates that fit (as many as :meth:`max_bars`)."""
        self.comparison = comparison
        fitting = [r for r in comparison.results if r.fits] if comparison is not None else []
        self.results = fitting[:self.max_bars()]
        names = [short_name(r.accelerator_name, 22) for r in self.results]
        brushes = [QColor(theme.OK_COLOUR) if r.recommended else QColor(theme.SERIES_COLOURS[0])
                   if r.meets_targets else QColor("#9a9a9a") for r in self.results]
        metric = comparison.cost_metric if comparison is not None else "usd_per_m_tokens"
        costs = [_number(r.values.get(metric)) for r in self.results]
        speeds = [_number(r.values.get("tokens_per_s")) for r in self.results]
        # What each plot measures is its value axis' label: a plot title sets the plot's least width,
        # and two side by side pushed the throughput plot out of a narrow tab.
        cost_label = "USD/M tokens" if metric == "usd_per_m_tokens" else "USD per run"
        if self.cost.plot.getAxis("bottom").labelText != cost_label:
            fg = theme.chart_foreground().name()
            self.cost.plot.setLabel("bottom", cost_label, color=fg)
            self.speed.plot.setLabel("bottom", "tokens/s", color=fg)
        self.cost.update(names, costs, brushes, usd)
        self.speed.update(names, speeds, brushes, number)
        if comparison is None:
            self.title.setText("")
            return
        total = len(comparison.results)
        shown = f"the {len(self.results)} best-ranked that fit, of {total}" if len(fitting) > len(self.results) \
            else f"the {len(self.results)} of {total} that fit"
        self.title.setText(f"<b>{comparison.scenario.name}</b>: {shown}")

    def restyle(self) -> None:
        theme.style_plot(self.view, [self.cost.plot, self.speed.plot])
        font = QFont()
        font.setPointSizeF(max(7.0, font.pointSizeF() * 0.9))
        for bar_plot in (self.cost, self.speed):
            bar_plot.plot.getAxis("left").setStyle(tickFont=font)
            bar_plot.plot.getAxis("bottom").setStyle(tickFont=font)
        if self.comparison is not None:
            self.update_comparison(self.comparison)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        if self.comparison is not None:
            fitting = sum(1 for r in self.comparison.results if r.fits)
            if min(fitting, self.max_bars()) != len(self.results):
                self.update_comparison(self.comparison)

    def max_bars(self) -> int:
        """As many bars as the height gives each :data:`BAR_PIXELS` (at least 3, at most MAX_BARS)."""
        usable = self.view.height() - 60  # titles and the value axis
        return max(3, min(MAX_BARS, usable // BAR_PIXELS))

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            self.restyle()
        super().changeEvent(event)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

