"""Find what a user cannot read in a window as laid out on screen: a label whose text is wider than
the label (cut, not shortened with a tooltip), a label pushed partly out of sight sideways, a table
column behind a horizontal scrollbar, a table cell shortened with no tooltip to read it whole, and in
the charts: a plot wider or taller than its view (its right or bottom part cut off), a title, axis
title, legend or label in the plot cut by the view's or the plot area's edge, and a plot area too
small to read (a stack of bars a few pixels wide).

Used by the Xvfb layout test (tests/gui/layout_shots.py runs it inside the real app); it reads only
widgets the user can see (on the shown tab, not scrolled out of view vertically).
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QRect, QRectF, Qt
from PySide6.QtGui import QFontMetrics, QTextDocument
from PySide6.QtWidgets import QAbstractButton, QAbstractItemView, QGraphicsTextItem, QLabel, QLayout, QStyle, QTableView, QWidget

#: Catalog tables scroll sideways by design (a dozen figures per row); their first columns must stay
#: in view. By object name of the table's parent widget class; others must show every column.
KEY_COLUMNS = {"ModelTable": 3, "AcceleratorTable": 3}


def _name(widget: QWidget) -> str:
    parts = []
    while widget is not None and len(parts) < 4:
        parts.append(widget.objectName() or type(widget).__name__)
        widget = widget.parentWidget()
    return "/".join(reversed(parts))


def _seen(widget: QWidget) -> QRect:
    """The part of the widget not clipped by its parents (scroll areas, splitters), in its coordinates."""
    return widget.visibleRegion().boundingRect()


def _text_width(label: QLabel) -> int:
    text = label.text()
    if not text.strip():
        return 0
    rich = label.textFormat() == Qt.TextFormat.RichText or (
        label.textFormat() == Qt.TextFormat.AutoText and "<" in text and ">" in text)
    if rich:
        doc = QTextDocument()
        doc.setDefaultFont(label.font())
        doc.setDocumentMargin(0)
        doc.setHtml(text)
        return int(doc.idealWidth())
    if label.buddy() is not None:  # "&Metric:" draws "Metric:" (the & marks the shortcut key)
        text = text.replace("&&", "\0").replace("&", "").replace("\0", "&")
    metrics = QFontMetrics(label.font())
    return max(metrics.horizontalAdvance(line) for line in text.split("\n"))


def label_problems(label: QLabel) -> list[str]:
    seen = _seen(label)
    if seen.isEmpty() or seen.height() < label.height() // 2:
        return []  # scrolled out of view (vertically) or covered: not on screen
    name = f"{_name(label)} {label.text()[:60]!r}"
    problems = []
    # Where the text is drawn (its alignment), and whether that span is on screen.
    text_width = min(label.contentsRect().width(), _text_width(label))
    area = label.contentsRect()
    align = label.alignment()
    if align & Qt.AlignmentFlag.AlignRight:
        start = area.right() - text_width
    elif align & Qt.AlignmentFlag.AlignHCenter:
        start = area.left() + (area.width() - text_width) // 2
    else:
        start = area.left()
    if text_width > 0 and (seen.left() > start + 2 or seen.right() < start + text_width - 3):
        problems.append(f"label out of sight sideways (x {seen.left()}..{seen.right()} shown, text at "
                        f"{start}..{start + text_width}): {name}")
    if hasattr(label, "is_elided"):  # ElidedLabel: shortened with the whole text as its tooltip
        if label.is_elided() and label.text() not in label.toolTip():
            problems.append(f"shortened label without its text as tooltip: {name}")
        return problems
    if label.wordWrap() and label.text().strip():
        # Lines that wrap below the label's height are cut off at its bottom.
        needed = label.heightForWidth(label.width())
        if needed > label.height() + 2:
            problems.append(f"wrapped label cut at the bottom ({needed} px of text in {label.height()} px): {name}")
        return problems
    if not label.text().strip() or label.pixmap() is not None and not label.pixmap().isNull():
        return problems
    room = label.contentsRect().width() - 2 * label.margin() - label.indent() * (label.indent() > 0)
    if _text_width(label) > room + 1:
        problems.append(f"label text cut ({_text_width(label)} px in {room} px): {name}")
    return problems


def button_problems(button: QAbstractButton) -> list[str]:
    seen = _seen(button)
    if seen.isEmpty() or not button.text() or type(button).__name__ in ("QToolButton", "QCheckBox"):
        return []
    if button.sizeHint().width() > button.width() + 2 and not button.toolTip():
        return [f"button text cut ({button.sizeHint().width()} px in {button.width()} px): {_name(button)} "
                f"{button.text()!r}"]
    return []


def table_problems(view: QTableView) -> list[str]:
    if _seen(view).isEmpty() or view.model() is None:
        return []
    model, header = view.model(), view.horizontalHeader()
    shown = [c for c in range(model.columnCount()) if not view.isColumnHidden(c)]
    if not shown:
        return []
    order = sorted(shown, key=header.visualIndex)
    keep = KEY_COLUMNS.get(type(view.parentWidget()).__name__)
    # The last column stretches (its text shortened, whole in the tooltip): all before it must show.
    must_show = order[:keep] if keep is not None else order[:-1] if header.stretchLastSection() else order
    width = view.viewport().width()
    problems = []
    if keep is None and view.horizontalScrollBar().isVisible():
        problems.append(f"table scrolls sideways ({view.horizontalScrollBar().maximum()} px): {_name(view)}")
    for column in must_show:
        right = header.sectionViewportPosition(column) + header.sectionSize(column)
        if header.sectionViewportPosition(column) < 0 or right > width + 1:
            title = str(model.headerData(column, Qt.Orientation.Horizontal)).replace("\n", " ")
            problems.append(f"column {title!r} behind the scrollbar ({right} px in {width} px): {_name(view)}")
    metrics = QFontMetrics(view.font())
    # A cell's text is inset by the style's focus-frame margin (+1) on each side.
    margin = 2 * (view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1)
    first = max(view.rowAt(0), 0)
    last = view.rowAt(view.viewport().height() - 1)
    last = model.rowCount() - 1 if last < 0 else last
    for row in range(first, min(last, first + 60) + 1):
        for column in shown:
            index = model.index(row, column)
            text = index.data(Qt.ItemDataRole.DisplayRole)
            if not isinstance(text, str) or not text:
                continue
            room = header.sectionSize(column) - margin
            if metrics.horizontalAdvance(text) > room and not index.data(Qt.ItemDataRole.ToolTipRole):
                problems.append(f"cell {text!r} shortened with no tooltip: {_name(view)}")
    return problems


#: The smallest plot area (view box, logical pixels) a chart may leave for its data: narrower, a
#: stack of bars is a sliver; lower, an axis shows one or two ticks.
MIN_PLOT_AREA = (100, 45)


def _ink(item: QGraphicsTextItem) -> QRectF:
    """Where a text item's glyphs are, in scene coordinates (its document margin is empty space)."""
    margin = item.document().documentMargin()
    return item.mapRectToScene(item.boundingRect().adjusted(margin, margin, -margin, -margin))


