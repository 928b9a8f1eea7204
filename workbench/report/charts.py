"""Report charts painted with QPainter directly: vector lines, rectangles and text, no images.

Each chart knows the height it wants for a given width and paints itself into a rectangle on
any paint device (the PDF writer, or a QImage in tests). The widgets' pyqtgraph charts are not
reused here: painting straight to the PDF keeps every stroke a vector and every glyph an
embedded font, and needs no widget (the report layer may use QtGui only).

Colours are the Okabe-Ito set the window uses, so a chart reads the same on screen and on paper.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen, QPolygonF

from workbench.core.units import GiB, format_bytes
from workbench.engine.estimate import Estimate

#: Memory components in stacking order (bottom first), their names and colours (as the window).
MEMORY_COMPONENTS: tuple[tuple[str, str, str], ...] = (
    ("weights", "Weights", "#0072B2"),
    ("gradients", "Gradients", "#E69F00"),
    ("optimizer_states", "Optimizer states", "#CC79A7"),
    ("activations", "Activations", "#009E73"),
    ("kv_cache", "KV cache", "#56B4E9"),
    ("recurrent_state", "Recurrent state", "#7B5EA7"),
    ("overhead", "Runtime overhead", "#999999"),
)
PHASE_COLOURS = {"prefill": "#D55E00", "decode": "#0072B2", "training": "#009E73"}
SERIES_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#999999")
INK = QColor("#1a1a1a")
MUTED = QColor("#6b6b6b")
GRID = QColor("#dedede")
BAD = QColor("#c62828")
GOOD = QColor("#1b7f3b")
LOW_COLOUR = QColor("#0072B2")
HIGH_COLOUR = QColor("#E69F00")


@dataclass(frozen=True)
class ChartStyle:
    """Fonts of a chart: the report's family, sizes in points (readable on paper: >= 7.5 pt)."""

    family: str = ""
    text_pt: float = 8.5
    small_pt: float = 7.5

    def font(self, size: float | None = None, bold: bool = False) -> QFont:
        return report_font(self.family, size or self.text_pt, bold)


def report_font(family: str, size: float, bold: bool = False, italic: bool = False) -> QFont:
    """A report font. Ligatures off: text copied from the PDF (or searched) reads "fi", not "ﬁ"."""
    font = QFont(family) if family else QFont()
    font.setPointSizeF(size)
    font.setBold(bold)
    font.setItalic(italic)
    font.setFeature(QFont.Tag("liga"), 0)
    return font


class Chart(ABC):
    """A chart: ``height_for(width)`` and ``paint(painter, rect)``; each kind implements both."""

    style: ChartStyle = ChartStyle()

    @abstractmethod
    def height_for(self, width: float) -> float:
        """Height the chart wants at ``width`` (points)."""

    @abstractmethod
    def paint(self, painter: QPainter, rect: QRectF) -> None:
        """Draw the chart in ``rect``."""


# --- helpers --------------------------------------------------------------------------------------


def _metrics(painter: QPainter, font: QFont) -> QFontMetricsF:
    device = painter.device()
    return QFontMetricsF(font, device) if device is not None else QFontMetricsF(font)


def _text(
    painter: QPainter,
    font: QFont,
    x: float,
    y: float,
    text: str,
    align: str = "left",
    valign: str = "baseline",
    colour: QColor = INK,
) -> QRectF:
    """Draw ``text`` anchored at (x, y); returns the rectangle it covers."""
    metrics = _metrics(painter, font)
    width = metrics.horizontalAdvance(text)
    if align == "right":
        x -= width
    elif align == "center":
        x -= width / 2
    if valign == "top":
        y += metrics.ascent()
    elif valign == "middle":
        y += (metrics.ascent() - metrics.descent()) / 2
    elif valign == "bottom":
        y -= metrics.descent()
    painter.setFont(font)
    painter.setPen(colour)
    painter.drawText(QPointF(x, y), text)
    return QRectF(x, y - metrics.ascent(), width, metrics.height())


def _wrapped(painter: QPainter, font: QFont, rect: QRectF, text: str) -> None:
    """``text`` word-wrapped into ``rect`` (two lines at most, then elided), centred vertically."""
    metrics = _metrics(painter, font)
    flags = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextWordWrap)
    if metrics.boundingRect(rect, flags, text).height() > 2 * metrics.lineSpacing() + 1:
        while text and metrics.boundingRect(rect, flags, text + "…").height() > 2 * metrics.lineSpacing() + 1:
            text = text[:-1]
        text = text.rstrip() + "…"
    painter.setFont(font)
    painter.setPen(INK)
    painter.drawText(rect, flags, text)


def _vertical_text(painter: QPainter, font: QFont, x: float, y_mid: float, text: str) -> None:
    """An axis title read bottom to top, centred on ``y_mid``, its top at ``x``."""
    painter.save()
    painter.translate(x, y_mid)
    painter.rotate(-90)
    _text(painter, font, 0, 0, text, align="center", valign="top", colour=INK)
    painter.restore()


