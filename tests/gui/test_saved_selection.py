"""The selected scenario and the Compare setup survive save, close and reopen: the reopened window
shows the same scenario and the same comparison (candidates, scenarios, targets) as the saved one."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from workbench.core.project import Project
from workbench.engine.pipeline import Engine
from workbench.gui.catalogs import Catalogs
from workbench.gui.main_window import MainWindow
from workbench.store import open_project, save_project


def _window(qtbot, settings: QSettings, engine: Engine, catalogs: Catalogs, project: Project) -> MainWindow:  # type: ignore[no-untyped-def]
    win = MainWindow(settings=settings, engine=engine, catalogs=catalogs, project=project)
    win.ask_before_discard = False
    qtbot.addWidget(win)
    with qtbot.waitSignal(win.estimate_shown, timeout=5000):
        win.show()
    return win


def test_save_close_reopen_shows_the_same_scenario_and_comparison(  # type: ignore[no-untyped-def]
        qtbot, settings: QSettings, fake_engine: Engine, catalogs: Catalogs, project: Project, tmp_path: Path) -> None:
    first = _window(qtbot, settings, fake_engine, catalogs, project)
    first.controller.set_current("B")  # not the first scenario: a reopen that forgot it would show A
    view = first.compare_view
    view.set_candidates(["h100-sxm", "b200"])
    view.set_target("max_tpot_s", 80)
    QApplication.processEvents()
    compared = [s.name for s in view.scenarios()]
    setup = view.setup()
    assert compared == ["B"] and set(setup.accelerators) == {"h100-sxm", "b200"}
    path = tmp_path / "kept.gpuwb"
    assert first.save_to(path)
    first.close()

    other = Project(name="Other", scenarios=(project.scenarios[0].model_copy(update={"name": "C"}),))
    second = _window(qtbot, settings, fake_engine, catalogs, other)
    assert second.open_project(path)
    QApplication.processEvents()
    assert second.controller.current == "B"
    assert second.scenario_panel.scenario_combo.currentText() == "B"
    again = second.compare_view
    assert [s.name for s in again.scenarios()] == compared
    assert again.setup() == setup
    assert again.target_edits["max_tpot_s"].text() == "80"
    assert second.controller.undo_stack.isClean()  # showing what was saved is not an edit
    second.close()


def test_the_selection_is_saved_without_being_an_edit(window: MainWindow, tmp_path: Path) -> None:
    window.controller.set_current("B")
    assert window.controller.undo_stack.isClean()
    path = tmp_path / "sel.gpuwb"
    assert window.save_to(path)
    assert open_project(path).current_scenario == "B"


@pytest.mark.parametrize("saved", ["", "no such scenario"])
def test_a_file_without_a_valid_selection_opens_on_its_first_scenario(window: MainWindow, project: Project,
                                                                       tmp_path: Path, saved: str) -> None:
    path = tmp_path / "old.gpuwb"
    save_project(project.model_copy(update={"current_scenario": saved}), path)
    window.controller.set_current("B")
    assert window.open_project(path)
    assert window.controller.current == "A"
