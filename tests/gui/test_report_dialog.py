"""File → Export Report…: the dialog chooses scenarios and sections and writes the PDF off the GUI thread."""

from __future__ import annotations

import shutil
import subprocess
import threading
import unicodedata
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.gui.dialogs.report_dialog import ReportDialog

pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils is not installed")


def _text(pdf: Path) -> str:
    out = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, check=True
    )
    return unicodedata.normalize("NFKC", out.stdout)


@pytest.fixture
def plan() -> Project:
    return Project(
        name="Dialog plan",
        author="Lin",
        scenarios=(
            Scenario(name="Serving eight-B", model="llama-3.1-8b", gpu="h100-sxm", batch_size=8),
            Scenario(
                name="Serving seventy-B",
                model="llama-3.1-70b",
                gpu="h100-sxm",
                num_gpus=4,
                parallel={"tp": 4},
            ),
        ),
    )


def _dialog(qtbot, plan: Project, tmp_path: Path, **kwargs) -> ReportDialog:  # type: ignore[no-untyped-def]
    dialog = ReportDialog(plan, default_folder=tmp_path, **kwargs)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def test_choices_go_into_the_pdf(qtbot, plan: Project, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dialog = _dialog(qtbot, plan, tmp_path)
    assert dialog.chosen_scenarios() == ("Serving eight-B", "Serving seventy-B")
    assert set(dialog.chosen_sections()) >= {"cover", "summary", "memory", "roofline", "warnings"}
    assert dialog.path_edit.text() == str(tmp_path / "Dialog plan report.pdf")
    dialog.scenario_list.item(1).setCheckState(Qt.CheckState.Unchecked)
    dialog.set_sections({"cover", "summary", "memory"})
    target = tmp_path / "chosen.pdf"
    dialog.path_edit.setText(str(target))
    dialog.page_size.setCurrentIndex(dialog.page_size.findData("letter"))
    with qtbot.waitSignal(dialog.report_written, timeout=60000) as blocker:
        qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
        assert dialog.running and not dialog.export_button.isEnabled()
    assert blocker.args == [str(target)]
    assert not dialog.running and dialog.export_button.isEnabled() and dialog.open_button.isEnabled()
    assert dialog.progress.value() == 100 and "Wrote" in dialog.status.text()
    text = _text(target)
    assert "Serving eight-B" in text and "Serving seventy-B" not in text
    assert "Memory per GPU" in text and "Roofline" not in text and "Lin" in text


def test_nothing_chosen_cannot_export(qtbot, plan: Project, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dialog = _dialog(qtbot, plan, tmp_path)
    dialog._check_all(False)
    assert not dialog.export_button.isEnabled() and "scenario" in dialog.status.text()
    dialog._check_all(True)
    dialog.set_sections(set())
    assert not dialog.export_button.isEnabled() and "section" in dialog.status.text()
    dialog.set_sections({"cover"})
    assert dialog.export_button.isEnabled()


def test_a_bad_candidate_is_reported_and_writes_nothing(qtbot, plan: Project, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dialog = _dialog(qtbot, plan, tmp_path)
    dialog.candidates_edit.setText("h100-sxm, no-such-gpu")
    dialog.set_sections({"summary", "comparison"})
    dialog.start()
    qtbot.waitUntil(lambda: not dialog.running, timeout=60000)
    assert "no-such-gpu" in dialog.last_error and "Cannot write the report" in dialog.status.text()
    assert list(tmp_path.iterdir()) == []


def test_cancel_stops_the_job_and_leaves_no_file(qtbot, plan: Project, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from workbench.pluginhost import default_engine

    gate = threading.Event()

    def slow_engine():  # type: ignore[no-untyped-def]
        gate.wait(30)  # the job waits here until the test has pressed Cancel
        return default_engine()

    dialog = _dialog(qtbot, plan, tmp_path, engine=slow_engine)
    assert dialog.start()
    assert dialog.close_button.text() == "Cancel"
    dialog.cancel_or_close()
    gate.set()
    qtbot.waitUntil(lambda: not dialog.running, timeout=30000)
    assert "Cancelled" in dialog.status.text()
    assert list(tmp_path.iterdir()) == []
    assert dialog.isVisible()  # Cancel stopped the job; a second press closes
    dialog.cancel_or_close()
    assert not dialog.isVisible()


def test_file_menu_opens_the_dialog(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    action = window.report_action
    assert action.shortcut() == QKeySequence("Ctrl+E")
    file_menu = window.menuBar().actions()[0].menu()
    assert action in file_menu.actions()
    action.trigger()
    dialog = window.findChild(ReportDialog)
    assert dialog is not None and dialog.isVisible()
    assert dialog.chosen_scenarios() == tuple(s.name for s in window.controller.project.scenarios)
    dialog.close()


def test_export_from_the_window_with_its_engine(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The window's (fake, GUI-test) engine lacks most result keys: the report still comes out."""
    window.report_action.trigger()
    dialog = window.findChild(ReportDialog)
    target = tmp_path / "window.pdf"
    dialog.path_edit.setText(str(target))
    with qtbot.waitSignal(dialog.report_written, timeout=60000):
        dialog.start()
    text = _text(target)
    assert "Executive summary" in text and "Memory per GPU" in text
    assert "Report written" in window.statusBar().currentMessage()
    dialog.close()
