"""Copy and export what is on screen: a table as text (tab-separated, pastes into a spreadsheet) or
CSV, a chart as a PNG. Each table and chart gets the actions in its context menu (right click);
the window's File > Export menu runs them on the current tab.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMessageBox, QTableView, QWidget


def table_rows(view: QTableView, selected_only: bool = False) -> list[list[str]]:
    """The header and the rows as shown: visible columns in their on-screen order, sorted as
    sorted, headers on one line. ``selected_only``: the selected rows (all when none is)."""
    model, header = view.model(), view.horizontalHeader()
    columns = sorted((c for c in range(model.columnCount()) if not view.isColumnHidden(c)), key=header.visualIndex)
    rows = list(range(model.rowCount()))
    if selected_only and view.selectionModel() is not None:
        chosen = sorted({index.row() for index in view.selectionModel().selectedIndexes()})
        rows = chosen or rows
    out = [[str(model.headerData(c, Qt.Orientation.Horizontal) or "").replace("\n", " ") for c in columns]]
    for row in rows:
        if view.isRowHidden(row):
            continue
        out.append([str(model.index(row, c).data(Qt.ItemDataRole.DisplayRole) or "") for c in columns])
    return out


def to_csv(rows: list[list[str]], delimiter: str = ",") -> str:
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def copy_table(view: QTableView, selected_only: bool = True) -> str:
    """Put the table (or its selected rows) on the clipboard, tab-separated; returns the text."""
    text = to_csv(table_rows(view, selected_only), delimiter="\t")
    QGuiApplication.clipboard().setText(text)
    return text


def save_table_csv(view: QTableView, path: Path) -> None:
    path.write_text(to_csv(table_rows(view)), encoding="utf-8")


def save_png(widget: QWidget, path: Path) -> bool:
    """The widget as drawn on screen (at the screen's pixel ratio)."""
    return widget.grab().save(str(path), "PNG")


def copy_image(widget: QWidget) -> None:
    QGuiApplication.clipboard().setPixmap(widget.grab())


def ask_save_table(parent: QWidget, view: QTableView, name: str) -> Path | None:
    path, _ = QFileDialog.getSaveFileName(parent, "Export Table as CSV", f"{name}.csv", "CSV files (*.csv)")
    if not path:
        return None
    return _write(parent, Path(path), lambda p: save_table_csv(view, p))


def ask_save_png(parent: QWidget, widget: QWidget, name: str) -> Path | None:
    path, _ = QFileDialog.getSaveFileName(parent, "Save Chart as PNG", f"{name}.png", "PNG images (*.png)")
    if not path:
        return None

    def write(p: Path) -> None:
        if not save_png(widget, p):
            raise OSError(f"cannot write {p}")

    return _write(parent, Path(path), write)


def save_text(parent: QWidget, path: str | Path, text: str) -> Path | None:
    """Write ``text`` (CSV, JSON) to ``path``; a warning and None when it cannot be written."""
    return _write(parent, Path(path), lambda p: p.write_text(text, encoding="utf-8"))


def _write(parent: QWidget, path: Path, write: Callable[[Path], None]) -> Path | None:
    try:
        write(path)
    except OSError as exc:
        QMessageBox.warning(parent, "Export", f"Cannot save {path.name}: {exc.strerror or exc}")
        return None
    return path


def add_table_actions(view: QTableView, name: str) -> None:
    """Right click: Copy (selected rows; Ctrl+C while the table has focus), Copy Table, Export CSV…"""
    view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
    copy = QAction("Copy", view)
    copy.setShortcut(QKeySequence.StandardKey.Copy)
    copy.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
    copy.triggered.connect(lambda: copy_table(view, selected_only=True))
    copy_all = QAction("Copy Table", view)
    copy_all.triggered.connect(lambda: copy_table(view, selected_only=False))
    export = QAction("Export Table as CSV…", view)
    export.triggered.connect(lambda: ask_save_table(view.window(), view, name))
    for action in (copy, copy_all, export):
        view.addAction(action)


def add_chart_actions(chart: QWidget, name: str, target: QWidget | None = None) -> None:
    """Right click on a chart: Copy Image, Save as PNG… (of ``target``, the chart by default)."""
    shown = target or chart
    for widget in [chart, *chart.findChildren(QWidget)]:
        if widget.contextMenuPolicy() == Qt.ContextMenuPolicy.DefaultContextMenu:
            widget.setContextMenuPolicy(Qt.ContextMenuPolicy.NoContextMenu)  # the chart's own menu shows
    chart.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
    copy = QAction("Copy Image", chart)
    copy.triggered.connect(lambda: copy_image(shown))
    save = QAction("Save Chart as PNG…", chart)
    save.triggered.connect(lambda: ask_save_png(chart.window(), shown, name))
    chart.addAction(copy)
    chart.addAction(save)
