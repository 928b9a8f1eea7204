"""The bundled guide (resources/help/index.html), shown offline in a QTextBrowser."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from workbench.paths import resources_dir


def help_index() -> Path:
    return resources_dir() / "help" / "index.html"


class HelpDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("help_dialog")
        self.setWindowTitle("GPU Planning Workbench — Guide")
        self.resize(760, 640)
        self.browser = QTextBrowser(self)
        self.browser.setOpenExternalLinks(False)  # offline: links inside the guide only
        self.browser.setOpenLinks(True)
        index = help_index()
        if index.is_file():
            self.browser.setSearchPaths([str(index.parent)])
            self.browser.setSource(QUrl.fromLocalFile(str(index)))
        else:
            self.browser.setHtml(f"<p>The guide is missing from this installation ({index}).</p>")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser)
        layout.addWidget(buttons)