def _inside(inner: QRectF, outer: QRectF) -> bool:
    return outer.adjusted(-1, -1, 1, 1).contains(inner)


def chart_problems(view: pg.GraphicsView) -> list[str]:
    """What a user cannot read in one pyqtgraph view as painted now."""
    if _seen(view.viewport()).isEmpty():
        return []
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    out = []
    for plot in (item for item in view.scene().items() if isinstance(item, pg.PlotItem) and item.isVisible()):
        name = f"{_name(view)} plot {plot.titleLabel.text or plot.getAxis('left').labelText!r}"
        frame = plot.sceneBoundingRect()
        if not _inside(frame, shown):
            out.append(f"plot {frame.width():.0f}x{frame.height():.0f} px in a view of {shown.width():.0f}x"
                       f"{shown.height():.0f} px (its edge cut off): {name}")
        box = plot.getViewBox().sceneBoundingRect()
        if box.width() < MIN_PLOT_AREA[0] or box.height() < MIN_PLOT_AREA[1]:
            out.append(f"plot area {box.width():.0f}x{box.height():.0f} px, under {MIN_PLOT_AREA}: {name}")
        texts: list[tuple[str, QGraphicsTextItem, QRectF]] = []
        if plot.titleLabel.isVisible() and plot.titleLabel.text:
            texts.append(("title", plot.titleLabel.item, shown))
        for side in ("left", "bottom", "right", "top"):
            axis = plot.getAxis(side)
            if axis.isVisible() and axis.label.isVisible() and axis.label.toPlainText().strip():
                texts.append((f"{side} axis title", axis.label, shown))
        for item in plot.getViewBox().addedItems:
            if isinstance(item, pg.TextItem) and item.isVisible() and item.toPlainText().strip():
                texts.append(("label", item.textItem, box))  # the view box clips what it holds
        for what, item, room in texts:
            if not _inside(_ink(item), room):
                out.append(f"{what} {item.toPlainText()[:50]!r} cut by the edge: {name}")
    for legend in view.scene().items():
        if isinstance(legend, pg.LegendItem) and legend.isVisible() and legend.items and not _inside(
                legend.sceneBoundingRect(), shown):
            out.append(f"legend cut by the edge: {_name(view)}")
    return out


def _laid_out(layout: QLayout) -> list[QWidget]:
    """The widgets a layout (and the layouts in it) places."""
    out = []
    for n in range(layout.count()):
        item = layout.itemAt(n)
        if item.widget() is not None:
            out.append(item.widget())
        elif item.layout() is not None:
            out += _laid_out(item.layout())
    return out


def overlap_problems(parent: QWidget) -> list[str]:
    """Widgets one layout places that cover each other: the layout got less room than their minimum
    sizes and stacked them (a note drawn over a chart's axis)."""
    layout = parent.layout()
    if layout is None:
        return []
    shown = [w for w in _laid_out(layout) if w.isVisible() and not w.geometry().isEmpty()]
    out = []
    for n, widget in enumerate(shown):
        for other in shown[n + 1:]:
            common = widget.geometry().intersected(other.geometry())
            if common.width() > 1 and common.height() > 1:
                out.append(f"{_name(widget)} and {_name(other)} overlap by {common.width()}x{common.height()} px")
    return out


def problems(window: QWidget) -> list[str]:
    """Every readability problem in the window's visible widgets."""
    out: list[str] = []
    for label in window.findChildren(QLabel):
        if label.isVisible():
            out += label_problems(label)
    for button in window.findChildren(QAbstractButton):
        if button.isVisible():
            out += button_problems(button)
    for view in window.findChildren(QAbstractItemView):
        if view.isVisible() and isinstance(view, QTableView):
            out += table_problems(view)
    for chart in window.findChildren(pg.GraphicsView):
        if chart.isVisible():
            out += chart_problems(chart)
    for parent in window.findChildren(QWidget):
        if parent.isVisible() and not _seen(parent).isEmpty():
            out += overlap_problems(parent)
    return out