def nice_step(span: float, count: int) -> float:
    raw = span / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for multiple in (1, 2, 2.5, 5, 10):
        if multiple * magnitude >= raw:
            return multiple * magnitude
    return 10 * magnitude


def linear_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (both included when they fall on a tick)."""
    if high <= low:
        high = low + 1.0
    step = nice_step(high - low, count)
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(0.0 if abs(value) < step * 1e-9 else value)
        value += step
    return ticks


def nice_top(value: float, count: int = 5) -> float:
    step = nice_step(value, count)
    return math.ceil(value / step - 1e-9) * step


def tick_label(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:,.6g}"
    return f"{value:.3g}"


def compact_number(value: float) -> str:
    """Axis labels that stay short: 150K, 1.5M, 0.25."""
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= size:
            return f"{value / size:,.3g}{suffix}"
    return tick_label(value)


def short_number(value: float) -> str:
    """3 significant figures, thousands separated: 13.1, 295, 1,979, 0.0662."""
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:,.3g}"


def _text_colour_on(background: str) -> QColor:
    colour = QColor(background)
    luminance = 0.2126 * colour.redF() + 0.7152 * colour.greenF() + 0.0722 * colour.blueF()
    return QColor("#ffffff") if luminance < 0.55 else INK


def _frame(painter: QPainter, plot: QRectF) -> None:
    painter.setPen(QPen(MUTED, 0.8))
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawLine(plot.bottomLeft(), plot.bottomRight())
    painter.drawLine(plot.bottomLeft(), plot.topLeft())


# --- memory stack ---------------------------------------------------------------------------------

RANKS = (("per_gpu", "Most-loaded GPU"), ("average_gpu", "Average GPU"))


def _number(estimate: Estimate, key: str) -> float | None:
    value = estimate.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    # A NaN or infinity reaching Qt's geometry crashes the painter (SIGSEGV inside the document
    # layout): a chart shows a non-finite figure as missing, never draws it.
    return value if math.isfinite(value) else None


class MemoryStackChart(Chart):
    """Stacked bars (most-loaded and average GPU) with the capacity and usable-memory lines."""

    def __init__(self, estimate: Estimate, style: ChartStyle | None = None) -> None:
        self.style = style or ChartStyle()
        self.segments: dict[str, tuple[float, float]] = {}
        for key, _, _ in MEMORY_COMPONENTS:
            values = tuple(max(_number(estimate, f"memory.{rank}.{key}") or 0.0, 0.0) for rank, _ in RANKS)
            self.segments[key] = (values[0], values[1])
        self.totals = tuple(sum(v[i] for v in self.segments.values()) for i in range(2))
        capacity = _number(estimate, "memory.gpu_capacity")
        self.capacity = (
            capacity if capacity is not None else estimate.resolved.cluster.accelerator.memory_bytes
        )
        self.usable = _number(estimate, "memory.usable_capacity")
        fits = estimate.get("memory.fits")
        limit = self.usable or self.capacity
        self.fits = fits if isinstance(fits, bool) else self.totals[0] <= limit
        self.over = max(self.totals[0] - limit, 0.0)
        self.gpu_name = estimate.resolved.cluster.accelerator.name

    def height_for(self, width: float) -> float:
        return 300.0

    def paint(self, painter: QPainter, rect: QRectF) -> None:
        style = self.style
        font, small, bold = style.font(), style.font(style.small_pt), style.font(bold=True)
        metrics = _metrics(painter, font)
        legend_width = min(210.0, rect.width() * 0.32)
        plot = QRectF(
            rect.left() + 62, rect.top() + 22, rect.width() - 62 - legend_width - 16, rect.height() - 22 - 42
        )
        top = nice_top(max(self.totals[0], self.totals[1], self.capacity, 1.0) * 1.08 / GiB)
        scale = plot.height() / top

        def y_of(gib: float) -> float:
            return plot.bottom() - gib * scale

        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        for tick in linear_ticks(0, top, 5):
            y = y_of(tick)
            painter.setPen(QPen(GRID, 0.6))
            painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
            _text(
                painter,
                small,
                plot.left() - 5,
                y,
                tick_label(tick),
                align="right",
                valign="middle",
                colour=MUTED,
            )
        _frame(painter, plot)
        _vertical_text(painter, font, rect.left() + 2, plot.center().y(), "Memory per GPU (GiB)")

        bar_width = min(96.0, plot.width() * 0.22)
        centres = (plot.left() + plot.width() * 0.22, plot.left() + plot.width() * 0.55)
        for i, (_, rank_label) in enumerate(RANKS):
            x = centres[i] - bar_width / 2
            base = 0.0
            for key, _, colour in MEMORY_COMPONENTS:
                height = self.segments[key][i] / GiB
                if height <= 0:
                    continue
                seg = QRectF(x, y_of(base + height), bar_width, height * scale)
                painter.setPen(QPen(QColor("#ffffff"), 0.8))
                painter.setBrush(QBrush(QColor(colour)))
                painter.drawRect(seg)
                if seg.height() >= metrics.height() + 1:
                    _text(
                        painter,
                        small,
                        seg.center().x(),
                        seg.center().y(),
                        format_bytes(self.segments[key][i]),
                        align="center",
                        valign="middle",
                        colour=_text_colour_on(colour),
                    )
                base += height
            _text(
                painter,
                bold,
                centres[i],
                y_of(base) - 4,
                format_bytes(self.totals[i]),
                align="center",
                valign="bottom",
                colour=INK if self.fits else BAD,
            )
            _text(painter, font, centres[i], plot.bottom() + 6, rank_label, align="center", valign="top")
        _text(
            painter,
            small,
            plot.center().x(),
            rect.bottom() - 2,
            "Bars stack what each GPU holds; lines mark the GPU's memory",
            align="center",
            valign="bottom",
            colour=MUTED,
        )

        line_colour = GOOD if self.fits else BAD
        cap_y = y_of(self.capacity / GiB)
        painter.setPen(QPen(INK if self.fits else BAD, 2.0))
        painter.drawLine(QPointF(plot.left(), cap_y), QPointF(plot.right(), cap_y))
        _text(
            painter,
            font,
            plot.right() - 2,
            cap_y - 3,
            f"capacity {format_bytes(self.capacity)}",
            align="right",
            valign="bottom",
            colour=INK if self.fits else BAD,
        )
        if self.usable and abs(self.usable - self.capacity) > 0.005 * self.capacity:
            use_y = y_of(self.usable / GiB)
            painter.setPen(QPen(line_colour, 1.4, Qt.PenStyle.DashLine))
            painter.drawLine(QPointF(plot.left(), use_y), QPointF(plot.right(), use_y))
            _text(
                painter,
                font,
                plot.right() - 2,
                use_y + 3,
                f"usable {format_bytes(self.usable)}",
                align="right",
                valign="top",
                colour=line_colour,
            )
        verdict = (
            "Fits" if self.fits else f"Does not fit: {format_bytes(self.over)} over"
        ) + f" on {self.gpu_name}"
        _text(
            painter,
            bold,
            plot.left(),
            rect.top() + 2,
            verdict,
            valign="top",
            colour=GOOD if self.fits else BAD,
        )

        # Legend: every component present on either GPU, with the most-loaded GPU's share.
        lx = plot.right() + 18
        ly = plot.top() + 4
        _text(painter, bold, lx, ly, "Most-loaded GPU", valign="top")
        ly += metrics.height() + 6
        for key, name, colour in reversed(MEMORY_COMPONENTS):
            value = self.segments[key][0]
            if value <= 0 and self.segments[key][1] <= 0:
                continue
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QBrush(QColor(colour)))
            painter.drawRect(QRectF(lx, ly + 2, 11, 11))
            _text(painter, font, lx + 17, ly, name, valign="top")
            _text(painter, font, rect.right() - 2, ly, format_bytes(value), align="right", valign="top")
            ly += metrics.height() + 5
        painter.restore()


# --- roofline -------------------------------------------------------------------------------------


def _snap_down(value: float) -> float:
    return 10 ** (math.floor(2 * math.log10(value)) / 2)


def _snap_up(value: float) -> float:
    return 10 ** (math.ceil(2 * math.log10(value)) / 2)


@dataclass(frozen=True)
class OperatingPoint:
    phase: str
    intensity: float
    tflops: float
    bound: str


class RooflineChart(Chart):
    """Log-log roofline: bandwidth slope, a ceiling per dtype, the ridge point, the scenario's points."""

    def __init__(self, estimate: Estimate, style: ChartStyle | None = None) -> None:
        self.style = style or ChartStyle()
        accelerator = estimate.resolved.cluster.accelerator
        self.accelerator = accelerator
        self.bandwidth = _number(estimate, "roofline.bandwidth_gbps") or accelerator.memory_bandwidth_gbps
        dtype = estimate.get("roofline.compute_dtype")
        self.dtype = dtype if isinstance(dtype, str) else estimate.resolved.scenario.dtype.value
        peak = _number(estimate, "roofline.peak_tflops")
        self.peak = (
            peak
            or accelerator.dense_tflops.get(estimate.resolved.scenario.dtype)
            or max(accelerator.dense_tflops.values())
        )
        self.ridge = _number(estimate, "roofline.ridge_point") or self.peak * 1000.0 / self.bandwidth
        groups: dict[float, list[str]] = {}
        for d, tflops in accelerator.dense_tflops.items():
            if tflops > 0:
                groups.setdefault(tflops, []).append(d.value)
        self.ceilings = sorted(groups.items())
        phases = ("training",) if estimate.resolved.scenario.is_training else ("prefill", "decode")
        self.points: list[OperatingPoint] = []
        for phase in phases:
            ai = _number(estimate, f"roofline.{phase}.arithmetic_intensity")
            attainable = _number(estimate, f"roofline.{phase}.attainable_tflops")
            bound = estimate.get(f"roofline.{phase}.bound")
            if ai and attainable and ai > 0 and attainable > 0:
                self.points.append(
                    OperatingPoint(phase, ai, attainable, bound if isinstance(bound, str) else "")
                )
        peaks = [t for t, _ in self.ceilings]
        self.x_range = (
            _snap_down(min([1.0, *(p.intensity for p in self.points)]) / 4),
            _snap_up(
                max(
                    [
                        self.ridge,
                        *(t * 1000.0 / self.bandwidth for t in peaks),
                        *(p.intensity for p in self.points),
                    ]
                )
                * 12
            ),
        )
        self.y_range = (
            _snap_down(
                min([self.x_range[0] * self.bandwidth / 1000.0, *(p.tflops for p in self.points)]) / 2
            ),
            _snap_up(max(peaks) * 3.0),
        )

    def height_for(self, width: float) -> float:
        return 340.0

    def paint(self, painter: QPainter, rect: QRectF) -> None:
        style = self.style
        font, small, bold = style.font(), style.font(style.small_pt), style.font(bold=True)
        plot = QRectF(rect.left() + 64, rect.top() + 8, rect.width() - 64 - 8, rect.height() - 8 - 40)
        lx0, lx1 = (math.log10(v) for v in self.x_range)
        ly0, ly1 = (math.log10(v) for v in self.y_range)

        def at(x: float, y: float) -> QPointF:
            px = plot.left() + (math.log10(x) - lx0) / (lx1 - lx0) * plot.width()
            py = plot.bottom() - (math.log10(y) - ly0) / (ly1 - ly0) * plot.height()
            return QPointF(px, py)

        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setClipRect(rect)
        # Decade grid and labels.
        for exponent in range(math.ceil(lx0 - 1e-9), math.floor(lx1 + 1e-9) + 1):
            p = at(10.0**exponent, self.y_range[0])
            painter.setPen(QPen(GRID, 0.6))
            painter.drawLine(QPointF(p.x(), plot.top()), QPointF(p.x(), plot.bottom()))
            # The last decade sits on the plot's right edge: keep its label inside the chart.
            half = _metrics(painter, small).horizontalAdvance(tick_label(10.0**exponent)) / 2
            _text(
                painter,
                small,
                min(max(p.x(), rect.left() + half), rect.right() - half - 1),
                plot.bottom() + 4,
                tick_label(10.0**exponent),
                align="center",
                valign="top",
                colour=MUTED,
            )
        for exponent in range(math.ceil(ly0 - 1e-9), math.floor(ly1 + 1e-9) + 1):
            p = at(self.x_range[0], 10.0**exponent)
            painter.setPen(QPen(GRID, 0.6))
            painter.drawLine(QPointF(plot.left(), p.y()), QPointF(plot.right(), p.y()))
            _text(
                painter,
                small,
                plot.left() - 5,
                p.y(),
                tick_label(10.0**exponent),
                align="right",
                valign="middle",
                colour=MUTED,
            )
        _frame(painter, plot)
        _text(
            painter,
            font,
            plot.center().x(),
            rect.bottom() - 2,
            "Arithmetic intensity (FLOP/byte, log scale)",
            align="center",
            valign="bottom",
        )
        _vertical_text(painter, font, rect.left() + 2, plot.center().y(), "Attainable TFLOPS (log scale)")
        painter.setClipRect(plot.adjusted(-1, -1, 1, 1))

        # Bandwidth slope up to the highest ceiling.
        top_peak = self.ceilings[-1][0]
        slope_start = at(self.x_range[0], self.x_range[0] * self.bandwidth / 1000.0)
        slope_end = at(top_peak * 1000.0 / self.bandwidth, top_peak)
        painter.setPen(QPen(INK, 2.0))
        painter.drawLine(slope_start, slope_end)
        # Ceilings: the scenario's dtype solid and dark, the others dashed and grey.
        label_rows: list[tuple[QPointF, QPointF, str, bool]] = []
        for tflops, names in self.ceilings:
            current = self.dtype in names
            start = at(tflops * 1000.0 / self.bandwidth, tflops)
            end = at(self.x_range[1], tflops)
            painter.setPen(
                QPen(
                    INK if current else MUTED,
                    2.2 if current else 0.9,
                    Qt.PenStyle.SolidLine if current else Qt.PenStyle.DashLine,
                )
            )
            painter.drawLine(start, end)
            label_rows.append((start, end, f"{' / '.join(names)}  {short_number(tflops)} TFLOPS", current))
        ceiling_rects = self._paint_ceiling_labels(painter, plot, label_rows, small, bold, at)
        # Slope label, along the line, in its lower-left part.
        angle = math.degrees(math.atan2(slope_start.y() - slope_end.y(), slope_end.x() - slope_start.x()))
        anchor = QPointF(
            slope_start.x() + (slope_end.x() - slope_start.x()) * 0.12,
            slope_start.y() + (slope_end.y() - slope_start.y()) * 0.12,
        )
        painter.save()
        painter.translate(anchor)
        painter.rotate(-angle)
        _text(
            painter,
            small,
            0,
            -4,
            f"{self.accelerator.memory_type} {short_number(self.bandwidth)} GB/s",
            colour=INK,
        )
        painter.restore()
        # Ridge point of the scenario's dtype.
        ridge = at(self.ridge, self.peak)
        diamond = QPolygonF(
            [
                QPointF(ridge.x(), ridge.y() - 6),
                QPointF(ridge.x() + 6, ridge.y()),
                QPointF(ridge.x(), ridge.y() + 6),
                QPointF(ridge.x() - 6, ridge.y()),
            ]
        )
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(INK))
        painter.drawPolygon(diamond)
        painter.setClipping(False)
        legend = self._legend_rect(painter, plot)
        obstacles = [*ceiling_rects, diamond.boundingRect()]
        if legend is not None:
            obstacles.append(legend)
        centres = [(point, at(point.intensity, point.tflops)) for point in self.points]
        obstacles += [QRectF(c.x() - 7, c.y() - 7, 14, 14) for _, c in centres]
        for point, centre in centres:
            colour = QColor(PHASE_COLOURS.get(point.phase, "#333333"))
            painter.setPen(QPen(QColor("#ffffff"), 1.5))
            painter.setBrush(QBrush(colour))
            painter.drawEllipse(centre, 6.5, 6.5)
        _place_label(
            painter,
            small,
            ridge,
            f"ridge {short_number(self.ridge)} FLOP/byte",
            INK,
            obstacles,
            plot,
            ("above-left", "below-right", "below-left", "above-right"),
        )
        for point, centre in centres:
            colour = QColor(PHASE_COLOURS.get(point.phase, "#333333"))
            order = (
                ("above-left", "left", "below-right", "right", "below-left", "above-right")
                if point.bound == "memory"
                else ("below-left", "below-right", "below", "left", "above-left", "right")
            )
            _place_label(painter, bold, centre, point.phase, colour, obstacles, plot, order)
        if legend is not None:
            self._paint_legend(painter, legend)
        painter.restore()

    def _paint_ceiling_labels(
        self,
        painter: QPainter,
        plot: QRectF,
        rows: list[tuple[QPointF, QPointF, str, bool]],
        small: QFont,
        bold: QFont,
        at: Callable[[float, float], QPointF],
    ) -> list[QRectF]:
        """Each ceiling's label on its line (a white veil hides the line under the text), at the
        right end or moved left along the line, or just left of where the line leaves the slope:
        the first place that covers no other label, point or ceiling line. (Above the line, a
        label an octave below the next ceiling was struck through by it.)"""
        markers = [QRectF(c.x() - 8, c.y() - 8, 16, 16) for c in (at(p.intensity, p.tflops) for p in self.points)]
        ridge = at(self.ridge, self.peak)
        markers.append(QRectF(ridge.x() - 7, ridge.y() - 7, 14, 14))
        placed: list[QRectF] = []

        def crossed(rect: QRectF, own: QPointF) -> bool:
            return any(
                start.y() != own.y() and rect.top() < start.y() < rect.bottom()
                and rect.right() > start.x() and rect.left() < end.x()
                for start, end, _, _ in rows
            )

        order = sorted(rows, key=lambda r: (not r[3], r[0].y()))  # the scenario's own, then from the top
        for start, end, text, current in order:
            font = bold if current else small
            metrics = _metrics(painter, font)
            width, height = metrics.horizontalAdvance(text) + 4, metrics.height()
            rights = [end.x() - 4]
            while rights[-1] - 12 - width >= start.x() + 4:
                rights.append(rights[-1] - 12)
            rights.append(start.x() - 10)
            options = [QRectF(r - width, start.y() - height / 2, width, height) for r in rights]
            free = [
                r for r in options
                if plot.contains(r) and not crossed(r, start)
                and not any(r.intersects(o) for o in (*placed, *markers))
            ]
            rect = (free or options)[0]
            painter.fillRect(rect, QColor("#ffffff"))
            _text(
                painter, font, rect.right() - 2, rect.center().y(), text, align="right", valign="middle",
                colour=INK if current else MUTED,
            )
            placed.append(rect)
        return placed

    def _legend_rows(self) -> list[str]:
        return [
            f"{p.phase}: {short_number(p.intensity)} FLOP/byte, {short_number(p.tflops)} TFLOPS"
            + (f", {p.bound}-bound" if p.bound else "")
            for p in self.points
        ]

    def _legend_rect(self, painter: QPainter, plot: QRectF) -> QRectF | None:
        if not self.points:
            return None
        metrics = _metrics(painter, self.style.font(self.style.small_pt))
        rows = self._legend_rows()
        width = max(metrics.horizontalAdvance(r) for r in rows) + 30
        height = len(rows) * (metrics.height() + 3) + 8
        return QRectF(plot.right() - width - 6, plot.bottom() - height - 6, width, height)

    def _paint_legend(self, painter: QPainter, box: QRectF) -> None:
        small = self.style.font(self.style.small_pt)
        metrics = _metrics(painter, small)
        painter.setPen(QPen(GRID, 0.8))
        painter.setBrush(QBrush(QColor("#ffffff")))
        painter.drawRect(box)
        y = box.top() + 4
        for point, row in zip(self.points, self._legend_rows()):
            colour = QColor(PHASE_COLOURS.get(point.phase, "#333333"))
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QBrush(colour))
            painter.drawEllipse(QPointF(box.left() + 11, y + metrics.height() / 2), 4.5, 4.5)
            _text(painter, small, box.left() + 22, y, row, valign="top")
            y += metrics.height() + 3


