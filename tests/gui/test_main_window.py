"""The main window: first launch, layout memory, the main flow, bad input, failures, files."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from gui_fakes import FakeMemory, FakeRoofline, Raising
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QMessageBox, QTextBrowser

from workbench.engine.pipeline import Engine
from workbench.gui.main_window import MainWindow


def _open(qtbot, **kwargs) -> MainWindow:  # type: ignore[no-untyped-def]
    win = MainWindow(**kwargs)
    win.ask_before_discard = False
    qtbot.addWidget(win)
    with qtbot.waitSignal(win.estimate_shown, timeout=10000):
        win.show()
    return win


def _wait_estimate(qtbot, win: MainWindow, action) -> None:  # type: ignore[no-untyped-def]
    """Do ``action`` and wait until the charts show the estimate of the resulting scenario."""
    with qtbot.waitSignal(win.estimate_shown, timeout=5000):
        action()
    qtbot.waitUntil(lambda: not win.runner.is_busy() and win.runner.last_outcome.scenario == win.controller.scenario,
                    timeout=5000)


def test_first_launch_opens_the_sample_with_a_hint_then_remembers(qtbot, settings: QSettings, fake_engine: Engine,
                                                                   catalogs) -> None:  # type: ignore[no-untyped-def]
    first = _open(qtbot, settings=settings, engine=fake_engine, catalogs=catalogs)
    names = [s.name for s in first.controller.project.scenarios]
    assert len(names) == 4 and any("QLoRA" in n for n in names) and any("Mixtral" in n for n in names)
    assert first.hint.isVisible()
    assert first.memory_chart.segment_bytes()["weights"][0] > 0  # charts are never empty
    assert settings.value("session/first_launch_done") in (True, "true")
    first.close()
    second = _open(qtbot, settings=settings, engine=fake_engine, catalogs=catalogs)
    assert not second.hint.isVisible()
    assert len(second.controller.project.scenarios) == 1


def test_the_hint_can_be_dismissed(qtbot, settings: QSettings, fake_engine: Engine, catalogs) -> None:  # type: ignore[no-untyped-def]
    win = _open(qtbot, settings=settings, engine=fake_engine, catalogs=catalogs)
    qtbot.mouseClick(win.hint.close_button, Qt.MouseButton.LeftButton)
    assert not win.hint.isVisible()
    assert settings.value("session/hint_dismissed") in (True, "true")


def test_dock_layout_is_remembered(qtbot, settings: QSettings, fake_engine: Engine, catalogs, project) -> None:  # type: ignore[no-untyped-def]
    win = _open(qtbot, settings=settings, engine=fake_engine, catalogs=catalogs, project=project)
    assert {d.objectName() for d in win.docks.values()} == {"model_dock", "hardware_dock", "scenario_dock",
                                                           "results_dock"}
    win.docks["results_dock"].hide()
    win.close()
    for key in ("window/geometry", "window/state", "window/charts", "window/top_charts"):
        assert not settings.value(key).isEmpty(), key
    again = _open(qtbot, settings=settings, engine=fake_engine, catalogs=catalogs, project=project)
    assert again.docks["results_dock"].isHidden()
    assert again.docks["scenario_dock"].isVisible()
    again.reset_layout()
    assert again.docks["results_dock"].isVisible()


def test_hidden_side_panels_survive_a_restart_and_come_back(qtbot, settings: QSettings, fake_engine: Engine,
                                                            catalogs, project) -> None:  # type: ignore[no-untyped-def]
    """Quitting with "Hide side panels" on used to reopen with no panels and a button that could not
    bring them back: the mode is restored, and one click shows the panels again."""
    win = _open(qtbot, settings=settings, engine=fake_engine, catalogs=catalogs, project=project)
    win.tabs.focus_button.click()
    assert not any(d.isVisible() for d in win.docks.values())
    win.close()
    again = _open(qtbot, settings=settings, engine=fake_engine, catalogs=catalogs, project=project)
    assert again.tabs.focus_button.isChecked()
    assert not any(d.isVisible() for d in again.docks.values())
    again.tabs.focus_button.click()
    assert again.docks["scenario_dock"].isVisible() and again.docks["results_dock"].isVisible()
    assert not again.tabs.focus_button.isChecked()


def test_the_window_opens_at_a_size_that_fits_the_screen() -> None:
    from PySide6.QtCore import QSize

    from workbench.gui.main_window import PREFERRED_SIZE, fitting_size

    assert fitting_size(QSize(2560, 1440)) == PREFERRED_SIZE
    laptop = fitting_size(QSize(1280, 800 - 32))  # a 1280x800 screen less its panel
    assert laptop.width() <= 1280 and laptop.height() <= 800 - 32
    assert laptop == QSize(int(1280 * 0.92), int(768 * 0.92))


def test_main_flow_model_gpu_batch_drive_the_charts(qtbot, window: MainWindow) -> None:  # type: ignore[no-untyped-def]
    _wait_estimate(qtbot, window, lambda: window.model_panel.table.choose("llama-3.1-70b"))
    assert window.controller.scenario.model == "llama-3.1-70b"
    _wait_estimate(qtbot, window, lambda: window.hardware_panel.table.choose("a100-80gb-sxm"))
    assert window.controller.scenario.gpu == "a100-80gb-sxm"
    before = window.memory_chart.segment_bytes()["kv_cache"][0]
    _wait_estimate(qtbot, window, lambda: window.scenario_panel.set_value("batch_size", 16))
    estimate = window.runner.last_outcome.estimate
    assert estimate.resolved.scenario.batch_size == 16
    shown = window.memory_chart.segment_bytes()
    for name, (rank, average) in shown.items():
        assert rank == pytest.approx(estimate.get(f"memory.per_gpu.{name}"), rel=1e-9)
        assert average == pytest.approx(estimate.get(f"memory.average_gpu.{name}"), rel=1e-9)
    assert shown["kv_cache"][0] > before
    # 70B in bf16 on one 80 GB A100 does not fit: red capacity line, caption, verdict.
    assert window.memory_chart.fits is False
    # The caption says how much is over (its words dropped when the chart is narrow, as here).
    caption = window.memory_chart.message.toPlainText()
    assert window.memory_chart._label_texts["message"][0].startswith("Out of memory")
    assert caption in window.memory_chart._label_texts["message"] and "GiB" in caption
    assert "Out of memory" in window.results_panel.verdict_text
    # Roofline: the GPU's ceilings and the scenario's operating points.
    roof = window.roofline_chart
    assert roof.accelerator.id == "a100-80gb-sxm"
    assert set(roof.point_data) == {"prefill", "decode"}
    assert roof.point_data["decode"][0] == pytest.approx(estimate.get("roofline.decode.arithmetic_intensity"))
    # Sweep follows with the capacity line.
    qtbot.waitUntil(lambda: window.sweep_chart.outcome is not None
                    and window.sweep_chart.outcome.generation == window.runner.generation, timeout=5000)
    assert window.sweep_chart.capacity_line.isVisible()


def test_undo_and_redo_through_the_edit_menu(qtbot, window: MainWindow) -> None:  # type: ignore[no-untyped-def]
    assert window.controller.scenario.batch_size == 4
    _wait_estimate(qtbot, window, lambda: window.scenario_panel.set_value("batch_size", 32))
    assert window.memory_chart.segment_bytes()["activations"][0] == pytest.approx(
        window.runner.last_outcome.estimate.get("memory.per_gpu.activations"))
    _wait_estimate(qtbot, window, window.undo_action.trigger)
    assert window.controller.scenario.batch_size == 4
    assert window.scenario_panel.knobs["batch_size"].widget.value() == 4
    assert window.runner.last_outcome.estimate.resolved.scenario.batch_size == 4
    _wait_estimate(qtbot, window, window.redo_action.trigger)
    assert window.controller.scenario.batch_size == 32
    assert window.undo_action.shortcut().toString() == "Ctrl+Z"
    assert window.redo_action.shortcut().toString() == "Ctrl+Shift+Z"


def test_an_invalid_field_keeps_the_last_estimate(qtbot, window: MainWindow) -> None:  # type: ignore[no-untyped-def]
    generation = window.runner.generation
    shown = window.memory_chart.segment_bytes()
    scenario = window.controller.scenario
    window.model_panel.editor.edit_text("num_layers", "-3")
    window.scenario_panel.set_value("parallel.tp", 8)  # 8-way TP on 1 GPU
    qtbot.wait(120)
    assert window.runner.generation == generation
    assert window.memory_chart.segment_bytes() == shown
    assert window.controller.scenario == scenario
    assert "greater than 0" in window.model_panel.editor.error_label.text()
    assert window.model_panel.editor.fields["num_layers"].widget.styleSheet()
    assert "needs more GPUs" in window.scenario_panel.error_label.text()


def test_a_raising_estimator_shows_in_the_results_panel(qtbot, settings, catalogs, project) -> None:  # type: ignore[no-untyped-def]
    win = _open(qtbot, settings=settings, engine=Engine([FakeMemory(), FakeRoofline(), Raising()]),
                catalogs=catalogs, project=project)
    panel = win.results_panel
    assert panel.failures.isVisible()
    assert "fake.raising" in panel.failures.text() and "price table exploded" in panel.failures.text()
    assert panel.values["cost.usd_per_hour"].text() == "n/a"
    assert "Fits" in panel.verdict_text  # the other estimators still ran
    assert win.memory_chart.segment_bytes()["weights"][0] > 0


def test_an_unknown_model_is_an_error_in_the_results_not_a_crash(qtbot, window: MainWindow) -> None:  # type: ignore[no-untyped-def]
    shown = window.memory_chart.segment_bytes()
    with qtbot.waitSignal(window.estimate_shown, timeout=5000):
        window.controller.set_field("model", "no-such-model")
    assert window.results_panel.error.isVisible()
    assert "no-such-model" in window.results_panel.error.text()
    assert window.memory_chart.segment_bytes() == shown  # last good estimate stays


def test_real_engine_renders_without_errors(qtbot, settings, catalogs) -> None:  # type: ignore[no-untyped-def]
    """Whatever plugins are installed, the window shows their results (or their failures)."""
    win = _open(qtbot, settings=settings, catalogs=catalogs)
    outcome = win.runner.last_outcome
    assert outcome.error is None
    estimate = outcome.estimate
    if "memory.per_gpu.total" in estimate:
        total = sum(rank for rank, _ in win.memory_chart.segment_bytes().values())
        assert total == pytest.approx(estimate.get("memory.per_gpu.total"), rel=1e-6)
    for name in ("Llama-3.1-70B QLoRA on 2x L40S", "Mixtral-8x7B serving on 2x A100"):
        _wait_estimate(qtbot, win, lambda name=name: win.controller.set_current(name))
        assert win.runner.last_outcome.error is None


def test_save_and_open_a_project_file(qtbot, window: MainWindow, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window.scenario_panel.set_value("batch_size", 12)
    target = tmp_path / "plan.gpuwb"
    assert window.save_to(target)
    assert window.controller.undo_stack.isClean()
    assert "plan.gpuwb" in window.windowTitle()
    window.new_project()
    assert len(window.controller.project.scenarios) == 1
    assert window.open_project(target)
    assert window.controller.project.scenario("A").batch_size == 12


def test_file_menu_has_only_working_entries(window: MainWindow) -> None:
    file_menu = window.menuBar().actions()[0].menu()
    texts = [a.text() for a in file_menu.actions() if not a.isSeparator()]
    assert texts[:4] == ["&New Project", "&Open…", "&Save", "Save &As…"]
    shortcuts = {a.text(): a.shortcut().toString() for a in file_menu.actions()}
    assert shortcuts["&New Project"] == "Ctrl+N" and shortcuts["&Open…"] == "Ctrl+O"
    assert shortcuts["&Save"] == "Ctrl+S" and shortcuts["&Quit"] == "Ctrl+Q"
    assert window.help_action.shortcut().toString() == "F1"


def test_help_opens_the_bundled_guide(qtbot, window: MainWindow) -> None:  # type: ignore[no-untyped-def]
    dialog = window.show_help()
    qtbot.addWidget(dialog)
    browser = dialog.findChild(QTextBrowser)
    text = browser.toPlainText()
    assert "Memory stack" in text and "Roofline" in text
    assert browser.source().isLocalFile()
    dialog.close()


def test_about_box(qtbot, window: MainWindow, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "about", lambda parent, title, text: shown.append(text))
    window.show_about()
    assert shown and "GPU Planning Workbench" in shown[0]


def test_import_real_config_adds_a_model_and_uses_it(qtbot, window: MainWindow) -> None:  # type: ignore[no-untyped-def]
    data = Path(__file__).resolve().parents[1] / "data" / "configs" / "qwen2.5-0.5b" / "config.json"
    before = window.model_panel.table.row_count
    _wait_estimate(qtbot, window, lambda: window.model_panel.import_model(data))
    assert window.model_panel.table.row_count == before + 1
    model_id = window.controller.scenario.model
    assert model_id in window.controller.project.models
    assert window.runner.last_outcome.estimate.resolved.model.hidden_size == 896


def test_bad_import_shows_a_message(window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: shown.append(text))
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama", "hidden_size": 7}')
    before = window.model_panel.table.row_count
    assert window.model_panel.import_model(bad) is False
    assert window.model_panel.table.row_count == before
    assert len(shown) == 1 and "config.json" in shown[0]


def test_palette_change_restyles_the_charts(qtbot, window: MainWindow) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtGui import QColor, QPalette
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    original = app.palette()
    dark = QPalette(original)
    dark.setColor(QPalette.ColorRole.Base, QColor("#1e1e1e"))
    dark.setColor(QPalette.ColorRole.Window, QColor("#2b2b2b"))
    dark.setColor(QPalette.ColorRole.Text, QColor("#eeeeee"))
    try:
        app.setPalette(dark)
        qtbot.waitUntil(lambda: window.memory_chart.plot_widget.backgroundBrush().color() == QColor("#1e1e1e"),
                        timeout=3000)
        axis = window.roofline_chart.plot.getAxis("left")
        assert axis.textPen().color() == QColor("#eeeeee")
    finally:
        app.setPalette(original)


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
            windows[0].ask_before_discard = False
            windows[0].close()
        QTimer.singleShot(1500, done)
        sys.exit(run_app([]))
    """)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "WORKBENCH_USER_DIR": str(tmp_path / "user")}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert shot.stat().st_size > 10_000
    assert list((tmp_path / "config").rglob("*.conf")), "settings were not written under XDG_CONFIG_HOME"


