"""One undo stack: Ctrl+Z / Ctrl+Shift+Z / Ctrl+Y in the window's fields undo the project's edits.

A QLineEdit or spin box has an undo of its own for its text. In this window every committed edit
is already a command on the project's QUndoStack, so the field's undo would bring back text the
stack knows nothing about (invalid text, or a value that then records a new edit instead of
undoing one). The filter claims those keys in the window's fields (ShortcutOverride accepted, so
the key press comes to the field) and runs the window's Undo / Redo actions instead.
Dialogs (a custom accelerator, the report) keep their fields' own undo.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence
from PySide6.QtWidgets import QAbstractSpinBox, QLineEdit, QWidget


class UndoKeysToStack(QObject):
    def __init__(self, window: QWidget, undo: QAction, redo: QAction) -> None:
        super().__init__(window)
        self._window = window
        self._undo = undo
        self._redo = redo

    def _action_for(self, event: QKeyEvent) -> QAction | None:
        if event.matches(QKeySequence.StandardKey.Undo):
            return self._undo
        if event.matches(QKeySequence.StandardKey.Redo) or (
            event.key() == Qt.Key.Key_Y and event.modifiers() == Qt.KeyboardModifier.ControlModifier
        ):
            return self._redo
        return None

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        kind = event.type()
        if kind not in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress):
            return False
        if not isinstance(watched, QLineEdit | QAbstractSpinBox) or watched.window() is not self._window:
            return False
        action = self._action_for(event)  # type: ignore[arg-type]
        if action is None:
            return False
        if kind == QEvent.Type.ShortcutOverride:
            event.accept()  # the key press comes to the field, where this filter takes it
            return True
        if action.isEnabled():
            action.trigger()
        return True  # never the field's own undo
