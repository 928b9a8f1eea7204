"""Copy and export: a table as shown (visible columns, on-screen order) to the clipboard and to CSV,
a chart as a PNG; in each one's context menu and in File > Export for the tab on screen."""

from __future__ import annotations

import csv
from pathlib import Path

from PySide6.QtGui import QGuiApplication, QImage
from PySide6.QtWidgets import QApplication

from workbench.gui import exports
from workbench.gui.main_window import MainWindow


def _compare(window: MainWindow, qtbot) -> None:  # type: ignore[no-untyped-def]
    view = window.compare_view
    view.set_candidates(["h100-sxm", "a100-80gb-sxm", "l40s"])
    with qtbot.waitSignal(view.comparison_shown, timeout=20000):
        window.tabs.show_page("compare")
    qtbot.waitUntil(lambda: not view.runner.is_busy() and len(view.table_model.rows) == 3, timeout=20000)


def test_a_table_copies_and_exports_as_shown(window: MainWindow, qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _compare(window, qtbot)
    table = window.compare_view.table
    rows = exports.table_rows(table)
    header = table.horizontalHeader()
    shown = sorted((c for c in range(table.model().columnCount()) if not table.isColumnHidden(c)),
                   key=header.visualIndex)
    assert len(rows) == 4 and len(rows[0]) == len(shown)
    assert rows[0][-1].startswith("Verdict")  # shown last on screen, exported last
    assert all("\n" not in title for title in rows[0])
    # Copy: the whole table, tab-separated (pastes into a spreadsheet).
    text = exports.copy_table(table, selected_only=False)
    assert QGuiApplication.clipboard().text() == text
    assert text.splitlines()[1].split("\t") == rows[1]
    # With a row selected, Copy takes that row.
    table.selectRow(1)
    assert exports.copy_table(table).splitlines() == [("\t".join(rows[0])), "\t".join(rows[2])]
    path = tmp_path / "comparison.csv"
    exports.save_table_csv(table, path)
    with path.open(newline="", encoding="utf-8") as handle:
        assert list(csv.reader(handle)) == rows
    assert [a.text() for a in table.actions()] == ["Copy", "Copy Table", "Export Table as CSV…"]


def test_a_chart_saves_as_png_and_file_export_follows_the_tab(window: MainWindow, qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    chart = window.memory_chart
    assert [a.text() for a in chart.actions()] == ["Copy Image", "Save Chart as PNG…"]
    path = tmp_path / "memory.png"
    assert exports.save_png(chart, path)
    image = QImage(str(path))
    ratio = chart.devicePixelRatioF()
    assert (image.width(), image.height()) == (round(chart.width() * ratio), round(chart.height() * ratio))
    exports.copy_image(chart)
    assert not QGuiApplication.clipboard().pixmap().isNull()
    # File > Export: no table on the Charts tab; the comparison's on Compare.
    window._update_export_actions()
    assert not window.export_table_action.isEnabled()
    _compare(window, qtbot)
    window._update_export_actions()
    assert window.export_table_action.isEnabled()
    window.copy_table()
    QApplication.processEvents()
    assert QGuiApplication.clipboard().text() == exports.to_csv(exports.table_rows(window.compare_view.table), "\t")
