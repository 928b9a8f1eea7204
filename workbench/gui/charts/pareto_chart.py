"""Pareto fronts of serving configurations, one curve per candidate, log-log.

Two fronts (a selector picks one): throughput per GPU against tokens/s per user (both higher is
better), and cost per million tokens against TPOT (both lower is better). Each candidate's front is
a line through its points; its other configurations are small hollow markers in the same colour,
so a user sees what the front leaves out and can still pick one. Hovering a marker names its
configuration (tooltip and the line under the plot); clicking it emits :attr:`point_clicked`.

Points are hit in pixels (the nearest marker within :data:`HIT_PX`), whatever the axes' scales.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QToolTip, QVBoxLayout, QWidget

from workbench.engine.compare import Candidate
from workbench.engine.pareto import Front, FrontPoint
from workbench.gui import theme
from workbench.gui.charts.axes import LogCompactAxis
from workbench.gui.charts.plot_titles import PlotTitles
from workbench.gui.compare.compare_format import number, short_name
from workbench.gui.elided_label import WholeLinesLabel, WrappedLabel

#: The nearest marker within this many pixels of the mouse is the one hovered or clicked.
HIT_PX = 9.0


@dataclass(frozen=True)
class FrontAxes:
    """One front: which point figures go on which axis, and the axes' titles (longest form first)."""

    key: str
    label: str
    x: str  # a FrontPoint attribute
    y: str
    x_titles: tuple[str, ...]
    y_titles: tuple[str, ...]
    title: tuple[str, ...]
    x_scale: float = 1.0  # the attribute's unit to the axis's unit (s -> ms)


FRONTS: tuple[FrontAxes, ...] = (
    FrontAxes("throughput", "Throughput per GPU vs tokens/s per user", "tokens_per_s_per_user",
              "tokens_per_s_per_gpu", ("Speed per user (tokens/s per user)", "Tokens/s per user", "tok/s/user"),
              ("Throughput per GPU (tokens/s)", "Tokens/s per GPU", "tok/s/GPU"),
              ("Throughput per GPU vs speed per user (up and right is better)", "Per GPU vs per user")),
    FrontAxes("cost", "Cost per million tokens vs TPOT", "tpot_s", "usd_per_million_tokens",
              ("Time per output token, TPOT (ms)", "TPOT (ms)"), ("Cost ($ per M tokens)", "$/M tokens", "$/Mtok"),
              ("Cost per million tokens vs TPOT (down and left is better)", "$/M tokens vs TPOT"), 1e3),
)
FRONT_BY_KEY = {f.key: f for f in FRONTS}


def point_text(name: str, point: FrontPoint) -> str:
    """The configuration at a point, in words (plain text; the tooltip and the readout)."""
    cost = ("no price" if point.usd_per_million_tokens is None
            else f"${point.usd_per_million_tokens:,.3g} per M tokens")
    return (f"{name}: TP {point.tp}, batch {point.batch} ({point.gpus} GPU{'s' * (point.gpus != 1)}) · "
            f"{number(point.tokens_per_s_per_gpu)} tokens/s per GPU · {number(point.tokens_per_s_per_user)} "
            f"tokens/s per user · TPOT {number(point.tpot_s * 1e3)} ms · TTFT {number(point.ttft_s * 1e3)} ms · {cost}")


