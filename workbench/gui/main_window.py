"""The main window: model, hardware, scenario and results panels around live charts.

Panels build edits; the :class:`ProjectController` applies them through its undo stack and says
``changed``; the window then asks the :class:`EstimateRunner` for an estimate (off the GUI
thread) and hands each fresh result to the charts and the results panel.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, QEvent, QSettings, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QIcon, QKeySequence, QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from workbench import __version__
from workbench.core.errors import InputError
from workbench.core.project import Project
from workbench.engine.fixes import Fix
from workbench.engine.pipeline import Engine
from workbench.gui import exports, theme
from workbench.gui.catalogs import Catalogs
from workbench.gui.charts.memory_chart import MemoryStackChart
from workbench.gui.charts.roofline_chart import RooflineChart
from workbench.gui.charts.sweep_chart import SweepChart
from workbench.gui.compare.analysis_tabs import AnalysisTabs
from workbench.gui.controller import ProjectController
from workbench.gui.dialogs.help_dialog import HelpDialog
from workbench.gui.dialogs.plugins_dialog import engine_factory
from workbench.gui.estimate_runner import EstimateRunner, Outcome, SweepOutcome
from workbench.gui.panels.hardware_panel import HardwarePanel
from workbench.gui.panels.hint_banner import HintBanner
from workbench.gui.panels.model_panel import ModelPanel
from workbench.gui.panels.results_panel import ResultsPanel
from workbench.gui.panels.scenario_panel import ScenarioPanel
from workbench.gui.project.autosave import Autosaver
from workbench.gui.project.known_estimates import KnownEstimates
from workbench.gui.project.recent_files import RecentFiles, RecentFilesMenu
from workbench.gui.project.samples import new_project, sample_project
from workbench.gui.settings import LAYOUT_VERSION, Settings
from workbench.gui.undo_keys import UndoKeysToStack
from workbench.paths import resources_dir

if TYPE_CHECKING:
    from workbench.core.scenario import Scenario
    from workbench.engine.estimate import Estimate
    from workbench.gui.dialogs.scenario_diff import ScenarioDiffDialog
    from workbench.store import ProjectLock, Recovery

APP_TITLE = "GPU Planning Workbench"


def _carried_tables(path: Path) -> dict[str, list[dict[str, Any]]] | None:
    """Every measurement and calibration row of the project file at ``path``; None when it cannot
    be read (a missing or damaged file has none to carry)."""
    from workbench.store.measurements import read_rows
    from workbench.store.schema import CARRIED_TABLES

    try:
        return {table: read_rows(path, table) for table in CARRIED_TABLES}
    except InputError:
        return None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a.absolute() == b.absolute()


def app_icon() -> QIcon:
    return QIcon(str(resources_dir() / "icons" / "gpu-workbench.svg"))


#: The window's preferred size, and the share of a smaller screen it takes instead.
PREFERRED_SIZE = QSize(1500, 920)
#: Under this width (logical pixels) the side panels share one column (see ``_arrange_docks``).
COMPACT_BELOW_PX = 1500
SCREEN_SHARE = 0.92


def fitting_size(available: QSize) -> QSize:
    """The preferred size, shrunk to fit the screen's available area (a 1280x800 laptop)."""
    return PREFERRED_SIZE.boundedTo(QSize(int(available.width() * SCREEN_SHARE),
                                          int(available.height() * SCREEN_SHARE)))


