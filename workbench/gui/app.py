"""Create the QApplication and show the main window."""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QMessageBox

from workbench import __version__
from workbench.core.errors import WorkbenchError


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


def run_app(argv: Sequence[str] = ()) -> int:
    """Open the main window and run the event loop until it closes."""
    from workbench.gui.error_dialog import install_excepthook
    from workbench.gui.main_window import MainWindow

    app = create_application(argv)
    install_excepthook()
    try:
        window = MainWindow()
    except WorkbenchError as exc:
        QMessageBox.critical(None, "GPU Planning Workbench", f"The workbench cannot start:\n{exc}")
        return 2
    window.show()
    # Start-up objects (catalogs, plugins, Qt wrappers) live for the whole session: moving them
    # out of the collector's reach shortens the full collections that otherwise pause live
    # updates by 50-120 ms (measured with tests/benchmarks/bench_compare_view.py --gc-freeze).
    gc.freeze()
    # After a crash or a kill: offer the unsaved work autosave kept (once the window is on screen).
    QTimer.singleShot(0, lambda: window.offer_recoveries(quiet=True))
    return app.exec()
