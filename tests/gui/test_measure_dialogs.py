"""The window's measurement loop: Import Measurements (all or nothing), the Measurements view,
Calibrate (off the GUI thread, with cancel), Save and Apply, the calibrated mark, profile YAML."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QItemSelectionModel
from PySide6.QtWidgets import QFileDialog, QMessageBox

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.gui.dialogs.measure_calibrate import CalibrateDialog
from workbench.gui.dialogs.measure_dialog import MeasurementsDialog, ask_import

DATA = Path(__file__).parents[1] / "data" / "measurements"
FILES = [str(DATA / "vllm_bench_serve.json"), str(DATA / "measurements.csv")]


@pytest.fixture
def measured_window(qtbot, settings, catalogs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """A saved project whose selected H100 / vLLM scenario has three measurements (the real engine:
    a fit needs the assumptions the estimators read)."""
    from workbench.gui.main_window import MainWindow
    from workbench.pluginhost import default_engine

    project = Project(name="Measured", scenarios=(
        Scenario(name="serve-8b", model="llama-3.1-8b", gpu="h100-sxm", serving={"engine": "vllm"}),
        Scenario(name="on A100", model="llama-3.1-8b", gpu="a100-80gb-sxm", serving={"engine": "vllm"}),
    ))
    win = MainWindow(settings=settings, engine=default_engine(), catalogs=catalogs, project=project)
    win.ask_before_discard = False
    qtbot.addWidget(win)
    with qtbot.waitSignal(win.estimate_shown, timeout=10000):
        win.show()
    assert win.save_to(tmp_path / "measured.gpuwb")
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: (FILES, ""))
    assert len(ask_import(win)) == 3
    return win


def _warnings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: shown.append(text))
    return shown


def test_a_bad_file_among_several_imports_nothing(measured_window, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"not": "a benchmark"}')
    shown = _warnings(monkeypatch)
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([FILES[1], str(bad)], ""))
    assert ask_import(measured_window) == []
    [message] = shown
    assert message.startswith("Nothing was imported: broken.json") and "\n" not in message
    dialog = MeasurementsDialog(measured_window)
    assert dialog.table.rowCount() == 3  # the good file of the batch was not stored either


def test_an_untitled_project_is_asked_to_be_saved_first(window, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    shown = _warnings(monkeypatch)
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: pytest.fail("asked for files"))
    assert ask_import(window) == []
    assert shown == ["Save the project first: measurements and calibrations are kept in its file"]


def test_the_view_lists_and_removes_measurements(qtbot, measured_window) -> None:  # type: ignore[no-untyped-def]
    dialog = MeasurementsDialog(measured_window)
    qtbot.addWidget(dialog)
    assert dialog.table.rowCount() == 3
    assert [dialog.table.item(r, 1).text() for r in range(3)] == ["serve-8b"] * 3
    assert dialog.table.item(0, 2).text() == "vllm-bench-serve" and "TPOT mean" in dialog.table.item(0, 5).text()
    assert not dialog.remove_button.isEnabled()
    # an explicit selection: selectRow() follows the keyboard modifiers another test may leave behind
    flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
    dialog.table.selectionModel().select(dialog.table.model().index(1, 0), flags)
    assert dialog.remove_button.isEnabled()
    assert dialog.remove_selected() == 1
    assert [dialog.table.item(r, 0).text() for r in range(dialog.table.rowCount())] == ["1", "3"]


def test_calibrate_apply_mark_export_and_remove(qtbot, measured_window, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    win = measured_window
    view = MeasurementsDialog(win)
    qtbot.addWidget(view)
    calibrate = view.calibrate()
    assert isinstance(calibrate, CalibrateDialog) and calibrate.group_box.currentText() == "h100-sxm / vllm (3 measurements)"
    with qtbot.waitSignal(calibrate.fitted, timeout=60000):
        calibrate.run_button.click()
        assert calibrate.cancel_button.isEnabled() and not calibrate.run_button.isEnabled()
    profile = calibrate.profile
    assert profile.measurements == 3 and profile.assumptions  # these runs move the assumptions
    rows = {calibrate.parameters.item(r, 0).text() for r in range(calibrate.parameters.rowCount())}
    assert any("perf.kernel_efficiency_scale" in row for row in rows)
    assert calibrate.residuals.rowCount() == len(profile.residuals) > 3
    assert "Median |error|: before" in calibrate.summary.text() and "left out" in calibrate.summary.text()
    assert not win.results_panel.calibration.isVisible()

    with qtbot.waitSignal(win.estimate_shown, timeout=10000):
        assert calibrate.save_and_apply()
    mark = profile.mark()
    assert win.calibration.profile is profile and view.profile_box.count() == 1
    assert win.results_panel.calibration.text() == mark[0].upper() + mark[1:]
    assert win.results_panel.calibration.isVisible() and f"({mark})" in win.windowTitle()
    used = win.runner.last_outcome.resolved.scenario.assumptions  # what the shown estimate was made with
    assert {k: used[k] for k in profile.assumptions} == profile.assumptions
    assert "Applied: 'h100-sxm/vllm'" in view.applied.text()
    assert win.statusBar().currentMessage().endswith(f"are {mark}")
    from workbench.gui.dialogs.report_dialog import open_report_dialog

    report = open_report_dialog(win)
    assert report.request().calibration is profile  # the report is calibrated as the window is
    report.close()

    win.controller.set_current("on A100")  # another GPU: the profile does not apply, nothing is marked
    assert not win.results_panel.calibration.isVisible() and "calibrated" not in win.windowTitle()
    win.controller.set_current("serve-8b")

    shared = tmp_path / "shared.yaml"
    assert view.export_chosen(str(shared)) and "kind:" in shared.read_text()
    assert view.import_profile(str(shared)).name == profile.name  # replaces the one of that name
    assert view.profile_box.count() == 1
    _warnings(monkeypatch)
    shared.write_text("kind: nonsense\n")
    assert view.import_profile(str(shared)) is None

    with qtbot.waitSignal(win.estimate_shown, timeout=10000):
        win.remove_calibration_action.trigger()
    assert win.calibration.profile is None and not win.results_panel.calibration.isVisible()
    assert "calibrated" not in win.windowTitle() and "No calibration applied" in view.applied.text()


def test_cancel_drops_the_fit(qtbot, measured_window) -> None:  # type: ignore[no-untyped-def]
    view = MeasurementsDialog(measured_window)
    qtbot.addWidget(view)
    calibrate = view.calibrate()
    calibrate.start()
    calibrate.cancel()
    assert calibrate.status.text() == "Cancelled: nothing was fitted." and calibrate.run_button.isEnabled()
    calibrate.runner.pool.waitForDone(60000)
    qtbot.wait(50)  # any queued result is delivered (and dropped) now
    assert calibrate.profile is None and not calibrate.save_button.isEnabled()
