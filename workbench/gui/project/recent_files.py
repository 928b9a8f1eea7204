"""File > Open Recent: the last projects opened or saved, kept in the settings.

A file that has gone (moved, deleted, on an unmounted drive) stays in the list, greyed, so a
drive plugged back in brings it back; "Remove Missing Files" drops such entries, and choosing
one that vanished after the menu was built says so and drops it.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QWidget

from workbench.gui.settings import Settings

MAX_RECENT = 10
_KEY = "files/recent"


class RecentFiles:
    """The list in the settings, most recent first, without duplicates."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def paths(self) -> list[Path]:
        return [Path(p) for p in self.settings.get(_KEY) if p][:MAX_RECENT]

    def _store(self, paths: list[Path]) -> None:
        self.settings.set(_KEY, [str(p) for p in paths[:MAX_RECENT]])

    def add(self, path: Path) -> None:
        path = Path(path).absolute()
        self._store([path, *(p for p in self.paths() if p != path)])

    def remove(self, path: Path) -> None:
        path = Path(path).absolute()
        self._store([p for p in self.paths() if p != path])

    def remove_missing(self) -> list[Path]:
        missing = [p for p in self.paths() if not p.is_file()]
        self._store([p for p in self.paths() if p not in missing])
        return missing

    def clear(self) -> None:
        self._store([])


class RecentFilesMenu(QMenu):
    """The submenu; rebuilt each time it opens, so greyed entries follow the disk."""

    open_requested = Signal(Path)

    def __init__(self, recent: RecentFiles, parent: QWidget | None = None) -> None:
        super().__init__("Open &Recent", parent)
        self.setObjectName("recent_menu")
        self.recent = recent
        self.setToolTipsVisible(True)
        self.aboutToShow.connect(self.rebuild)
        self.rebuild()

    def rebuild(self) -> None:
        self.clear()
        paths = self.recent.paths()
        missing = 0
        for i, path in enumerate(paths):
            number = f"&{i + 1} " if i < 9 else "1&0 " if i == 9 else ""
            exists = path.is_file()
            action = self.addAction(f"{number}{path.name}" + ("" if exists else "  (missing)"))
            action.setData(str(path))
            action.setToolTip(str(path) if exists else f"{path} no longer exists")
            action.setStatusTip(str(path))
            action.setEnabled(exists)
            action.triggered.connect(lambda _=False, p=path: self.open_requested.emit(p))
            missing += not exists
        if not paths:
            self.addAction("No recent projects").setEnabled(False)
        self.addSeparator()
        self.remove_missing_action = self.addAction("Remove Missing Files", self._remove_missing)
        self.remove_missing_action.setEnabled(missing > 0)
        self.clear_action = self.addAction("Clear Menu", self._clear)
        self.clear_action.setEnabled(bool(paths))
        self.setEnabled(True)

    def file_actions(self) -> list[QAction]:
        return [a for a in self.actions() if a.data()]

    def _remove_missing(self) -> None:
        self.recent.remove_missing()
        self.rebuild()

    def _clear(self) -> None:
        self.recent.clear()
        self.rebuild()
