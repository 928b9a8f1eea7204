"""The main window: catalogs of accelerators and models, and model import."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMessageBox, QTabWidget, QWidget

from workbench import __version__
from workbench.catalog.accelerators import load_accelerators
from workbench.catalog.hf_config import load_hf_config
from workbench.catalog.models import load_model_catalog
from workbench.core.errors import InputError
from workbench.gui.accelerator_table import AcceleratorTable
from workbench.gui.model_table import ModelTable


class MainWindow(QMainWindow):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("GPU Planning Workbench")
        self.resize(1400, 860)
        self.tabs = QTabWidget(self)
        self.accelerators = AcceleratorTable(list(load_accelerators().values()), self)
        self.models = ModelTable(self)
        for entry in load_model_catalog().values():
            self.models.add_model(entry.architecture, entry.hf_repo or "catalog")
        self.models.view.sortByColumn(6, Qt.SortOrder.AscendingOrder)
        self.tabs.addTab(self.models, "Models")
        self.tabs.addTab(self.accelerators, "Accelerators")
        self.setCentralWidget(self.tabs)
        self._build_menus()
        self.statusBar().showMessage(
            f"{self.models.row_count} models, {self.accelerators.model.rowCount()} accelerators. "
            "File ▸ Import model config… reads a Hugging Face config.json."
        )

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self.import_action = QAction("&Import Model Config…", self)
        self.import_action.setShortcut(QKeySequence("Ctrl+I"))
        self.import_action.setStatusTip("Read a Hugging Face config.json or model folder")
        self.import_action.triggered.connect(self._ask_import)
        file_menu.addAction(self.import_action)
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        help_menu = self.menuBar().addMenu("&Help")
        about = QAction("&About GPU Planning Workbench", self)
        about.triggered.connect(self._about)
        help_menu.addAction(about)

    def _ask_import(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import model config", "", "Model config (config.json *.json)")
        if path:
            self.import_model(Path(path))

    def import_model(self, path: Path) -> bool:
        """Import a config.json or folder; a bad file gives a message, never a traceback."""
        try:
            arch = load_hf_config(path)
        except InputError as exc:
            QMessageBox.warning(self, "Cannot import model", str(exc))
            return False
        self.models.add_model(arch, str(path))
        self.tabs.setCurrentWidget(self.models)
        self.statusBar().showMessage(f"Imported {arch.name} from {path}")
        return True

    def _about(self) -> None:
        QMessageBox.about(
            self,
            "About GPU Planning Workbench",
            f"<b>GPU Planning Workbench</b> {__version__}<br>"
            "Size AI workloads on GPUs before you buy or rent them.<br>"
            "Works offline; every datasheet figure carries its source.",
        )
