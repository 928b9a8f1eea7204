"""Calibrate…: fit the efficiency assumptions to the measurements of one GPU + engine, off the GUI
thread (:class:`~workbench.gui.background.BackgroundRunner`) with progress and Cancel, then show
what moved (with each assumption's documented range), the residual of every measurement before
and after and left out, and save the profile in the project (and apply it) or throw it away.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.errors import InputError
from workbench.gui.background import BackgroundRunner, Report, Stale
from workbench.gui.dialogs.measure_state import holds_lock, project_file
from workbench.measure.model import METRICS
from workbench.measure.stored import StoredMeasurement


class Cancelled(Exception):
    """Raised from the fit's progress callback once the job is stale (Cancel, or a newer fit)."""


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1%}"


def _num(value: float, unit: str = "") -> str:
    if unit == "s" and value < 10:
        return f"{value * 1e3:.4g} ms"
    return (f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}") + (f" {unit}" if unit else "")


def _table(headers: tuple[str, ...], name: str) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.setAccessibleName(name)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.verticalHeader().hide()
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    return table


def _fill(table: QTableWidget, rows: list[tuple[str, ...]]) -> None:
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(text))


class CalibrateDialog(QDialog):
    #: the name of a profile saved in the project
    saved = Signal(str)
    #: (profile, fit) of a finished fit, on the GUI thread
    fitted = Signal(object, object)

    def __init__(self, window: Any, measurements: list[StoredMeasurement], parent: QWidget | None = None) -> None:
        super().__init__(parent or window)
        from workbench.measure.session import groups

        self.window_, self.measurements = window, measurements
        self.setWindowTitle("Calibrate")
        self.profile: Any = None
        self.fit: Any = None
        self.runner = BackgroundRunner(self)
        self.runner.finished.connect(self._on_done)
        self.runner.failed.connect(self._on_failed)
        self.runner.progress.connect(self._on_progress)

        self.group_box = QComboBox()
        self.group_box.setAccessibleName("GPU and engine")
        for (gpu, engine), found in sorted(groups(measurements).items()):
            self.group_box.addItem(f"{gpu} / {engine} ({len(found)} measurement{'s' if len(found) != 1 else ''})",
                                   (gpu, engine))
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("default: GPU/engine")
        self.name_edit.setAccessibleName("Profile name")
        self.run_button = QPushButton("&Fit")
        self.cancel_button = QPushButton("&Cancel")
        self.cancel_button.setEnabled(False)
        self.run_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        top = QHBoxLayout()
        top.addWidget(QLabel("&Measurements of:", buddy=self.group_box))
        top.addWidget(self.group_box, 1)
        top.addWidget(QLabel("&Name:", buddy=self.name_edit))
        top.addWidget(self.name_edit)
        top.addWidget(self.run_button)
        top.addWidget(self.cancel_button)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setFormat("")
        self.status = QLabel("Fit the efficiency assumptions, each within its documented range, to these "
                             "measurements; each is then predicted by a fit to the others (leave-one-out).")
        self.status.setWordWrap(True)
        self.parameters = _table(("Assumption", "Default", "Fitted", "Documented range", "Change"),
                                 "Fitted assumptions")
        self.residuals = _table(("Measurement", "Metric", "Measured", "Before", "After", "Left out"), "Residuals")
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.save_button = QPushButton("&Save and Apply")
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self.save_and_apply)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(self.save_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(self.parameters, 2)
        layout.addWidget(self.residuals, 3)
        layout.addWidget(self.summary)
        layout.addWidget(buttons)
        self.resize(980, 640)

    # --- the fit -------------------------------------------------------------------------------

    def start(self) -> int:
        from workbench.measure.session import run_calibration

        data = self.group_box.currentData()
        if data is None:
            return 0
        gpu, engine_name = data
        measurements, project = list(self.measurements), self.window_.controller.project
        name = self.name_edit.text().strip() or None
        engine = self.window_.runner.engine

        def job(stale: Stale, report: Report) -> Any:
            def progress(done: int, total: int, what: str) -> None:
                if stale():
                    raise Cancelled
                report((done, total, what))

            try:
                return run_calibration(engine, measurements, project, gpu=gpu, engine_name=engine_name, name=name,
                                       progress=progress)
            except Cancelled:
                return None

        self.profile = self.fit = None
        self.save_button.setEnabled(False)
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setRange(0, 0)
        self.status.setText("Fitting…")
        return self.runner.submit(job)

    def cancel(self) -> None:
        self.runner.cancel()
        self._idle("Cancelled: nothing was fitted.")

    def _idle(self, text: str) -> None:
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("")
        self.status.setText(text)

    def _on_progress(self, _generation: int, value: Any) -> None:
        done, total, what = value
        self.progress.setRange(0, total)
        self.progress.setValue(done)
        self.progress.setFormat(f"{what} (%v of %m)")

    def _on_failed(self, _generation: int, message: str) -> None:
        self._idle(f"The fit failed: {message}")

    def _on_done(self, _generation: int, result: Any) -> None:
        if result is None:
            return
        self.profile, self.fit = result
        self._idle(f"Fitted on {self.profile.measurements} measurements of {self.profile.gpu} / "
                   f"{self.profile.engine}. Save and Apply keeps it in the project and calibrates the estimates.")
        self.progress.setRange(0, 1)
        self.progress.setValue(1)
        self.progress.setFormat("done")
        self._show(self.fit)
        self.save_button.setEnabled(True)
        self.fitted.emit(self.profile, self.fit)

    def _show(self, fit: Any) -> None:
        _fill(self.parameters, [
            (f"{p.title} ({p.id})", _num(p.default), _num(p.value), f"{_num(p.low)} – {_num(p.high)}",
             f"{p.value / p.default - 1:+.1%}" if p.moved else "unchanged")
            for p in fit.parameters
        ])
        _fill(self.residuals, [
            (r.case, METRICS[r.metric].title, _num(r.measured, METRICS[r.metric].unit),
             _pct(r.error(r.before, r.measured)), _pct(r.error(r.after, r.measured)),
             _pct(r.error(r.left_out, r.measured)))
            for r in fit.residuals
        ])
        median = {k: fit.median_abs(k) for k in ("before", "after", "left_out")}
        text = "Median |error|: " + ", ".join(
            f"{label} {'—' if median[k] is None else f'{median[k]:.1%}'}"
            for label, k in (("before", "before"), ("after", "after"), ("left out", "left_out")))
        self.summary.setText("<br>".join([text, *(f"Note: {n}" for n in fit.notes)]))

    def save_and_apply(self) -> bool:
        from workbench.measure.session import save_profile

        if self.profile is None:
            return False
        try:
            save_profile(project_file(self.window_), self.profile, lock_held=holds_lock(self.window_))
        except InputError as exc:
            QMessageBox.warning(self, "Save Calibration", str(exc))
            return False
        self.window_.calibration.apply(self.profile)
        self.saved.emit(self.profile.name)
        self.save_button.setEnabled(False)
        self.status.setText(f"Saved as '{self.profile.name}' and applied: {self.profile.mark()}.")
        return True

    def done(self, result: int) -> None:  # noqa: D102 - Qt override: a closed dialog's fit is dropped
        self.runner.cancel()
        super().done(result)
