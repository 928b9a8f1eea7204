"""Autosave: a recovery copy of unsaved work, so a crash or a kill loses seconds, not weeks.

While the project has unsaved changes, a copy is written (atomically, like a save) to the
recovery folder shortly after the last edit and at least every interval (both in the settings).
Saving, or closing after choosing not to save, deletes the copy; a crash leaves it, and the next
launch offers it back (:mod:`workbench.gui.project.recovery_prompt`).

A project that was never saved is keyed by this window's session id (process id and start
time), so two running instances never write the same recovery file. Each copy carries a lock
(``ProjectLock`` on the recovery file, holding our process id): the next launch skips copies
whose writer is still running and offers those whose writer died.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal

from workbench.core.errors import InputError
from workbench.core.project import Project
from workbench.gui.controller import ProjectController

if TYPE_CHECKING:
    from workbench.store import ProjectLock

log = logging.getLogger(__name__)


def new_session_id() -> str:
    return f"{os.getpid()}-{time.time_ns() // 1_000_000}"


class Autosaver(QObject):
    """Writes ``write_recovery(project, path, session)`` while the undo stack is not clean."""

    saved = Signal(object)  # the recovery file (Path)
    failed = Signal(str)

    def __init__(self, controller: ProjectController, path_source: Callable[[], Path | None],
                 session: str | None = None, interval_ms: int = 30_000, idle_ms: int = 2_000,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.path_source = path_source
        self.session = session or new_session_id()
        self.current_file: Path | None = None
        self._lock: ProjectLock | None = None
        self._written: Project | None = None
        self._interval = QTimer(self)
        self._interval.timeout.connect(self.save_if_needed)
        self._idle = QTimer(self)
        self._idle.setSingleShot(True)
        self._idle.timeout.connect(self.save_if_needed)
        self.configure(interval_ms, idle_ms)
        controller.changed.connect(self._on_changed)

    def configure(self, interval_ms: int, idle_ms: int) -> None:
        """0 turns a timer off (both off: no autosave)."""
        self.interval_ms, self.idle_ms = max(0, int(interval_ms)), max(0, int(idle_ms))
        self._interval.stop()
        if self.interval_ms:
            self._interval.start(self.interval_ms)
        self._idle.setInterval(self.idle_ms)

    def _on_changed(self) -> None:
        # The undo stack is not updated yet when an edit says "changed": check its state on timeout.
        if self.idle_ms:
            self._idle.start()

    def save_if_needed(self) -> Path | None:
        """Write a copy if the project differs from the saved file and from the last copy."""
        from workbench.store.recovery import recovery_file_for

        if self.controller.undo_stack.isClean():
            self.discard()  # back at the saved state (undo): the file on disk holds it all
            return None
        target = recovery_file_for(self.path_source(), self.session)
        if target == self.current_file and self.controller.project is self._written:
            return target
        return self.save_now()

    def save_now(self) -> Path | None:
        """Write a recovery copy of the current project now; None (and ``failed``) if it cannot."""
        # The store (sqlite-utils) loads on the first autosave, off the window's start-up path.
        from workbench.store import ProjectLock, Recovery, write_recovery
        from workbench.store.recovery import recovery_dir, recovery_file_for

        project, original = self.controller.project, self.path_source()
        target = recovery_file_for(original, self.session)
        same = target == self.current_file and self._lock is not None
        lock = self._lock if same else ProjectLock(target)
        try:
            recovery_dir().mkdir(parents=True, exist_ok=True)
            if not same:
                lock.acquire()  # type: ignore[union-attr]
            written = write_recovery(self.controller.project_to_save(), original, self.session)
        except (InputError, OSError) as exc:
            if not same and lock is not None:
                lock.release()
            log.warning("autosave failed: %s", exc)
            self.failed.emit(str(exc))
            return None
        if not same:
            # The copy of the file we worked on before (Save As, Open) is no longer needed.
            old_file, old_lock = self.current_file, self._lock
            if old_file is not None and old_file != written:
                Recovery(old_file, None).discard()
            if old_lock is not None and old_lock.path != lock.path:  # type: ignore[union-attr]
                old_lock.release()
            self._lock = lock
        self.current_file, self._written = written, project
        self.saved.emit(written)
        return written

    def discard(self) -> None:
        """Delete this window's recovery copy (after a save, or a close that discards the changes)."""
        self._idle.stop()
        if self.current_file is not None:
            from workbench.store import Recovery

            Recovery(self.current_file, None).discard()
        if self._lock is not None:
            self._lock.release()
        self.current_file, self._lock, self._written = None, None, None

    def stop(self) -> None:
        self._interval.stop()
        self._idle.stop()
