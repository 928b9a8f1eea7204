"""After a crash: offer the recovery copies autosave left behind (Restore / Discard / Later).

Only copies whose writer is gone are offered: a copy another running workbench is still
writing is its live autosave, not a crash's leftover (see :mod:`workbench.gui.project.autosave`).
"Later" keeps every copy for the next launch, or for File > Recover Unsaved Work.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.errors import InputError
from workbench.store import ProjectLock, Recovery, pending_recoveries


def offered_recoveries(exclude: Iterable[Path] = ()) -> list[Recovery]:
    """Recovery copies no running workbench is writing, newest first (``exclude``: our own)."""
    skip = {Path(p) for p in exclude}
    return [r for r in pending_recoveries()
            if r.recovery_file not in skip and ProjectLock(r.recovery_file).owner() is None]


def forget(recovery: Recovery) -> None:
    """Delete a recovery copy and the stale lock its dead writer left."""
    recovery.discard()
    ProjectLock(recovery.recovery_file).remove_if_stale()


@dataclass(frozen=True)
class RecoveryInfo:
    """What the dialog shows about one copy (read once, when the dialog opens)."""

    recovery: Recovery
    name: str
    scenarios: int
    saved_at: dt.datetime
    problem: str = ""  # the copy cannot be read
    note: str = ""  # something the user should know before restoring

    @classmethod
    def read(cls, recovery: Recovery) -> RecoveryInfo:
        try:
            saved_at = dt.datetime.fromtimestamp(recovery.recovery_file.stat().st_mtime)
        except OSError:
            saved_at = dt.datetime.now()
        try:
            project = recovery.load()
        except InputError as exc:
            return cls(recovery, recovery.recovery_file.name, 0, saved_at, problem=str(exc))
        note = ""
        original = recovery.original
        if original is not None:
            try:
                if dt.datetime.fromtimestamp(original.stat().st_mtime) > saved_at:
                    note = "The file on disk was saved after this copy."
            except OSError:
                note = "The original file no longer exists; restoring asks where to save."
        return cls(recovery, project.name, len(project.scenarios), saved_at, note=note)

    @property
    def where(self) -> str:
        original = self.recovery.original
        return str(original) if original is not None else "never saved (untitled)"


class RecoveryDialog(QDialog):
    """One row per recovery copy; :attr:`chosen` is the copy to restore after ``accept()``."""

    def __init__(self, recoveries: Iterable[Recovery], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("recovery_dialog")
        self.setWindowTitle("Recover unsaved work")
        self.chosen: Recovery | None = None
        self.infos = [RecoveryInfo.read(r) for r in recoveries]
        count = len(self.infos)
        intro = QLabel(
            "<b>The workbench did not close normally.</b><br>"
            f"{'These projects have' if count > 1 else 'This project has'} unsaved changes that autosave "
            "kept. Restore opens a copy with its changes (marked unsaved) in this window; Later keeps "
            "the copies for next time (File &gt; Recover Unsaved Work).",
            self,
        )
        intro.setWordWrap(True)
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("recovery_list")
        self.tree.setHeaderLabels(["Project", "Original file", "Autosaved", "Scenarios"])
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setAlternatingRowColors(True)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.ResizeToContents)
        for info in self.infos:
            item = QTreeWidgetItem([
                info.name,
                info.where,
                info.saved_at.strftime("%Y-%m-%d %H:%M:%S"),
                str(info.scenarios) if not info.problem else "",
            ])
            item.setTextAlignment(3, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            tip = info.problem or info.note
            for column in range(4):
                item.setToolTip(column, f"{escape(info.where)}<br>{escape(tip)}" if tip else escape(info.where))
            if info.problem:
                item.setText(0, f"{info.name} (cannot be read)")
                item.setForeground(0, Qt.GlobalColor.red)
            self.tree.addTopLevelItem(item)
        self.detail = QLabel("", self)
        self.detail.setObjectName("recovery_detail")
        self.detail.setWordWrap(True)
        self.buttons = QDialogButtonBox(self)
        self.restore_button = QPushButton("&Restore", self)
        self.restore_button.setDefault(True)
        self.discard_button = QPushButton("&Discard…", self)
        self.later_button = QPushButton("&Later", self)
        self.buttons.addButton(self.restore_button, QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.addButton(self.discard_button, QDialogButtonBox.ButtonRole.DestructiveRole)
        self.buttons.addButton(self.later_button, QDialogButtonBox.ButtonRole.RejectRole)
        self.restore_button.clicked.connect(lambda: self.restore())
        self.discard_button.clicked.connect(lambda: self.discard())
        self.later_button.clicked.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.detail)
        layout.addWidget(self.buttons)
        self.tree.currentItemChanged.connect(lambda *_: self._update())
        self.tree.itemDoubleClicked.connect(lambda *_: self.restore())
        if self.infos:
            self.tree.setCurrentItem(self.tree.topLevelItem(0))
        self.resize(820, 180 + 28 * min(count, 8))
        self._update()

    def _row(self, row: int | None) -> int:
        return self.tree.indexOfTopLevelItem(self.tree.currentItem()) if row is None else row

    def _update(self) -> None:
        row = self._row(None)
        info = self.infos[row] if 0 <= row < len(self.infos) else None
        self.restore_button.setEnabled(info is not None and not info.problem)
        self.discard_button.setEnabled(info is not None)
        if info is None:
            self.detail.setText("")
        elif info.problem:
            self.detail.setText(f"<span style='color:#c0392b'>{escape(info.problem)}</span>")
        else:
            self.detail.setText(escape(info.note))

    def restore(self, row: int | None = None) -> None:
        row = self._row(row)
        if not 0 <= row < len(self.infos) or self.infos[row].problem:
            return
        self.chosen = self.infos[row].recovery
        self.accept()

    def discard(self, row: int | None = None, confirm: bool = True) -> None:
        """Delete a copy for good (after asking); closes the dialog when none is left."""
        row = self._row(row)
        if not 0 <= row < len(self.infos):
            return
        info = self.infos[row]
        if confirm:
            answer = QMessageBox.question(
                self, "Discard recovered work",
                f"Delete the unsaved changes of \"{info.name}\" ({info.where})? This cannot be undone.",
                QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
                QMessageBox.StandardButton.Cancel,
            )
            if answer != QMessageBox.StandardButton.Discard:
                return
        forget(info.recovery)
        del self.infos[row]
        self.tree.takeTopLevelItem(row)
        if not self.infos:
            self.reject()
        self._update()
