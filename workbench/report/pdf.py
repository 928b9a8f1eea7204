"""PDF writer: one QTextDocument laid out in pages, charts and tables painted as vectors.

The sections' rich text becomes a :class:`QTextDocument` whose page size is the printable area.
Charts are ``<img src="chart:N">`` placeholders and every table row is one ``<img src="row:T:R">``
placeholder: a handler registered for image objects sizes and paints them with QPainter (the
cells are small text documents), so nothing is rasterized, and a row, being one line of text
to Qt's layout, moves whole to the next page instead of splitting (Qt splits a multi-line cell
of a native table across pages). Headings, captions, a chart above its table and a table's
header row carry block user state 1 ("keep with next"); after layout, one that would end a page
apart from what follows it is moved to the next page, and a row that opens a page repeats its
table's header (with "<title> (continued)"). Each page then gets its footer ("Page n of N").

The file is written to a temporary name in the target folder and renamed into place: a failed
or cancelled export leaves no partial file behind. Needs a QGuiApplication (see
:func:`ensure_gui_application`); no widgets. Fonts are embedded by QPdfWriter; the resolution is
96 dpi, so a chart's pixels are the screen's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QMarginsF, QPointF, QRectF, QSizeF, Qt
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QFont,
    QFontDatabase,
    QFontMetricsF,
    QGuiApplication,
    QPageLayout,
    QPageSize,
    QPainter,
    QPalette,
    QPdfWriter,
    QPen,
    QPyTextObject,
    QTextBlock,
    QTextBlockFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
)

from workbench.core.atomic_write import verify_pdf, write_with
from workbench.engine.pipeline import Engine
from workbench.report.charts import INK, Chart, ChartStyle, report_font
from workbench.report.document import Progress, ReportData, ReportRequest, collect
from workbench.report.sections import Body, TableSpec, available_sections, build_body

DPI = 96
MARGIN_MM = 16.0
FOOTER_PX = 30.0
PAGE_SIZES = {"a4": QPageSize.PageSizeId.A4, "letter": QPageSize.PageSizeId.Letter}
PREFERRED_FAMILIES = ("DejaVu Sans", "Liberation Sans", "Arial", "Helvetica")
KEEP_WITH_NEXT = 1

STYLESHEET = """
body { color: #1a1a1a; }
h1 { font-size: 17pt; font-weight: bold; color: #0b3d66; margin-top: 0px; margin-bottom: 8px; }
h2 { font-size: 12.5pt; font-weight: bold; color: #0b3d66; margin-top: 14px; margin-bottom: 5px; }
h3 { font-size: 10.5pt; font-weight: bold; margin-top: 10px; margin-bottom: 4px; }
p { margin-top: 3px; margin-bottom: 5px; }
p.caption { margin-top: 8px; margin-bottom: 4px; }
p.chart { margin-top: 4px; margin-bottom: 6px; }
p.small, span.small { font-size: 8pt; color: #555555; }
p.note { font-size: 8.5pt; color: #444444; margin-top: 14px; }
p.sources { font-size: 7.5pt; color: #444444; margin-top: 2px; margin-bottom: 10px; }
p.verdict { margin-top: 2px; margin-bottom: 4px; }
p.cover-kicker { font-size: 11pt; color: #555555; margin-top: 120px; }
p.cover-title { font-size: 28pt; font-weight: bold; color: #0b3d66; margin-top: 4px; margin-bottom: 4px; }
p.cover-project { font-size: 16pt; margin-bottom: 36px; }
span.code { font-size: 7pt; color: #666666; }
span.ok { color: #1b7f3b; font-weight: bold; }
span.bad, p.bad { color: #c62828; }
span.warn { color: #a86400; }
p.row { margin-top: 0px; margin-bottom: 0px; font-size: 1pt; }
p.after-table { margin-top: 0px; margin-bottom: 10px; font-size: 2pt; }
a { color: #0b3d66; }
"""
CELL_STYLESHEET = """
p { margin: 0px; color: #1a1a1a; }
span.small { font-size: 7pt; color: #555555; }
span.code { font-size: 6.5pt; color: #666666; }
span.ok { color: #1b7f3b; font-weight: bold; }
span.bad { color: #c62828; }
span.warn { color: #a86400; }
a { color: #0b3d66; }
"""


@dataclass(frozen=True)
class ReportResult:
    path: Path
    pages: int
    seconds: float


def ensure_gui_application() -> QGuiApplication:
    """The running QGuiApplication, or a new offscreen one (a headless CLI needs no display)."""
    app = QGuiApplication.instance()
    if app is None:
        # Painting and fonts need a platform plugin, never a window: offscreen works everywhere.
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QGuiApplication(["gpu-workbench"])
    return app  # type: ignore[return-value]


def report_font_family() -> str:
    families = set(QFontDatabase.families())
    for family in PREFERRED_FAMILIES:
        if family in families:
            return family
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.GeneralFont).family()


@dataclass(frozen=True)
class _TableLook:
    point_size: float
    pad_x: float
    pad_y: float
    border: str
    header_background: str = "#e8eef4"
    background: str = ""
    vertical_lines: bool = True
    frame: bool = True


TABLE_LOOKS = {
    "grid": _TableLook(8.0, 4.0, 2.5, "#b8c4cf"),
    "kv": _TableLook(8.0, 4.0, 2.5, "#b8c4cf"),
    "cover": _TableLook(10.0, 4.0, 4.0, "#c8d0d8", vertical_lines=False, frame=False),
    "box": _TableLook(9.5, 10.0, 8.0, "#8fbf8f", background="#eef5ec"),
}


class _Table:
    """Measures and paints one table, row by row, its cells laid out by small text documents."""

    def __init__(self, spec: TableSpec, width: float, family: str, device: QPdfWriter) -> None:
        self.spec = spec
        self.look = TABLE_LOOKS.get(spec.cls, TABLE_LOOKS["grid"])
        total = sum(spec.widths) or 1.0
        self.columns = [width * w / total for w in spec.widths]
        self.width = width
        self.family = family
        self.device = device
        self._rows: dict[int, tuple[float, list[QTextDocument]]] = {}

    def _cell(self, html: str, column: int, header: bool) -> QTextDocument:
        doc = QTextDocument()
        doc.documentLayout().setPaintDevice(self.device)
        doc.setDocumentMargin(0)
        doc.setDefaultFont(report_font(self.family, self.look.point_size, bold=header))
        doc.setDefaultStyleSheet(CELL_STYLESHEET)
        doc.setHtml(f'<p align="{self.spec.align[column]}">{html}</p>')
        doc.setTextWidth(max(self.columns[column] - 2 * self.look.pad_x, 10.0))
        return doc

    def prepare(self) -> None:
        """Build every row's cell documents (the header's too) so that later reads are lookups."""
        for index in range(-1, len(self.spec.rows)):
            self.row(index)

    def row(self, index: int) -> tuple[float, list[QTextDocument]]:
        """(height, cell documents) of row ``index`` (-1: the header)."""
        found = self._rows.get(index)
        if found is None:
            header = index < 0
            cells = self.spec.header if header else self.spec.rows[index]
            docs = [self._cell(html, c, header) for c, html in enumerate(cells or [])]
            height = max((d.size().height() for d in docs), default=0.0) + 2 * self.look.pad_y
            found = self._rows[index] = (height, docs)
        return found

    def _title_font(self) -> QFont:
        return report_font(self.family, 7.5, italic=True)

    def _title_height(self) -> float:
        return QFontMetricsF(self._title_font(), self.device).height() + 3 if self.spec.title else 0.0

    def height(self, index: int, with_header: bool) -> float:
        if not with_header:
            return self.row(index)[0]
        return self._title_height() + self.row(-1)[0] + self.row(index)[0]

    def paint(self, painter: QPainter, rect: QRectF, index: int, with_header: bool) -> None:
        y = rect.top()
        if with_header:
            if self.spec.title:
                font = self._title_font()
                painter.setFont(font)
                painter.setPen(QColor("#555555"))
                ascent = QFontMetricsF(font, self.device).ascent()
                painter.drawText(QPointF(rect.left(), y + ascent), f"{self.spec.title} (continued)")
                y += self._title_height()
            y = self._paint_row(painter, rect.left(), y, -1)
        self._paint_row(painter, rect.left(), y, index)

    def _paint_row(self, painter: QPainter, x: float, y: float, index: int) -> float:
        look = self.look
        height, docs = self.row(index)
        header = index < 0
        background = look.header_background if header else look.background
        if background:
            painter.fillRect(QRectF(x, y, self.width, height), QColor(background))
        context = QAbstractTextDocumentLayout.PaintContext()
        context.palette.setColor(QPalette.ColorRole.Text, INK)
        left = x
        for column, doc in enumerate(docs):
            painter.save()
            painter.translate(left + look.pad_x, y + look.pad_y)
            doc.documentLayout().draw(painter, context)
            painter.restore()
            left += self.columns[column]
        painter.setPen(QPen(QColor(look.border), 0.6))
        # Strokes sit inside the row, so the page clip never shaves a border off.
        painter.drawLine(QPointF(x, y + height - 0.3), QPointF(x + self.width, y + height - 0.3))
        if look.frame:
            painter.drawLine(QPointF(x, y + 0.3), QPointF(x + self.width, y + 0.3))
            edges = [x, x + self.width]
            if look.vertical_lines:
                edges += [x + sum(self.columns[:c]) for c in range(1, len(self.columns))]
            for edge in edges:
                painter.drawLine(QPointF(edge, y), QPointF(edge, y + height))
        return y + height


class _ObjectPainter(QPyTextObject):
    """Sizes and paints the report's placeholders: ``chart:N`` and table rows ``row:T:R``."""

    def __init__(self, charts: list[Chart], tables: list[_Table], parent: QTextDocument) -> None:
        super().__init__(parent)
        self.charts = charts
        self.tables = tables
        #: Rows (table, row) that open a page and so repeat their table's header above them.
        self.repeat_header: set[tuple[int, int]] = set()

    @staticmethod
    def parse(name: str) -> tuple[str, int, int]:
        kind, _, rest = name.partition(":")
        first, _, second = rest.partition(":")
        return kind, int(first or 0), int(second or 0)

    def intrinsicSize(self, doc: QTextDocument, pos: int, fmt: QTextFormat) -> QSizeF:
        image = fmt.toImageFormat()
        kind, t, r = self.parse(image.name())
        if kind == "row":
            return QSizeF(image.width(), self.tables[t].height(r, (t, r) in self.repeat_header))
        return QSizeF(image.width(), image.height())

    def drawObject(
        self, painter: QPainter, rect: QRectF, doc: QTextDocument, pos: int, fmt: QTextFormat
    ) -> None:
        kind, t, r = self.parse(fmt.toImageFormat().name())
        painter.save()
        if kind == "row":
            self.tables[t].paint(painter, rect, r, (t, r) in self.repeat_header)
        elif kind == "chart":
            self.charts[t].paint(painter, rect)
        painter.restore()


def _page_layout(page_size: str) -> QPageLayout:
    return QPageLayout(
        QPageSize(PAGE_SIZES[page_size]), QPageLayout.Orientation.Portrait, QMarginsF(0, 0, 0, 0)
    )


def build_document(data: ReportData, device: QPdfWriter) -> tuple[QTextDocument, QRectF]:
    """The laid-out report and the printable rectangle of a page (device pixels)."""
    paper = device.pageLayout().fullRectPixels(DPI)
    margin = round(MARGIN_MM / 25.4 * DPI)
    # Whole pixels: page boundaries then fall exactly where the text layout puts them.
    content = QRectF(margin, margin, paper.width() - 2 * margin, paper.height() - 2 * margin - FOOTER_PX)
    family = report_font_family()
    body = build_body(data, Body(style=ChartStyle(family=family), width=content.width()))
    doc = QTextDocument()
    doc.documentLayout().setPaintDevice(device)
    doc.setDefaultFont(report_font(family, 9.5))
    doc.setDocumentMargin(0)
    doc.setDefaultStyleSheet(STYLESHEET)
    tables = [_Table(spec, content.width(), family, device) for spec in body.tables]
    for table in tables:
        # Lay every cell out now, before the page layout asks for row heights: creating a text
        # document (a QObject whose layout connects signals) from inside the layout's
        # intrinsicSize callback could deadlock on Qt's signal-slot mutex pool (seen once in a
        # worker thread, blocked in QObject::connectImpl), and the callback then only reads sizes.
        table.prepare()
    handler = _ObjectPainter(body.charts, tables, doc)
    doc.documentLayout().registerHandler(QTextFormat.ObjectTypes.ImageObject, handler)
    doc.setHtml(f"<html><body>{body.text()}</body></html>")
    doc.setPageSize(content.size())
    _paginate(doc, handler, content.height())
    return doc, content


def _line_top(block: QTextBlock) -> float:
    """Where the block's first line sits in the document (after any move to the next page)."""
    layout = block.layout()
    top = layout.position().y()
    return top + layout.lineAt(0).y() if layout.lineCount() else top


def _paginate(doc: QTextDocument, handler: _ObjectPainter, page_height: float) -> None:
    """Keep headings and captions with what follows them; repeat table headers on new pages."""
    rows: dict[int, list[tuple[int, QTextBlock]]] = {}
    chains: list[tuple[QTextBlock, QTextBlock]] = []
    block = doc.begin()
    while block.isValid():
        fragment = block.begin().fragment() if not block.begin().atEnd() else None
        if fragment is not None and fragment.charFormat().isImageFormat():
            kind, t, r = handler.parse(fragment.charFormat().toImageFormat().name())
            if kind == "row":
                rows.setdefault(t, []).append((r, block))
        if block.userState() == KEEP_WITH_NEXT:
            start = block
            while block.isValid() and block.userState() == KEEP_WITH_NEXT:
                block = block.next()
            if block.isValid():
                chains.append((start, block))
            continue
        block = block.next()

    def page(b: QTextBlock) -> int:
        return int(_line_top(b) // page_height)

    for _ in range(12):
        doc.pageCount()  # lays the document out
        changed = False
        for start, target in chains:
            if start.blockFormat().pageBreakPolicy() != QTextFormat.PageBreakFlag.PageBreak_Auto:
                continue
            if page(target) > page(start):
                fmt = QTextBlockFormat()
                fmt.setPageBreakPolicy(QTextFormat.PageBreakFlag.PageBreak_AlwaysBefore)
                QTextCursor(start).mergeBlockFormat(fmt)
                changed = True
        for t, table_rows in rows.items():
            if handler.tables[t].spec.header is None:
                continue
            previous = None
            for r, b in table_rows:
                if r >= 0 and previous is not None:
                    wanted = page(b) > page(previous)
                    if wanted != ((t, r) in handler.repeat_header):
                        (handler.repeat_header.add if wanted else handler.repeat_header.discard)((t, r))
                        doc.markContentsDirty(b.position(), b.length())
                        changed = True
                previous = b
        if not changed:
            return


def _footer(
    painter: QPainter, data: ReportData, paper: QRectF, content: QRectF, page: int, pages: int, family: str
) -> None:
    painter.setFont(report_font(family, 7.5))
    y = content.bottom() + 12
    painter.setPen(QPen(QColor("#b8c4cf"), 0.6))
    painter.drawLine(QPointF(content.left(), y), QPointF(content.right(), y))
    painter.setPen(QColor("#555555"))
    r = data.request
    left = f"{r.project_name} — {r.title} — {r.date.isoformat()}"
    right = f"Page {page} of {pages}"
    left += f" — GPU Planning Workbench {r.app_version}"
    box = QRectF(content.left(), y + 3, content.width(), 16)
    metrics = painter.fontMetrics()
    room = content.width() - metrics.horizontalAdvance(right) - 24
    painter.drawText(
        box,
        int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop),
        metrics.elidedText(left, Qt.TextElideMode.ElideRight, int(room)),
    )
    painter.drawText(box, int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop), right)


def write_pdf(data: ReportData, path: str | Path, progress: Progress | None = None) -> int:
    """Write the report to ``path`` (written aside, checked, then moved over it); returns the pages."""
    return write_with(path, lambda temp: _render(data, temp, progress), verify=verify_pdf, what="the report")


def _render(data: ReportData, path: Path, progress: Progress | None) -> int:
    writer = QPdfWriter(str(path))
    writer.setResolution(DPI)
    writer.setPageLayout(_page_layout(data.request.page_size))
    writer.setTitle(f"{data.request.title}: {data.request.project_name}")
    writer.setCreator(f"GPU Planning Workbench {data.request.app_version}")
    if data.request.author_name:
        writer.setAuthor(data.request.author_name)
    doc, content = build_document(data, writer)
    paper = QRectF(writer.pageLayout().fullRectPixels(DPI))
    pages = doc.pageCount()
    family = doc.defaultFont().family()
    painter = QPainter()
    if not painter.begin(writer):
        raise OSError(f"cannot open {path} for writing")
    try:
        height = content.height()
        for page in range(pages):
            if progress is not None:
                progress(page, pages, f"Writing page {page + 1} of {pages}")
            if page:
                writer.newPage()
            painter.save()
            painter.translate(content.left(), content.top() - page * height)
            # A little wider than the text column, so strokes on its edges are not cut in half.
            clip = QRectF(-3, page * height - 0.5, content.width() + 6, height)
            painter.setClipRect(clip)
            context = QAbstractTextDocumentLayout.PaintContext()
            context.clip = clip
            context.palette.setColor(QPalette.ColorRole.Text, INK)
            doc.documentLayout().draw(painter, context)
            painter.restore()
            _footer(painter, data, paper, content, page + 1, pages, family)
    finally:
        painter.end()
    if progress is not None:
        progress(pages, pages, "Report written")
    return pages


def export_report(
    request: ReportRequest,
    path: str | Path,
    engine: Engine | Callable[[], Engine] | None = None,
    progress: Progress | None = None,
) -> ReportResult:
    """Estimate, lay out and write a report: the one call the CLI and the window make."""
    start = time.perf_counter()
    ensure_gui_application()
    data = collect(request, engine, progress, known_sections=[s.id for s in available_sections()])
    pages = write_pdf(data, path, progress)
    return ReportResult(Path(path), pages, time.perf_counter() - start)
