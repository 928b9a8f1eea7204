"""Memory stack: what fills each GPU, for the most-loaded rank and the average rank.

One bar item per component is created once; an update only moves their heights. The capacity
line turns red, with a caption, when the plan does not fit. Hovering a segment shows its size in
GiB, its share of the stack and the formula behind it.
"""

from __future__ import annotations

import math
from html import escape

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QColor, QCursor, QFont, QFontMetrics
from PySide6.QtWidgets import QSizePolicy, QToolTip, QVBoxLayout, QWidget

from workbench.core.units import GiB, format_bytes
from workbench.engine.estimate import Estimate
from workbench.gui import theme
from workbench.gui.charts.plot_titles import PlotTitles
from workbench.gui.explain_text import number, quantity_html

BAR_WIDTH = 0.56
X_MIN, X_MAX = -0.55, 1.55  # bars at 0 and 1; the legend has its own column right of the plot
#: The plot area (pixels) the legend's column must leave beside it; in a narrower chart the legend
#: goes under the plot, in as many columns as its width takes (beside it, a 244 px chart kept 48 px
#: for two bars).
SIDE_LEGEND_MIN_PLOT = 150
RANKS = (("per_gpu", "Most-loaded GPU"), ("average_gpu", "Average GPU"))
TICKS = ("Most-loaded", "Average")


def _nice_top(value: float) -> float:
    """Round a GiB axis top up to a step that reads well (10, 50, 100 ... GiB)."""
    step = 10.0 if value <= 200 else 50.0 if value <= 1000 else 10 ** math.floor(math.log10(value))
    return math.ceil(value / step) * step


def _veil() -> QColor:
    colour = QColor(theme.chart_background())
    colour.setAlpha(200)
    return colour


