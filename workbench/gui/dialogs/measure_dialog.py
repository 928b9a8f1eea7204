"""File → Import Measurements… and File → Measurements and Calibration…: the project's measured
runs in a table, tied to their scenarios; import (several files, all or none), remove, calibrate,
and the calibration profiles the project holds (apply, remove, export and import as YAML).

Reading a result file and storing its rows take milliseconds, so they run on the GUI thread; the
fit runs in :class:`~workbench.gui.dialogs.measure_calibrate.CalibrateDialog`, off it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.errors import InputError
from workbench.gui.dialogs.measure_state import holds_lock, project_file
from workbench.measure.model import METRICS
from workbench.measure.stored import StoredMeasurement

RESULT_FILES = ("Benchmark results (*.json *.jsonl *.txt *.log *.csv);;All files (*)")
HEADERS = ("#", "Scenario", "Source", "File", "Run on", "Measured")


def metrics_text(metrics: dict[str, float]) -> str:
    parts = []
    for key, value in metrics.items():
        metric = METRICS[key]
        shown = f"{value * 1e3:.4g} ms" if metric.unit == "s" and value < 10 else f"{value:,.4g} {metric.unit}"
        parts.append(f"{metric.title} {shown}")
    return ", ".join(parts)


def import_files(window: Any, paths: list[str]) -> list[int]:
    """Store every measurement of ``paths`` with the window's current scenario, in one save; the
    first bad file refuses them all (InputError, one line naming it)."""
    from workbench.measure.stored import prepare_files, store_import

    path = project_file(window)
    scenario = window.controller.scenario
    if scenario is None:
        raise InputError("Select the scenario the measurements belong to first")
    prepared = prepare_files(paths, scenario, window.controller.project)
    return store_import(path, scenario.name, prepared, lock_held=holds_lock(window))


def ask_import(window: Any, parent: QWidget | None = None) -> list[int]:
    """Pick result files and import them; a refusal is shown in a dialog (nothing imported)."""
    try:
        project_file(window)
    except InputError as exc:
        QMessageBox.warning(parent or window, "Import Measurements", str(exc))
        return []
    folder = str(window.project_path.parent)
    paths, _ = QFileDialog.getOpenFileNames(parent or window, "Import Measurements", folder, RESULT_FILES)
    if not paths:
        return []
    try:
        ids = import_files(window, paths)
    except InputError as exc:
        QMessageBox.warning(parent or window, "Import Measurements", f"Nothing was imported: {exc}")
        return []
    window.statusBar().showMessage(
        f"Imported {len(ids)} measurement{'s' if len(ids) != 1 else ''} into scenario "
        f"'{window.controller.current}'", 8000)
    return ids


class MeasurementsDialog(QDialog):
    """The open project's measurements and calibration profiles."""

    def __init__(self, window: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent or window)
        self.window_ = window
        self.setWindowTitle("Measurements and Calibration")
        self.measurements: list[StoredMeasurement] = []
        self.profiles: dict[str, Any] = {}

        self.where = QLabel()
        self.where.setWordWrap(True)
        self.table = QTableWidget(0, len(HEADERS))
        self.table.setHorizontalHeaderLabels(HEADERS)
        self.table.setAccessibleName("Measurements")
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(len(HEADERS) - 1, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._update_buttons)

        self.import_button = QPushButton("&Import…")
        self.remove_button = QPushButton("&Remove")
        self.calibrate_button = QPushButton("&Calibrate…")
        self.import_button.clicked.connect(self._import)
        self.remove_button.clicked.connect(self.remove_selected)
        self.calibrate_button.clicked.connect(self.calibrate)
        row = QHBoxLayout()
        for button in (self.import_button, self.remove_button, self.calibrate_button):
            row.addWidget(button)
        row.addStretch(1)

        self.profile_box = QComboBox()
        self.profile_box.setAccessibleName("Calibration profiles")
        self.applied = QLabel()
        self.applied.setWordWrap(True)
        self.apply_button = QPushButton("&Apply")
        self.unapply_button = QPushButton("Re&move Calibration")
        self.export_button = QPushButton("&Export YAML…")
        self.import_profile_button = QPushButton("Import &YAML…")
        self.apply_button.clicked.connect(self.apply_chosen)
        self.unapply_button.clicked.connect(lambda: self.window_.calibration.apply(None))
        self.export_button.clicked.connect(self.export_chosen)
        self.import_profile_button.clicked.connect(self.import_profile)
        profiles = QHBoxLayout()
        profiles.addWidget(QLabel("Ca&libration:", buddy=self.profile_box))
        profiles.addWidget(self.profile_box, 1)
        for button in (self.apply_button, self.unapply_button, self.export_button, self.import_profile_button):
            profiles.addWidget(button)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.where)
        layout.addWidget(self.table, 1)
        layout.addLayout(row)
        layout.addLayout(profiles)
        layout.addWidget(self.applied)
        layout.addWidget(buttons)
        window.calibration.changed.connect(self._show_applied)
        self.resize(960, 480)
        self.refresh()

    # --- reading -------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the measurements and profiles back from the project file."""
        from workbench.measure.session import load_profiles
        from workbench.measure.stored import load_measurements
        from workbench.pluginhost import default_engine

        self.measurements, self.profiles, notes = [], {}, []
        try:
            path = project_file(self.window_)
            self.measurements, notes = load_measurements(path)
            self.profiles, skipped = load_profiles(path, default_engine().assumptions)
            notes += skipped
            self.where.setText(f"Measured runs kept in {path.name}, each tied to a scenario; Import adds files' "
                               f"runs to the selected scenario ('{self.window_.controller.current}')."
                               + (f" Skipped damaged rows: {'; '.join(notes)}" if notes else ""))
        except InputError as exc:
            self.where.setText(str(exc))
        self.table.setRowCount(len(self.measurements))
        for r, m in enumerate(self.measurements):
            s = m.scenario
            cells = (str(m.id), m.scenario_name, m.measurement.source_format,
                     f"{m.measurement.file_name} {m.measurement.record}".strip(),
                     f"{s.num_gpus} x {s.gpu}, {s.model}, ISL/OSL {s.seq_len}/{s.gen_len}",
                     metrics_text(m.measurement.metrics))
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.table.setItem(r, c, item)
        chosen = self.profile_box.currentText()
        self.profile_box.clear()
        for name, profile in sorted(self.profiles.items()):
            self.profile_box.addItem(f"{name} — {profile.mark()}", name)
        index = self.profile_box.findData(chosen.split(" — ")[0])
        if index >= 0:
            self.profile_box.setCurrentIndex(index)
        self._show_applied()
        self._update_buttons()

    def _update_buttons(self) -> None:
        has_file = getattr(self.window_, "project_path", None) is not None
        self.import_button.setEnabled(has_file)
        self.remove_button.setEnabled(bool(self.table.selectionModel().selectedRows()))
        self.calibrate_button.setEnabled(bool(self.measurements))
        for button in (self.apply_button, self.export_button):
            button.setEnabled(self.profile_box.count() > 0)
        self.import_profile_button.setEnabled(has_file)
        self.unapply_button.setEnabled(self.window_.calibration.profile is not None)

    def _show_applied(self) -> None:
        profile = self.window_.calibration.profile
        self.applied.setText("No calibration applied: estimates use the assumptions' defaults." if profile is None
                             else f"Applied: '{profile.name}', {profile.mark()}, to scenarios on "
                                  f"{profile.gpu} / {profile.engine}.")
        self.unapply_button.setEnabled(profile is not None)

    def chosen_profile(self) -> Any:
        name = self.profile_box.currentData()
        return self.profiles.get(name) if name is not None else None

    # --- actions -------------------------------------------------------------------------------

    def _import(self) -> None:
        if ask_import(self.window_, self):
            self.refresh()

    def remove_selected(self) -> int:
        from workbench.store.measurements import remove_measurement_rows

        ids = [self.measurements[i.row()].id for i in self.table.selectionModel().selectedRows()]
        if not ids:
            return 0
        try:
            removed = remove_measurement_rows(project_file(self.window_), ids, lock_held=holds_lock(self.window_))
        except InputError as exc:
            QMessageBox.warning(self, "Remove Measurements", str(exc))
            return 0
        self.refresh()
        return removed

    def calibrate(self) -> Any:
        from workbench.gui.dialogs.measure_calibrate import CalibrateDialog

        dialog = CalibrateDialog(self.window_, self.measurements, self)
        dialog.saved.connect(lambda _name: self.refresh())
        dialog.show()
        return dialog

    def apply_chosen(self) -> None:
        profile = self.chosen_profile()
        if profile is not None:
            self.window_.calibration.apply(profile)

    def export_chosen(self, target: str | None = None) -> bool:
        from workbench.core.atomic_write import write_text
        from workbench.measure.profile import dump_yaml

        profile = self.chosen_profile()
        if profile is None:
            return False
        if target is None:
            stem = "".join(c if c.isalnum() or c in "-_." else "-" for c in profile.name)
            suggested = str(Path(self.window_.project_path).parent / f"{stem}.yaml")
            target, _ = QFileDialog.getSaveFileName(self, "Export Calibration Profile", suggested,
                                                    "Calibration profile (*.yaml *.yml)")
            if not target:
                return False
        try:
            write_text(target, dump_yaml(profile), what="the calibration profile")
        except InputError as exc:
            QMessageBox.warning(self, "Export Calibration Profile", str(exc))
            return False
        return True

    def import_profile(self, source: str | None = None) -> Any:
        from workbench.measure.profile import read_profile_file
        from workbench.measure.session import save_profile
        from workbench.pluginhost import default_engine

        if source is None:
            source, _ = QFileDialog.getOpenFileName(self, "Import Calibration Profile",
                                                    str(Path(self.window_.project_path).parent),
                                                    "Calibration profile (*.yaml *.yml);;All files (*)")
            if not source:
                return None
        try:
            profile = read_profile_file(source, default_engine().assumptions)
            save_profile(project_file(self.window_), profile, lock_held=holds_lock(self.window_))
        except InputError as exc:
            QMessageBox.warning(self, "Import Calibration Profile", f"Nothing was imported: {exc}")
            return None
        self.refresh()
        self.profile_box.setCurrentIndex(self.profile_box.findData(profile.name))
        return profile


def open_measurements_dialog(window: Any) -> MeasurementsDialog:
    dialog = MeasurementsDialog(window)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.show()
    return dialog
