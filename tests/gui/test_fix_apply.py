"""One click applies an out-of-memory fix from the top of Results: the plan then fits, and Ctrl+Z
brings the scenario back as it was (runs the real engine)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtTest import QTest

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.gui.catalogs import Catalogs
from workbench.gui.main_window import MainWindow


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    from workbench.pluginhost import default_engine

    return default_engine()


def test_one_click_makes_it_fit_and_ctrl_z_undoes_it(qtbot, settings: QSettings, catalogs: Catalogs,  # type: ignore[no-untyped-def]
                                                     engine) -> None:
    oom = Scenario(name="70B chat", model="llama-3.1-70b", gpu="h100-sxm", batch_size=64, seq_len=8192)
    win = MainWindow(settings=settings, engine=engine, catalogs=catalogs, project=Project(scenarios=(oom,)))
    win.ask_before_discard = False
    qtbot.addWidget(win)
    with qtbot.waitSignal(win.estimate_shown, timeout=20000):
        win.show()
    panel = win.results_panel
    assert "Out of memory" in panel.verdict_text
    assert panel.fixes_box.isVisible() and panel.fix_buttons
    # The verdict and its fixes are the first things in the panel, above every figure.
    top = panel.fix_buttons[0].mapTo(panel.widget(), panel.fix_buttons[0].rect().topLeft()).y()
    assert top < panel.values["parameters.total"].mapTo(panel.widget(), panel.values["parameters.total"].rect().topLeft()).y()
    labels = [f.label for f in panel.fixes]
    assert labels[0] == "Use 8 GPUs as TP 8 \u00d7 PP 1"
    assert not any("--" in label for label in labels)

    with qtbot.waitSignal(win.estimate_shown, timeout=20000):
        qtbot.mouseClick(panel.fix_buttons[0], Qt.MouseButton.LeftButton)
    applied = win.controller.scenario
    assert (applied.num_gpus, applied.parallel.tp, applied.parallel.pp, applied.parallel.dp) == (8, 8, 1, 1)
    assert win.runner.last_outcome.estimate.get("memory.fits") is True
    assert "Fits" in panel.verdict_text and not panel.fixes_box.isVisible()
    assert win.controller.undo_stack.undoText().startswith("Fix: Use 8 GPUs")

    with qtbot.waitSignal(win.estimate_shown, timeout=20000):
        QTest.keyClick(win, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert win.controller.scenario == oom
    assert win.runner.last_outcome.estimate.get("memory.fits") is False
    assert "Out of memory" in panel.verdict_text
    win.close()