class MemoryStackChart(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("memory_chart")
        self.plot_widget = pg.PlotWidget(self)
        self.plot_widget.setMinimumSize(200, 150)
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.showGrid(x=False, y=True, alpha=0.25)
        self.titles = PlotTitles(self.plot)
        self.titles.set_axis("left", "Memory per GPU (GiB)", "GiB per GPU", "GiB")
        self.plot.getAxis("bottom").setTicks([list(enumerate(TICKS))])
        self.titles.set_axis("bottom", "GPU")
        self.plot.setXRange(X_MIN, X_MAX, padding=0)
        # The legend sits in its own cell of the plot's grid, never over a bar or a capacity label
        # (inside the view box it covered them in a narrow window): right of the plot, or under it.
        self.legend = pg.LegendItem(labelTextSize="8pt", verSpacing=-6)
        self.legend.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.legend_place: tuple[str, int] = ("", 0)  # ("side" or "below", columns)
        self._legend_widths: dict[int, float] = {}  # columns -> the legend's width
        self.bars: dict[str, pg.BarGraphItem] = {}
        for key, _name, colour in theme.MEMORY_COMPONENTS:
            bar = pg.BarGraphItem(x=[0, 1], height=[0, 0], y0=[0, 0], width=BAR_WIDTH, brush=colour,
                                  pen=pg.mkPen(theme.chart_background(), width=1))
            self.plot.addItem(bar)
            self.bars[key] = bar
        # Optional components (the recurrent state) join the legend only when a model has them.
        self.legend_keys: tuple[str, ...] = ()
        self._set_legend(frozenset())
        # Capacity lines span the plot; their labels end at its right edge (right-aligned, so they
        # are never cut by it) on a veil that keeps them readable over a bar that rises past them.
        self.capacity_line = self.plot.plot([], [], pen=pg.mkPen(theme.chart_foreground(), width=2))
        self.usable_line = self.plot.plot([], [], pen=pg.mkPen(theme.chart_foreground(), width=1.5,
                                                                 style=Qt.PenStyle.DashLine))
        self.capacity_label = pg.TextItem("", anchor=(1, 1), fill=_veil())
        self.usable_label = pg.TextItem("", anchor=(1, 0), fill=_veil())
        for item in (self.capacity_line, self.usable_line):
            item.setZValue(10)
        for label in (self.capacity_label, self.usable_label):
            label.setZValue(10)
            self.plot.addItem(label, ignoreBounds=True)
        self.message = pg.TextItem("", anchor=(0, 0))
        font = QFont()
        font.setBold(True)
        self.message.setFont(font)
        self.message.setZValue(20)
        self.plot.addItem(self.message, ignoreBounds=True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot_widget)
        self._estimate: Estimate | None = None
        self._heights: dict[str, tuple[float, float]] = {}
        self._label_texts: dict[str, tuple[str, ...]] = {}  # label -> its texts, longest first
        self.plot.getViewBox().sigResized.connect(lambda *_: self._fit_labels())
        self.fits: bool | None = None
        self._top = 0.0
        self.plot_widget.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.plot_widget.viewport().installEventFilter(self)
        self.restyle()

    def _set_legend(self, present: frozenset[str]) -> None:
        keys = tuple(k for k, _, _ in theme.MEMORY_COMPONENTS if k not in theme.OPTIONAL_COMPONENTS or k in present)
        if keys == self.legend_keys:
            return
        self.legend.clear()
        names = {k: n for k, n, _ in theme.MEMORY_COMPONENTS}
        for key in keys:
            self.legend.addItem(self.bars[key], names[key])
        self.legend_keys = keys
        columns = self.legend.columnCount
        for n in (3, 2, 1):
            self.legend.setColumnCount(n)
            self._legend_widths[n] = self.legend.layout.preferredWidth()
        self.legend.setColumnCount(columns)
        self._place_legend(force=True)

    def _place_legend(self, force: bool = False) -> None:
        """Beside the plot where that leaves it :data:`SIDE_LEGEND_MIN_PLOT` pixels, else under it."""
        left, _, right, _ = self.plot.layout.getContentsMargins()
        width = self.plot_widget.viewport().width() - left - right  # the plot's grid
        room = width - self.plot.getAxis("left").width() - self._legend_widths.get(1, 0.0)
        if room >= SIDE_LEGEND_MIN_PLOT or not self._legend_widths:
            place = ("side", 1)
        else:
            place = ("below", next((n for n in (3, 2) if self._legend_widths[n] <= width), 1))
        if place == self.legend_place and not force:
            return
        layout = self.plot.layout
        if self.legend_place[0]:
            layout.removeItem(self.legend)
        self.legend.setColumnCount(place[1])
        if place[0] == "side":
            layout.addItem(self.legend, 2, 3)
            layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignTop)
        else:
            layout.addItem(self.legend, 4, 0, 1, 3)
            layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignHCenter)
        self.legend_place = place

    # --- data ---------------------------------------------------------------------------------

    def segment_bytes(self) -> dict[str, tuple[float, float]]:
        """Bytes shown per component: (most-loaded rank, average rank)."""
        return {k: (a * GiB, b * GiB) for k, (a, b) in self._heights.items()}

    def update_estimate(self, estimate: Estimate | None) -> None:
        self._estimate = estimate
        stacks = [0.0, 0.0]
        self._heights = {}
        have_memory = estimate is not None and any(
            f"memory.{rank}.{key}" in estimate.values for rank, _ in RANKS for key, _, _ in theme.MEMORY_COMPONENTS
        )
        for key, _, _ in theme.MEMORY_COMPONENTS:
            heights = []
            for i, (rank, _) in enumerate(RANKS):
                value = number(estimate, f"memory.{rank}.{key}") or 0.0
                heights.append(max(value, 0.0) / GiB)
            bases = list(stacks)
            stacks = [s + h for s, h in zip(stacks, heights)]
            self._heights[key] = (heights[0], heights[1])
            self.bars[key].setOpts(x=[0, 1], height=heights, y0=bases, width=BAR_WIDTH)
        self._set_legend(frozenset(k for k in theme.OPTIONAL_COMPONENTS if any(self._heights[k])))
        total = number(estimate, "memory.per_gpu.total")
        top = max(stacks[0], stacks[1], (total or 0) / GiB)
        capacity = number(estimate, "memory.gpu_capacity")
        if capacity is None and estimate is not None:
            capacity = estimate.resolved.cluster.accelerator.memory_bytes
        usable = number(estimate, "memory.usable_capacity")
        fits_value = estimate.get("memory.fits") if estimate is not None else None
        if isinstance(fits_value, bool):
            self.fits = fits_value
        elif total is not None and (usable or capacity):
            self.fits = total <= (usable or capacity)  # type: ignore[operator]
        else:
            self.fits = None
        fg = theme.chart_foreground()
        bad = self.fits is False
        line_colour = QColor(theme.BAD_COLOUR) if bad else fg
        if capacity:
            y = capacity / GiB
            self.capacity_line.setData([X_MIN, X_MAX], [y, y])
            self.capacity_line.setPen(pg.mkPen(line_colour, width=3 if bad else 2))
            self._label_texts["capacity"] = (f"capacity {format_bytes(capacity, 1)}", format_bytes(capacity, 1),
                                             format_bytes(capacity, 0))
            self.capacity_label.setText(self._label_texts["capacity"][0])
            self.capacity_label.setColor(line_colour)
            self.capacity_label.setPos(X_MAX, y)
            top = max(top, y)
        else:
            self.capacity_line.setData([], [])
            self.capacity_label.setText("")
        show_usable = bool(usable) and bool(capacity) and abs(usable - capacity) > 0.005 * capacity  # type: ignore[operator]
        if show_usable:
            y = usable / GiB  # type: ignore[operator]
            self.usable_line.setData([X_MIN, X_MAX], [y, y])
            self.usable_line.setPen(pg.mkPen(line_colour, width=1.5, style=Qt.PenStyle.DashLine))
            self._label_texts["usable"] = (f"usable {format_bytes(usable, 1)}",  # type: ignore[arg-type]
                                           format_bytes(usable, 1), format_bytes(usable, 0))  # type: ignore[arg-type]
            self.usable_label.setText(self._label_texts["usable"][0])
            self.usable_label.setColor(line_colour)
            self.usable_label.setPos(X_MAX, y)
        else:
            self.usable_line.setData([], [])
            self.usable_label.setText("")
        top = _nice_top(max(top, 1.0) * 1.16)
        if top != self._top:  # a steady range keeps the axis as drawn: most edits only move the bars
            self._top = top
            self.plot.setYRange(0, top, padding=0)
        if not have_memory:
            self.message.setText("No memory estimate" if estimate is not None else "")
            self.message.setColor(fg)
        elif bad:
            limit = usable or capacity
            over = (total or stacks[0] * GiB) - (limit or 0)
            self._label_texts["message"] = (f"Out of memory: {format_bytes(over, 1)} over",
                                            f"{format_bytes(over, 1)} over", f"+{format_bytes(over, 0)}")
            self.message.setText(self._label_texts["message"][0])
            self.message.setColor(theme.BAD_COLOUR)
        else:
            self.message.setText("")
        self.message.setPos(X_MIN + 0.02, top * 0.995)
        self._fit_labels()

    def _fit_labels(self) -> None:
        """In a narrow plot the labels drop their words ("capacity", "Out of memory:") and keep the
        numbers, so the plot's edge never cuts them (the tooltip of a bar says the rest)."""
        width = self.plot.getViewBox().width()
        if width <= 0 or not self.isVisible():
            return  # not laid out yet: the next resize fits them
        for key, item in (("capacity", self.capacity_label), ("usable", self.usable_label),
                          ("message", self.message)):
            texts = self._label_texts.get(key, ())
            if not texts or item.toPlainText() not in texts:
                continue
            metrics = QFontMetrics(item.textItem.font())
            # The longest that fits (document margins included), else the shortest.
            text = next((t for t in texts if metrics.horizontalAdvance(t) + 10 <= width), texts[-1])
            if item.toPlainText() != text:
                item.setText(text)

    # --- hover --------------------------------------------------------------------------------

    def segment_at(self, x: float, y: float) -> tuple[str, int] | None:
        """(component, rank index) of the segment at data coordinates (x, y)."""
        rank = round(x)
        if rank not in (0, 1) or abs(x - rank) > BAR_WIDTH / 2:
            return None
        base = 0.0
        for key, _, _ in theme.MEMORY_COMPONENTS:
            height = self._heights.get(key, (0.0, 0.0))[rank]
            if height > 0 and base <= y <= base + height:
                return key, rank
            base += height
        return None

    def segment_tooltip(self, key: str, rank: int) -> str:
        estimate = self._estimate
        rank_key, rank_label = RANKS[rank]
        result_key = f"memory.{rank_key}.{key}"
        stack = sum(h[rank] for h in self._heights.values()) * GiB
        size = self._heights[key][rank] * GiB
        rank_text = rank_label[0].lower() + rank_label[1:]
        share = f"{100 * size / stack:.1f}% of the {format_bytes(stack)} on the {rank_text}" if stack else ""
        name = {k: n for k, n, _ in theme.MEMORY_COMPONENTS}[key]
        quantity = estimate.values.get(result_key) if estimate is not None else None
        if quantity is None:
            return f"<b>{escape(name)}</b>: {format_bytes(size)}<br>{share}"
        return quantity_html(quantity, result_key, estimate, extra=escape(share))

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        view = self.plot.getViewBox()
        if not view.sceneBoundingRect().contains(scene_pos):
            QToolTip.hideText()
            return
        point = view.mapSceneToView(scene_pos)
        hit = self.segment_at(point.x(), point.y())
        if hit is None:
            QToolTip.hideText()
            return
        QToolTip.showText(QCursor.pos(), self.segment_tooltip(*hit), self.plot_widget)

    def eventFilter(self, watched: object, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Leave:
            QToolTip.hideText()
        elif event.type() == QEvent.Type.Resize:
            self._place_legend()
        return False

    # --- theme --------------------------------------------------------------------------------

    def restyle(self) -> None:
        theme.style_plot(self.plot_widget, [self.plot])
        for bar in self.bars.values():
            bar.setOpts(pen=pg.mkPen(theme.chart_background(), width=1))
        self.legend.setLabelTextColor(theme.chart_foreground())
        for label in (self.capacity_label, self.usable_label):
            label.fill = pg.mkBrush(_veil())
        for _, label in self.legend.items:
            label.setText(label.text, color=theme.chart_foreground())
        if self._estimate is not None:
            self.update_estimate(self._estimate)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            self.restyle()
        super().changeEvent(event)
