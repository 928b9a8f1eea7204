"""The window opens a read-only project, marks it, and saves it only as a copy (Save As)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog, QMessageBox
from read_only import read_only_view

from workbench.gui.main_window import MainWindow
from workbench.store import open_project, save_project

Button = QMessageBox.StandardButton


def test_a_read_only_project_opens_and_is_saved_only_as_a_copy(window: MainWindow, project,  # type: ignore[no-untyped-def]
                                                               monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    save_project(project.model_copy(update={"name": "Shared plan"}), folder / "plan.gpuwb")
    asked: list[str] = []
    answers = [Button.Cancel, Button.Save]

    def warn(parent, title, text, *args, **kwargs):  # type: ignore[no-untyped-def]
        asked.append(text)
        return answers.pop(0)

    monkeypatch.setattr(QMessageBox, "warning", warn)
    copy = tmp_path / "mine.gpuwb"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(copy), ""))
    with read_only_view(folder) as view:
        path = view / "plan.gpuwb"
        before = path.read_bytes()
        assert window.open_project(path)
        assert window.project_path == path and window.controller.project.name == "Shared plan"
        assert "plan.gpuwb, read-only" in window.windowTitle()
        assert window.controller.set_field("batch_size", 21) is None
        assert window.save() is False  # asked, cancelled: nothing saved anywhere
        assert "cannot be saved in place: the file is read-only" in asked[0] and "Save As" in asked[0]
        assert window.isWindowModified() and not copy.exists()
        assert window.save() is True  # asked, "Save": a copy under another name
        assert len(asked) == 2 and path.read_bytes() == before
        assert window.project_path == copy and not window.isWindowModified()
        assert "read-only" not in window.windowTitle()
    assert open_project(copy).scenarios[0].batch_size == 21
