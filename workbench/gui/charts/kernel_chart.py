"""Where a step's time goes: one horizontal bar per kernel group of the current estimate.

The bars are the per-operator model's kernel groups (GEMMs, attention, memory-bound kernels) of one
phase -- the decode step and the prefill of one prompt when serving, the forward pass of one
micro-batch when training -- longest first, in milliseconds per pipeline stage, coloured by what
bounds each (compute, memory bandwidth or kernel latency). A picker switches phases; the kernel
profile's name heads the chart, and a note says so when it is the generic profile (no kernel data
for the accelerator). Hovering a bar shows its kernel, time, share of the phase and bound.

Plot items are created once; an update moves them (``setOpts``), as in the other charts.
"""

from __future__ import annotations

import math
from html import escape

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QColor, QCursor, QFont, QFontMetricsF, QResizeEvent
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QToolTip, QVBoxLayout, QWidget

from workbench.engine.estimate import Estimate
from workbench.gui import theme
from workbench.gui.charts.axes import CompactAxis
from workbench.gui.charts.plot_titles import PlotTitles
from workbench.kernel_breakdown import (
    BOUNDS,
    SCOPE,
    Breakdown,
    PhaseRows,
    format_ms,
    format_share,
    generic_note,
    step_breakdown,
)

TITLE = "Where a step's time goes"
#: Okabe-Ito colours, apart from the memory chart's: compute vermillion, memory blue, latency purple.
BOUND_COLOURS = {"compute": "#D55E00", "memory": "#0072B2", "latency": "#CC79A7"}
UNKNOWN_COLOUR = "#999999"
BAR_HEIGHT = 0.66
#: Pixels between a bar's end and its value label.
LABEL_GAP = 6


def bound_colour(bound: str) -> QColor:
    return QColor(BOUND_COLOURS.get(bound, UNKNOWN_COLOUR))


