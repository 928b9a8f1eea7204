"""Tornado: how far each assumption, swung alone over its plausible range, moves the headline
number. One horizontal bar per assumption, biggest swing on top; the blue half is the value with
the assumption at its low end, the orange half at its high end; the line is the likely value.

The two bar items and the base line are created once; an update moves them (setOpts). Value
labels are kept and reused.

Every factor label must be readable at any window size: a label wider than the room the chart
gives it is wrapped at word breaks (the range kept whole) on up to three lines, the last one elided
if even that is too little (the full text is the chart's tooltip), and the chart draws only as many
bars as its height gives those lines; the rest are named under it. (pyqtgraph silently drops an axis label wider than the
axis, which left one factor of six labelled beside the side panels.)
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QResizeEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from workbench.engine.compare import format_seconds
from workbench.engine.sensitivity import Bar, Sensitivity
from workbench.gui import theme
from workbench.gui.charts.axes import CompactAxis
from workbench.gui.charts.plot_titles import PlotTitles
from workbench.gui.compare.compare_format import number, usd
from workbench.gui.elided_label import WrappedLabel

LOW_COLOUR = theme.SERIES_COLOURS[0]
HIGH_COLOUR = theme.SERIES_COLOURS[1]
BAR_HEIGHT = 0.62
#: Bars drawn at most; swings of zero are left out (listed under the chart).
MAX_BARS = 16
#: The factor labels take at most this share of the chart's width.
LABEL_SHARE = 0.42
#: ... but never less than this many pixels (a narrower chart elides more).
MIN_LABEL_PX = 150
#: Pixels between two rows' labels.
ROW_GAP_PX = 4
#: Bars drawn at least, however low the chart (the minimum height gives them room).
MIN_BARS = 3


def short_value(value: float, unit: str) -> str:
    """A bar-end label: $0.25, 38 ms, 3,400."""
    if unit.startswith("USD"):
        return usd(value)
    if unit == "s":
        return format_seconds(value)
    return number(value)


def factor_value(value: float, unit: str) -> str:
    """A factor's setting: 0.7x price, 0.3 ms, 0.35, 32 tokens, 0.156 USD/kWh."""
    if unit == "x price":
        return f"{value:.2g}x price"
    if unit == "s":
        return format_seconds(value)
    text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return text if unit in ("", "fraction", "ratio") else f"{text} {unit}"


def factor_range(bar: Bar) -> str:
    """``0.5 – 0.78``, ``0.7x – 1.3x price``, ``0.3 ms – 3 ms``: the range the factor is swung over."""
    factor = bar.factor
    if factor.unit == "x price":
        return f"{factor.low:.2g}x – {factor.high:.2g}x price"
    if factor.unit == "s":
        return f"{format_seconds(factor.low)} – {format_seconds(factor.high)}"
    low = factor_value(factor.low, "")
    return f"{low} – {factor_value(factor.high, factor.unit)}"


#: Lines a factor label may take.
MAX_LABEL_LINES = 3


def fit_label(title: str, detail: str, metrics: QFontMetrics, room: int) -> str:
    """``title (detail)`` wrapped at spaces to lines of at most ``room`` pixels (``detail``, the
    range, is never split), at most :data:`MAX_LABEL_LINES` of them, the last elided if needed."""
    words = [*title.split(), f"({detail})".replace(" ", "\u00a0")]
    lines: list[str] = []
    for word in words:
        if lines and metrics.horizontalAdvance(f"{lines[-1]} {word}") <= room - 4:  # elidedText is stricter
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    if len(lines) > MAX_LABEL_LINES:
        lines = [*lines[:MAX_LABEL_LINES - 1], " ".join(lines[MAX_LABEL_LINES - 1:])]
    elide = Qt.TextElideMode.ElideRight
    return "\n".join(metrics.elidedText(line, elide, room) for line in lines).replace("\u00a0", " ")


