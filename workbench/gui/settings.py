"""Window and session preferences in QSettings, read through one declared defaults table.

Only what does not change an estimate lives here (layout, first-launch flag, chart choices);
everything that changes a number belongs in the project.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

#: Every key the window reads or writes, with its default. A key not listed here is a bug.
DEFAULTS: dict[str, Any] = {
    "window/geometry": QByteArray(),
    "window/state": QByteArray(),
    "window/charts": QByteArray(),  # the chart splitters (central area), not part of saveState
    "window/top_charts": QByteArray(),
    "window/tabs_only": False,  # "Hide side panels" was on: the docks are saved shown, then hidden again
    "session/first_launch_done": False,
    "session/hint_dismissed": False,
    "charts/sweep_axis": "batch_size",
    "charts/sensitivity_metric": "",  # the headline key the Sensitivity tab swings ("": the natural one)
    "files/recent": [],  # most recent first, at most recent_files.MAX_RECENT
    "autosave/interval_ms": 30_000,  # a recovery copy of unsaved work at least this often (0: never)
    "autosave/idle_ms": 2_000,  # ... and this long after the last edit (0: only on the interval)
}

#: Keep the settings in ``$WORKBENCH_SETTINGS_DIR/settings.ini`` instead of the user's native
#: settings (a portable install, or a test that starts the real app in a subprocess).
SETTINGS_DIR_ENV = "WORKBENCH_SETTINGS_DIR"

#: Bumped when the dock layout changes so an old saved state is not applied to new docks.
LAYOUT_VERSION = 1


class Settings:
    """Typed access to QSettings through :data:`DEFAULTS`.

    Pass a ``QSettings`` (tests pass an ini file under a temp folder); by default the
    application's native user settings are used, or an ini file in ``$WORKBENCH_SETTINGS_DIR``.
    """

    def __init__(self, store: QSettings | None = None) -> None:
        if store is None:
            folder = os.environ.get(SETTINGS_DIR_ENV)
            if folder:
                store = QSettings(str(Path(folder) / "settings.ini"), QSettings.Format.IniFormat)
            else:
                store = QSettings()
        self.store = store

    def get(self, key: str) -> Any:
        default = DEFAULTS[key]
        value = self.store.value(key, default)
        if isinstance(default, bool):
            # Ini files hand booleans back as the strings "true"/"false".
            return value in (True, "true", "1", 1)
        if isinstance(default, int):
            try:
                return int(value)
            except (TypeError, ValueError):
                return default
        if isinstance(default, QByteArray) and not isinstance(value, QByteArray):
            return default
        if isinstance(default, list):
            # Ini files hand a one-element list back as a plain string, an empty one as None.
            if value is None or value == "":
                return []
            return [value] if isinstance(value, str) else list(value)
        return value

    def set(self, key: str, value: Any) -> None:
        if key not in DEFAULTS:
            raise KeyError(f"undeclared setting {key!r}")
        self.store.setValue(key, value)

    def sync(self) -> None:
        self.store.sync()