def test_uncaught_exceptions_are_shown_and_logged_never_fatal(qtbot, monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from workbench.gui.dialogs import error_dialog

    shown: list[str] = []
    monkeypatch.setenv("WORKBENCH_USER_DIR", str(tmp_path))
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    monkeypatch.setattr(error_dialog._Reporter, "_show", lambda self, summary, details: shown.append(summary))
    monkeypatch.setattr(error_dialog, "_reporter", None)
    logger = logging.getLogger("workbench")
    handlers = list(logger.handlers)
    try:
        error_dialog.install_excepthook()
        try:
            raise ValueError("a bug")
        except ValueError:
            sys.excepthook(*sys.exc_info())
        worker = threading.Thread(target=lambda: 1 / 0)
        worker.start()
        worker.join()
        qtbot.waitUntil(lambda: len(shown) == 2, timeout=2000)
    finally:
        for handler in set(logger.handlers) - set(handlers):
            logger.removeHandler(handler)
            handler.close()
    assert shown == ["ValueError: a bug", "ZeroDivisionError: division by zero"]
    assert "a bug" in (tmp_path / "workbench.log").read_text()


def test_the_guide_lists_every_shortcut_and_tab(window: MainWindow) -> None:
    """Each keyboard shortcut of the window's actions is in the guide's table, and the guide has a
    section for each tab (Charts, Kernels, Compare, Sensitivity) and for the report."""
    from PySide6.QtGui import QAction, QKeySequence

    from workbench.paths import resources_dir

    guide = (resources_dir() / "help" / "index.html").read_text(encoding="utf-8")
    shortcuts = {action.shortcut().toString(QKeySequence.SequenceFormat.PortableText)
                 for action in window.findChildren(QAction) if not action.shortcut().isEmpty()}
    assert {"Ctrl+E", "Ctrl+Shift+C", "Ctrl+Z"} <= shortcuts
    missing = sorted(s for s in shortcuts if f"<b>{s}</b>" not in guide)
    assert missing == [], "add these to resources/help/index.html's shortcut table"
    for anchor in ("charts", "kernels", "compare", "sensitivity", "report", "files", "plugins", "shortcuts"):
        assert f'id="{anchor}"' in guide


def test_ctrl_z_in_a_field_undoes_the_project_edit_not_the_text(qtbot, window: MainWindow) -> None:  # type: ignore[no-untyped-def]
    """One undo stack: the spin box's own undo would bring back text the stack does not know."""
    from PySide6.QtWidgets import QAbstractSpinBox

    assert window.controller.scenario.batch_size == 4
    _wait_estimate(qtbot, window, lambda: window.scenario_panel.set_value("batch_size", 32))
    commands = window.controller.undo_stack.count()
    field = next(w for w in window.scenario_panel.findChildren(QAbstractSpinBox) if w.value() == 32)
    field.setFocus()
    editor = field.lineEdit()
    with qtbot.waitSignal(window.estimate_shown, timeout=5000):
        qtbot.keyClick(editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.controller.scenario.batch_size == 4  # the edit is undone...
    assert window.controller.undo_stack.count() == commands  # ...and no new one recorded
    assert window.controller.undo_stack.index() == commands - 1
    with qtbot.waitSignal(window.estimate_shown, timeout=5000):
        qtbot.keyClick(editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert window.controller.scenario.batch_size == 32
