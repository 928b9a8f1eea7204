"""A long search's line: what it is doing (or what it found), a progress bar and a Cancel button.

The bar and the button show only while a search runs; the owner calls :meth:`started`,
:meth:`progressed` with the engine's ``(done, total)`` and :meth:`stopped` with the line to leave.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QWidget

from workbench.gui.elided_label import WholeLinesLabel


class ProgressRow(QWidget):
    #: The user asked to stop the running search.
    cancel_requested = Signal()

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"{name}_progress")
        self.label = WholeLinesLabel("", self)
        self.label.setObjectName(f"{name}_status")
        self.bar = QProgressBar(self)
        self.bar.setObjectName(f"{name}_bar")
        self.bar.setMaximumWidth(140)
        self.bar.setTextVisible(True)
        self.bar.setFormat("%p%")
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setObjectName(f"{name}_cancel")
        self.cancel_button.setToolTip("Stop this search; nothing it found so far is shown")
        self.cancel_button.clicked.connect(self.cancel_requested.emit)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel_button)
        self.stopped("")

    @property
    def running(self) -> bool:
        return not self.cancel_button.isHidden()

    def started(self, text: str) -> None:
        self.label.setText(text)
        self.bar.setRange(0, 0)  # busy until the first report says how many steps there are
        self.bar.setVisible(True)
        self.cancel_button.setVisible(True)

    def progressed(self, done: int, total: int) -> None:
        if total > 0:
            self.bar.setRange(0, total)
            self.bar.setValue(min(done, total))

    def stopped(self, text: str) -> None:
        self.label.setText(text)
        self.bar.setVisible(False)
        self.cancel_button.setVisible(False)