_OFFSETS = {
    "above-left": (-1, -1),
    "above-right": (1, -1),
    "below-left": (-1, 1),
    "below-right": (1, 1),
    "left": (-1, 0),
    "right": (1, 0),
    "below": (0, 1),
    "above": (0, -1),
}


def _place_label(
    painter: QPainter,
    font: QFont,
    anchor: QPointF,
    text: str,
    colour: QColor,
    obstacles: list[QRectF],
    bounds: QRectF,
    order: Sequence[str],
    gap: float = 8.0,
) -> QRectF:
    """Put ``text`` next to ``anchor`` at the first spot in ``order`` that overlaps nothing placed yet,
    on a white veil so lines under it stay out of the way; the spot is then an obstacle too."""
    metrics = _metrics(painter, font)
    width, height = metrics.horizontalAdvance(text) + 4, metrics.height()
    fits: list[QRectF] = []
    for name in order:
        dx, dy = _OFFSETS[name]
        x = anchor.x() + (gap if dx > 0 else -gap - width if dx < 0 else -width / 2)
        y = anchor.y() + (gap - 2 if dy > 0 else -gap - height + 2 if dy < 0 else -height / 2)
        rect = QRectF(x, y, width, height)
        if bounds.contains(rect):
            fits.append(rect)
    if not fits:
        fits = [QRectF(anchor.x() + gap, anchor.y() - height / 2, width, height)]

    def overlap(rect: QRectF) -> float:
        return sum(rect.intersected(o).width() * rect.intersected(o).height() for o in obstacles)

    chosen = min(fits, key=overlap)  # the first free spot in ``order``, else the least covered one
    painter.fillRect(chosen, QColor("#ffffff"))
    _text(painter, font, chosen.left() + 2, chosen.top(), text, valign="top", colour=colour)
    obstacles.append(chosen)
    return chosen


