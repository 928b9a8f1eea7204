"""The central area's tabs: the live charts, where a step's time goes (the per-operator kernels),
the accelerator comparison, and the sensitivity (tornado) of the current scenario, with the View
menu actions that switch between them.

The compare and sensitivity views compute only while their tab is on screen. A comparison table
wants width: the button in the tab bar's corner hides the window's side panels and brings back
the ones it hid.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QTableView, QTabWidget, QToolButton, QWidget

from workbench.engine.pipeline import Engine
from workbench.gui.catalogs import Catalogs
from workbench.gui.charts.kernel_chart import KernelChart
from workbench.gui.compare.compare_view import CompareView
from workbench.gui.compare.sensitivity_view import SensitivityView
from workbench.gui.controller import ProjectController

#: (tab, menu text, shortcut, status tip)
TABS = (
    ("charts", "&Charts", "Ctrl+Shift+H", "Memory stack, roofline and sweep of the current scenario"),
    ("kernels", "&Kernels", "Ctrl+Shift+K",
     "Where a step's time goes: the kernels of the current scenario, how long each takes and what bounds it"),
    ("compare", "C&ompare Accelerators", "Ctrl+Shift+C",
     "Rank accelerators for the scenarios against targets; the cheapest that meets them is recommended"),
    ("sensitivity", "&Sensitivity", "Ctrl+Shift+T",
     "Which assumption moves the headline number most, and whether the recommendation survives"),
)


class AnalysisTabs(QTabWidget):
    def __init__(self, controller: ProjectController, catalogs: Catalogs, engine_source: Callable[[], Engine],
                 charts: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("analysis_tabs")
        self.setDocumentMode(True)
        self.compare_view = CompareView(controller, catalogs, engine_source, self)
        self.sensitivity_view = SensitivityView(controller, catalogs, engine_source, self.compare_view, self)
        self.kernel_chart = KernelChart(self)
        self.pages: dict[str, QWidget] = {"charts": charts, "kernels": self.kernel_chart,
                                          "compare": self.compare_view, "sensitivity": self.sensitivity_view}
        titles = {"charts": "Charts", "kernels": "Kernels", "compare": "Compare",
                  "sensitivity": "Sensitivity"}
        for key, _, shortcut, tip in TABS:
            index = self.addTab(self.pages[key], titles[key])
            self.setTabToolTip(index, f"{tip} ({shortcut})")
        self.focus_button = QToolButton(self)
        self.focus_button.setObjectName("focus_button")
        self.focus_button.setCheckable(True)
        self.focus_button.setAutoRaise(True)
        self.focus_button.setToolTip("Give these tabs the whole window: hide the side panels (Model, Hardware, "
                                     "Scenario, Results); click again to bring them back")
        self.focus_button.toggled.connect(self.set_focus)
        self.setCornerWidget(self.focus_button, Qt.Corner.TopRightCorner)
        self._hidden_docks: list[QDockWidget] = []
        self.set_focus(False)

    def set_focus(self, on: bool) -> None:
        """Hide the main window's open side panels (``on``), or show again the ones hidden here."""
        main = self.window()
        if on:
            # isHidden, not the toggle action: before the window is first shown (a restart in this
            # mode) the docks' actions are not checked yet, though the docks are not hidden.
            self._hidden_docks = [d for d in main.findChildren(QDockWidget)
                                  if d.parent() is main and not d.isHidden()]
            for dock in self._hidden_docks:
                dock.hide()
        else:
            for dock in self._hidden_docks:
                dock.show()
            self._hidden_docks = []
        self.focus_button.setText("◧ Show side panels" if on else "◨ Hide side panels")
        if self.focus_button.isChecked() != on:
            # Called from code (a restart in this mode): check the button without running this
            # again, which would find every dock hidden and forget the ones to bring back.
            self.focus_button.blockSignals(True)
            self.focus_button.setChecked(on)
            self.focus_button.blockSignals(False)

    def show_page(self, key: str) -> None:
        self.setCurrentWidget(self.pages[key])

    def current_key(self) -> str:
        return next(k for k, page in self.pages.items() if page is self.currentWidget())

    def current_table(self) -> QTableView | None:
        """The table of the tab on screen (File > Export Table), if it has one."""
        return {"compare": self.compare_view.current_table(), "sensitivity": self.sensitivity_view.spans}.get(self.current_key())

    def view_actions(self) -> list[QAction]:
        """View menu entries, one per tab, with their shortcuts."""
        actions = []
        for key, text, shortcut, tip in TABS:
            action = QAction(text, self)
            action.setShortcut(QKeySequence(shortcut))
            action.setStatusTip(tip)
            action.setObjectName(f"show_{key}")
            action.triggered.connect(lambda *_, k=key: self.show_page(k))
            actions.append(action)
        return actions

    def shutdown(self) -> None:
        self.compare_view.shutdown()
        self.sensitivity_view.shutdown()
