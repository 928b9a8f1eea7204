"""Nothing raises at the user: an uncaught exception is logged and shown, and the app goes on."""

from __future__ import annotations

import logging
import sys
import threading
import traceback
from types import TracebackType

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QApplication, QMessageBox

from workbench.paths import user_data_dir

log = logging.getLogger("workbench.gui")


def log_file() -> str:
    return str(user_data_dir() / "workbench.log")


class _Reporter(QObject):
    """Lives on the GUI thread: exceptions from other threads are shown through a queued signal."""

    report = Signal(str, str)

    def __init__(self) -> None:
        super().__init__()
        self.report.connect(self._show, Qt.ConnectionType.QueuedConnection)
        self.showing = False

    def _show(self, summary: str, details: str) -> None:
        if self.showing:  # one dialog at a time; the rest are in the log
            return
        self.showing = True
        try:
            box = QMessageBox(QApplication.activeWindow())
            box.setIcon(QMessageBox.Icon.Warning)
            box.setWindowTitle("Something went wrong")
            box.setText(f"An unexpected error happened. Your work is still open.\n\n{summary}")
            box.setInformativeText(f"The details are in {log_file()}.")
            box.setDetailedText(details)
            box.exec()
        finally:
            self.showing = False


_reporter: _Reporter | None = None


def handle_exception(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """Log the exception and show it in a dialog; never exits (Ctrl+C still does)."""
    if issubclass(exc_type, KeyboardInterrupt):
        sys.__excepthook__(exc_type, exc, tb)
        return
    details = "".join(traceback.format_exception(exc_type, exc, tb))
    log.error("uncaught exception:\n%s", details)
    if _reporter is not None and QApplication.instance() is not None:
        _reporter.report.emit(f"{exc_type.__name__}: {exc}", details)


def install_excepthook() -> None:
    """Route uncaught exceptions (GUI thread and worker threads) to the log and a dialog."""
    global _reporter
    if _reporter is None:
        _reporter = _Reporter()
    try:
        path = user_data_dir()
        path.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path / "workbench.log", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logging.getLogger("workbench").addHandler(handler)
    except OSError:
        pass  # no writable log folder: the dialog still shows
    sys.excepthook = handle_exception
    threading.excepthook = lambda args: handle_exception(args.exc_type, args.exc_value, args.exc_traceback)  # type: ignore[arg-type]
