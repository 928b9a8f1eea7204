"""Create the QApplication and show the main window."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from PySide6.QtWidgets import QApplication, QMessageBox

from workbench import __version__
from workbench.core.errors import WorkbenchError


def create_application(argv: Sequence[str] = ()) -> QApplication:
    app = QApplication.instance() or QApplication([sys.argv[0], *argv])
    app.setApplicationName("GPU Planning Workbench")
    app.setOrganizationName("gpu-workbench")
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("gpu-workbench")
    return app  # type: ignore[return-value]


def run_app(argv: Sequence[str] = ()) -> int:
    """Open the main window and run the event loop until it closes."""
    from workbench.gui.main_window import MainWindow

    app = create_application(argv)
    try:
        window = MainWindow()
    except WorkbenchError as exc:
        QMessageBox.critical(None, "GPU Planning Workbench", f"The workbench cannot start:\n{exc}")
        return 2
    window.show()
    return app.exec()
