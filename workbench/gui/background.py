"""One background job at a time, numbered; results of superseded jobs are dropped.

The compare, solver and sensitivity views each own one :class:`BackgroundRunner`: a job is a
plain function of ``(stale, report)`` that runs on the runner's own pool thread and touches no
widget. ``stale()`` turns true as soon as a newer job is submitted (long jobs check it between
steps and give up); ``report(value)`` sends progress. Results, progress and errors come back on the
GUI thread through queued signals, and only for the newest job.

An engine search that takes a ``progress(done, total)`` callable stops when it raises: give it
:func:`engine_progress`, which reports ``(done, total)`` and raises :class:`Cancelled` once the job
is stale (cancelled, or superseded by a newer job). A cancelled job reports nothing.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from workbench.core.errors import WorkbenchError

log = logging.getLogger(__name__)

Stale = Callable[[], bool]
Report = Callable[[Any], None]
JobFunction = Callable[[Stale, Report], Any]


class Cancelled(Exception):
    """Raised inside a job to stop it because it went stale; the runner drops it quietly."""


def engine_progress(stale: Stale, report: Report) -> Callable[[int, int], None]:
    """An engine ``progress(done, total)`` callable for a job: reports ``(done, total)`` and stops
    the search (raises :class:`Cancelled`) as soon as the job is stale."""

    def progress(done: int, total: int) -> None:
        if stale():
            raise Cancelled
        report((done, total))

    return progress


class _Bridge(QObject):
    """Lives on the GUI thread; jobs emit through it (queued across threads)."""

    done = Signal(int, object)
    error = Signal(int, str)
    progress = Signal(int, object)


class _Job(QRunnable):
    def __init__(self, fn: JobFunction, generation: int, runner: BackgroundRunner) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self._fn, self._generation, self._runner = fn, generation, runner
        self._bridge = runner._bridge

    def stale(self) -> bool:
        return self._generation != self._runner.generation

    def report(self, value: Any) -> None:
        if not self.stale():
            self._emit(self._bridge.progress, value)

    def run(self) -> None:
        if self.stale():
            return
        try:
            result = self._fn(self.stale, self.report)
        except Cancelled:
            return
        except WorkbenchError as exc:
            self._emit(self._bridge.error, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a job must never take the worker down; the view says why
            log.error("background job failed:\n%s", traceback.format_exc())
            self._emit(self._bridge.error, f"{type(exc).__name__}: {exc}")
            return
        if not self.stale():
            self._emit(self._bridge.done, result)

    def _emit(self, signal: Any, value: Any) -> None:
        try:
            signal.emit(self._generation, value)
        except RuntimeError:  # the view was deleted while the job ran
            pass


class BackgroundRunner(QObject):
    """Runs submitted jobs one at a time off the GUI thread; only the newest one reports."""

    #: (generation, result) of the newest job.
    finished = Signal(int, object)
    #: (generation, message) when the newest job raised.
    failed = Signal(int, str)
    #: (generation, value) a job reported while running.
    progress = Signal(int, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        # The pool first: children are deleted in creation order, so it waits for its job
        # before the bridge the job emits through goes away.
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self._bridge = _Bridge(self)
        self._bridge.done.connect(self._on_done)
        self._bridge.error.connect(self._on_error)
        self._bridge.progress.connect(self._on_progress)
        self.generation = 0
        self._running: int | None = None

    def submit(self, fn: JobFunction) -> int:
        """Queue ``fn(stale, report)``; every earlier job becomes stale. Returns its generation."""
        self.generation += 1
        self._running = self.generation
        self.pool.clear()  # queued jobs not started yet are superseded anyway
        self.pool.start(_Job(fn, self.generation, self))
        return self.generation

    def cancel(self) -> None:
        """Make the running job stale (it stops at its next check and reports nothing)."""
        self.generation += 1
        self._running = None
        self.pool.clear()

    def is_busy(self) -> bool:
        return self._running is not None

    def shutdown(self) -> None:
        self.cancel()
        self.pool.waitForDone(5000)

    def _on_done(self, generation: int, result: Any) -> None:
        if generation == self.generation:
            self._running = None
            self.finished.emit(generation, result)

    def _on_error(self, generation: int, message: str) -> None:
        if generation == self.generation:
            self._running = None
            self.failed.emit(generation, message)

    def _on_progress(self, generation: int, value: Any) -> None:
        if generation == self.generation:
            self.progress.emit(generation, value)
