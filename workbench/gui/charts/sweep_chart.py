"""Sweep: memory per GPU and speed against batch size or sequence length, current scenario marked."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from workbench.core.units import GiB, format_bytes
from workbench.gui import theme
from workbench.gui.estimate_runner import SweepOutcome

AXES = {"batch_size": "Batch size (sequences)", "seq_len": "Sequence length (tokens)"}


def _short(n: int) -> str:
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}K"
    return str(n)


class SweepChart(QWidget):
    axis_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sweep_chart")
        self.axis_combo = QComboBox(self)
        for key, label in AXES.items():
            self.axis_combo.addItem(label, key)
        self.axis_combo.setToolTip("Which scenario field the sweep varies (powers of two); the rest stays as set.")
        self.axis_combo.currentIndexChanged.connect(lambda _: self.axis_changed.emit(self.axis))
        self.status = QLabel("", self)
        top = QHBoxLayout()
        top.addWidget(QLabel("Vary:", self))
        top.addWidget(self.axis_combo)
        top.addStretch(1)
        top.addWidget(self.status)
        self.view = pg.GraphicsLayoutWidget(self)
        self.view.setMinimumSize(240, 170)
        self.memory_plot = self.view.addPlot(row=0, col=0)
        self.speed_plot = self.view.addPlot(row=1, col=0)
        self.speed_plot.setXLink(self.memory_plot)
        for plot in (self.memory_plot, self.speed_plot):
            plot.setMenuEnabled(False)
            plot.hideButtons()
            plot.setMouseEnabled(x=False, y=False)
            plot.showGrid(x=True, y=True, alpha=0.2)
            plot.getAxis("left").setWidth(62)
        self.memory_plot.setLabel("left", "GiB/GPU")  # short: the two stacked plots are low
        self.memory_plot.getAxis("bottom").setStyle(showValues=False)
        self.speed_plot.setLabel("left", "Tokens/s")
        self.memory_curve = self.memory_plot.plot([], [], pen=pg.mkPen(theme.SERIES_COLOURS[0], width=2),
                                                  symbol="o", symbolSize=7, symbolBrush=theme.SERIES_COLOURS[0],
                                                  symbolPen=pg.mkPen(theme.SERIES_COLOURS[0], width=1.5))
        self.speed_curve = self.speed_plot.plot([], [], pen=pg.mkPen(theme.SERIES_COLOURS[1], width=2),
                                                symbol="o", symbolSize=7, symbolBrush=theme.SERIES_COLOURS[1],
                                                symbolPen=pg.mkPen(theme.SERIES_COLOURS[1], width=1.5))
        self.capacity_line = pg.InfiniteLine(angle=0, movable=False)
        self.capacity_line.setVisible(False)
        self.memory_plot.addItem(self.capacity_line, ignoreBounds=True)
        self.capacity_label = pg.TextItem("", color=theme.BAD_COLOUR, anchor=(0, 1))
        self.memory_plot.addItem(self.capacity_label, ignoreBounds=True)
        self.speed_message = pg.TextItem("", anchor=(0.5, 0.5))
        self.speed_plot.addItem(self.speed_message, ignoreBounds=True)
        self.current_lines = [pg.InfiniteLine(angle=90, movable=False), pg.InfiniteLine(angle=90, movable=False)]
        for plot, line in zip((self.memory_plot, self.speed_plot), self.current_lines):
            line.setVisible(False)
            plot.addItem(line, ignoreBounds=True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addWidget(self.view, 1)
        self.outcome: SweepOutcome | None = None
        self.current_value: int | None = None
        self.restyle()

    @property
    def axis(self) -> str:
        return str(self.axis_combo.currentData())

    def set_axis(self, key: str) -> None:
        index = self.axis_combo.findData(key)
        if index >= 0:
            self.axis_combo.setCurrentIndex(index)

    def set_current(self, value: int | None) -> None:
        self.current_value = value
        for line in self.current_lines:
            line.setVisible(value is not None and value > 0)
            if value:
                line.setPos(math.log2(value))

    def update_sweep(self, outcome: SweepOutcome) -> None:
        self.outcome = outcome
        xs = [math.log2(v) for v in outcome.values]
        mem = [(x, m / GiB) for x, m in zip(xs, outcome.memory) if m is not None]
        speed = [(x, s) for x, s in zip(xs, outcome.speed) if s is not None]
        limit = outcome.usable or outcome.capacity
        fits = {x: m is not None and bool(limit) and m <= limit for x, m in zip(xs, outcome.memory)}
        # Points that do not fit are drawn hollow: the speed there is not reachable on this hardware.
        hollow = pg.mkBrush(theme.chart_background())
        self.memory_curve.setData([p[0] for p in mem], [p[1] for p in mem],
                                  symbolBrush=[theme.SERIES_COLOURS[0] if fits[p[0]] else hollow for p in mem])
        self.speed_curve.setData([p[0] for p in speed], [p[1] for p in speed],
                                 symbolBrush=[theme.SERIES_COLOURS[1] if fits[p[0]] else hollow for p in speed])
        training = outcome.speed_key.endswith("step_time_s")
        self.speed_plot.setLabel("left", "Step time (s)" if training else "Tokens/s")
        self.speed_plot.setLabel("bottom", AXES.get(outcome.field, outcome.field))
        ticks = [(x, _short(v)) for x, v in zip(xs, outcome.values)]
        for plot in (self.memory_plot, self.speed_plot):
            plot.getAxis("bottom").setTicks([ticks])
        fg = theme.chart_foreground()
        if limit:
            self.capacity_line.setPos(limit / GiB)
            self.capacity_line.setPen(pg.mkPen(theme.BAD_COLOUR, width=1.5, style=Qt.PenStyle.DashLine))
            self.capacity_label.setText(f"usable {format_bytes(limit, 1)}")
            self.capacity_label.setPos(xs[0] - 0.25 if xs else 0, limit / GiB)
        else:
            self.capacity_label.setText("")
        self.capacity_line.setVisible(bool(limit))
        if xs:
            self.memory_plot.setXRange(xs[0] - 0.3, xs[-1] + 0.3, padding=0)
        self.speed_message.setText("" if speed else "no performance estimate")
        self.speed_message.setColor(fg)
        if xs:
            self.speed_message.setPos((xs[0] + xs[-1]) / 2, 0.5)
        top = max([limit / GiB if limit else 0.0, *(p[1] for p in mem)], default=1.0)
        self.memory_plot.setYRange(0, max(top, 1.0) * 1.1, padding=0)
        self.speed_plot.setYRange(0, (max(p[1] for p in speed) * 1.1 or 1.0) if speed else 1.0, padding=0)
        fitting = [v for v, m in zip(outcome.values, outcome.memory) if m is not None and limit and m <= limit]
        if outcome.error:
            self.status.setText(outcome.error)
        elif not mem:
            self.status.setText("no memory estimate")
        elif fitting:
            self.status.setText(f"fits up to {_short(max(fitting))}")
        else:
            self.status.setText("does not fit at any point")
        self.status.setStyleSheet("" if fitting or not mem else f"color: {theme.BAD_COLOUR}")
        for line in self.current_lines:
            line.setPen(pg.mkPen(fg, width=1, style=Qt.PenStyle.DotLine))

    def restyle(self) -> None:
        theme.style_plot(self.view, [self.memory_plot, self.speed_plot])
        if self.outcome is not None:
            self.update_sweep(self.outcome)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            self.restyle()
        super().changeEvent(event)