class ParetoChart(QWidget):
    #: A point was clicked: (candidate, its configuration).
    point_clicked = Signal(object, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("pareto_chart")
        self.front_picker = QComboBox(self)
        self.front_picker.setObjectName("pareto_front_picker")
        for front in FRONTS:
            self.front_picker.addItem(front.label, front.key)
        self.front_picker.setToolTip("Which trade-off the curves show: what a GPU delivers against what each user "
                                     "sees, or what a million tokens cost against the time per token")
        self.front_picker.currentIndexChanged.connect(lambda _: self._draw())
        self.plot_widget = pg.PlotWidget(self, axisItems={"bottom": LogCompactAxis("bottom"),
                                                          "left": LogCompactAxis("left")})
        self.plot_widget.setMinimumSize(220, 160)
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.setLogMode(x=True, y=True)
        self.plot.showGrid(x=True, y=True, alpha=0.18)
        self.titles = PlotTitles(self.plot)
        self.legend = WholeLinesLabel("", self)
        self.legend.setObjectName("pareto_legend")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.readout = WrappedLabel(" ", self, max_lines=2)
        self.readout.setObjectName("pareto_readout")
        top = QHBoxLayout()
        top.addWidget(QLabel("Front:", self))
        top.addWidget(self.front_picker, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addWidget(self.plot_widget, 1)
        layout.addWidget(self.legend)
        layout.addWidget(self.readout)
        self.fronts: list[Front] = []
        self.names: dict[Candidate, str] = {}
        self._items: list[pg.PlotDataItem] = []
        #: (candidate, point, x, y) of every marker drawn, x and y in the axes' units.
        self.drawn: list[tuple[Candidate, FrontPoint, float, float]] = []
        self.hovered: tuple[Candidate, FrontPoint] | None = None
        self.plot_widget.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.plot_widget.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        self.plot_widget.viewport().installEventFilter(self)
        self.restyle()

    # --- data ---------------------------------------------------------------------------------

    @property
    def front(self) -> FrontAxes:
        return FRONT_BY_KEY[str(self.front_picker.currentData())]

    def set_front(self, key: str) -> None:
        self.front_picker.setCurrentIndex(self.front_picker.findData(key))

    def set_fronts(self, fronts: list[Front], names: dict[Candidate, str]) -> None:
        """Show these candidates' fronts (``names``: each candidate's display name)."""
        self.fronts, self.names = list(fronts), dict(names)
        self._draw()

    def _draw(self) -> None:
        for item in self._items:
            self.plot.removeItem(item)
        self._items, self.drawn, self.hovered = [], [], None
        axes = self.front
        self.titles.set_axis("bottom", *axes.x_titles)
        self.titles.set_axis("left", *axes.y_titles)
        self.titles.set_title(*axes.title, color=theme.chart_foreground().name())
        legend, missing = [], []
        for n, front in enumerate(self.fronts):
            colour = theme.SERIES_COLOURS[n % len(theme.SERIES_COLOURS)]
            name = self.names.get(front.candidate, front.candidate.label)
            on_front = front.throughput if axes.key == "throughput" else front.cost
            rest = [p for p in front.points if p not in set(on_front) and self._xy(p) is not None]
            if not on_front:
                missing.append(name)
                continue
            line = [self._xy(p) for p in on_front]
            curve = self.plot.plot([xy[0] for xy in line], [xy[1] for xy in line],  # type: ignore[index]
                                   pen=pg.mkPen(colour, width=2), symbol="o", symbolSize=8, symbolBrush=colour,
                                   symbolPen=pg.mkPen(theme.chart_background(), width=1))
            curve.setZValue(10)
            self._items.append(curve)
            if rest:
                faint = self.plot.plot([self._xy(p)[0] for p in rest], [self._xy(p)[1] for p in rest],  # type: ignore[index]
                                       pen=None, symbol="o", symbolSize=5,
                                       symbolBrush=pg.mkBrush(theme.chart_background()),
                                       symbolPen=pg.mkPen(colour, width=1))
                self._items.append(faint)
            for p in (*on_front, *rest):
                x, y = self._xy(p)  # type: ignore[misc]
                self.drawn.append((front.candidate, p, x, y))
            legend.append(f"<span style='color:{colour}'>●</span>&nbsp;{escape(short_name(name, 24))}")
        text = " &nbsp; ".join(legend)
        if missing:
            why = "no priced configuration" if axes.key == "cost" else "no configuration runs"
            text += f"<br><small>Not drawn ({why}): {escape(', '.join(short_name(m, 24) for m in missing))}</small>"
        self.legend.setText(text)
        self.legend.setToolTip("Lines: each candidate's front; hollow markers: its other configurations. "
                               "Hover a marker for its configuration; click it to apply it to the scenario.")
        self.readout.setText(self.summary_text())
        if self.drawn:
            xs = [d[2] for d in self.drawn]
            ys = [d[3] for d in self.drawn]
            self.plot.setXRange(math.log10(min(xs)), math.log10(max(xs)), padding=0.06)
            self.plot.setYRange(math.log10(min(ys)), math.log10(max(ys)), padding=0.08)

    def _xy(self, point: FrontPoint) -> tuple[float, float] | None:
        """The point on the current front's axes (None: a figure is missing or not positive)."""
        axes = self.front
        x, y = getattr(point, axes.x), getattr(point, axes.y)
        if x is None or y is None or x <= 0 or y <= 0:
            return None
        return x * axes.x_scale, y

    def summary_text(self) -> str:
        if not self.fronts:
            return " "
        if not self.drawn:
            return "No configuration to draw on this front."
        return "Hover a marker for its configuration; click it to apply it to the scenario (undoable)."

    # --- hover and click ----------------------------------------------------------------------

    def point_at(self, scene_pos: QPointF) -> tuple[Candidate, FrontPoint] | None:
        """The marker nearest ``scene_pos`` within :data:`HIT_PX` pixels, if any."""
        box = self.plot.getViewBox()
        best, best_d = None, HIT_PX
        for candidate, point, x, y in self.drawn:
            at = box.mapViewToScene(QPointF(math.log10(x), math.log10(y)))
            d = math.hypot(at.x() - scene_pos.x(), at.y() - scene_pos.y())
            if d <= best_d:
                best, best_d = (candidate, point), d
        return best

    def scene_pos_of(self, candidate: Candidate, point: FrontPoint) -> QPointF | None:
        """Where a point's marker is drawn, in scene coordinates (None: not drawn)."""
        for c, p, x, y in self.drawn:
            if c == candidate and p == point:
                return self.plot.getViewBox().mapViewToScene(QPointF(math.log10(x), math.log10(y)))
        return None

    def hover_text(self, candidate: Candidate, point: FrontPoint) -> str:
        return point_text(self.names.get(candidate, candidate.label), point) + " · click to apply"

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        hit = self.point_at(scene_pos)
        self.hovered = hit
        if hit is None:
            self.readout.setText(self.summary_text())
            self.plot_widget.setToolTip("")
            QToolTip.hideText()
            return
        text = self.hover_text(*hit)
        self.readout.setText(text)
        self.plot_widget.setToolTip(text)
        view_pos = self.plot_widget.mapFromScene(scene_pos)
        QToolTip.showText(self.plot_widget.viewport().mapToGlobal(view_pos), text, self.plot_widget)

    def _on_mouse_clicked(self, event: object) -> None:
        if getattr(event, "button", lambda: None)() != Qt.MouseButton.LeftButton:
            return
        hit = self.point_at(event.scenePos())  # type: ignore[attr-defined]
        if hit is not None:
            self.point_clicked.emit(*hit)

    def eventFilter(self, watched: object, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Leave:
            self.hovered = None
            self.readout.setText(self.summary_text())
        return False

    # --- theme --------------------------------------------------------------------------------

    def restyle(self) -> None:
        theme.style_plot(self.plot_widget, [self.plot])
        self._draw()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "plot"):
            self.restyle()
        super().changeEvent(event)
