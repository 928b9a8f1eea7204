"""Kill the app mid-edit, start it again: the recovery offer brings the work back.

The end-to-end tests start the real app (``run_app``) in subprocesses with their own user folder
and settings (``WORKBENCH_USER_DIR``, ``WORKBENCH_SETTINGS_DIR``), edit through the controller,
wait for the autosave, SIGKILL the process, start again and press Restore in the dialog.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.gui.main_window import MainWindow
from workbench.gui.project.recovery_prompt import RecoveryDialog, offered_recoveries
from workbench.store import open_project, pending_recoveries, save_project, write_recovery
from workbench.store.lock import lock_path

# First run: make an edit through the app, say which scenario, then wait to be killed.
EDIT_AND_WAIT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from PySide6.QtCore import QTimer
    from workbench.gui.app import create_application, run_app

    # The test reads the real stdout: the plugin guard points sys.stdout at stderr while a worker
    # thread's estimate runs (process-wide), so a print() at that moment would go to stderr.
    REPORT = sys.__stdout__
    app = create_application([])
    project_file = sys.argv[1] if len(sys.argv) > 1 else ""

    def edit():
        window = next(w for w in app.topLevelWidgets() if w.objectName() == "main_window")
        if project_file:
            assert window.open_project(Path(project_file))
        error = window.controller.set_field("batch_size", 77)
        print(json.dumps({"scenario": window.controller.current, "error": error}), file=REPORT, flush=True)

    QTimer.singleShot(300, edit)
    sys.exit(run_app([]))
""")

