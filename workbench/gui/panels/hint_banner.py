"""A dismissible banner with a short hint on where to start (first launch)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

START_HINT = (
    "<b>Start here:</b> this sample project holds four scenarios (switch them in the <b>Scenario</b> panel). "
    "Pick a model on the left, a GPU in <b>Hardware</b>, then change batch or sequence length: "
    "the memory stack, roofline and sweep follow. Hover any number for its formula. "
    "<b>F1</b> opens the guide."
)


class HintBanner(QFrame):
    dismissed = Signal()

    def __init__(self, text: str = START_HINT, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("hint_banner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        pal = self.palette()
        pal.setColor(QPalette.ColorRole.Window, pal.color(QPalette.ColorRole.ToolTipBase))
        pal.setColor(QPalette.ColorRole.WindowText, pal.color(QPalette.ColorRole.ToolTipText))
        self.setPalette(pal)
        self.label = QLabel(text, self)
        self.label.setWordWrap(True)
        self.close_button = QToolButton(self)
        self.close_button.setText("✕")
        self.close_button.setToolTip("Hide this hint (it will not come back)")
        self.close_button.setAutoRaise(True)
        self.close_button.clicked.connect(self.dismiss)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 6, 6)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.close_button)

    def dismiss(self) -> None:
        self.hide()
        self.dismissed.emit()
