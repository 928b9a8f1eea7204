"""Help → Plugins…: every plugin with its version, origin, status and error, and a checkbox to turn
it off or on.

The choice is remembered in QSettings (``plugins/disabled``) and takes effect at the next start:
:func:`engine_factory` builds the window's engine with ``PluginHost(disabled=...)``. Not at once:
the open project's numbers would change under the user's eyes with no undo step. The command line
does not read this setting; there ``WORKBENCH_PLUGINS`` limits the third-party plugins.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.engine.pipeline import Engine
from workbench.gui import theme
from workbench.gui.settings import DEFAULTS, Settings
from workbench.pluginhost import ENTRY_POINT_GROUP, PluginHost, PluginStatus, default_engine, get_host

#: Names of the plugins the user turned off. Declared with its default in the settings table.
DISABLED_KEY = "plugins/disabled"
DEFAULTS.setdefault(DISABLED_KEY, [])

COLUMNS = ("On", "Plugin", "Version", "Origin", "Status", "Provides", "Error")
_ON, _NAME, _VERSION, _ORIGIN, _STATUS, _PROVIDES, _ERROR = range(len(COLUMNS))

RESTART_NOTE = (
    "Turning a plugin off or on takes effect the next time the workbench starts. "
    "The command line is not affected: there, WORKBENCH_PLUGINS=name1,name2 limits the third-party plugins."
)


def disabled_plugins(settings: Settings) -> set[str]:
    """The plugin names the user turned off (ini files hand a one-item list back as a string)."""
    value = settings.get(DISABLED_KEY)
    if not value:
        return set()
    return {value} if isinstance(value, str) else {str(name) for name in value}


def set_disabled_plugins(settings: Settings, names: Iterable[str]) -> None:
    settings.set(DISABLED_KEY, sorted(set(names)))
    settings.sync()


class WindowPlugins:
    """The plugins the window runs with: every one but those turned off, loaded once, on whichever
    thread asks first (the estimate worker, normally, to keep imports off the start-up path)."""

    def __init__(self, disabled: Iterable[str] = ()) -> None:
        self.disabled = frozenset(disabled)
        self._lock = threading.Lock()
        self._host: PluginHost | None = None

    def host(self) -> PluginHost:
        with self._lock:
            if self._host is None:
                self._host = PluginHost(disabled=self.disabled) if self.disabled else get_host()
            return self._host

    def engine(self) -> Engine:
        host = self.host()
        return default_engine() if host is get_host() else Engine(host.registry.estimators)


_window_plugins: WindowPlugins | None = None


def engine_factory(settings: Settings) -> Callable[[], Engine]:
    """For ``EstimateRunner``: reads the user's choice now (GUI thread), loads the plugins later."""
    global _window_plugins
    _window_plugins = WindowPlugins(disabled_plugins(settings))
    return _window_plugins.engine


def window_host() -> PluginHost:
    """The plugin host whose estimators the window uses."""
    return _window_plugins.host() if _window_plugins is not None else get_host()


def _provides(status: PluginStatus) -> str:
    """``{"estimators": 1, "accelerators": 3}`` -> ``1 estimator, 3 accelerators``."""
    parts = []
    for kind, count in status.registered.items():
        word = kind.replace("_", " ")
        parts.append(f"{count} {word.removesuffix('s') if count == 1 else word}")
    return ", ".join(parts)


class PluginsDialog(QDialog):
    """The plugin list; OK saves the checkboxes, which apply at the next start."""

    def __init__(self, statuses: list[PluginStatus], settings: Settings,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("plugins_dialog")
        self.setWindowTitle("Plugins")
        self.resize(980, 420)
        self.settings = settings
        self.statuses = statuses
        self._saved = disabled_plugins(settings)

        intro = QLabel(
            "Plugins contribute estimators, accelerators and models. First-party plugins ship with the "
            f"workbench; third-party ones come from installed Python packages (entry-point group "
            f"<code>{ENTRY_POINT_GROUP}</code>). A plugin that fails to load is listed with its error; "
            "the others keep working.",
            self,
        )
        intro.setWordWrap(True)

        self.table = QTableWidget(len(statuses), len(COLUMNS), self)
        self.table.setObjectName("plugins_table")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        for row, status in enumerate(statuses):
            self._fill_row(row, status)
        header = self.table.horizontalHeader()
        for column in range(len(COLUMNS)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(_ERROR, QHeaderView.ResizeMode.Stretch)
        self.table.resizeRowsToContents()
        self.table.itemChanged.connect(self._on_item_changed)

        self.note = QLabel(RESTART_NOTE, self)
        self.note.setObjectName("plugins_note")
        self.note.setWordWrap(True)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.note)
        layout.addWidget(self.buttons)

    def _fill_row(self, row: int, status: PluginStatus) -> None:
        on = QTableWidgetItem()
        flags = Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        on.setFlags(flags)
        on.setCheckState(Qt.CheckState.Unchecked if status.name in self._saved else Qt.CheckState.Checked)
        on.setToolTip("Load this plugin at the next start")
        on.setData(Qt.ItemDataRole.UserRole, status.name)
        self.table.setItem(row, _ON, on)
        texts = (status.name, status.version or "-", status.origin, status.status, _provides(status) or "-",
                 status.error or "")
        for column, text in enumerate(texts, start=_NAME):
            item = QTableWidgetItem(text)
            item.setToolTip(text)
            self.table.setItem(row, column, item)
        if status.status == "failed":
            for column in (_STATUS, _ERROR):
                self.table.item(row, column).setForeground(QColor(theme.BAD_COLOUR))

    def _on_item_changed(self, item: QTableWidgetItem) -> None:
        if item.column() != _ON:
            return
        pending = self.chosen_disabled() != self._saved
        prefix = "<b>Restart the workbench to apply your changes.</b> " if pending else ""
        self.note.setText(prefix + RESTART_NOTE)

    def chosen_disabled(self) -> set[str]:
        """The names whose checkbox is off."""
        names = set()
        for row in range(self.table.rowCount()):
            item = self.table.item(row, _ON)
            if item.checkState() != Qt.CheckState.Checked:
                names.add(item.data(Qt.ItemDataRole.UserRole))
        return names

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Tick or untick ``name``'s checkbox, as a click would."""
        for row in range(self.table.rowCount()):
            item = self.table.item(row, _ON)
            if item.data(Qt.ItemDataRole.UserRole) == name:
                item.setCheckState(Qt.CheckState.Checked if enabled else Qt.CheckState.Unchecked)
                return
        raise KeyError(name)

    def accept(self) -> None:
        # Names not listed now (a package uninstalled since) stay as the user left them.
        listed = {s.name for s in self.statuses}
        set_disabled_plugins(self.settings, (self._saved - listed) | self.chosen_disabled())
        super().accept()


def show_plugins_dialog(parent: QWidget, settings: Settings) -> PluginsDialog:
    """Open the dialog (non-modal) for the plugins the window runs with."""
    dialog = PluginsDialog(window_host().status_list(), settings, parent)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.show()
    return dialog