# --- comparison bars ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None
    text: str = ""
    low: float | None = None
    high: float | None = None
    highlight: bool = False
    missing: str = "does not fit"


@dataclass
class BarChart(Chart):
    """Horizontal bars, one per candidate (or scenario), with low-high whiskers where known."""

    title: str
    axis_label: str
    bars: Sequence[Bar]
    style: ChartStyle = field(default_factory=ChartStyle)
    row_height: float = 22.0

    def height_for(self, width: float) -> float:
        return 26 + len(self.bars) * self.row_height + 40

    def paint(self, painter: QPainter, rect: QRectF) -> None:
        style = self.style
        font, small, bold = style.font(), style.font(style.small_pt), style.font(bold=True)
        metrics = _metrics(painter, font)
        label_width = min(
            max([metrics.horizontalAdvance(b.label) for b in self.bars] + [40]) + 10, rect.width() * 0.42
        )
        bold_metrics = _metrics(painter, bold)
        value_width = (
            max(
                [
                    bold_metrics.horizontalAdvance(b.text or short_number(b.value))
                    for b in self.bars
                    if b.value is not None
                ]
                + [30]
            )
            + 10
        )
        plot = QRectF(
            rect.left() + label_width,
            rect.top() + 24,
            rect.width() - label_width - value_width,
            len(self.bars) * self.row_height,
        )
        values = [v for b in self.bars for v in (b.value, b.high, b.low) if v is not None and v > 0]
        count = max(2, int(plot.width() / 55))
        top = nice_top(max(values) * 1.02, count) if values else 1.0
        scale = plot.width() / top

        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        _text(painter, bold, rect.left(), rect.top() + 2, self.title, valign="top")
        for tick in linear_ticks(0, top, count):
            x = plot.left() + tick * scale
            painter.setPen(QPen(GRID, 0.6))
            painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()))
            _text(
                painter,
                small,
                x,
                plot.bottom() + 4,
                compact_number(tick),
                align="center",
                valign="top",
                colour=MUTED,
            )
        _text(
            painter,
            font,
            plot.center().x(),
            rect.bottom() - 2,
            self.axis_label,
            align="center",
            valign="bottom",
        )
        for i, bar in enumerate(self.bars):
            y = plot.top() + i * self.row_height
            mid = y + self.row_height / 2
            elided = metrics.elidedText(bar.label, Qt.TextElideMode.ElideMiddle, label_width - 8)
            _text(
                painter,
                bold if bar.highlight else font,
                plot.left() - 6,
                mid,
                elided,
                align="right",
                valign="middle",
            )
            if bar.value is None:
                _text(painter, font, plot.left() + 6, mid, bar.missing, valign="middle", colour=BAD)
                continue
            colour = QColor(SERIES_COLOURS[0] if bar.highlight else "#8fb8d8")
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QBrush(colour))
            painter.drawRect(QRectF(plot.left(), y + 4, max(bar.value * scale, 1.0), self.row_height - 8))
            end = plot.left() + bar.value * scale
            if bar.low is not None and bar.high is not None:
                lo, hi = sorted((bar.low, bar.high))
                painter.setPen(QPen(INK, 1.1))
                x0, x1 = plot.left() + lo * scale, plot.left() + hi * scale
                painter.drawLine(QPointF(x0, mid), QPointF(x1, mid))
                painter.drawLine(QPointF(x0, mid - 4), QPointF(x0, mid + 4))
                painter.drawLine(QPointF(x1, mid - 4), QPointF(x1, mid + 4))
                end = max(end, x1)
            _text(
                painter,
                bold if bar.highlight else small,
                end + 5,
                mid,
                bar.text or short_number(bar.value),
                valign="middle",
            )
        _frame(painter, plot)
        painter.restore()