class MainWindow(QMainWindow):
    #: Emitted after the charts and results show a fresh estimate (its generation number).
    estimate_shown = Signal(int)
    sweep_shown = Signal(int)

    def __init__(self, parent: QWidget | None = None, *, settings: QSettings | None = None,
                 engine: Engine | None = None, catalogs: Catalogs | None = None,
                 project: Project | None = None) -> None:
        super().__init__(parent)
        theme.configure_pyqtgraph()
        self.settings = Settings(settings)
        self.setWindowTitle(APP_TITLE)
        self.setWindowIcon(app_icon())
        self.setObjectName("main_window")
        self.setAcceptDrops(True)
        self.setDockOptions(QMainWindow.DockOption.AnimatedDocks | QMainWindow.DockOption.AllowTabbedDocks
                            | QMainWindow.DockOption.AllowNestedDocks)
        self.catalogs = catalogs or Catalogs.load()
        first_launch = not self.settings.get("session/first_launch_done")
        if project is None:
            project = sample_project() if first_launch else new_project()
        self.project_path: Path | None = None
        self._lock: ProjectLock | None = None
        #: Ask before discarding unsaved edits (New, Open, close); scripted sessions turn it off.
        self.ask_before_discard = True
        self.controller = ProjectController(self.catalogs, project, self)
        from workbench.gui.dialogs.measure_state import CalibrationState

        #: The calibration profile applied to the estimates (a view setting; measurements live in the file).
        self.calibration = CalibrationState(self)
        self.runner = EstimateRunner(
            self.catalogs, engine if engine is not None else engine_factory(self.settings), self
        )
        self.runner.sweep_field = self.settings.get("charts/sweep_axis")
        #: The latest estimate of each scenario with its input hash: saved with the project, and
        #: shown at once (not recomputed) while a scenario's inputs still match.
        self.known_estimates = KnownEstimates(self.catalogs)
        self.recent_files = RecentFiles(self.settings)
        self.autosaver = Autosaver(self.controller, lambda: self.project_path,
                                   interval_ms=self.settings.get("autosave/interval_ms"),
                                   idle_ms=self.settings.get("autosave/idle_ms"), parent=self)
        self.autosaver.failed.connect(lambda text: self.statusBar().showMessage(f"Autosave failed: {text}", 10000))

        # --- panels and charts ----------------------------------------------------------------
        self.model_panel = ModelPanel(self.controller, self)
        self.hardware_panel = HardwarePanel(self.controller, self)
        self.scenario_panel = ScenarioPanel(self.controller, self)
        self.results_panel = ResultsPanel(self)
        self.results_panel.fix_requested.connect(self.apply_fix)
        self.memory_chart = MemoryStackChart(self)
        self.roofline_chart = RooflineChart(self)
        self.sweep_chart = SweepChart(self)
        self.sweep_chart.set_axis(self.runner.sweep_field)
        self.sweep_chart.axis_changed.connect(self._on_sweep_axis)
        for chart, name in ((self.memory_chart, "memory"), (self.roofline_chart, "roofline"),
                            (self.sweep_chart, "sweep")):
            exports.add_chart_actions(chart, name)
        exports.add_table_actions(self.model_panel.table.view, "models")
        exports.add_table_actions(self.hardware_panel.table.view, "accelerators")
        for panel in (self.model_panel, self.hardware_panel, self.scenario_panel):
            panel.status_message.connect(lambda text: self.statusBar().showMessage(text, 8000))

        self.hint = HintBanner(parent=self)
        self.hint.dismissed.connect(lambda: self.settings.set("session/hint_dismissed", True))
        self.hint.setVisible(first_launch and not self.settings.get("session/hint_dismissed"))
        self.top_charts = QSplitter(Qt.Orientation.Horizontal, self)
        self.top_charts.setObjectName("top_charts")
        self.top_charts.addWidget(self.memory_chart)
        self.top_charts.addWidget(self.roofline_chart)
        self.top_charts.setStretchFactor(0, 1)
        self.top_charts.setStretchFactor(1, 1)
        self.charts_splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.charts_splitter.setObjectName("charts_splitter")
        self.charts_splitter.addWidget(self.top_charts)
        self.charts_splitter.addWidget(self.sweep_chart)
        self.charts_splitter.setStretchFactor(0, 3)
        self.charts_splitter.setStretchFactor(1, 2)
        central = QWidget(self)
        central_layout = QVBoxLayout(central)
        central_layout.setContentsMargins(4, 4, 4, 4)
        central_layout.addWidget(self.hint)
        self.tabs = AnalysisTabs(self.controller, self.catalogs, lambda: self.runner.engine, self.charts_splitter, self)
        self.compare_view, self.sensitivity_view = self.tabs.compare_view, self.tabs.sensitivity_view
        self.sensitivity_view.set_preferred_metric(self.settings.get("charts/sensitivity_metric"))
        self.sensitivity_view.metric_chosen.connect(lambda key: self.settings.set("charts/sensitivity_metric", key))
        central_layout.addWidget(self.tabs, 1)
        self.setCentralWidget(central)

        self.docks: dict[str, QDockWidget] = {}
        self._add_dock("model_dock", "Model", self.model_panel, Qt.DockWidgetArea.LeftDockWidgetArea)
        self._add_dock("hardware_dock", "Hardware", self.hardware_panel, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.tabifyDockWidget(self.docks["model_dock"], self.docks["hardware_dock"])
        self.docks["model_dock"].raise_()
        self._add_dock("scenario_dock", "Scenario", self.scenario_panel, Qt.DockWidgetArea.RightDockWidgetArea)
        self._add_dock("results_dock", "Results", self.results_panel, Qt.DockWidgetArea.RightDockWidgetArea)
        self.splitDockWidget(self.docks["scenario_dock"], self.docks["results_dock"], Qt.Orientation.Vertical)
        self.resize(fitting_size(self.screen().availableGeometry().size()))
        self._build_menus()
        self._layout_restored = self._restore_layout()
        self._default_state: QByteArray | None = None
        self._compact: bool | None = None  # docks arranged for a narrow window (None: not yet)
        if first_launch:
            self.settings.set("session/first_launch_done", True)

        self.controller.changed.connect(self._on_changed)
        self.calibration.changed.connect(self._on_changed)
        self.calibration.changed.connect(lambda: self.statusBar().showMessage(self.calibration.status_text(), 10000))
        # a profile belongs to the file it came from: another project starts uncalibrated
        self.controller.project_replaced.connect(lambda: self.calibration.apply(None))
        self.controller.undo_stack.cleanChanged.connect(self._update_title)
        self.runner.estimate_ready.connect(self._on_estimate)
        self.runner.sweep_ready.connect(self._on_sweep)
        self.statusBar().showMessage(
            f"{len(self.catalogs.models)} models, {len(self.catalogs.accelerators)} accelerators in the catalog"
            + ("; " + "; ".join(self.catalogs.problems) if self.catalogs.problems else "")
        )
        self._on_changed()

    # --- construction -------------------------------------------------------------------------

    def _add_dock(self, name: str, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.addDockWidget(area, dock)
        self.docks[name] = dock
        return dock

    def _action(self, text: str, slot: object, shortcut: QKeySequence.StandardKey | str | None = None,
                tip: str = "", fallback: str = "") -> QAction:
        """An action; a standard shortcut the platform leaves empty (Quit on some) gets ``fallback``."""
        action = QAction(text, self)
        if isinstance(shortcut, str):
            action.setShortcut(QKeySequence(shortcut))
        elif shortcut is not None:
            action.setShortcuts(shortcut)
            if action.shortcut().isEmpty() and fallback:
                action.setShortcut(QKeySequence(fallback))
        if tip:
            action.setStatusTip(tip)
            action.setToolTip(tip)
        action.triggered.connect(lambda *_: slot())  # type: ignore[operator]
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self.new_action = self._action("&New Project", self.new_project, QKeySequence.StandardKey.New,
                                       "Start a new project with one scenario", "Ctrl+N")
        self.open_action = self._action("&Open…", self.ask_open, QKeySequence.StandardKey.Open,
                                        "Open a project file (.gpuwb)", "Ctrl+O")
        self.save_action = self._action("&Save", self.save, QKeySequence.StandardKey.Save, "Save the project", "Ctrl+S")
        self.save_as_action = self._action("Save &As…", self.ask_save_as, "Ctrl+Shift+S",
                                           "Save the project under a new name")
        self.import_action = self._action("&Import Model Config…", self.model_panel.ask_import_file, "Ctrl+I",
                                          "Read a Hugging Face config.json into the project")
        self.import_folder_action = self._action("Import Model &Folder…", self.model_panel.ask_import_folder, None,
                                                 "Read a model folder (config.json and safetensors headers)")
        self.sample_action = self._action("Open Sample Project", self.open_sample, None,
                                          "The sample project with four well-known scenarios")
        self.quit_action = self._action("&Quit", self.close, QKeySequence.StandardKey.Quit, "Quit", "Ctrl+Q")
        self.revert_action = self._action("Re&vert to Saved…", self.revert, None,
                                          "Discard the unsaved changes and reload the project file")
        self.recent_menu = RecentFilesMenu(self.recent_files, self)
        self.recent_menu.open_requested.connect(self.open_recent)
        self.recover_action = self._action("Recover Unsaved &Work…", self.offer_recoveries, None,
                                           "Unsaved work autosave kept from sessions that did not close normally")
        for action in (self.new_action, self.open_action, self.save_action, self.save_as_action, self.revert_action):
            file_menu.addAction(action)
        file_menu.addSeparator()
        file_menu.addMenu(self.recent_menu)
        file_menu.addAction(self.recover_action)
        file_menu.addSeparator()
        for action in (self.import_action, self.import_folder_action, self.sample_action):
            file_menu.addAction(action)
        file_menu.addSeparator()
        from workbench.gui.dialogs.report_dialog import open_report_dialog

        self.report_action = self._action("Export &Report…", lambda: open_report_dialog(self), "Ctrl+E",
                                          "Write a PDF sizing report of the project's scenarios")
        file_menu.addAction(self.report_action)
        from workbench.gui.dialogs.export_launch_dialog import open_export_launch_dialog

        self.launch_export_action = self._action(
            "Export &Launch Configuration…", lambda: open_export_launch_dialog(self), None,
            "The scenario as a server command, trainer config or Kubernetes manifest")
        file_menu.addAction(self.launch_export_action)
        from workbench.gui.dialogs.measure_dialog import ask_import, open_measurements_dialog

        self.import_measurements_action = self._action(
            "Import &Measurements…", lambda: ask_import(self), None,
            "Benchmark result files (vLLM, SGLang, genai-perf, trtllm-bench, MLPerf, training logs, CSV) "
            "for the selected scenario, kept in the project file")
        self.measurements_action = self._action(
            "Measurements and &Calibration…", lambda: open_measurements_dialog(self), None,
            "The project's measurements; calibrate, apply, remove, export or import calibration profiles")
        self.remove_calibration_action = self._action(
            "Remove Calibration", lambda: self.calibration.apply(None), None,
            "Estimate with the assumptions' own values again")
        for action in (self.import_measurements_action, self.measurements_action, self.remove_calibration_action):
            file_menu.addAction(action)
        export_menu = file_menu.addMenu("E&xport")
        self.export_table_action = self._action("Table as &CSV…", self.export_table, None,
                                                "The table of the tab on screen (Compare, Sensitivity) as CSV")
        self.copy_table_action = self._action("Copy &Table", self.copy_table, None,
                                              "The table of the tab on screen, tab-separated, to paste anywhere")
        self.export_png_action = self._action("Charts as &PNG…", self.export_png, None,
                                              "The tab on screen (charts or comparison) as a PNG image")
        for action in (self.export_table_action, self.copy_table_action, self.export_png_action):
            export_menu.addAction(action)
        export_menu.aboutToShow.connect(self._update_export_actions)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)

        edit_menu = bar.addMenu("&Edit")
        stack = self.controller.undo_stack
        self.undo_action = stack.createUndoAction(self, "&Undo")
        self.undo_action.setShortcuts([QKeySequence("Ctrl+Z")])
        self.redo_action = stack.createRedoAction(self, "&Redo")
        self.redo_action.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        edit_menu.addAction(self.undo_action)
        edit_menu.addAction(self.redo_action)
        # The keys in a field undo the project's edits, not the field's text (one undo stack).
        self._undo_keys = UndoKeysToStack(self, self.undo_action, self.redo_action)
        QApplication.instance().installEventFilter(self._undo_keys)
        edit_menu.addSeparator()
        edit_menu.addAction(self._action("Add Scenario", self.controller.add_scenario, "Ctrl+T"))
        edit_menu.addAction(self._action("Duplicate Scenario", self.controller.duplicate_scenario, "Ctrl+D"))
        edit_menu.addAction(self._action("Rename Scenario…", self.scenario_panel.ask_rename, "F2"))
        edit_menu.addAction(self._action("Delete Scenario", self.controller.delete_scenario))
        self.move_up_action = self._action("Move Scenario Up", lambda: self.controller.move_scenario(-1))
        self.move_down_action = self._action("Move Scenario Down", lambda: self.controller.move_scenario(1))
        self.compare_scenarios_action = self._action("Compare Two Scenarios…", self.compare_scenarios, None,
                                                     "Inputs that differ and key results side by side")
        self.scenario_panel.compare_action.triggered.connect(lambda *_: self.compare_scenarios())
        edit_menu.addAction(self.move_up_action)
        edit_menu.addAction(self.move_down_action)
        edit_menu.addAction(self.compare_scenarios_action)
        edit_menu.addSeparator()
        edit_menu.addAction(self._action("Add Custom Accelerator…", lambda: self.hardware_panel.edit_accelerator(None)))

        view_menu = bar.addMenu("&View")
        view_menu.addActions(self.tabs.view_actions())
        view_menu.addSeparator()
        for dock in self.docks.values():
            view_menu.addAction(dock.toggleViewAction())
        view_menu.addSeparator()
        view_menu.addAction(self._action("Reset Layout", self.reset_layout))
        view_menu.addAction(self._action("Show Start Hint", self.hint.show))

        help_menu = bar.addMenu("&Help")
        self.help_action = self._action("Workbench &Guide", self.show_help, QKeySequence.StandardKey.HelpContents,
                                        "The bundled guide (works offline)", "F1")
        help_menu.addAction(self.help_action)
        from workbench.gui.dialogs.plugins_dialog import show_plugins_dialog

        self.plugins_action = self._action("&Plugins…", lambda: show_plugins_dialog(self, self.settings), None,
                                           "Installed plugins: version, origin, status; turn them off or on")
        help_menu.addAction(self.plugins_action)
        help_menu.addSeparator()
        help_menu.addAction(self._action("&About GPU Planning Workbench", self.show_about))

    # --- copy and export ----------------------------------------------------------------------

    def _update_export_actions(self) -> None:
        has_table = self.tabs.current_table() is not None
        self.export_table_action.setEnabled(has_table)
        self.copy_table_action.setEnabled(has_table)

    def export_table(self) -> None:
        table = self.tabs.current_table()
        if table is not None:
            exports.ask_save_table(self, table, self.tabs.current_key())

    def copy_table(self) -> None:
        table = self.tabs.current_table()
        if table is not None:
            exports.copy_table(table, selected_only=False)
            self.statusBar().showMessage("Table copied (tab-separated: it pastes into a spreadsheet)", 5000)

    def export_png(self) -> None:
        exports.ask_save_png(self, self.tabs.currentWidget(), self.tabs.current_key())

    # --- layout persistence -------------------------------------------------------------------

    def _restore_layout(self) -> bool:
        geometry = self.settings.get("window/geometry")
        if not geometry.isEmpty():
            self.restoreGeometry(geometry)
            # Saved on a bigger screen (or at another scale): never larger than this one.
            available = self.screen().availableGeometry().size()
            if self.width() > available.width() or self.height() > available.height():
                self.resize(self.size().boundedTo(available))
        state = self.settings.get("window/state")
        restored = not state.isEmpty() and self.restoreState(state, LAYOUT_VERSION)
        if restored and self.settings.get("window/tabs_only"):
            self.tabs.set_focus(True)  # hides the docks it can bring back with one click
        return restored

    def _arrange_docks(self, compact: bool) -> None:
        """Wide: Model and Hardware on the left, Scenario over Results on the right. Compact (a
        window under :data:`COMPACT_BELOW_PX`): Model and Hardware join Scenario as tabs on the
        right, so the charts and the Compare table keep most of the width."""
        self._compact = compact
        model, hardware, scenario = (self.docks[k] for k in ("model_dock", "hardware_dock", "scenario_dock"))
        if any(dock.isFloating() for dock in (model, hardware, scenario)):
            return  # the user placed them: leave them there
        if compact:
            for dock in (model, hardware):
                self.tabifyDockWidget(scenario, dock)
            scenario.raise_()
        else:
            for dock in (model, hardware):
                self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
            self.tabifyDockWidget(model, hardware)
            model.raise_()
        self._default_sizes()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        if getattr(self, "_compact", None) is not None and self._default_state is not None:
            compact = event.size().width() < COMPACT_BELOW_PX
            if compact != self._compact:
                self._arrange_docks(compact)

    def _default_sizes(self) -> None:
        """Share the width between the side panels and the charts (docks size only once shown)."""
        width = self.width()
        if self._compact:
            side = max(280, min(400, int(width * 0.32)))
            self.resizeDocks([self.docks["scenario_dock"]], [side], Qt.Orientation.Horizontal)
        else:
            side = max(300, min(420, int(width * 0.24)))
            self.resizeDocks([self.docks["model_dock"], self.docks["scenario_dock"]], [side, side],
                             Qt.Orientation.Horizontal)
        height = self.height()
        self.resizeDocks([self.docks["scenario_dock"], self.docks["results_dock"]],
                         [int(height * 0.55), int(height * 0.45)], Qt.Orientation.Vertical)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._default_state is None:
            self._default_state = QByteArray()
            # Docks take sizes only once the window is laid out: after this event.
            QTimer.singleShot(0, self, self._first_layout)

    def _first_layout(self) -> None:
        if not self._layout_restored:
            self._arrange_docks(self.width() < COMPACT_BELOW_PX)
        else:
            self._compact = self.dockWidgetArea(self.docks["model_dock"]) == Qt.DockWidgetArea.RightDockWidgetArea
        # Splitter sizes are pixels: restore them once the window has its final size.
        for key, splitter in (("window/charts", self.charts_splitter), ("window/top_charts", self.top_charts)):
            saved = self.settings.get(key)
            if not saved.isEmpty():
                splitter.restoreState(saved)
        self._default_state = self.saveState(LAYOUT_VERSION)

    def save_layout(self) -> None:
        # With "Hide side panels" on, the docks are saved as they were before it (shown) and the
        # mode itself is remembered: a restart then hides them again, with the button able to
        # bring them back (saving them hidden left a window with no panels and a button that
        # could not show them).
        tabs_only = self.tabs.focus_button.isChecked()
        if tabs_only:
            self.tabs.set_focus(False)
        self.settings.set("window/geometry", self.saveGeometry())
        self.settings.set("window/state", self.saveState(LAYOUT_VERSION))
        self.settings.set("window/tabs_only", tabs_only)
        if tabs_only:
            self.tabs.set_focus(True)
        self.settings.set("window/charts", self.charts_splitter.saveState())
        self.settings.set("window/top_charts", self.top_charts.saveState())
        self.settings.sync()

    def reset_layout(self) -> None:
        for dock in self.docks.values():
            dock.setFloating(False)
            dock.show()
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.docks["scenario_dock"])
        self.splitDockWidget(self.docks["scenario_dock"], self.docks["results_dock"], Qt.Orientation.Vertical)
        self._arrange_docks(self.width() < COMPACT_BELOW_PX)
        self.charts_splitter.setSizes([3000, 2000])
        self.top_charts.setSizes([1000, 1000])
        for key in ("window/state", "window/charts", "window/top_charts"):
            self.settings.set(key, QByteArray())

    # --- live estimates -----------------------------------------------------------------------

    def _on_changed(self) -> None:
        self._update_title()
        scenario = self.controller.scenario
        self.results_panel.set_calibration(self.calibration.mark(scenario))
        self.remove_calibration_action.setEnabled(self.calibration.profile is not None)
        if scenario is None:
            return
        scenario = self.calibration.scenario(scenario)  # its assumptions fitted, on the profile's GPU + engine
        self.sweep_chart.set_current(getattr(scenario, self.runner.sweep_field, None))
        versions = self._plugin_versions()
        known = self.known_estimates.lookup(scenario, self.controller.project, versions) if versions else None
        if known is not None:
            self.runner.use_cached(self.controller.project, *known)
        else:
            self.runner.request(self.controller.project, scenario)

    def apply_fix(self, fix: Fix) -> None:
        """Apply a fix from the Results panel as one undoable step."""
        error = self.controller.apply_changes(fix.changes, f"Fix: {fix.label}")
        self.statusBar().showMessage(f"Cannot apply the fix: {error}" if error else
                                     f"Applied: {fix.label} (Ctrl+Z undoes it)", 8000)

    def _plugin_versions(self) -> dict[str, str] | None:
        """Estimator ids and versions (part of every estimate's input hash); None until the engine is built."""
        engine = self.runner.loaded_engine
        return None if engine is None else {e.info.id: e.info.version for e in engine.estimators}

    def _on_estimate(self, outcome: Outcome) -> None:
        estimate = outcome.estimate
        if estimate is not None and not outcome.cached and outcome.resolved is not None:
            versions = self._plugin_versions()
            if versions is not None:
                self.known_estimates.remember(outcome.resolved, estimate, versions)
        if estimate is None:
            # Keep the last good charts; the results panel says why there is no new estimate.
            self.results_panel.show_error(outcome.error or "no estimate")
        else:
            self.results_panel.update_outcome(outcome)
            self.memory_chart.update_estimate(estimate)
            self.roofline_chart.update_estimate(estimate)
            self.tabs.kernel_chart.update_estimate(estimate)
        self.estimate_shown.emit(outcome.generation)

    def _on_sweep(self, outcome: SweepOutcome) -> None:
        self.sweep_chart.update_sweep(outcome)
        self.sweep_shown.emit(outcome.generation)

    def _on_sweep_axis(self, axis: str) -> None:
        self.runner.sweep_field = axis
        self.settings.set("charts/sweep_axis", axis)
        self._on_changed()

    def _update_title(self) -> None:
        """Project name, file name and the modified marker ``[*]`` (set from the undo stack's clean state)."""
        name = self.controller.project.name
        if self.project_path is not None:
            from workbench.store import read_only_reason

            marker = ", read-only" if read_only_reason(self.project_path) else ""
            name = f"{name} ({self.project_path.name}{marker})"
        clean = self.controller.undo_stack.isClean()
        scenario = self.controller.current
        mark = self.calibration.mark(self.controller.scenario)
        if mark:
            scenario = f"{scenario} ({mark})"
        self.setWindowTitle(f"{name}[*] — {scenario} — {APP_TITLE}" if scenario else f"{name}[*] — {APP_TITLE}")
        self.setWindowModified(not clean)
        self.revert_action.setEnabled(self.project_path is not None and not clean)
        self.move_up_action.setEnabled(self.controller.can_move_scenario(-1))
        self.move_down_action.setEnabled(self.controller.can_move_scenario(1))
        self.compare_scenarios_action.setEnabled(len(self.controller.project.scenarios) > 1)

    # --- files --------------------------------------------------------------------------------

    def _confirm_discard(self) -> bool:
        """Before unsaved changes would be lost: Save (True once saved), Discard (True) or Cancel (False)."""
        if not self.ask_before_discard or self.controller.undo_stack.isClean():
            return True
        where = f"“{self.project_path.name}”" if self.project_path is not None else "this untitled project"
        answer = QMessageBox.question(
            self, APP_TITLE, f"Save the changes to {where}?\n\nIf you don't save, your changes are lost.",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Save,
        )
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        return answer == QMessageBox.StandardButton.Discard

    def _set_project(self, project: Project, path: Path | None, lock: ProjectLock | None = None,
                     estimates: dict[str, tuple[str, str]] | None = None) -> None:
        """Show another project. The old one's changes were saved or discarded: its lock and its
        recovery copy go; ``lock`` (held on ``path``) and cached ``estimates`` come with the new one."""
        if lock is not self._lock:
            self._release_lock()
        self._lock = lock
        self.autosaver.discard()
        self.project_path = path
        self.known_estimates.replace(estimates or {})
        self.controller.load_project(project)

    def new_project(self) -> None:
        if self._confirm_discard():
            self._set_project(new_project(), None)

    def open_sample(self) -> None:
        if self._confirm_discard():
            self._set_project(sample_project(), None)

    def ask_open(self) -> None:
        from workbench.store import SUFFIX

        if not self._confirm_discard():
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open project", "", f"Workbench project (*{SUFFIX});;All files (*)")
        if path:
            self.open_project(Path(path))

    def open_project(self, path: Path) -> bool:
        """Open a project file (callers ask about unsaved changes first).

        A damaged, foreign or newer-format file is refused with the store's message; the file is
        not touched and the current project stays open. A file another running workbench holds is
        refused too, with an offer to open an untitled copy of it instead.
        """
        from workbench.store import (
            ProjectLock,
            ProjectLockedError,
            load_estimates,
            open_project,
            read_only_reason,
        )

        path = Path(path)
        try:
            project = open_project(path)
            estimates = load_estimates(path)
        except InputError as exc:
            QMessageBox.warning(self, "Cannot open project", str(exc))
            return False
        same = self._lock is not None and self.project_path is not None and _same_file(path, self.project_path)
        lock = self._lock if same else ProjectLock(path)
        if not same:
            try:
                lock.acquire()  # type: ignore[union-attr]
            except ProjectLockedError as exc:
                return self._offer_copy(project, str(exc))
        self._set_project(project, path, lock, estimates)
        self.recent_files.add(path)
        self._update_title()
        read_only = read_only_reason(path)
        self.statusBar().showMessage(f"Opened {path}" + (f" read-only ({read_only}): Save As saves a copy"
                                                         if read_only else ""), 8000)
        return True

    def _offer_copy(self, project: Project, message: str) -> bool:
        """The file is open in another workbench: never share it; offer an untitled copy instead."""
        answer = QMessageBox.warning(
            self, "Project is open elsewhere",
            f"{message}.\n\nOpen an untitled copy instead? Saving the copy asks for a new file name; "
            "the original stays with the other workbench.",
            QMessageBox.StandardButton.Open | QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Cancel,
        )
        if answer != QMessageBox.StandardButton.Open:
            return False
        self._set_project(project.model_copy(update={"name": f"{project.name} (copy)"}), None)
        self.controller.undo_stack.resetClean()  # the copy is in no file yet: closing asks to save it
        self.statusBar().showMessage("Opened an untitled copy; the original is open in another workbench", 8000)
        return True

    def open_recent(self, path: Path) -> bool:
        path = Path(path)
        if not path.is_file():
            self.recent_files.remove(path)
            QMessageBox.warning(self, "Cannot open project",
                                f"{path} no longer exists. It was removed from the recent files.")
            return False
        return self._confirm_discard() and self.open_project(path)

    def revert(self, confirm: bool = True) -> bool:
        """Drop the unsaved changes and reload the project file (after asking)."""
        path = self.project_path
        if path is None or self.controller.undo_stack.isClean():
            return False
        if confirm:
            answer = QMessageBox.question(
                self, "Revert to saved",
                f"Discard your unsaved changes and reload “{path.name}” from disk?\n\nThis cannot be undone.",
                QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
                QMessageBox.StandardButton.Cancel,
            )
            if answer != QMessageBox.StandardButton.Discard:
                return False
        return self.open_project(path)

    def save(self) -> bool:
        if self.project_path is None:
            return self.ask_save_as()
        from workbench.store import read_only_reason

        reason = read_only_reason(self.project_path)
        if reason:
            return self._offer_save_as(self.project_path, reason)
        return self.save_to(self.project_path)

    def _offer_save_as(self, path: Path, reason: str) -> bool:
        """A read-only project is never saved in place: offer to save a copy under another name."""
        answer = QMessageBox.warning(
            self, "Project is read-only",
            f"{path} cannot be saved in place: {reason}.\n\nSave a copy under another name (Save As)?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Save,
        )
        return answer == QMessageBox.StandardButton.Save and self.ask_save_as()

    def ask_save_as(self) -> bool:
        from workbench.store import SUFFIX

        path, _ = QFileDialog.getSaveFileName(self, "Save project", f"{self.controller.project.name}{SUFFIX}",
                                              f"Workbench project (*{SUFFIX})")
        if not path:
            return False
        target = Path(path)
        if target.suffix != SUFFIX:
            target = target.with_name(target.name + SUFFIX)
        return self.save_to(target)

    def save_to(self, path: Path) -> bool:
        """Save atomically, with the cached estimates; the file's lock moves with a Save As."""
        from workbench.store import ProjectLock, save_project

        path = Path(path)
        moving = self._lock is None or self.project_path is None or not _same_file(path, self.project_path)
        lock = ProjectLock(path) if moving else self._lock
        project = self.controller.project_to_save()
        # Save As: the measurements and calibration profiles of the file the project came from go
        # with it (a save only keeps those of the file it replaces, which for a new path is none).
        carried = _carried_tables(self.project_path) if moving and self.project_path is not None else None
        try:
            if moving:
                lock.acquire()  # type: ignore[union-attr]
            saved = save_project(project, path, estimates=self.known_estimates.for_save(project,
                                                                                        self._plugin_versions()),
                                 carried=carried)  # fmt: skip
        except InputError as exc:
            if moving:
                lock.release()  # type: ignore[union-attr]
            QMessageBox.warning(self, "Cannot save project", str(exc))
            return False
        if moving:
            self._release_lock()
            self._lock = lock
        self.controller.project = saved
        self.project_path = path
        self.controller.undo_stack.setClean()
        self.autosaver.discard()  # the file holds everything the recovery copy had
        self.recent_files.add(path)
        self._update_title()
        self.statusBar().showMessage(f"Saved {path}", 6000)
        return True

    # --- crash recovery -----------------------------------------------------------------------

    def offer_recoveries(self, quiet: bool = False) -> bool:
        """Offer unsaved work autosave kept from sessions that did not close normally.

        The app calls this once after start-up (``quiet``: nothing to say when there is none);
        File > Recover Unsaved Work calls it again. True when a copy was restored.
        """
        from PySide6.QtWidgets import QDialog

        from workbench.gui.project.recovery_prompt import RecoveryDialog, offered_recoveries

        own = [self.autosaver.current_file] if self.autosaver.current_file is not None else []
        found = offered_recoveries(exclude=own)
        if not found:
            if not quiet:
                QMessageBox.information(self, "Recover unsaved work", "There is no unsaved work to recover.")
            return False
        dialog = RecoveryDialog(found, self)
        try:
            accepted = dialog.exec() == QDialog.DialogCode.Accepted
            chosen = dialog.chosen
        finally:
            dialog.deleteLater()
        return accepted and chosen is not None and self.restore_recovery(chosen)

    def restore_recovery(self, recovery: Recovery) -> bool:
        """Open a recovery copy, marked modified and tied to its original file (if it had one)."""
        from workbench.gui.project.recovery_prompt import forget
        from workbench.store import ProjectLock, ProjectLockedError

        if not self._confirm_discard():
            return False
        try:
            project = recovery.load()
        except InputError as exc:
            QMessageBox.warning(self, "Cannot restore", str(exc))
            return False
        path, lock = recovery.original, None
        if path is not None:
            if self._lock is not None and self.project_path is not None and _same_file(path, self.project_path):
                lock = self._lock
            else:
                lock = ProjectLock(path)
                try:
                    lock.acquire()
                except ProjectLockedError as exc:
                    QMessageBox.information(self, "Project is open elsewhere",
                                            f"{exc}.\n\nThe recovered work opens as an untitled copy: save it "
                                            "under a new name.")
                    path, lock = None, None
        self._set_project(project, path, lock)
        self.controller.undo_stack.resetClean()  # the recovered changes are in no saved file
        written = self.autosaver.save_now()  # under this session, before the old copy goes
        if written is not None and written != recovery.recovery_file:
            forget(recovery)
        self.statusBar().showMessage(f"Restored unsaved work of {project.name}; save it to keep it", 10000)
        return True

    # --- scenarios ----------------------------------------------------------------------------

    def compare_scenarios(self) -> ScenarioDiffDialog:
        """The diff of two scenarios (the selected one and the next), live while the project changes."""
        from workbench.gui.dialogs.scenario_diff import ScenarioDiffDialog

        names = [s.name for s in self.controller.project.scenarios]
        current = self.controller.current
        others = [n for n in names if n != current]
        dialog = ScenarioDiffDialog(lambda: self.controller.project, self._estimate_now, self,
                                    first=current, second=others[0] if others else None,
                                    changed=self.controller.changed)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    def _estimate_now(self, scenario: Scenario) -> Estimate:
        """An estimate on the GUI thread (one engine run is milliseconds): the known one if it matches."""
        project = self.controller.project
        versions = self._plugin_versions()
        known = self.known_estimates.lookup(scenario, project, versions) if versions else None
        if known is not None:
            return known[1]
        resolved = self.catalogs.resolve(scenario, project)
        estimate = self.runner.engine.run(resolved)
        self.known_estimates.remember(resolved, estimate, self._plugin_versions() or {})
        return estimate

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # --- help ---------------------------------------------------------------------------------

    def help_section(self) -> str:
        """The guide's chapter for the panel in use: the one with the keyboard focus, else the tab
        on screen."""
        widget = QApplication.focusWidget()
        docks = {"model_dock": "start", "hardware_dock": "start", "scenario_dock": "editing",
                 "results_dock": "results"}
        while widget is not None and widget is not self:
            if widget.objectName() in docks and widget in self.docks.values():
                return docks[widget.objectName()]
            if widget is self.tabs:
                break
            widget = widget.parentWidget()
        return self.tabs.current_key()

    def show_help(self, section: str | None = None) -> HelpDialog:
        """The guide, open at ``section`` (a chapter id) or at the chapter of the panel in use."""
        wanted = section or self.help_section()
        dialog = HelpDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        dialog.show_section(wanted)
        return dialog

    def show_about(self) -> None:
        QMessageBox.about(
            self,
            "About GPU Planning Workbench",
            f"<h3>GPU Planning Workbench {__version__}</h3>"
            "<p>Size AI workloads on GPUs before you buy or rent them: memory per GPU, fit, "
            "roofline, speed and cost, with every number explained.</p>"
            "<p>Works offline. Every datasheet figure carries its source; hover it in the "
            "Hardware panel.</p><p>Licensed under the Apache License 2.0.</p>",
        )

    # --- events -------------------------------------------------------------------------------

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt override
        self.model_panel.dragEnterEvent(event)  # a config dropped anywhere on the window is imported

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt override
        self.model_panel.dropEvent(event)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            theme.configure_pyqtgraph()
        super().changeEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        if not self._confirm_discard():
            event.ignore()
            return
        self.save_layout()
        QApplication.instance().removeEventFilter(self._undo_keys)
        self.runner.shutdown()
        self.tabs.shutdown()
        self.autosaver.stop()
        self.autosaver.discard()  # a deliberate close: the changes were saved or discarded
        self._release_lock()
        super().closeEvent(event)