class KernelChart(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("kernel_chart")
        self.title = QLabel("", self)
        self.title.setObjectName("kernel_title")
        self.title.setWordWrap(True)
        self.phase_picker = QComboBox(self)
        self.phase_picker.setObjectName("kernel_phase")
        self.phase_picker.setToolTip("Which pass of the scenario the bars show")
        self.phase_picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.phase_picker.currentIndexChanged.connect(self.show_phase)
        # One wrapping label: on a narrow tab the key breaks into lines instead of widening the tab.
        self.key_text = "bound by: " + "  ".join(f"■ {b}" for b in BOUNDS)  # as it reads, for its width
        self.key = QLabel("bound by: " + " ".join(
            f"<span style='white-space:nowrap'><span style='color:{BOUND_COLOURS[b]}'>■</span>&nbsp;{b}</span>"
            for b in BOUNDS), self)
        self.key.setObjectName("kernel_key")
        self.key.setWordWrap(True)
        self.key.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.note = QLabel("", self)
        self.note.setObjectName("kernel_generic_note")
        self.note.setWordWrap(True)
        self.note.setStyleSheet(f"color: {theme.WARN_COLOUR}; font-weight: bold")
        self.note.setVisible(False)
        self.empty = QLabel("", self)
        self.empty.setObjectName("kernel_empty")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setVisible(False)

        self.plot_widget = pg.PlotWidget(self, axisItems={"bottom": CompactAxis("bottom")})
        self.plot_widget.setMinimumSize(280, 180)
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.showGrid(x=True, y=False, alpha=0.2)
        self.plot.invertY(True)  # the longest group on top
        self.plot.getAxis("left").setStyle(tickLength=0)
        self.titles = PlotTitles(self.plot)
        self.titles.set_axis("bottom", "Time per pipeline stage (ms)", "ms per stage")
        self.bars = pg.BarGraphItem(x0=[], y=[], width=[], height=BAR_HEIGHT, brushes=[], pen=pg.mkPen(None))
        self.plot.addItem(self.bars)
        self.labels: list[pg.TextItem] = []  # value labels, kept and reused
        self.small = QFont()
        self.small.setPointSizeF(max(7.0, self.small.pointSizeF() * 0.9))

        self.readout = QLabel(" ", self)
        self.readout.setObjectName("kernel_readout")
        self.readout.setWordWrap(True)
        # The title on a line of its own (a long profile name wraps there); below it the phase picker
        # and the key, which never share the title's width.
        controls = QHBoxLayout()
        controls.setContentsMargins(0, 0, 6, 0)
        controls.addWidget(self.phase_picker)
        controls.addStretch(1)
        controls.addWidget(self.key, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addLayout(controls)
        layout.addWidget(self.note)
        layout.addWidget(self.plot_widget, 1)
        layout.addWidget(self.empty, 1)
        layout.addWidget(self.readout)

        self.breakdown = Breakdown((), "")
        self.accelerator_name = ""
        self.phase: PhaseRows | None = None
        self._phase_word = ""  # "decode", "prefill", "forward": kept when an edit changes the titles
        self._label_px = 0.0
        self.plot.vb.sigResized.connect(lambda *_: self._layout_labels())
        self.plot_widget.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.plot_widget.viewport().installEventFilter(self)
        self.restyle()
        self.update_estimate(None)

    # --- data ---------------------------------------------------------------------------------

    def update_estimate(self, estimate: Estimate | None) -> None:
        self.breakdown = step_breakdown(estimate)
        self.accelerator_name = estimate.resolved.cluster.accelerator.name if estimate is not None else ""
        phases = self.breakdown.phases
        titles = [p.title[:1].upper() + p.title[1:] for p in phases]
        keep = next((i for i, p in enumerate(phases) if p.title.split()[0] == self._phase_word), 0)
        self.phase_picker.blockSignals(True)
        if [self.phase_picker.itemText(i) for i in range(self.phase_picker.count())] != titles:
            self.phase_picker.clear()
            self.phase_picker.addItems(titles)
        self.phase_picker.setCurrentIndex(keep if phases else -1)
        self.phase_picker.blockSignals(False)
        self.phase_picker.setVisible(len(phases) > 1)
        self._fit_key()
        if not phases:
            self._show_empty(self.breakdown.empty_reason or "No estimate yet.")
            return
        self.empty.setVisible(False)
        self.plot_widget.setVisible(True)
        profile = phases[0].profile
        self.title.setText(f"<b>{escape(TITLE)}</b> · {escape(profile)}")
        self.title.setToolTip(f"Kernel profile: {profile}")
        self.note.setText(generic_note(self.accelerator_name))
        self.note.setVisible(self.breakdown.generic)
        self.show_phase(keep)

    def show_phase(self, index: int) -> None:
        """Draw the bars of phase ``index`` (of :attr:`breakdown`)."""
        phases = self.breakdown.phases
        if not 0 <= index < len(phases):
            return
        self.phase = phase = phases[index]
        self._phase_word = phase.title.split()[0]
        if self.phase_picker.currentIndex() != index:
            self.phase_picker.setCurrentIndex(index)
        rows = phase.rows
        ys = list(range(len(rows)))
        self.bars.setOpts(x0=[0.0] * len(rows), y=ys, width=[r.seconds * 1000.0 for r in rows],
                          height=BAR_HEIGHT, brushes=[bound_colour(r.bound) for r in rows])
        self.plot.setYRange(-0.6, max(len(rows), 1) - 0.4, padding=0)
        while len(self.labels) < len(rows):
            label = pg.TextItem("", anchor=(0, 0.5))
            label.setFont(self.small)
            label.textItem.document().setDocumentMargin(0)
            self.plot.addItem(label, ignoreBounds=True)
            self.labels.append(label)
        metrics = QFontMetricsF(self.small)
        fg = theme.chart_foreground()
        for n, label in enumerate(self.labels):
            if n < len(rows):
                label.setText(self.value_text(n))
                label.setColor(fg)
            else:
                label.setText("")
                label.setVisible(False)
        widest = max((metrics.horizontalAdvance(self.value_text(n)) for n in ys), default=0.0)
        self._label_px = widest + LABEL_GAP + 4
        self._layout_labels()
        self.readout.setText(self.summary_text())

    def value_text(self, index: int) -> str:
        row = self.phase.rows[index] if self.phase is not None else None
        return f"{format_ms(row.seconds)} · {format_share(row.share)}" if row is not None else ""

    def _layout_labels(self) -> None:
        """Fit the time axis so every value label ends inside the plot, and show the labels (and the
        group names) only where their rows are tall enough to keep them apart."""
        if self.phase is None:
            return
        rows = self.phase.rows
        view = self.plot.vb
        width, height = view.width(), view.height()
        top_ms = max((r.seconds * 1000.0 for r in rows), default=1.0) or 1.0
        share = self._label_px / width if width > 0 else 0.3
        # The longest bar ends where its label still fits: a narrow plot gets short bars, whole labels.
        x_max = top_ms / (1 - min(share, 0.8)) * 1.02
        self.plot.setXRange(0, x_max, padding=0)
        row_px = height / max(len(rows), 1) if height > 0 else 0.0
        text_px = QFontMetricsF(self.small).height()
        fits = row_px >= text_px or height <= 0
        for n, label in enumerate(self.labels[:len(rows)]):
            label.setPos(rows[n].seconds * 1000.0 + x_max * LABEL_GAP / max(width, 1.0), n)
            label.setVisible(fits)
        # The names' column is as wide as the longest name, up to 40% of the chart; longer names are
        # elided (the tooltip names each bar in full). Set here, not grown by the axis as it paints:
        # a name that does not fit the axis' current width is not drawn at all.
        metrics = QFontMetricsF(self.small)
        room = max(60.0, 0.4 * self.plot_widget.width())
        names = [metrics.elidedText(r.name, Qt.TextElideMode.ElideRight, room) for r in rows]
        axis = self.plot.getAxis("left")
        axis.setWidth(math.ceil(max((metrics.horizontalAdvance(n) for n in names), default=20.0)) + 10)
        # Crowded rows (a short window, many groups): name every k-th row; hovering names each one.
        step = 1 if fits else math.ceil(text_px / max(row_px, 1.0))
        axis.setTicks([[(i, n) for i, n in enumerate(names) if i % step == 0]])

    def _show_empty(self, text: str) -> None:
        self.phase = None
        self.bars.setOpts(x0=[], y=[], width=[], brushes=[])
        for label in self.labels:
            label.setText("")
            label.setVisible(False)
        self.plot.getAxis("left").setTicks([[]])
        self.title.setText(f"<b>{escape(TITLE)}</b>")
        self.title.setToolTip("")
        self.note.setVisible(False)
        self.plot_widget.setVisible(False)
        self.empty.setText(text)
        self.empty.setVisible(True)
        self.readout.setText(" ")

    # --- text ---------------------------------------------------------------------------------

    def summary_text(self) -> str:
        """The phase's kernel time and how it splits by bound (shown under the chart)."""
        phase = self.phase
        if phase is None:
            return ""
        by_bound = {b: sum(r.share for r in phase.rows if r.bound == b) for b in BOUNDS}
        split = ", ".join(f"{format_share(share)} {b}-bound" for b, share in by_bound.items() if share > 0)
        return f"{phase.title}: {format_ms(phase.total_s)} of kernels ({split}); {SCOPE}."

    def bar_tooltip(self, index: int) -> str:
        phase = self.phase
        if phase is None or not 0 <= index < len(phase.rows):
            return ""
        row = phase.rows[index]
        return (f"<b>{escape(row.name)}</b><br>"
                f"{escape(format_ms(row.seconds))} in the {escape(phase.title)}<br>"
                f"{row.share:.1%} of the phase's {escape(format_ms(phase.total_s))} of kernels<br>"
                f"<span style='color:{bound_colour(row.bound).name()}'>■</span> {escape(row.bound)}-bound")

    def bar_at(self, x: float, y: float) -> int | None:
        """The row of the bar at data coordinates (x in ms, y in rows), or None."""
        if self.phase is None:
            return None
        index = round(y)
        if not 0 <= index < len(self.phase.rows) or abs(y - index) > BAR_HEIGHT / 2 or x < 0:
            return None
        return index

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        view = self.plot.getViewBox()
        hit = None
        if view.sceneBoundingRect().contains(scene_pos):
            point = view.mapSceneToView(scene_pos)
            hit = self.bar_at(point.x(), point.y())
        if hit is None:
            QToolTip.hideText()
            return
        QToolTip.showText(QCursor.pos(), self.bar_tooltip(hit), self.plot_widget)

    def eventFilter(self, watched: object, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Leave:
            QToolTip.hideText()
        return False

    # --- theme --------------------------------------------------------------------------------

    def restyle(self) -> None:
        theme.style_plot(self.plot_widget, [self.plot])
        for name in ("left", "bottom"):
            self.plot.getAxis(name).setStyle(tickFont=self.small)
        fg = theme.chart_foreground()
        for label in self.labels:
            label.setColor(fg)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._fit_key()

    def _fit_key(self) -> None:
        """Keep the key on one line beside the picker while there is room, and let it wrap on a
        narrow tab rather than widen it (a wrapping label alone breaks early, even with room)."""
        one_line = QFontMetricsF(self.key.font()).horizontalAdvance(self.key_text) + 24
        picker = self.phase_picker.sizeHint().width() if not self.phase_picker.isHidden() else 0
        wrap = self.width() < picker + one_line + 20
        if self.key.wordWrap() != wrap:
            self.key.setWordWrap(wrap)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            self.restyle()
        super().changeEvent(event)
