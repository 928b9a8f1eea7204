"""File → Export Launch Configuration…: pick a format, preview its files, save or copy them.

The exporters are the plugins' (:mod:`workbench.launch_export`); an export is milliseconds, so
it runs on the GUI thread when the format changes. Formats for the other kind of workload stay
in the list, disabled, with a tooltip that says why. A scenario a format cannot express shows
the exporter's one-line reason in place of the preview.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication, QStandardItemModel
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench import launch_export
from workbench.gui import theme
from workbench.core.errors import InputError
from workbench.core.resolved import ResolvedScenario


class ExportLaunchDialog(QDialog):
    """Preview and write one scenario's launch configuration."""

    #: the paths written by Save
    saved = Signal(list)

    def __init__(self, resolved: ResolvedScenario, estimate: Any, parent: QWidget | None = None,
                 default_folder: Path | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Export Launch Configuration — {resolved.scenario.name}")
        self.resolved, self.estimate = resolved, estimate
        self.default_folder = default_folder or Path.home()
        self.files: dict[str, str] = {}
        self.exporters = launch_export.exporters()

        self.format_box = QComboBox()
        self.format_box.setAccessibleName("Format")
        self.about = QLabel()
        self.about.setWordWrap(True)
        self.about.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet(f"color: {theme.BAD_COLOUR}")
        self.problem.hide()
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)

        self.save_button = QPushButton("&Save…")
        self.copy_button = QPushButton("&Copy")
        self.copy_button.setToolTip("Copy the file on screen to the clipboard")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(self.save_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        self.save_button.clicked.connect(self.ask_save)
        self.copy_button.clicked.connect(self.copy_current)

        top = QHBoxLayout()
        top.addWidget(QLabel("&Format:", buddy=self.format_box))
        top.addWidget(self.format_box, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.about)
        layout.addWidget(self.problem)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(buttons)
        self.resize(900, 640)

        self._fill_formats()
        self.format_box.currentIndexChanged.connect(self.refresh)
        self.refresh()

    def _fill_formats(self) -> None:
        model = self.format_box.model()
        first_usable = None
        for index, exporter in enumerate(self.exporters.values()):
            info = exporter.info
            self.format_box.addItem(f"{info.title} — {info.engine} {info.engine_version}", info.id)
            if launch_export.applies(exporter, self.resolved):
                first_usable = index if first_usable is None else first_usable
            elif isinstance(model, QStandardItemModel):
                item = model.item(index)
                item.setEnabled(False)
                kinds = ", ".join(w.value for w in info.workloads)
                item.setToolTip(f"For {kinds} scenarios; this one is {self.resolved.scenario.workload.value}")
        if first_usable is not None:
            self.format_box.setCurrentIndex(first_usable)

    @property
    def format_id(self) -> str:
        return str(self.format_box.currentData())

    def refresh(self) -> None:
        """Export in the chosen format and show its files (or why it cannot)."""
        exporter = self.exporters.get(self.format_id)
        self.tabs.clear()
        self.files = {}
        if exporter is None:
            return
        info = exporter.info
        self.about.setText(f"{info.title}. Argument names follow {info.engine} {info.engine_version} "
                           f"({info.source}).")
        try:
            self.files = launch_export.run(exporter, self.resolved, self.estimate)
        except InputError as exc:
            self.problem.setText(str(exc))
            self.problem.show()
        else:
            self.problem.hide()
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        for name, text in self.files.items():
            view = QPlainTextEdit(text)
            view.setReadOnly(True)
            view.setFont(fixed)
            view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
            self.tabs.addTab(view, name)
        self.save_button.setEnabled(bool(self.files))
        self.copy_button.setEnabled(bool(self.files))

    def current_text(self) -> str:
        view = self.tabs.currentWidget()
        return view.toPlainText() if isinstance(view, QPlainTextEdit) else ""

    def copy_current(self) -> None:
        QGuiApplication.clipboard().setText(self.current_text())

    def ask_save(self) -> None:
        """One file: ask for its name. Several: ask for a folder that receives them all."""
        if not self.files:
            return
        if len(self.files) == 1:
            (name,) = self.files
            target, _ = QFileDialog.getSaveFileName(self, "Save Launch Configuration",
                                                    str(self.default_folder / name))
        else:
            target = QFileDialog.getExistingDirectory(
                self, f"Folder for {', '.join(self.files)}", str(self.default_folder))
        if target:
            self.save_to(Path(target))

    def save_to(self, target: Path) -> list[Path]:
        try:
            written = launch_export.write(self.files, target)
        except InputError as exc:
            self.problem.setText(f"Not saved: {exc}")
            self.problem.show()
            return []
        self.problem.hide()
        self.saved.emit(written)
        return written


def open_export_launch_dialog(window: Any) -> ExportLaunchDialog | None:
    """Show the dialog for the window's current scenario (File → Export Launch Configuration…)."""
    scenario = window.controller.scenario
    if scenario is None:
        return None
    try:
        estimate = window._estimate_now(scenario)
    except InputError as exc:
        window.statusBar().showMessage(f"Cannot export: {exc}", 8000)
        return None
    folder = window.project_path.parent if getattr(window, "project_path", None) is not None else None
    dialog = ExportLaunchDialog(estimate.resolved, estimate, window, default_folder=folder)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.saved.connect(lambda paths: window.statusBar().showMessage(
        "Saved: " + ", ".join(str(p) for p in paths), 8000))
    dialog.show()
    return dialog
