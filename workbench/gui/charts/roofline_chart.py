"""Roofline of the selected GPU, log-log, with the scenario's operating points.

The roof is drawn from the accelerator's datasheet figures (one ceiling per dtype it supports,
the memory-bandwidth slope below them); the points come from the estimate's ``roofline.*``
results. Items are created once; an update moves them and hides the unused ones.

Labels (the ceilings', the ridge's, the points') are placed in pixels by
:mod:`~workbench.gui.charts.label_layout` whenever the points or the plot's size change: none covers
another, a line or a marker, and none leaves the plot. The peak named in the readout is the rate
the estimate computes at (``roofline.compute_dtype``): fp8 weights with a bf16 compute precision run
their matmuls at the bf16 rate.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF
from PySide6.QtWidgets import QVBoxLayout, QWidget

from workbench.core.dtypes import DType
from workbench.core.hardware import Accelerator
from workbench.engine.estimate import Estimate
from workbench.gui import theme
from workbench.gui.elided_label import WrappedLabel
from workbench.gui.charts.label_layout import Segment, around_point, place
from workbench.gui.charts.plot_titles import PlotTitles
from workbench.gui.explain_text import number

PHASES = ("prefill", "decode", "training")
MAX_CEILINGS = 10
#: Pixels between a label and the line or marker it names.
LABEL_GAP = 2
#: Step of a ceiling label moving left along its line, out of another label's way.
SLIDE_PX = 12


def _phases(estimate: Estimate | None) -> tuple[str, ...]:
    """The phases a scenario runs: serving prefills and decodes; training runs training steps."""
    if estimate is None:
        return ()
    return ("training",) if estimate.resolved.scenario.is_training else ("prefill", "decode")


def _snap_down(value: float) -> float:
    return 10 ** (math.floor(2 * math.log10(value)) / 2)


def _snap_up(value: float) -> float:
    return 10 ** (math.ceil(2 * math.log10(value)) / 2)


def _fmt(value: float) -> str:
    return f"{value:,.3g}" if value < 1000 else f"{value:,.0f}"


class RooflineChart(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("roofline_chart")
        self.plot_widget = pg.PlotWidget(self)
        self.plot_widget.setMinimumSize(200, 150)
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.setLogMode(x=True, y=True)
        self.plot.showGrid(x=True, y=True, alpha=0.18)
        self.titles = PlotTitles(self.plot)
        self.titles.set_axis("bottom", "Arithmetic intensity (FLOP/byte)", "Intensity (FLOP/byte)", "FLOP/byte")
        self.titles.set_axis("left", "Attainable (TFLOPS)", "TFLOPS")
        self.slope = self.plot.plot([], [], pen=pg.mkPen(theme.chart_foreground(), width=2))
        self.ceilings: list[pg.PlotDataItem] = []
        self.ceiling_labels: list[pg.TextItem] = []
        self._ceiling_levels: dict[int, float] = {}  # label index -> its ceiling (TFLOPS)
        self._ceiling_texts: dict[int, tuple[str, str]] = {}  # label index -> (full, short) text
        self._ridge_texts: tuple[str, ...] = ()
        small = QFont()
        small.setPointSizeF(max(small.pointSizeF() * 0.85, 7))
        for _ in range(MAX_CEILINGS):
            self.ceilings.append(self.plot.plot([], [], pen=pg.mkPen(theme.chart_foreground(), width=1)))
            label = pg.TextItem("", anchor=(0, 0))
            label.setFont(small)
            label.setZValue(10)  # over the lines, under the points
            self.plot.addItem(label, ignoreBounds=True)
            self.ceiling_labels.append(label)
        self.ridge = self.plot.plot([], [], pen=None, symbol="d", symbolSize=11,
                                    symbolBrush=theme.chart_foreground(), symbolPen=None)
        self.ridge_label = pg.TextItem("", anchor=(0, 0))
        self.ridge_label.setFont(small)
        self.plot.addItem(self.ridge_label, ignoreBounds=True)
        self.points: dict[str, pg.PlotDataItem] = {}
        self.point_labels: dict[str, pg.TextItem] = {}
        bold = QFont()
        bold.setBold(True)
        bold.setPointSizeF(max(bold.pointSizeF() * 0.9, 7))
        for phase in PHASES:
            colour = theme.PHASE_COLOURS[phase]
            self.points[phase] = self.plot.plot([], [], pen=None, symbol="o", symbolSize=13, symbolBrush=colour,
                                                symbolPen=pg.mkPen(theme.chart_background(), width=1.5))
            self.points[phase].setZValue(20)  # over the labels' veils
            label = pg.TextItem("", color=colour, anchor=(0, 0))
            label.setFont(bold)
            self.plot.addItem(label, ignoreBounds=True)
            self.point_labels[phase] = label
        for label in (*self.ceiling_labels, self.ridge_label, *self.point_labels.values()):
            label.textItem.document().setDocumentMargin(0)  # the veil hugs the text: labels pack closer
        self.readout = WrappedLabel(" ", self)
        self.readout.setObjectName("roofline_readout")
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.NoTextInteraction)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.plot_widget, 1)
        layout.addWidget(self.readout)
        self.accelerator: Accelerator | None = None
        self.bandwidth = 0.0  # GB/s
        self.peak = 0.0  # TFLOPS of the scenario's dtype
        self.dtype_name = ""
        self.weights_note = ""  # weights stored in another format than the matmuls run at
        self.point_data: dict[str, tuple[float, float]] = {}
        self.ridge_point: float | None = None
        self._last: tuple[Estimate | None, Accelerator | None, DType | None] | None = None
        self._roof: tuple[object, ...] | None = None
        self.roof_text = ""
        self.bounds: dict[str, str] = {}
        self.plot_widget.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.plot_widget.viewport().installEventFilter(self)
        self.plot.getViewBox().sigResized.connect(self._on_resized)
        self.restyle()

    # --- data ---------------------------------------------------------------------------------

    def update_estimate(self, estimate: Estimate | None, accelerator: Accelerator | None = None,
                        dtype: DType | None = None) -> None:
        self._last = (estimate, accelerator, dtype)
        explicit = dtype is not None
        if estimate is not None:
            accelerator = accelerator or estimate.resolved.cluster.accelerator
            scenario = estimate.resolved.scenario
            dtype = dtype or scenario.weight_format.compute_dtype
            if not (accelerator and accelerator.supports(dtype)):
                dtype = scenario.dtype
        self.accelerator = accelerator
        if accelerator is None:
            self._clear()
            return
        bandwidth = number(estimate, "roofline.bandwidth_gbps") or accelerator.memory_bandwidth_gbps
        peak = number(estimate, "roofline.peak_tflops")
        if peak is None and dtype is not None:
            peak = accelerator.peak_tflops(dtype)
        if peak is None:
            peak = max(accelerator.dense_tflops.values())
        self.bandwidth, self.peak = bandwidth, peak
        self.dtype_name = dtype.value if dtype is not None else ""
        # The estimate names the dtype whose rate its peak is: fp8 weights under a bf16 compute
        # precision run their matmuls at the bf16 rate, not at the fp8 one.
        rate = estimate.get("roofline.compute_dtype") if estimate is not None and not explicit else None
        if isinstance(rate, str) and rate:
            self.dtype_name = rate
        self.weights_note = ""
        if estimate is not None:
            weights = estimate.resolved.scenario.weight_format
            if weights.value != self.dtype_name and weights.compute_dtype.value != self.dtype_name:
                self.weights_note = f" ({weights.value} weights, matmuls at the {self.dtype_name} rate)"
        ridge = number(estimate, "roofline.ridge_point") or peak * 1000.0 / bandwidth
        self.ridge_point = ridge
        points = self._points(estimate)
        peaks = sorted({t for t in accelerator.dense_tflops.values() if t > 0})
        # Ranges snap to half decades so most edits only move the points: the roof, the axes and
        # their labels are redrawn when the GPU, the dtype or the scale changes.
        x_lo = _snap_down(min([1.0, *(x for x, _ in points)]) / 4)
        x_hi = _snap_up(max([ridge, *(p * 1000.0 / bandwidth for p in peaks), *(x for x, _ in points)]) * 12)
        y_lo = _snap_down(min([x_lo * bandwidth / 1000.0, *(y for _, y in points)]) / 2)
        top = _snap_up(max(peaks) * 3.0)
        roof = (accelerator, self.dtype_name, bandwidth, peak, ridge, x_lo, x_hi, y_lo, top,
                theme.chart_foreground().name())
        if roof != self._roof:
            self._roof = roof
            self._draw_roof(accelerator, bandwidth, peak, ridge, (x_lo, x_hi), (y_lo, top))
        self._draw_points(estimate, x_lo, x_hi)

    def _draw_roof(self, accelerator: Accelerator, bandwidth: float, peak: float, ridge: float,
                   x_range: tuple[float, float], y_range: tuple[float, float]) -> None:
        # Ceilings: one per distinct peak; dtypes of equal rate share a line.
        groups: dict[float, list[str]] = {}
        for d, tflops in accelerator.dense_tflops.items():
            if tflops > 0:
                groups.setdefault(tflops, []).append(d.value)
        peaks = sorted(groups)
        x_lo, x_hi = x_range
        fg = theme.chart_foreground()
        faint = theme.muted()
        for i, item in enumerate(self.ceilings):
            label = self.ceiling_labels[i]
            if i >= len(peaks):
                item.setData([], [])
                label.setText("")
                label.setVisible(False)  # an empty label would still paint its veil
                self._ceiling_levels.pop(i, None)
                continue
            label.setVisible(True)
            tflops = peaks[i]
            names = groups[tflops]
            current = self.dtype_name in names
            item.setData([tflops * 1000.0 / bandwidth, x_hi], [tflops, tflops])
            item.setPen(pg.mkPen(fg if current else faint, width=2.5 if current else 1,
                                 style=Qt.PenStyle.SolidLine if current else Qt.PenStyle.DashLine))
            self._ceiling_texts[i] = (f"{' / '.join(names)}  {_fmt(tflops)}", f"{names[0]} {_fmt(tflops)}")
            label.setText(self._ceiling_texts[i][0])
            label.setColor(fg if current else faint)
            self._ceiling_levels[i] = tflops  # placed by _keep_ceiling_labels_clear, with the points
        self.slope.setData([x_lo, max(peaks) * 1000.0 / bandwidth], [x_lo * bandwidth / 1000.0, max(peaks)])
        self.slope.setPen(pg.mkPen(fg, width=2))
        self.ridge.setData([ridge], [peak])
        self._ridge_texts = (f"ridge {_fmt(ridge)} FLOP/byte", f"ridge {_fmt(ridge)}")
        self.ridge_label.setText(self._ridge_texts[0])
        self.ridge_label.setVisible(True)
        self.ridge_label.setColor(fg)
        self.plot.setXRange(math.log10(x_lo), math.log10(x_hi), padding=0)
        self.plot.setYRange(math.log10(y_range[0]), math.log10(y_range[1]), padding=0)
        self.titles.set_title(f"Roofline: {accelerator.name}", accelerator.name, color=fg.name())
        self.roof_text = f"{_fmt(peak)} TFLOPS {self.dtype_name} peak{self.weights_note}, {_fmt(bandwidth)} GB/s"

    def _draw_points(self, estimate: Estimate | None, x_lo: float, x_hi: float) -> None:
        self.point_data = {}
        self.bounds: dict[str, str] = {}
        phases = _phases(estimate)
        for phase in PHASES:
            ai = number(estimate, f"roofline.{phase}.arithmetic_intensity") if phase in phases else None
            attainable = number(estimate, f"roofline.{phase}.attainable_tflops")
            item, label = self.points[phase], self.point_labels[phase]
            if ai is None or attainable is None or ai <= 0 or attainable <= 0:
                if label.toPlainText():
                    item.setData([], [])
                    label.setText("")
                label.setVisible(False)
                continue
            self.point_data[phase] = (ai, attainable)
            item.setData([ai], [attainable])
            bound = estimate.get(f"roofline.{phase}.bound") if estimate is not None else None
            label.setText(phase)
            label.setVisible(True)
            self.bounds[phase] = bound if isinstance(bound, str) else ""
        self._place_labels()
        self.readout.setText(self.summary_text())

    def _place_labels(self) -> None:
        """Put every visible label where it covers no other label, line or marker (in pixels)."""
        view = self.plot.getViewBox()
        if self._roof is None or view.width() < 40 or view.height() < 40:
            return  # not laid out yet: placed again when the view gets its size
        x_lo, x_hi = self._roof[5], self._roof[6]  # type: ignore[misc]

        def at(x: float, y: float) -> QPointF:
            return view.mapFromView(QPointF(math.log10(x), math.log10(y)))

        area = QRectF(0, 0, view.width(), view.height()).adjusted(2, 2, -2, -2)
        obstacles: list[QRectF | Segment] = []
        for ai, attainable in self.point_data.values():
            p = at(ai, attainable)
            obstacles.append(QRectF(p.x() - 9, p.y() - 9, 18, 18))  # the 13 px marker and its rim
        ridge = at(self.ridge_point, self.peak) if self.ridge_point else None
        if ridge is not None:
            obstacles.append(QRectF(ridge.x() - 7, ridge.y() - 7, 14, 14))
        levels = sorted(self._ceiling_levels.items(), key=lambda item: item[1])
        lines: dict[int, tuple[QPointF, QPointF]] = {}
        line_index: dict[int, int] = {}  # ceiling label -> its line among the obstacles
        for i, level in levels:
            lines[i] = (at(level * 1000.0 / self.bandwidth, level), at(x_hi, level))
            line_index[i] = len(obstacles)
            obstacles.append(Segment(*lines[i]))
        if levels:
            top = levels[-1][1]
            slope = Segment(at(x_lo, x_lo * self.bandwidth / 1000.0), at(top * 1000.0 / self.bandwidth, top))
            obstacles.append(slope)

        labels: list[pg.TextItem] = []
        candidates: list[list[QRectF]] = []
        texts: list[list[str]] = []  # the text each candidate shows
        own: list[list[int]] = []
        for phase in self.point_data:
            label = self.point_labels[phase]
            size = label.textItem.boundingRect().size()
            p = at(*self.point_data[phase])
            labels.append(label)
            candidates.append(around_point(p.x(), p.y(), size.width(), size.height(), 11))
            texts.append([phase] * len(candidates[-1]))
            own.append([])
        # A ceiling's label sits on its line, near the right end (its veil hides the line under the
        # text), moved left along the line while it would cover a point or another label, then
        # above or below the line; where the full text does not fit, the short one ("bf16 989"
        # for "bf16 / fp16  989"). The scenario's own ceiling first, then from the top.
        current = [i for i, _ in levels if self.dtype_name in self._ceiling_texts[i][0].split()]
        metrics = QFontMetricsF(self.ceiling_labels[0].textItem.font())
        for i in current + [i for i, _ in reversed(levels) if i not in current]:
            label = self.ceiling_labels[i]
            start, end = lines[i]
            options: list[QRectF] = []
            shown: list[str] = []
            for text in self._ceiling_texts[i]:
                w, h = metrics.horizontalAdvance(text) + 2, metrics.height() + 1
                rights = [end.x() - 4]
                while rights[-1] - SLIDE_PX - w >= start.x() + 4:
                    rights.append(rights[-1] - SLIDE_PX)
                options += [QRectF(r - w, end.y() - h / 2, w, h) for r in rights]
                # Just left of where the line leaves the slope, at its height: clear of the slope.
                options.append(QRectF(start.x() - 12 - w, end.y() - h / 2, w, h))
                options += [QRectF(rights[0] - w, end.y() - LABEL_GAP - h, w, h),
                            QRectF(rights[0] - w, end.y() + LABEL_GAP, w, h)]
                shown += [text] * (len(options) - len(shown))
            labels.append(label)
            candidates.append(options)
            texts.append(shown)
            own.append([line_index[i]])
        if ridge is not None and self._ridge_texts:
            options, shown = [], []
            for text in self._ridge_texts:  # "ridge 295 FLOP/byte", then "ridge 295" where crowded
                w, h = metrics.horizontalAdvance(text) + 2, metrics.height() + 1
                for k in range(4):
                    options += [
                        QRectF(ridge.x() - 8 - w, ridge.y() - 4 - h - k * h, w, h),  # above the slope, left
                        QRectF(ridge.x() + 8, ridge.y() + 4 + k * h, w, h),  # under the ceiling, right
                    ]
                options.append(QRectF(ridge.x() - w / 2, ridge.y() - 10 - h, w, h))
                shown += [text] * (len(options) - len(shown))
            labels.append(self.ridge_label)
            candidates.append(options)
            texts.append(shown)
            own.append([])
        # The other dtypes' ceilings and the ridge are secondary: left out where no place is free
        # (the readout and the hover still give the figures), never drawn over another label.
        secondary = [n for n, label in enumerate(labels) if label is self.ridge_label or (
            label in self.ceiling_labels and self.ceiling_labels.index(label) not in current)]
        for n, (label, chosen) in enumerate(zip(labels, place(area, candidates, obstacles, own, secondary))):
            label.setVisible(chosen >= 0)
            if chosen < 0:
                continue
            if label.toPlainText() != texts[n][chosen]:
                label.setText(texts[n][chosen])
            label.setAnchor((0, 0))
            label.setPos(view.mapToView(candidates[n][chosen].topLeft()))

    def label_rects(self) -> dict[str, QRectF]:
        """Each visible label's rectangle in the view box's pixels (what the placement avoids)."""
        view = self.plot.getViewBox()
        out = {}
        for label in (*self.ceiling_labels, self.ridge_label, *self.point_labels.values()):
            if label.isVisible() and label.toPlainText():
                out[label.toPlainText()] = view.mapFromScene(label.sceneBoundingRect()).boundingRect()
        return out

    def summary_text(self) -> str:
        """The roof and where each phase sits on it (shown while the mouse is elsewhere)."""
        parts = [self.roof_text]
        for phase, (ai, attainable) in self.point_data.items():
            bound = self.bounds.get(phase)
            parts.append(f"{phase}: {_fmt(ai)} FLOP/byte, {_fmt(attainable)} TFLOPS"
                         + (f", {bound}-bound" if bound else ""))
        return " · ".join(parts)

    def _on_resized(self) -> None:
        if self._last is not None and self._roof is not None:
            self._draw_points(self._last[0], self._roof[5], self._roof[6])  # type: ignore[arg-type]

    @staticmethod
    def _points(estimate: Estimate | None) -> list[tuple[float, float]]:
        found = []
        for phase in _phases(estimate):
            ai = number(estimate, f"roofline.{phase}.arithmetic_intensity")
            attainable = number(estimate, f"roofline.{phase}.attainable_tflops")
            if ai and attainable and ai > 0 and attainable > 0:
                found.append((ai, attainable))
        return found

    def _clear(self) -> None:
        self._roof = None
        for item in (*self.ceilings, self.slope, self.ridge, *self.points.values()):
            item.setData([], [])
        for label in (*self.ceiling_labels, self.ridge_label, *self.point_labels.values()):
            label.setText("")
            label.setVisible(False)
        self._ceiling_levels.clear()
        self._ridge_texts = ()
        self.point_data = {}

    # --- hover --------------------------------------------------------------------------------

    def attainable(self, intensity: float) -> float:
        """Attainable TFLOPS at ``intensity`` FLOP/byte for the scenario's dtype."""
        return min(self.peak, intensity * self.bandwidth / 1000.0)

    def readout_text(self, intensity: float) -> str:
        value = self.attainable(intensity)
        bound = "memory-bound" if intensity * self.bandwidth / 1000.0 < self.peak else "compute-bound"
        return (f"intensity {_fmt(intensity)} FLOP/byte → attainable {_fmt(value)} TFLOPS "
                f"{self.dtype_name} ({bound})")

    def eventFilter(self, watched: object, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Leave:
            self.readout.setText(self.summary_text())
        return False

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        view = self.plot.getViewBox()
        if self.accelerator is None or not view.sceneBoundingRect().contains(scene_pos):
            self.readout.setText(self.summary_text())
            return
        intensity = 10 ** view.mapSceneToView(scene_pos).x()
        self.readout.setText(self.readout_text(intensity))

    # --- theme --------------------------------------------------------------------------------

    def restyle(self) -> None:
        theme.style_plot(self.plot_widget, [self.plot])
        # Labels sit on a veil of the background so a line running under them stays readable.
        veil = QColor(theme.chart_background())
        for label in self.ceiling_labels:  # on their own line: hide it under the text
            label.fill = pg.mkBrush(veil)
            label.update()
        veil.setAlpha(210)
        for label in (*self.point_labels.values(), self.ridge_label):
            label.fill = pg.mkBrush(veil)
            label.update()
        self.ridge.setSymbolBrush(theme.chart_foreground())
        for item in self.points.values():
            item.setSymbolPen(pg.mkPen(theme.chart_background(), width=1.5))
        self._roof = None
        if self._last is not None:
            self.update_estimate(*self._last)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            self.restyle()
        super().changeEvent(event)
