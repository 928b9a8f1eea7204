"""A one-line label that shortens its text with "…" when its space is too narrow, and then shows
the whole text as its tooltip: a narrow window never cuts a word in half or pushes a value off.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QComboBox, QFormLayout, QLabel, QScrollArea, QSizePolicy, QWidget


class ElidedLabel(QLabel):
    def __init__(self, text: str = "", parent: QWidget | None = None,
                 mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight) -> None:
        super().__init__(parent)
        self._full = ""
        self._mode = mode
        self._own_tip = ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(False)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    # The whole text, as a QLabel's text() would be: callers and tests read what was set.
    def text(self) -> str:  # type: ignore[override]
        return self._full

    def shown_text(self) -> str:
        """What is painted (shortened or whole)."""
        return super().text()

    def is_elided(self) -> bool:
        return self.shown_text() != self._full

    def setText(self, text: str) -> None:  # type: ignore[override]  # noqa: N802 - Qt override
        self._full = text
        self.updateGeometry()
        self._elide()

    def setToolTip(self, tip: str) -> None:  # type: ignore[override]  # noqa: N802 - Qt override
        self._own_tip = tip
        self._elide()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        hint = super().sizeHint()
        margins = self.contentsMargins()
        width = self.fontMetrics().horizontalAdvance(self._full) + margins.left() + margins.right() + 2
        return QSize(width, hint.height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(self.fontMetrics().horizontalAdvance("…") * 3, super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        width = self.contentsRect().width()
        shown = self.fontMetrics().elidedText(self._full, self._mode, max(width, 0))
        if shown != super().text():
            super().setText(shown)
        tip = self._own_tip or (self._full if shown != self._full else "")
        if self._own_tip and shown != self._full and self._full not in self._own_tip:
            tip = f"{self._full}\n\n{self._own_tip}"
        super().setToolTip(tip)


class WrappedLabel(QLabel):
    """A word-wrapped label of at most ``max_lines`` lines that takes exactly the height its lines
    need at its width (a splitter or box layout otherwise squeezes it and the lines spill over the
    widget above). Text that needs more lines ends in "…" and is whole in the tooltip; ``text()``
    is always the whole text."""

    def __init__(self, text: str = "", parent: QWidget | None = None, max_lines: int = 3) -> None:
        super().__init__(parent)
        self.max_lines = max_lines
        self._full = ""
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setText(text)

    def text(self) -> str:  # type: ignore[override]
        return self._full

    def shown_text(self) -> str:
        return super().text()

    def is_elided(self) -> bool:
        return self.shown_text() != self._full

    def setText(self, text: str) -> None:  # type: ignore[override]  # noqa: N802 - Qt override
        self._full = text
        self._fit()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._fit()

    def _height(self, text: str, width: int) -> int:
        flags = int(Qt.TextFlag.TextWordWrap)
        return self.fontMetrics().boundingRect(QRect(0, 0, width, 100_000), flags, text).height()

    def _fit(self) -> None:
        width = self.contentsRect().width()
        if width <= 0:
            super().setText(self._full)
            return
        limit = self.max_lines * self.fontMetrics().lineSpacing()
        shown = self._full
        if self._height(shown, width) > limit:
            words = self._full.split(" ")
            low, high = 0, len(words)
            while low < high:  # the most words that fit with "…" after them
                middle = (low + high + 1) // 2
                if self._height(" ".join(words[:middle]) + " …", width) <= limit:
                    low = middle
                else:
                    high = middle - 1
            shown = " ".join(words[:low]) + " …"
        if shown != super().text():
            super().setText(shown)
        self.setToolTip(self._full if shown != self._full else "")
        margins = self.contentsMargins()
        height = min(self._height(shown, width), limit) + margins.top() + margins.bottom()
        if height != self.height() or self.minimumHeight() != height:
            self.setFixedHeight(max(height, self.fontMetrics().lineSpacing()))


class WholeLinesLabel(QLabel):
    """A word-wrapped label (rich text allowed) whose minimum height is what its lines need at its
    width: a layout short of room squeezes or scrolls something else instead of cutting its last
    line (a label's own minimum is guessed for a wider label than a narrow window gives it)."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setWordWrap(True)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt override
        # Its minimum height already follows its width. Reporting a height for width as well made
        # a scroll area around it give the whole column its preferred height (a splitter in it at
        # its size hint), scrolling where the least heights fit.
        return False

    # The lines at its width, not at the width a wrapped label guesses for itself (a layout takes
    # the larger of the two hints).
    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        hint = super().sizeHint()
        return QSize(hint.width(), self.minimumHeight()) if self.minimumHeight() > 0 else hint

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        hint = super().minimumSizeHint()
        return QSize(hint.width(), self.minimumHeight()) if self.minimumHeight() > 0 else hint

    def setText(self, text: str) -> None:  # noqa: N802 - Qt override
        super().setText(text)
        self._fit()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        if self.width() <= 0:
            return
        before = self.minimumHeight()
        # A label's heightForWidth is never below its minimum height: measure without it.
        self.setMinimumHeight(0)
        needed = self.heightForWidth(self.width()) if self.text() else 0
        self.setMinimumHeight(max(needed, 0) if needed != before else before)


def fit_to_width(scroll: QScrollArea, *forms: QFormLayout) -> None:
    """A panel that never scrolls sideways: its forms put a field under its label when the two do
    not fit side by side, and its drop-downs may be narrower than their longest entry."""
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    for form in forms:
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        for row in range(form.rowCount()):
            item = form.itemAt(row, QFormLayout.ItemRole.FieldRole)
            widget = item.widget() if item is not None else None
            if isinstance(widget, QComboBox):
                widget.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
                widget.setMinimumContentsLength(8)
