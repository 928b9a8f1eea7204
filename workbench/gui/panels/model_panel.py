"""Model panel: the model catalog (search and filters), import, and the architecture editor."""

from __future__ import annotations

import warnings
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from workbench.catalog.hf_config import UnknownArchitectureError, load_hf_config
from workbench.core.errors import InputError
from workbench.gui.controller import ProjectController
from workbench.gui.panels.model_editor import ModelEditor
from workbench.gui.panels.model_table import ModelTable


def _local_paths(event: QDragEnterEvent | QDropEvent) -> list[Path]:
    mime = event.mimeData()
    if not mime.hasUrls():
        return []
    return [Path(url.toLocalFile()) for url in mime.urls() if url.isLocalFile()]


def _importable(path: Path) -> bool:
    return path.is_dir() or path.suffix.lower() == ".json"


class ModelPanel(QWidget):
    """Pick a model for the current scenario, import one, or edit its architecture."""

    status_message = Signal(str)

    def __init__(self, controller: ProjectController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("model_panel")
        self.controller = controller
        self.setAcceptDrops(True)
        self.table = ModelTable(self)
        self.table.model_chosen.connect(lambda model_id: controller.set_field("model", model_id))
        self.import_file_button = QPushButton("Import config.json…", self)
        self.import_file_button.setToolTip("Read a Hugging Face config.json (or drop one on this panel)")
        self.import_file_button.clicked.connect(self.ask_import_file)
        self.import_folder_button = QPushButton("Import folder…", self)
        self.import_folder_button.setToolTip(
            "Read a model folder: its config.json, plus the safetensors headers when present (tensors are not read)"
        )
        self.import_folder_button.clicked.connect(self.ask_import_folder)
        self.current_label = QLabel("", self)
        self.current_label.setObjectName("current_model")
        self.current_label.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self.import_file_button)
        buttons.addWidget(self.import_folder_button)
        buttons.addStretch(1)
        top = QWidget(self)
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.table)
        top_layout.addLayout(buttons)
        self.editor = ModelEditor(self)
        self.editor.architecture_edited.connect(controller.set_model_architecture)
        editor_box = QWidget(self)
        editor_layout = QVBoxLayout(editor_box)
        editor_layout.setContentsMargins(0, 0, 0, 0)
        editor_layout.addWidget(self.current_label)
        editor_layout.addWidget(self.editor)
        self.splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.splitter.addWidget(top)
        self.splitter.addWidget(editor_box)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.splitter)
        controller.changed.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        project = self.controller.project
        catalogs = self.controller.catalogs
        entries = [(e.id, e.architecture, e.origin) for e in catalogs.models.values() if e.id not in project.models]
        entries += [(model_id, arch, "project") for model_id, arch in project.models.items()]
        self.table.set_models(entries)
        scenario = self.controller.scenario
        arch = self.controller.model_architecture()
        if scenario is not None:
            self.table.select_id(scenario.model)
            where = "this project" if scenario.model in project.models else "the catalog"
            self.current_label.setText(
                f"<b>{arch.name if arch else scenario.model}</b> ({scenario.model}, from {where})"
                + ("" if arch else " cannot be found")
            )
        self.editor.set_architecture(arch)

    # --- import -------------------------------------------------------------------------------

    def ask_import_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import model config", "", "Model config (config.json *.json)")
        if path:
            self.import_model(Path(path))

    def ask_import_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Import model folder")
        if path:
            self.import_model(Path(path))

    def import_model(self, path: Path, approximate: bool = False) -> bool:
        """Import a config.json or folder into the project; a bad file is a message, never a traceback.

        An unknown architecture that a Llama-style reading would get wrong is refused in a dialog
        that offers to import it anyway as an approximation (every estimate then says so).
        """
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                arch = load_hf_config(path, approximate=approximate)
        except UnknownArchitectureError as exc:
            return self._offer_approximation(path, str(exc))
        except InputError as exc:
            QMessageBox.warning(self, "Cannot import model", str(exc))
            return False
        except Exception as exc:  # noqa: BLE001 - an unexpected file problem is still only a message
            QMessageBox.warning(self, "Cannot import model", f"{path}: {type(exc).__name__}: {exc}")
            return False
        model_id = self.controller.add_model(arch)
        notes = "; ".join(str(w.message) for w in caught)
        self.status_message.emit(f"Imported {arch.name} as '{model_id}' from {path}" + (f" ({notes})" if notes else ""))
        return True

    def _offer_approximation(self, path: Path, reason: str) -> bool:
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle("Unknown architecture")
        box.setText("This model's architecture is not one the workbench reads exactly.")
        box.setInformativeText(
            reason.split(": ", 1)[-1]
            + "\n\nImporting it anyway reads it as a plain Llama-style block: parameter counts, memory and "
            "speed may be far off, and every estimate will carry an 'approximate-architecture' warning."
        )
        anyway = box.addButton("Import as Approximation", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        if box.clickedButton() is not anyway:
            self.status_message.emit(f"Import of {path} cancelled: unknown architecture")
            return False
        return self.import_model(path, approximate=True)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt override
        if any(_importable(p) for p in _local_paths(event)):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt override
        paths = [p for p in _local_paths(event) if _importable(p)]
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        for path in paths:
            self.import_model(path)