class TornadoChart(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("tornado_chart")
        self.plot_widget = pg.PlotWidget(self, axisItems={"bottom": CompactAxis("bottom")})
        self.plot_widget.setMinimumSize(360, 200)
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.showGrid(x=True, y=False, alpha=0.2)
        self.plot.invertY(True)
        self.plot.getAxis("left").setStyle(tickLength=0)
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.titles = PlotTitles(self.plot)
        self.low_bars = pg.BarGraphItem(x0=[], y=[], width=[], height=BAR_HEIGHT, brush=LOW_COLOUR,
                                        pen=pg.mkPen(None))
        self.high_bars = pg.BarGraphItem(x0=[], y=[], width=[], height=BAR_HEIGHT, brush=HIGH_COLOUR,
                                         pen=pg.mkPen(None))
        self.plot.addItem(self.low_bars)
        self.plot.addItem(self.high_bars)
        self.base_line = pg.InfiniteLine(angle=90, movable=False)
        self.base_line.setZValue(10)
        self.plot.addItem(self.base_line, ignoreBounds=True)
        self.base_label = pg.TextItem("", anchor=(0.5, 1.0))
        self.plot.addItem(self.base_label, ignoreBounds=True)
        self.message = pg.TextItem("", anchor=(0.5, 0.5))
        self.plot.addItem(self.message, ignoreBounds=True)
        self.value_labels: list[pg.TextItem] = []
        self._extent = (0.0, 1.0, 0)
        self.plot.vb.sigResized.connect(self._on_view_resized)
        self._layout_key: tuple[int, int] = (0, 0)  # (label room, rows) the labels were laid out for

        legend = QHBoxLayout()
        self.title = QLabel("", self)
        self.title.setWordWrap(True)
        legend.addWidget(self.title, 1)
        legend.addStretch(0)
        for colour, text in ((LOW_COLOUR, "assumption at its low end"), (HIGH_COLOUR, "at its high end")):
            swatch = QLabel("■", self)
            swatch.setStyleSheet(f"color: {colour}")
            legend.addWidget(swatch)
            legend.addWidget(QLabel(text, self))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(legend)
        layout.addWidget(self.plot_widget, 1)
        # At most two lines (the rest in its tooltip): a longer note pushed the plot's axis under it.
        self.more = WrappedLabel("", self, max_lines=2)
        self.more.setObjectName("tornado_more")
        self.more.setVisible(False)
        layout.addWidget(self.more)

        self.sensitivity: Sensitivity | None = None
        self.bars: list[Bar] = []  # the bars drawn, top first
        self.changing: set[str] = set()
        self._tick_labels: list[str] = []
        self._shown_labels: list[str] = []
        self.restyle()

    # --- update -------------------------------------------------------------------------------

    def update_sensitivity(self, sens: Sensitivity | None, changing: set[str] | None = None) -> None:
        """Draw ``sens``'s bars (biggest swing first); ``changing``: factor ids whose swing changes
        the recommendation (marked ⚠)."""
        self.sensitivity = sens
        self.changing = set(changing or ())
        moving = [b for b in sens.bars if b.swing > 0] if sens is not None else []
        room = self._label_room()
        labels = self._fitted_labels(moving, room)
        rows = self._rows_that_fit(max((t.count("\n") + 1 for t in labels), default=1))
        self._layout_key = (room, rows)
        bars = moving[:min(MAX_BARS, rows)]
        self.bars = bars
        left_out = moving[len(bars):]
        self.more.setText(f"{len(left_out)} smaller swing{'s' if len(left_out) > 1 else ''} not drawn "
                          f"(a taller chart shows more): {', '.join(b.factor.title for b in left_out)}."
                          if left_out else "")
        self.more.setVisible(bool(left_out))
        base = sens.base if sens is not None and sens.base is not None else 0.0
        unit = sens.unit if sens is not None else ""
        low_x0, low_w, high_x0, high_w, ys_low, ys_high = [], [], [], [], [], []
        ends: list[tuple[float, float, str]] = []
        for y, bar in enumerate(bars):
            for value, x0s, widths, ys in ((bar.at_low, low_x0, low_w, ys_low),
                                           (bar.at_high, high_x0, high_w, ys_high)):
                if value is None:
                    continue
                x0s.append(min(base, value))
                widths.append(abs(value - base))
                ys.append(y)
                ends.append((value, y, short_value(value, unit)))
        self.low_bars.setOpts(x0=low_x0, y=ys_low, width=low_w, height=BAR_HEIGHT)
        self.high_bars.setOpts(x0=high_x0, y=ys_high, width=high_w, height=BAR_HEIGHT)
        self._tick_labels = [("⚠ " if b.factor.id in self.changing else "") + f"{b.factor.title} ({factor_range(b)})"
                             for b in bars]
        self._shown_labels = labels[:len(bars)]
        self.plot.getAxis("left").setTicks([list(enumerate(self._shown_labels))])
        self.plot_widget.setToolTip("\n".join(self._tick_labels))
        values = [base] + [v for v, _, _ in ends]
        lo, hi = min(values), max(values)
        span = (hi - lo) or abs(base) * 0.1 or 1.0
        metrics = QFontMetrics(self._tick_font)
        self._extent = (lo, hi if hi > lo else lo + span,
                        max((metrics.horizontalAdvance(t) for _, _, t in ends), default=0) + 24)
        left, right = self._fit_range()
        self.plot.setYRange(-1.1, max(len(bars), 1) - 0.4, padding=0)
        fg = theme.chart_foreground()
        self.base_line.setPos(base)
        self.base_line.setPen(pg.mkPen(fg, width=1.5, style=Qt.PenStyle.DashLine))
        self.base_label.setText(f"likely {short_value(base, unit)}" if sens is not None and sens.base is not None
                                else "")
        self.base_label.setColor(fg)
        self.base_label.setPos(base, -0.45)
        while len(self.value_labels) < len(ends):
            label = pg.TextItem("")
            self.plot.addItem(label, ignoreBounds=True)
            self.value_labels.append(label)
        for n, label in enumerate(self.value_labels):
            if n < len(ends):
                value, y, text = ends[n]
                label.setAnchor((0, 0.5) if value >= base else (1, 0.5))
                label.setText(text)
                label.setColor(fg)
                label.setPos(value + (span * 0.01 if value >= base else -span * 0.01), y)
                label.setVisible(True)
            else:
                label.setVisible(False)
        self.message.setText("" if bars or sens is None else "no assumption moves this number")
        self.message.setColor(fg)
        self.message.setPos((left + right) / 2, 0)
        if sens is not None:
            # Under a narrow chart the unit alone: the header above names the metric.
            self.titles.set_axis("bottom", *((f"{sens.metric_title} ({unit})", unit) if unit else (sens.metric_title,)))
            self.title.setText(f"<b>{sens.metric_title}</b> of “{sens.scenario}”, each assumption swung alone")
        self._fit_axis()

    def _label_room(self) -> int:
        """Pixels a factor label may take."""
        return max(MIN_LABEL_PX, int(self.width() * LABEL_SHARE))

    def _fitted_labels(self, bars: list[Bar], room: int) -> list[str]:
        """The labels of (at most :data:`MAX_BARS` of) ``bars`` as drawn in ``room`` pixels."""
        metrics = QFontMetrics(self._tick_font)
        return [fit_label(("⚠ " if b.factor.id in self.changing else "") + b.factor.title, factor_range(b),
                          metrics, room) for b in bars[:MAX_BARS]]

    def _rows_that_fit(self, lines: int) -> int:
        """Bars the plot's height gives ``lines`` lines of label each, with a gap (the y range is
        rows + 0.7)."""
        height = self.plot.vb.height()
        if height <= 0:
            return MAX_BARS
        row = lines * QFontMetrics(self._tick_font).height() + ROW_GAP_PX
        return max(MIN_BARS, int(height / row - 0.7))

    def _needs_layout(self) -> bool:
        """The chart's size asks for other labels or another number of bars than drawn."""
        if self.sensitivity is None:
            return False
        room = self._label_room()
        moving = [b for b in self.sensitivity.bars if b.swing > 0]
        lines = max((t.count("\n") + 1 for t in self._fitted_labels(moving, room)), default=1)
        return (room, self._rows_that_fit(lines)) != self._layout_key

    def _on_view_resized(self) -> None:
        self._fit_range()
        if self._needs_layout():
            self.update_sensitivity(self.sensitivity, self.changing)

    def _fit_range(self) -> tuple[float, float]:
        """The x range that leaves room for the value labels at both ends, at the plot's width."""
        lo, hi, label_px = self._extent
        pixels = self.plot.vb.width()
        usable = max(pixels - 2 * label_px, pixels * 0.3) if pixels > 0 else 1.0
        per_px = (hi - lo) / usable if pixels > 0 else (hi - lo) * 0.0025
        left, right = lo - label_px * per_px, hi + label_px * per_px
        self.plot.setXRange(left, right, padding=0)
        return left, right

    def drawn(self) -> list[tuple[str, float | None, float | None]]:
        """(factor id, value at the low end, value at the high end) as the bars are drawn, top first:
        read back from the bar items (the tests hold them equal to the sensitivity's bars)."""
        base = self.sensitivity.base if self.sensitivity is not None and self.sensitivity.base is not None else 0.0
        out = []
        for item, which in ((self.low_bars, 0), (self.high_bars, 1)):
            opts = item.opts
            for x0, width, y in zip(opts["x0"], opts["width"], opts["y"]):
                end = x0 + width if abs(x0 - base) <= abs(x0 + width - base) else x0
                out.append((int(y), which, float(end)))
        rows: dict[int, list[float | None]] = {y: [None, None] for y in range(len(self.bars))}
        for y, which, end in out:
            rows[y][which] = end
        return [(self.bars[y].factor.id, rows[y][0], rows[y][1]) for y in range(len(self.bars))]

    @property
    def tick_labels(self) -> list[str]:
        """Each drawn bar's full label (the axis shows it broken or elided to fit)."""
        return list(self._tick_labels)

    @property
    def shown_labels(self) -> list[str]:
        """The labels as the axis draws them (wrapped, elided, where the room asks for it)."""
        return list(self._shown_labels)

    # --- look ---------------------------------------------------------------------------------

    def _fit_axis(self) -> None:
        """Room for the widest line of the labels as drawn (each already fits the label room)."""
        metrics = QFontMetrics(self._tick_font)
        widest = max((metrics.horizontalAdvance(line) for t in self._shown_labels for line in t.split("\n")),
                     default=40)
        self.plot.getAxis("left").setWidth(widest + 14)

    def restyle(self) -> None:
        theme.style_plot(self.plot_widget, [self.plot])
        self._tick_font = QFont()
        self.plot.getAxis("left").setStyle(tickFont=self._tick_font)
        veil = QColor(theme.chart_background())  # the base line runs under its label: keep the text clear
        self.base_label.fill = pg.mkBrush(veil)
        self.base_label.setZValue(11)
        if self.sensitivity is not None:
            self.update_sensitivity(self.sensitivity, self.changing)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        if self._needs_layout():
            self.update_sensitivity(self.sensitivity, self.changing)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            self.restyle()
        super().changeEvent(event)