# --- Pareto fronts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParetoSeries:
    """One candidate's front: (x, y) points in order along the front."""

    label: str
    points: Sequence[tuple[float, float]]


@dataclass
class ParetoChart(Chart):
    """Each candidate's front as a line of markers: x tokens/s per user, y throughput per GPU
    (both higher is better: the best configurations lie towards the top right)."""

    title: str
    x_label: str
    y_label: str
    series: Sequence[ParetoSeries]
    style: ChartStyle = field(default_factory=ChartStyle)
    plot_height: float = 200.0

    def height_for(self, width: float) -> float:
        legend_rows = math.ceil(len(self.series) / 3)
        return 24 + self.plot_height + 34 + legend_rows * 14 + 6

    def paint(self, painter: QPainter, rect: QRectF) -> None:
        style = self.style
        font, small, bold = style.font(), style.font(style.small_pt), style.font(bold=True)
        finite = [(x, y) for s in self.series for x, y in s.points if math.isfinite(x) and math.isfinite(y)]
        left_gutter = 46.0
        plot = QRectF(rect.left() + left_gutter + 14, rect.top() + 24, rect.width() - left_gutter - 24,
                      self.plot_height)  # fmt: skip
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        _text(painter, bold, rect.left(), rect.top() + 2, self.title, valign="top")
        if not finite:
            _text(painter, font, plot.left() + 6, plot.center().y(), "no configuration runs", colour=BAD)
            painter.restore()
            return
        x_top = nice_top(max(x for x, _ in finite) * 1.05, max(2, int(plot.width() / 60)))
        y_top = nice_top(max(y for _, y in finite) * 1.05, 5)
        sx, sy = plot.width() / x_top, plot.height() / y_top
        for tick in linear_ticks(0, x_top, max(2, int(plot.width() / 60))):
            x = plot.left() + tick * sx
            painter.setPen(QPen(GRID, 0.6))
            painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()))
            _text(painter, small, x, plot.bottom() + 4, compact_number(tick), align="center", valign="top",
                  colour=MUTED)  # fmt: skip
        for tick in linear_ticks(0, y_top, 5):
            y = plot.bottom() - tick * sy
            painter.setPen(QPen(GRID, 0.6))
            painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
            _text(painter, small, plot.left() - 4, y, compact_number(tick), align="right", valign="middle",
                  colour=MUTED)  # fmt: skip
        _text(painter, font, plot.center().x(), plot.bottom() + 28, self.x_label, align="center", valign="bottom")
        _vertical_text(painter, font, rect.left(), plot.center().y(), self.y_label)
        for k, s in enumerate(self.series):
            colour = QColor(SERIES_COLOURS[k % len(SERIES_COLOURS)])
            pts = [QPointF(plot.left() + x * sx, plot.bottom() - y * sy) for x, y in s.points
                   if math.isfinite(x) and math.isfinite(y)]  # fmt: skip
            painter.setPen(QPen(colour, 1.4))
            for a, b in zip(pts, pts[1:]):
                painter.drawLine(a, b)
            painter.setBrush(QBrush(colour))
            for p in pts:
                painter.drawEllipse(p, 2.4, 2.4)
        _frame(painter, plot)
        # legend: three per row under the axis title
        legend_top = plot.bottom() + 34
        column = rect.width() / 3
        for k, s in enumerate(self.series):
            colour = QColor(SERIES_COLOURS[k % len(SERIES_COLOURS)])
            x = rect.left() + (k % 3) * column
            y = legend_top + (k // 3) * 14 + 7
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QBrush(colour))
            painter.drawRect(QRectF(x, y - 4, 10, 8))
            label = _metrics(painter, small).elidedText(s.label, Qt.TextElideMode.ElideRight, column - 18)
            _text(painter, small, x + 14, y, label, valign="middle")
        painter.restore()


