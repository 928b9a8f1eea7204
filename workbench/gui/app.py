"""Create the QApplication and show the main window."""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QMessageBox

from workbench import __version__
from workbench.core.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench.gui.main_window import MainWindow


def create_application(argv: Sequence[str] = ()) -> QApplication:
    existing = QApplication.instance()
    if existing is None:
        # Fractional scale factors (125 %, 150 %) as they are: crisp text and charts on HiDPI screens.
        QGuiApplication.setHighDpiScaleFactorRoundingPolicy(Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
    app = existing or QApplication([sys.argv[0], *argv])
    app.setApplicationName("GPU Planning Workbench")
    app.setOrganizationName("gpu-workbench")
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("gpu-workbench")
    from workbench.gui.main_window import app_icon

    app.setWindowIcon(app_icon())
    return app  # type: ignore[return-value]


#: Allocations between young collections (CPython's default is 700). Estimates allocate many
#: short-lived objects; with the default, full collections walking every live object paused a
#: compare-view update by 20-60 ms each (tests/benchmarks/bench_compare_view.py).
GC_THRESHOLDS = (20_000, 20, 100)


def tune_garbage_collector() -> None:
    """Once the window is up: keep start-up objects out of the collector's walks, collect less often.

    Start-up objects (catalogs, plugins, Qt wrappers) live for the whole session: ``gc.freeze``
    moves them out of every later collection. Reference cycles are still collected, only in
    bigger batches (memory measured unchanged: 161 MB peak RSS over 60 whole-catalog comparisons).
    """
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


#: The longest the window waits for its first figures before it shows anyway.
FIRST_PAINT_WAIT_MS = 1500


def show_when_drawn(window: MainWindow) -> None:
    """Show the window once its charts hold the first estimate and sweep (a few hundred ms), not
    before: shown at once it flashed empty placeholder axes. A slow start shows it after
    :data:`FIRST_PAINT_WAIT_MS` with what is there."""
    waiting = {"estimate", "sweep"}

    def arrived(what: str) -> None:
        waiting.discard(what)
        if not waiting:
            show()

    def show() -> None:
        # Only a window nobody has shown or hidden yet: one closed before its first figures came
        # (a quick quit, a test) must stay closed, or the application never ends.
        if not window.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide):
            window.show()

    window.estimate_shown.connect(lambda *_: arrived("estimate"))
    window.sweep_shown.connect(lambda *_: arrived("sweep"))
    # The window is the timer's context: a window closed (deleted) before the wait ends takes the
    # timer with it, instead of the callback touching a deleted C++ object.
    QTimer.singleShot(FIRST_PAINT_WAIT_MS, window, show)


def run_app(argv: Sequence[str] = ()) -> int:
    """Open the main window and run the event loop until it closes."""
    from workbench.gui.dialogs.error_dialog import install_excepthook
    from workbench.gui.main_window import MainWindow

    app = create_application(argv)
    install_excepthook()
    try:
        window = MainWindow()
    except WorkbenchError as exc:
        QMessageBox.critical(None, "GPU Planning Workbench", f"The workbench cannot start:\n{exc}")
        return 2
    show_when_drawn(window)
    tune_garbage_collector()
    # After a crash or a kill: offer the unsaved work autosave kept (once the window is on screen).
    QTimer.singleShot(0, window, lambda: window.offer_recoveries(quiet=True))
    return app.exec()
