"""Project files in the window: modified marker, prompts, Open Recent, Revert, refused files,
locks held by other instances, scenario reordering, autosave and the estimate cache."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog, QMessageBox

from workbench.engine.pipeline import Engine
from workbench.gui.explain_text import value_text
from workbench.gui.main_window import MainWindow
from workbench.gui.project.recent_files import MAX_RECENT
from workbench.store import ProjectLock, load_estimates, open_project, save_estimates, save_project

Button = QMessageBox.StandardButton


class Answers:
    """Stands in for QMessageBox's static dialogs: records each question, answers from a script."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *answers: QMessageBox.StandardButton) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []
        for name in ("question", "warning", "information"):
            monkeypatch.setattr(QMessageBox, name, self._ask)

    def _ask(self, parent, title, text, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.asked.append(text)
        return self.answers.pop(0) if self.answers else Button.Ok


def _edit(window: MainWindow, value: int = 12) -> None:
    assert window.controller.set_field("batch_size", value) is None


def _open_window(qtbot, settings: QSettings, engine: Engine, catalogs, project) -> MainWindow:  # type: ignore[no-untyped-def]
    win = MainWindow(settings=settings, engine=engine, catalogs=catalogs, project=project)
    win.ask_before_discard = False
    qtbot.addWidget(win)
    with qtbot.waitSignal(win.estimate_shown, timeout=5000):
        win.show()
    return win


# --- title and prompts ------------------------------------------------------------------------


def test_modified_marker_follows_edit_undo_and_save(window: MainWindow, tmp_path: Path) -> None:
    assert "[*]" in window.windowTitle() and "Test" in window.windowTitle()
    assert not window.isWindowModified()
    _edit(window)
    assert window.isWindowModified()
    window.undo_action.trigger()
    assert not window.isWindowModified()
    window.redo_action.trigger()
    assert window.isWindowModified()
    assert window.save_to(tmp_path / "plan.gpuwb")
    assert not window.isWindowModified()
    title = window.windowTitle()
    assert "Test" in title and "plan.gpuwb" in title  # project name and file name
    window.undo_action.trigger()  # back before the saved state: modified again
    assert window.isWindowModified()


def test_close_with_changes_asks_and_cancel_keeps_the_window(window: MainWindow,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    window.ask_before_discard = True
    _edit(window)
    answers = Answers(monkeypatch, Button.Cancel)
    assert window.close() is False
    assert window.isVisible() and window.controller.scenario.batch_size == 12
    assert len(answers.asked) == 1 and "Save the changes" in answers.asked[0]
    answers.answers = [Button.Discard]
    assert window.close() is True
    assert not window.isVisible()


def test_save_at_the_prompt_saves_then_goes_on(window: MainWindow, monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    window.ask_before_discard = True
    _edit(window, 21)
    Answers(monkeypatch, Button.Save)
    target = tmp_path / "kept.gpuwb"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    window.new_project()  # untitled: Save asks where, saves, and the new project opens
    assert open_project(target).scenario("A").batch_size == 21
    assert [s.name for s in window.controller.project.scenarios] != ["A", "B"]
    assert window.project_path is None and not window.isWindowModified()


def test_new_and_open_with_changes_ask_first(window: MainWindow, monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    window.ask_before_discard = True
    _edit(window)
    answers = Answers(monkeypatch, Button.Cancel, Button.Cancel)
    window.new_project()
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: pytest.fail("asked for a file"))
    window.ask_open()
    assert len(answers.asked) == 2
    assert window.controller.scenario.batch_size == 12 and window.isWindowModified()
    window.ask_before_discard = False


# --- Open Recent and Revert -------------------------------------------------------------------


def test_open_recent_lists_opened_and_saved_files(window: MainWindow, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    first, second = tmp_path / "first.gpuwb", tmp_path / "second.gpuwb"
    assert window.save_to(first)
    _edit(window, 30)
    assert window.save_to(second)
    menu = window.recent_menu
    menu.rebuild()
    assert [Path(a.data()) for a in menu.file_actions()] == [second, first]
    assert menu.file_actions()[0].text() == "&1 second.gpuwb"
    menu.file_actions()[1].trigger()
    assert window.project_path == first
    assert window.controller.scenario.batch_size == 4
    assert window.recent_files.paths()[0] == first

    second.unlink()
    menu.rebuild()
    missing = [a for a in menu.file_actions() if Path(a.data()) == second][0]
    assert not missing.isEnabled() and "(missing)" in missing.text()  # greyed
    answers = Answers(monkeypatch)
    assert window.open_recent(second) is False
    assert "no longer exists" in answers.asked[0]
    assert window.recent_files.paths() == [first]
    assert window.project_path == first  # the open project stays


def test_recent_list_is_capped_and_deduplicated(window: MainWindow, tmp_path: Path) -> None:
    for i in range(MAX_RECENT + 3):
        window.recent_files.add(tmp_path / f"p{i}.gpuwb")
    window.recent_files.add(tmp_path / "p5.gpuwb")
    paths = window.recent_files.paths()
    assert len(paths) == MAX_RECENT and paths[0].name == "p5.gpuwb" and len(set(paths)) == MAX_RECENT
    window.recent_menu.rebuild()
    assert window.recent_menu.remove_missing_action.isEnabled()
    window.recent_menu.remove_missing_action.trigger()
    assert window.recent_files.paths() == []


def test_revert_reloads_the_file_after_asking(window: MainWindow, monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    path = tmp_path / "plan.gpuwb"
    assert not window.revert_action.isEnabled()  # never saved
    assert window.save_to(path)
    assert not window.revert_action.isEnabled()  # nothing to revert
    _edit(window, 64)
    assert window.revert_action.isEnabled()
    answers = Answers(monkeypatch, Button.Cancel)
    window.revert_action.trigger()
    assert window.controller.scenario.batch_size == 64 and len(answers.asked) == 1
    answers.answers = [Button.Discard]
    window.revert_action.trigger()
    assert window.controller.scenario.batch_size == 4
    assert not window.isWindowModified() and window.project_path == path
    assert window._lock is not None and window._lock.path.exists()  # still ours after reloading


# --- files the window refuses -----------------------------------------------------------------


def _newer_format(path: Path, project) -> None:  # type: ignore[no-untyped-def]
    save_project(project, path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 9")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("kind, needle", [
    ("junk", "not a workbench project"),
    ("truncated", "damaged"),
    ("foreign", "not a workbench project"),
    ("newer", "format 9"),
])
def test_a_bad_file_is_refused_with_a_message_and_left_unchanged(window: MainWindow, monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path, project, kind: str,
                                                                 needle: str) -> None:  # type: ignore[no-untyped-def]
    current = tmp_path / "current.gpuwb"
    assert window.save_to(current)
    _edit(window, 17)
    bad = tmp_path / f"{kind}.gpuwb"
    if kind == "junk":
        bad.write_bytes(b"\x00garbage" * 500)
    elif kind == "truncated":
        save_project(project, bad)
        bad.write_bytes(bad.read_bytes()[:3000])
    elif kind == "foreign":
        conn = sqlite3.connect(bad)
        conn.execute("create table notes (text)")
        conn.commit()
        conn.close()
    else:
        _newer_format(bad, project)
    before = bad.read_bytes()
    answers = Answers(monkeypatch)
    assert window.open_project(bad) is False
    assert len(answers.asked) == 1 and needle in answers.asked[0] and str(bad) in answers.asked[0]
    assert bad.read_bytes() == before  # byte for byte
    assert not (tmp_path / f"{kind}.gpuwb.lock").exists()
    # The current project stays open, with its unsaved change, its file and its lock.
    assert window.project_path == current and window.controller.scenario.batch_size == 17
    assert window.isWindowModified() and window._lock is not None and window._lock.path.exists()
    assert bad not in window.recent_files.paths()


def test_revert_of_a_file_damaged_on_disk_keeps_the_changes(window: MainWindow, monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    path = tmp_path / "plan.gpuwb"
    assert window.save_to(path)
    _edit(window, 33)
    path.write_bytes(b"overwritten by something else")
    answers = Answers(monkeypatch, Button.Discard)
    assert window.revert() is False
    assert "not a workbench project" in answers.asked[1]
    assert window.controller.scenario.batch_size == 33 and window.isWindowModified()
    assert path.read_bytes() == b"overwritten by something else"


HOLDER = textwrap.dedent("""
    import sys, time
    from workbench.store import ProjectLock
    ProjectLock(sys.argv[1]).acquire()
    print("locked", flush=True)
    time.sleep(60)
""")


def test_a_file_open_in_another_instance_is_reported(window: MainWindow, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path, project) -> None:  # type: ignore[no-untyped-def]
    shared = tmp_path / "shared.gpuwb"
    save_project(project.model_copy(update={"name": "Shared plan"}), shared)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(shared)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        answers = Answers(monkeypatch, Button.Cancel)
        assert window.open_project(shared) is False
        assert f"process {holder.pid}" in answers.asked[0] and "shared.gpuwb" in answers.asked[0]
        assert window.project_path is None and window.controller.project.name == "Test"
        # Open a copy instead: untitled, unsaved, the other instance's lock untouched.
        answers.answers = [Button.Open]
        assert window.open_project(shared) is True
        assert window.project_path is None and window.isWindowModified()
        assert window.controller.project.name == "Shared plan (copy)"
        assert json.loads(ProjectLock(shared).path.read_text())["pid"] == holder.pid
    finally:
        holder.kill()
        holder.wait()
    window.ask_before_discard = False
    assert window.open_project(shared) is True  # the holder died: its lock is stale
    assert window.project_path == shared


def test_the_lock_follows_the_open_file(window: MainWindow, tmp_path: Path) -> None:
    first, second = tmp_path / "first.gpuwb", tmp_path / "second.gpuwb"
    assert window.save_to(first)
    assert ProjectLock(first).path.exists()
    assert window.save_to(second)  # Save As moves the lock
    assert not ProjectLock(first).path.exists() and ProjectLock(second).path.exists()
    assert window.open_project(first)
    assert ProjectLock(first).path.exists() and not ProjectLock(second).path.exists()
    window.new_project()
    assert not ProjectLock(first).path.exists()
    assert window.open_project(first)
    window.close()
    assert not ProjectLock(first).path.exists()


# --- scenario library -------------------------------------------------------------------------


def test_scenarios_move_up_and_down_undoably(window: MainWindow) -> None:
    names = lambda: [s.name for s in window.controller.project.scenarios]  # noqa: E731
    assert names() == ["A", "B"] and window.controller.current == "A"
    assert not window.move_up_action.isEnabled() and window.move_down_action.isEnabled()
    window.move_down_action.trigger()
    assert names() == ["B", "A"] and window.controller.current == "A"
    assert window.move_up_action.isEnabled() and not window.move_down_action.isEnabled()
    assert window.scenario_panel.scenario_combo.itemText(1) == "A"
    assert window.controller.undo_stack.undoText() == "Move scenario A down"
    assert window.isWindowModified()
    window.undo_action.trigger()
    assert names() == ["A", "B"] and not window.isWindowModified()
    assert window.controller.move_scenario(-1) is False


# --- autosave ---------------------------------------------------------------------------------


def test_autosave_writes_a_recovery_copy_and_save_removes_it(qtbot, settings: QSettings, fake_engine: Engine,
                                                             catalogs, project, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.setValue("autosave/idle_ms", 100)
    win = _open_window(qtbot, settings, fake_engine, catalogs, project)
    other = _open_window(qtbot, settings, fake_engine, catalogs, project)
    assert win.autosaver.session != other.autosaver.session
    with qtbot.waitSignal(win.autosaver.saved, timeout=5000) as saved:
        _edit(win, 48)
    copy = saved.args[0]
    assert open_project(copy).scenario("A").batch_size == 48
    _edit(other, 49)
    qtbot.waitUntil(lambda: other.autosaver.current_file is not None, timeout=5000)
    assert other.autosaver.current_file != copy  # two untitled sessions never share a recovery file
    assert win.save_to(tmp_path / "plan.gpuwb")
    assert not copy.exists() and win.autosaver.current_file is None
    win.undo_action.trigger()  # modified again: a new copy, now keyed by the file
    qtbot.waitUntil(lambda: win.autosaver.current_file is not None, timeout=5000)
    assert open_project(win.autosaver.current_file).scenario("A").batch_size == 4
    assert win.autosaver.current_file != copy
    win.redo_action.trigger()
    assert not win.isWindowModified()  # back at the saved state
    win.autosaver.save_if_needed()
    assert win.autosaver.current_file is None


# --- estimates cached in the file -------------------------------------------------------------


def test_save_writes_estimates_and_open_shows_them_without_recomputing(qtbot, window: MainWindow,
                                                                      tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "plan.gpuwb"
    assert window.save_to(path)
    stored = load_estimates(path)
    assert list(stored) == ["A"]  # the scenario that was estimated
    # Mark the stored estimate so we can tell it from a computed one (same hash: it still matches).
    digest, payload = stored["A"]
    doc = json.loads(payload)
    doc["explain"]["memory.per_gpu.total"]["value"] = 123 * 2**30
    save_estimates(path, {"A": (digest, json.dumps(doc))})
    window.new_project()
    qtbot.waitUntil(lambda: not window.runner.is_busy(), timeout=5000)

    generation = window.runner.generation
    assert window.open_project(path)
    outcome = window.runner.last_outcome
    assert outcome.cached and outcome.generation == generation + 1  # shown at once, no engine run
    assert window.results_panel.values["memory.per_gpu.total"].text() == "123.00 GiB"
    qtbot.wait(100)
    assert window.runner.last_outcome is outcome


def test_a_stale_cached_estimate_is_recomputed(qtbot, window: MainWindow, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "plan.gpuwb"
    assert window.save_to(path)
    digest, payload = load_estimates(path)["A"]
    doc = json.loads(payload)
    doc["explain"]["memory.per_gpu.total"]["value"] = 123 * 2**30
    save_estimates(path, {"A": ("0" * 64, json.dumps(doc))})  # another hash: inputs changed since
    window.new_project()
    qtbot.waitUntil(lambda: not window.runner.is_busy(), timeout=5000)
    with qtbot.waitSignal(window.estimate_shown, timeout=5000):
        assert window.open_project(path)
    outcome = window.runner.last_outcome
    assert not outcome.cached
    shown = window.results_panel.values["memory.per_gpu.total"].text()
    assert shown != "123.00 GiB"
    assert shown == value_text(outcome.estimate, "memory.per_gpu.total")


def test_switching_back_to_an_estimated_scenario_reuses_its_estimate(qtbot, window: MainWindow) -> None:  # type: ignore[no-untyped-def]
    first = window.runner.last_outcome
    with qtbot.waitSignal(window.estimate_shown, timeout=5000):
        window.controller.set_current("B")
    qtbot.waitUntil(lambda: window.runner.last_outcome.scenario.name == "B", timeout=5000)
    window.controller.set_current("A")
    again = window.runner.last_outcome
    assert again.cached and again.estimate is first.estimate


def test_save_as_takes_the_measurements_and_calibrations_along(window: MainWindow, tmp_path: Path) -> None:
    from workbench.store.measurements import add_measurement_rows, put_calibration_row, read_rows
    from workbench.store.schema import CARRIED_TABLES

    first, second = tmp_path / "first.gpuwb", tmp_path / "second.gpuwb"
    assert window.save_to(first)
    # rows as an import writes them, under the lock the window holds (the carry is row for row)
    row = {"scenario": window.controller.scenario.name, "source_format": "csv", "file_name": "runs.csv",
           "imported": "2026-11-25T00:00:00+00:00", "schema_version": 1, "payload_json": "{}"}
    add_measurement_rows(first, [row], lock_held=True)
    put_calibration_row(first, {"name": "h100 vllm", "created": "2026-11-25T00:00:00+00:00", "schema_version": 1,
                                "payload_json": "{}"}, lock_held=True)  # fmt: skip
    before = {t: read_rows(first, t) for t in CARRIED_TABLES}
    assert before["measurements"] and before["calibrations"]
    assert window.save_to(second)  # Save As
    assert {t: read_rows(second, t) for t in CARRIED_TABLES} == before
    assert {t: read_rows(first, t) for t in CARRIED_TABLES} == before  # the original keeps them too