# --- tornado --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TornadoRow:
    label: str
    low_result: float
    high_result: float
    low_input: str = ""
    high_input: str = ""


@dataclass
class TornadoChart(Chart):
    """One bar per assumption: the headline number with the assumption at each end of its range."""

    title: str
    axis_label: str
    base: float
    rows: Sequence[TornadoRow]
    style: ChartStyle = field(default_factory=ChartStyle)
    row_height: float = 28.0

    def height_for(self, width: float) -> float:
        return (40 if self.title else 22) + 4 + len(self.rows) * self.row_height + 40

    def paint(self, painter: QPainter, rect: QRectF) -> None:
        style = self.style
        font, small, bold = style.font(), style.font(style.small_pt), style.font(bold=True)
        label_width = min(
            max([_metrics(painter, small).horizontalAdvance(r.label) for r in self.rows] + [60]) + 12,
            rect.width() * 0.3,
        )
        head = 40 if self.title else 22
        plot = QRectF(
            rect.left() + label_width + 56,
            rect.top() + head + 4,
            rect.width() - label_width - 56 - 60,
            len(self.rows) * self.row_height,
        )
        ends = [v for r in self.rows for v in (r.low_result, r.high_result)] + [self.base]
        low, high = min(ends), max(ends)
        pad = (high - low) * 0.06 or abs(self.base) * 0.05 or 1.0
        low, high = low - pad, high + pad
        ticks = linear_ticks(low, high, 5)

        def x_of(value: float) -> float:
            return plot.left() + (value - low) / (high - low) * plot.width()

        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        if self.title:
            _text(painter, bold, rect.left(), rect.top() + 2, self.title, valign="top")
        lx = rect.left()
        ly = rect.top() + head - 20
        for colour, text in (
            (LOW_COLOUR, "assumption at the low end of its range"),
            (HIGH_COLOUR, "at the high end"),
        ):
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QBrush(colour))
            painter.drawRect(QRectF(lx, ly + 2, 10, 10))
            box = _text(painter, small, lx + 15, ly, text, valign="top")
            lx = box.right() + 18
        for tick in ticks:
            if tick < low or tick > high:
                continue
            x = x_of(tick)
            painter.setPen(QPen(GRID, 0.6))
            painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()))
            _text(
                painter,
                small,
                x,
                plot.bottom() + 4,
                tick_label(tick),
                align="center",
                valign="top",
                colour=MUTED,
            )
        _text(
            painter,
            font,
            plot.center().x(),
            rect.bottom() - 2,
            self.axis_label,
            align="center",
            valign="bottom",
        )
        base_x = x_of(self.base)
        for i, row in enumerate(self.rows):
            y = plot.top() + i * self.row_height
            mid = y + self.row_height / 2
            _wrapped(painter, small, QRectF(rect.left(), y, label_width - 6, self.row_height), row.label)
            for result, colour, text in (
                (row.low_result, LOW_COLOUR, row.low_input),
                (row.high_result, HIGH_COLOUR, row.high_input),
            ):
                x = x_of(result)
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(QBrush(colour))
                painter.drawRect(
                    QRectF(min(x, base_x), y + 4, max(abs(x - base_x), 1.0), self.row_height - 8)
                )
                if text:
                    left = x < base_x or (x == base_x and colour == LOW_COLOUR)
                    _text(
                        painter,
                        small,
                        x - 4 if left else x + 4,
                        mid,
                        text,
                        align="right" if left else "left",
                        valign="middle",
                        colour=MUTED,
                    )
        painter.setPen(QPen(INK, 1.4))
        painter.drawLine(QPointF(base_x, plot.top() - 4), QPointF(base_x, plot.bottom()))
        _text(
            painter,
            small,
            base_x,
            plot.top() - 6,
            f"estimate {short_number(self.base)}",
            align="center",
            valign="bottom",
        )
        painter.setPen(QPen(MUTED, 0.8))
        painter.drawLine(plot.bottomLeft(), plot.bottomRight())
        painter.restore()


class SideBySide(Chart):
    """Charts in one row, sharing the width equally (two comparison charts on one line)."""

    def __init__(self, charts: Sequence[Chart], gap: float = 24.0) -> None:
        self.charts = list(charts)
        self.gap = gap

    def _width(self, width: float) -> float:
        return (width - self.gap * (len(self.charts) - 1)) / max(len(self.charts), 1)

    def height_for(self, width: float) -> float:
        return max(c.height_for(self._width(width)) for c in self.charts)

    def paint(self, painter: QPainter, rect: QRectF) -> None:
        width = self._width(rect.width())
        for i, chart in enumerate(self.charts):
            chart.style = self.style
            x = rect.left() + i * (width + self.gap)
            painter.save()
            chart.paint(painter, QRectF(x, rect.top(), width, chart.height_for(width)))
            painter.restore()
