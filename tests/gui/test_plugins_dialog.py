"""Help → Plugins…: the list with status and errors, the checkboxes remembered in QSettings, and the
next start's engine built without the plugins turned off."""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QColor

from workbench.engine.pipeline import Engine
from workbench.gui import theme
from workbench.gui.dialogs.plugins_dialog import (
    COLUMNS,
    PluginsDialog,
    WindowPlugins,
    disabled_plugins,
    engine_factory,
    window_host,
)
from workbench.gui.main_window import MainWindow
from workbench.gui.settings import Settings
from workbench.pluginhost import FIRST_PARTY, PluginStatus

STATUSES = [
    PluginStatus("workbench_memory", "1.0.0", "first-party", "loaded", registered={"estimators": 4}),
    PluginStatus("acme_prices", "2.1", "entry point (acme-prices 2.1)", "loaded",
                 registered={"estimators": 1, "accelerators": 3}),
    PluginStatus("acme_broken", "0.1", "entry point (acme-broken 0.1)", "failed",
                 "ModuleNotFoundError: No module named 'acme_sdk'"),
]


def _cell(dialog: PluginsDialog, row: int, column: str) -> str:
    return dialog.table.item(row, COLUMNS.index(column)).text()


def test_the_dialog_lists_each_plugin_with_its_status_and_error(qtbot, settings: QSettings) -> None:  # type: ignore[no-untyped-def]
    dialog = PluginsDialog(STATUSES, Settings(settings))
    qtbot.addWidget(dialog)
    assert dialog.table.rowCount() == 3
    assert [_cell(dialog, 1, c) for c in ("Plugin", "Version", "Origin", "Status", "Provides")] == [
        "acme_prices", "2.1", "entry point (acme-prices 2.1)", "loaded", "1 estimator, 3 accelerators"]
    assert _cell(dialog, 2, "Status") == "failed"
    assert _cell(dialog, 2, "Error") == "ModuleNotFoundError: No module named 'acme_sdk'"
    error = dialog.table.item(2, COLUMNS.index("Error"))
    assert error.foreground().color() == QColor(theme.BAD_COLOUR)
    assert all(dialog.table.item(row, 0).checkState() == Qt.CheckState.Checked for row in range(3))
    assert "next time the workbench starts" in dialog.note.text()


def test_unticked_plugins_are_remembered_for_the_next_start(qtbot, settings: QSettings) -> None:  # type: ignore[no-untyped-def]
    store = Settings(settings)
    dialog = PluginsDialog(STATUSES, store)
    qtbot.addWidget(dialog)
    dialog.set_enabled("acme_prices", False)
    assert "Restart the workbench" in dialog.note.text()
    dialog.accept()
    assert disabled_plugins(store) == {"acme_prices"}
    again = PluginsDialog(STATUSES, Settings(QSettings(settings.fileName(), QSettings.Format.IniFormat)))
    qtbot.addWidget(again)
    assert again.chosen_disabled() == {"acme_prices"}
    again.set_enabled("acme_prices", True)
    again.reject()
    assert disabled_plugins(store) == {"acme_prices"}  # Cancel keeps the saved choice


def test_the_next_start_loads_every_plugin_but_the_disabled_ones(settings: QSettings) -> None:
    store = Settings(settings)
    store.set("plugins/disabled", ["workbench_cost"])
    engine = engine_factory(store)()
    ids = {e.info.id for e in engine.estimators}
    assert "cost" not in ids and "memory.stack" in ids
    statuses = {s.name: s.status for s in window_host().status_list()}
    assert statuses["workbench_cost"] == "disabled"
    assert all(statuses[name] == "loaded" for name in FIRST_PARTY if name != "workbench_cost")


def test_without_disabled_plugins_the_window_shares_the_process_engine() -> None:
    from workbench.pluginhost import default_engine

    assert WindowPlugins().engine() is default_engine()


def test_help_menu_opens_the_plugins_dialog(qtbot, settings: QSettings, fake_engine: Engine,  # type: ignore[no-untyped-def]
                                            catalogs) -> None:
    window = MainWindow(settings=settings, engine=fake_engine, catalogs=catalogs)
    window.ask_before_discard = False
    qtbot.addWidget(window)
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    assert window.plugins_action in help_menu.actions()
    window.plugins_action.trigger()
    dialog = window.findChild(PluginsDialog)
    assert dialog is not None and dialog.isVisible()
    names = [dialog.table.item(r, COLUMNS.index("Plugin")).text() for r in range(dialog.table.rowCount())]
    assert set(FIRST_PARTY) <= set(names)
    dialog.close()
