"""The main window: model, hardware, scenario and results panels around live charts.

Panels build edits; the :class:`ProjectController` applies them through its undo stack and says
``changed``; the window then asks the :class:`EstimateRunner` for an estimate (off the GUI
thread) and hands each fresh result to the charts and the results panel.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QEvent, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QIcon, QKeySequence, QShowEvent
from PySide6.QtWidgets import (
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
from workbench.engine.pipeline import Engine
from workbench.gui import theme
from workbench.gui.catalogs import Catalogs
from workbench.gui.controller import ProjectController
from workbench.gui.estimate_runner import EstimateRunner, Outcome, SweepOutcome
from workbench.gui.hardware_panel import HardwarePanel
from workbench.gui.help_dialog import HelpDialog
from workbench.gui.hint_banner import HintBanner
from workbench.gui.memory_chart import MemoryStackChart
from workbench.gui.model_panel import ModelPanel
from workbench.gui.results_panel import ResultsPanel
from workbench.gui.roofline_chart import RooflineChart
from workbench.gui.samples import new_project, sample_project
from workbench.gui.scenario_panel import ScenarioPanel
from workbench.gui.settings import LAYOUT_VERSION, Settings
from workbench.gui.sweep_chart import SweepChart
from workbench.paths import resources_dir

APP_TITLE = "GPU Planning Workbench"


def app_icon() -> QIcon:
    return QIcon(str(resources_dir() / "icons" / "gpu-workbench.svg"))


def _default_engine() -> Engine:
    from workbench.pluginhost import default_engine

    return default_engine()


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
        self._lock = None
        #: Ask before discarding unsaved edits (New, Open, close); scripted sessions turn it off.
        self.ask_before_discard = True
        self.controller = ProjectController(self.catalogs, project, self)
        self.runner = EstimateRunner(self.catalogs, engine if engine is not None else _default_engine, self)
        self.runner.sweep_field = self.settings.get("charts/sweep_axis")

        # --- panels and charts ----------------------------------------------------------------
        self.model_panel = ModelPanel(self.controller, self)
        self.hardware_panel = HardwarePanel(self.controller, self)
        self.scenario_panel = ScenarioPanel(self.controller, self)
        self.results_panel = ResultsPanel(self)
        self.memory_chart = MemoryStackChart(self)
        self.roofline_chart = RooflineChart(self)
        self.sweep_chart = SweepChart(self)
        self.sweep_chart.set_axis(self.runner.sweep_field)
        self.sweep_chart.axis_changed.connect(self._on_sweep_axis)
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
        central_layout.addWidget(self.charts_splitter, 1)
        self.setCentralWidget(central)

        self.docks: dict[str, QDockWidget] = {}
        self._add_dock("model_dock", "Model", self.model_panel, Qt.DockWidgetArea.LeftDockWidgetArea)
        self._add_dock("hardware_dock", "Hardware", self.hardware_panel, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.tabifyDockWidget(self.docks["model_dock"], self.docks["hardware_dock"])
        self.docks["model_dock"].raise_()
        self._add_dock("scenario_dock", "Scenario", self.scenario_panel, Qt.DockWidgetArea.RightDockWidgetArea)
        self._add_dock("results_dock", "Results", self.results_panel, Qt.DockWidgetArea.RightDockWidgetArea)
        self.splitDockWidget(self.docks["scenario_dock"], self.docks["results_dock"], Qt.Orientation.Vertical)
        self.resize(1500, 920)
        self._build_menus()
        self._layout_restored = self._restore_layout()
        self._default_state: QByteArray | None = None
        if first_launch:
            self.settings.set("session/first_launch_done", True)

        self.controller.changed.connect(self._on_changed)
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
        for action in (self.new_action, self.open_action, self.save_action, self.save_as_action):
            file_menu.addAction(action)
        file_menu.addSeparator()
        for action in (self.import_action, self.import_folder_action, self.sample_action):
            file_menu.addAction(action)
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
        edit_menu.addSeparator()
        edit_menu.addAction(self._action("Add Scenario", self.controller.add_scenario, "Ctrl+T"))
        edit_menu.addAction(self._action("Duplicate Scenario", self.controller.duplicate_scenario, "Ctrl+D"))
        edit_menu.addAction(self._action("Rename Scenario…", self.scenario_panel.ask_rename, "F2"))
        edit_menu.addAction(self._action("Delete Scenario", self.controller.delete_scenario))
        edit_menu.addSeparator()
        edit_menu.addAction(self._action("Add Custom Accelerator…", lambda: self.hardware_panel.edit_accelerator(None)))

        view_menu = bar.addMenu("&View")
        for dock in self.docks.values():
            view_menu.addAction(dock.toggleViewAction())
        view_menu.addSeparator()
        view_menu.addAction(self._action("Reset Layout", self.reset_layout))
        view_menu.addAction(self._action("Show Start Hint", self.hint.show))

        help_menu = bar.addMenu("&Help")
        self.help_action = self._action("Workbench &Guide", self.show_help, QKeySequence.StandardKey.HelpContents,
                                        "The bundled guide (works offline)", "F1")
        help_menu.addAction(self.help_action)
        help_menu.addSeparator()
        help_menu.addAction(self._action("&About GPU Planning Workbench", self.show_about))

    # --- layout persistence -------------------------------------------------------------------

    def _restore_layout(self) -> bool:
        geometry = self.settings.get("window/geometry")
        if not geometry.isEmpty():
            self.restoreGeometry(geometry)
        state = self.settings.get("window/state")
        return not state.isEmpty() and self.restoreState(state, LAYOUT_VERSION)

    def _default_sizes(self) -> None:
        """Share the width between the side panels and the charts (docks size only once shown)."""
        width = self.width()
        side = max(300, min(420, int(width * 0.27)))
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
            QTimer.singleShot(0, self._first_layout)

    def _first_layout(self) -> None:
        if not self._layout_restored:
            self._default_sizes()
        # Splitter sizes are pixels: restore them once the window has its final size.
        for key, splitter in (("window/charts", self.charts_splitter), ("window/top_charts", self.top_charts)):
            saved = self.settings.get(key)
            if not saved.isEmpty():
                splitter.restoreState(saved)
        self._default_state = self.saveState(LAYOUT_VERSION)

    def save_layout(self) -> None:
        self.settings.set("window/geometry", self.saveGeometry())
        self.settings.set("window/state", self.saveState(LAYOUT_VERSION))
        self.settings.set("window/charts", self.charts_splitter.saveState())
        self.settings.set("window/top_charts", self.top_charts.saveState())
        self.settings.sync()

    def reset_layout(self) -> None:
        for dock in self.docks.values():
            dock.setFloating(False)
            dock.show()
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.docks["model_dock"])
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.docks["hardware_dock"])
        self.tabifyDockWidget(self.docks["model_dock"], self.docks["hardware_dock"])
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.docks["scenario_dock"])
        self.splitDockWidget(self.docks["scenario_dock"], self.docks["results_dock"], Qt.Orientation.Vertical)
        self.docks["model_dock"].raise_()
        self._default_sizes()
        self.charts_splitter.setSizes([3000, 2000])
        self.top_charts.setSizes([1000, 1000])
        for key in ("window/state", "window/charts", "window/top_charts"):
            self.settings.set(key, QByteArray())

    # --- live estimates -----------------------------------------------------------------------

    def _on_changed(self) -> None:
        self._update_title()
        scenario = self.controller.scenario
        if scenario is None:
            return
        self.sweep_chart.set_current(getattr(scenario, self.runner.sweep_field, None))
        self.runner.request(self.controller.project, scenario)

    def _on_estimate(self, outcome: Outcome) -> None:
        estimate = outcome.estimate
        if estimate is None:
            # Keep the last good charts; the results panel says why there is no new estimate.
            self.results_panel.show_error(outcome.error or "no estimate")
        else:
            self.results_panel.update_outcome(outcome)
            self.memory_chart.update_estimate(estimate)
            self.roofline_chart.update_estimate(estimate)
        self.estimate_shown.emit(outcome.generation)

    def _on_sweep(self, outcome: SweepOutcome) -> None:
        self.sweep_chart.update_sweep(outcome)
        self.sweep_shown.emit(outcome.generation)

    def _on_sweep_axis(self, axis: str) -> None:
        self.runner.sweep_field = axis
        self.settings.set("charts/sweep_axis", axis)
        self._on_changed()

    def _update_title(self) -> None:
        name = self.controller.project.name
        if self.project_path is not None:
            name = self.project_path.name
        dirty = "" if self.controller.undo_stack.isClean() else " *"
        scenario = self.controller.current
        self.setWindowTitle(f"{name}{dirty} — {scenario} — {APP_TITLE}" if scenario else f"{name}{dirty} — {APP_TITLE}")

    # --- files --------------------------------------------------------------------------------

    def _confirm_discard(self) -> bool:
        if not self.ask_before_discard or self.controller.undo_stack.isClean():
            return True
        answer = QMessageBox.question(
            self, APP_TITLE, "The project has unsaved changes. Discard them?",
            QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
        )
        return answer == QMessageBox.StandardButton.Discard

    def _set_project(self, project: Project, path: Path | None) -> None:
        self._release_lock()
        self.project_path = path
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
        from workbench.store import ProjectLock, open_project

        try:
            project = open_project(path)
            lock = ProjectLock(path)
            lock.acquire()
        except InputError as exc:
            QMessageBox.warning(self, "Cannot open project", str(exc))
            return False
        self._set_project(project, path)
        self._lock = lock
        self.statusBar().showMessage(f"Opened {path}", 6000)
        return True

    def save(self) -> bool:
        if self.project_path is None:
            return self.ask_save_as()
        return self.save_to(self.project_path)

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
        from workbench.store import ProjectLock, save_project

        try:
            if path != self.project_path:
                lock = ProjectLock(path)
                lock.acquire()
                self._release_lock()
                self._lock = lock
            saved = save_project(self.controller.project, path)
        except InputError as exc:
            QMessageBox.warning(self, "Cannot save project", str(exc))
            return False
        self.controller.project = saved
        self.project_path = path
        self.controller.undo_stack.setClean()
        self._update_title()
        self.statusBar().showMessage(f"Saved {path}", 6000)
        return True

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # --- help ---------------------------------------------------------------------------------

    def show_help(self) -> HelpDialog:
        dialog = HelpDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
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
        self.runner.shutdown()
        self._release_lock()
        super().closeEvent(event)