# Second run: press Restore in the recovery dialog, report what the window holds, close.
RESTORE_AND_REPORT = textwrap.dedent("""
    import json, sys, time
    from PySide6.QtCore import QTimer
    from workbench.gui.app import create_application, run_app
    from workbench.gui.project.recovery_prompt import RecoveryDialog

    REPORT = sys.__stdout__  # not sys.stdout: see EDIT_AND_WAIT
    app = create_application([])
    offered = []
    # Waits are bounded by time, not by a count of polls: on a loaded machine the window can take
    # several seconds to start, and the subprocess as a whole has 120 s.
    DEADLINE = time.monotonic() + 60

    def press_restore():
        dialogs = [w for w in app.topLevelWidgets() if isinstance(w, RecoveryDialog) and w.isVisible()]
        if not dialogs:
            if time.monotonic() > DEADLINE:
                report()
                return
            QTimer.singleShot(50, press_restore)
            return
        dialog = dialogs[0]
        offered.extend({"name": i.name, "where": i.where, "scenarios": i.scenarios} for i in dialog.infos)
        dialog.restore_button.click()
        QTimer.singleShot(200, report)

    def report():
        # The dialog runs its own event loop (exec): closing the window inside it quits that loop,
        # not the app's, which then never ends. Wait until the restore has left it.
        if app.activeModalWidget() is not None:
            if time.monotonic() > DEADLINE:
                print("the recovery dialog never closed", file=sys.stderr, flush=True)
                app.exit(3)  # fail with a message rather than hang until the timeout
                return
            QTimer.singleShot(50, report)
            return
        window = next(w for w in app.topLevelWidgets() if w.objectName() == "main_window")
        project = window.controller.project
        print(json.dumps({
            "offered": offered,
            "batch_sizes": {s.name: s.batch_size for s in project.scenarios},
            "modified": window.isWindowModified(),
            "path": str(window.project_path) if window.project_path else None,
            "holds_lock": window._lock is not None and window._lock.held,
            "title": window.windowTitle(),
        }), file=REPORT, flush=True)
        window.ask_before_discard = False
        window.close()

    QTimer.singleShot(0, press_restore)
    sys.exit(run_app([]))
""")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "QT_QPA_PLATFORM": "offscreen", "WORKBENCH_USER_DIR": str(tmp_path / "user"),
            "WORKBENCH_SETTINGS_DIR": str(tmp_path / "settings"), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def _edit_then_kill(tmp_path: Path, *args: str) -> str:
    """Run the app, edit, wait until autosave wrote the copy, SIGKILL it; the edited scenario's name."""
    recovery = tmp_path / "user" / "recovery"
    proc = subprocess.Popen([sys.executable, "-c", EDIT_AND_WAIT, *args], env=_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "no output"
        edit = json.loads(line)
        assert edit["error"] is None
        deadline = time.monotonic() + 30
        while not list(recovery.glob("*.json")):  # the sidecar is written after the copy
            assert proc.poll() is None and time.monotonic() < deadline, "no autosave within 30 s"
            time.sleep(0.1)
        time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return str(edit["scenario"])


def _restore(tmp_path: Path) -> dict:  # type: ignore[type-arg]
    result = subprocess.run([sys.executable, "-c", RESTORE_AND_REPORT], env=_env(tmp_path), capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_killed_mid_edit_then_restored_on_next_launch(tmp_path: Path) -> None:
    scenario = _edit_then_kill(tmp_path)
    assert len(list((tmp_path / "user" / "recovery").glob("*.gpuwb"))) == 1
    report = _restore(tmp_path)
    assert [o["where"] for o in report["offered"]] == ["never saved (untitled)"]
    assert report["batch_sizes"][scenario] == 77  # the edit is back
    assert report["modified"] is True and report["path"] is None
    # The restored window closed normally (discarding on purpose): nothing is offered again.
    assert not list((tmp_path / "user" / "recovery").glob("*.gpuwb"))
    assert not list((tmp_path / "user" / "recovery").glob("*.lock"))


def test_a_saved_project_comes_back_tied_to_its_file(tmp_path: Path) -> None:
    path = tmp_path / "plan.gpuwb"
    save_project(Project(name="Q3 plan", scenarios=(Scenario(name="serve", model="llama-3.1-8b", gpu="h100-sxm"),)),
                 path)
    before = path.read_bytes()
    assert _edit_then_kill(tmp_path, str(path)) == "serve"
    assert path.read_bytes() == before  # autosave never touches the project file
    report = _restore(tmp_path)
    assert report["offered"] == [{"name": "Q3 plan", "where": str(path), "scenarios": 1}]
    assert report["batch_sizes"] == {"serve": 77}
    assert report["modified"] is True and report["path"] == str(path) and report["holds_lock"]
    assert "plan.gpuwb" in report["title"]
    assert path.read_bytes() == before
    assert not lock_path(path).exists()  # released when the restored window closed


# --- in-process: what is offered, and the dialog's buttons ------------------------------------


def _project(name: str, batch: int) -> Project:
    return Project(name=name, scenarios=(Scenario(name="s", model="llama-3.1-8b", gpu="h100-sxm",
                                                  batch_size=batch),))


def test_a_copy_another_running_instance_is_writing_is_not_offered(tmp_path: Path) -> None:
    copy = write_recovery(_project("Live", 3), None, "other-session")
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock_path(copy).write_text(json.dumps({"host": socket.gethostname(), "pid": alive.pid}))
        assert offered_recoveries() == []  # the other instance's live autosave
    finally:
        alive.kill()
        alive.wait()
    assert [r.recovery_file for r in offered_recoveries()] == [copy]  # its writer died: a crash's leftover


def test_dialog_restore_discard_and_later(qtbot, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first = write_recovery(_project("First", 5), None, "s1")
    second = write_recovery(_project("Second", 6), tmp_path / "second.gpuwb", "s2")
    damaged = write_recovery(_project("Third", 7), None, "s3")
    damaged.write_bytes(b"garbage")
    dialog = RecoveryDialog(offered_recoveries())
    qtbot.addWidget(dialog)
    assert {i.name for i in dialog.infos} >= {"First", "Second"}
    assert any("cannot be read" in dialog.tree.topLevelItem(r).text(0) for r in range(dialog.tree.topLevelItemCount()))
    row = next(r for r, i in enumerate(dialog.infos) if i.name == "Second")
    assert dialog.tree.topLevelItem(row).text(1) == str(tmp_path / "second.gpuwb")
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Cancel)
    dialog.discard(row)  # asked, cancelled: kept
    assert second.exists()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    dialog.discard(row)
    assert not second.exists() and "Second" not in {i.name for i in dialog.infos}
    bad_row = next(r for r, i in enumerate(dialog.infos) if i.problem)
    dialog.tree.setCurrentItem(dialog.tree.topLevelItem(bad_row))
    assert not dialog.restore_button.isEnabled()  # a copy that cannot be read can only be discarded
    dialog.later_button.click()
    assert dialog.chosen is None and first.exists() and damaged.exists()  # Later keeps them


def test_restoring_an_untitled_copy_moves_it_to_this_session(qtbot, settings, fake_engine, catalogs, project,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    left = write_recovery(_project("Left behind", 9), None, "crashed-session")
    win = MainWindow(settings=settings, engine=fake_engine, catalogs=catalogs, project=project)
    win.ask_before_discard = False
    qtbot.addWidget(win)
    recovery = next(r for r in pending_recoveries() if r.recovery_file == left)
    assert win.restore_recovery(recovery)
    assert win.controller.project.name == "Left behind" and win.isWindowModified()
    assert win.project_path is None
    assert not left.exists()  # replaced by this session's own copy
    assert open_project(win.autosaver.current_file).name == "Left behind"
    assert offered_recoveries(exclude=[win.autosaver.current_file]) == []
    monkeypatch.setattr(QMessageBox, "information", lambda *a, **k: None)
    assert win.offer_recoveries() is False  # nothing left to offer (our own copy is not)
    win.close()
    assert pending_recoveries() == []
