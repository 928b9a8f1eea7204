"""The first window: catalogs shown, filters work, a bad import is a message, not a crash."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from workbench.gui.main_window import MainWindow

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture
def window(qtbot):  # type: ignore[no-untyped-def]
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    return win


def test_catalogs_are_listed(window: MainWindow) -> None:
    assert window.models.row_count >= 30
    assert window.accelerators.model.rowCount() >= 40


def test_accelerator_filter_and_source_tooltip(window: MainWindow) -> None:
    table = window.accelerators
    table.filter_edit.setText("H100 SXM")
    assert table.proxy.rowCount() >= 1
    names = {table.proxy.index(r, 0).data() for r in range(table.proxy.rowCount())}
    assert all("H100" in n for n in names)
    memory_cell = table.proxy.index(0, 2)
    tooltip = memory_cell.data(Qt.ItemDataRole.ToolTipRole)
    assert tooltip.startswith("Source: ") and "Taken: " in tooltip


def test_import_real_config_adds_a_row(window: MainWindow) -> None:
    before = window.models.row_count
    assert window.import_model(DATA / "configs" / "llama-3.2-1b" / "config.json")
    assert window.models.row_count == before + 1


def test_bad_import_shows_a_message(window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: shown.append(text))
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "llama", "hidden_size": 7}))
    before = window.models.row_count
    assert window.import_model(bad) is False
    assert window.models.row_count == before
    assert len(shown) == 1 and "config.json" in shown[0]


def test_app_starts_in_a_fresh_process(tmp_path: Path) -> None:
    """The real start-up path (QApplication + run_app) in its own process, as a user launches it."""
    shot = tmp_path / "window.png"
    script = textwrap.dedent(f"""
        import sys
        from PySide6.QtCore import QTimer
        from workbench.gui.app import create_application, run_app
        app = create_application([])
        def done():
            windows = [w for w in app.topLevelWidgets() if w.isWindow() and w.isVisible()]
            windows[0].grab().save({str(shot)!r})
            app.quit()
        QTimer.singleShot(1000, done)
        sys.exit(run_app([]))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 0, result.stderr
    assert shot.stat().st_size > 10_000
