"""File → Export Report…: choose scenarios and sections, a file, and write the PDF off the GUI thread.

The estimates run on a QThreadPool worker (:func:`workbench.report.document.collect`: plain
Python, no Qt objects); progress comes back as a queued signal, and Cancel stops the job at its
next step. The PDF itself (:func:`workbench.report.pdf.write_pdf`) is laid out and painted back on
the GUI thread: its QTextDocuments and the Python object painter are QObjects, and building them
on a worker while the GUI thread destroys a Python-subclassed widget can deadlock (the worker holds
the interpreter lock and waits for Qt's connection mutex; the GUI thread holds that mutex and waits
for the interpreter lock in the widget's destructor). Writing takes a fraction of the estimates'
time (a 47-page report: about 0.3 s). The writer renames into place only when the file is whole.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.errors import WorkbenchError
from workbench.core.project import Project
from workbench.engine.pipeline import Engine
from workbench.report.document import PAGE_SIZES, ReportCancelled, ReportRequest, collect
from workbench.report.sections import available_sections

EngineSource = Engine | Callable[[], Engine] | None


class _Signals(QObject):
    progress = Signal(int, int, str)
    collected = Signal(object)
    failed = Signal(str)
    cancelled = Signal()


class _ReportJob(QRunnable):
    """Runs one report's estimates on a pool thread; talks back only through queued signals."""

    def __init__(
        self,
        request: ReportRequest,
        path: Path,
        engine: EngineSource,
        signals: _Signals,
        cancel: threading.Event,
    ) -> None:
        super().__init__()
        self.request, self.path, self.engine, self.signals, self.cancel = (
            request,
            path,
            engine,
            signals,
            cancel,
        )

    def run(self) -> None:
        def progress(done: int, total: int, message: str) -> None:
            if self.cancel.is_set():
                raise ReportCancelled
            self.signals.progress.emit(done, total, message)

        try:
            data = collect(self.request, self.engine, progress, known_sections=[s.id for s in available_sections()])
        except ReportCancelled:
            self.signals.cancelled.emit()
        except WorkbenchError as exc:
            self.signals.failed.emit(str(exc))
        except Exception as exc:  # noqa: BLE001 - shown in the dialog, never lost on a pool thread
            self.signals.failed.emit(f"{type(exc).__name__}: {exc}")
        else:
            self.signals.collected.emit((data, time.perf_counter()))


class ReportDialog(QDialog):
    """Choose what goes into the report, where it goes, and write it with a progress bar."""

    #: Emitted on the GUI thread after a report is written (its path).
    report_written = Signal(str)

    def __init__(
        self,
        project: Project,
        parent: QWidget | None = None,
        *,
        engine: EngineSource = None,
        current_scenario: str = "",
        default_folder: Path | None = None,
    ) -> None:
        super().__init__(parent)
        #: The calibration profile the window applies (``ReportRequest.calibration``); None: none.
        self.calibration: Any = None
        self.setObjectName("report_dialog")
        self.setWindowTitle("Export Report")
        self.project = project
        self.engine = engine
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self._cancel = threading.Event()
        self._running = False
        self.result: Any = None
        self.last_error = ""
        self._path = Path()
        self._started = 0.0

        self.scenario_list = QListWidget(self)
        self.scenario_list.setObjectName("report_scenarios")
        for scenario in project.scenarios:
            item = QListWidgetItem(scenario.name, self.scenario_list)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            if scenario.name == current_scenario:
                self.scenario_list.setCurrentItem(item)
        self.scenario_list.itemChanged.connect(self._update_state)
        all_button = QPushButton("All", self)
        none_button = QPushButton("None", self)
        all_button.clicked.connect(lambda: self._check_all(True))
        none_button.clicked.connect(lambda: self._check_all(False))
        scenario_box = QGroupBox("Scenarios", self)
        scenario_layout = QVBoxLayout(scenario_box)
        scenario_layout.addWidget(self.scenario_list)
        row = QHBoxLayout()
        row.addWidget(all_button)
        row.addWidget(none_button)
        row.addStretch(1)
        scenario_layout.addLayout(row)

        self.section_boxes: dict[str, QCheckBox] = {}
        section_box = QGroupBox("Sections", self)
        grid = QGridLayout(section_box)
        for i, info in enumerate(available_sections()):
            box = QCheckBox(info.title, section_box)
            box.setObjectName(f"section_{info.id}")
            box.setChecked(True)
            box.setToolTip(info.description)
            box.toggled.connect(self._update_state)
            self.section_boxes[info.id] = box
            grid.addWidget(box, i // 2, i % 2)

        self.candidates_edit = QLineEdit(self)
        saved = project.comparisons[0] if project.comparisons else None
        self.candidates_edit.setPlaceholderText(
            f"the Compare tab's {len(saved.accelerators)} candidates and its targets"
            if saved is not None and saved.accelerators else "the scenarios' own accelerators"
        )
        self.candidates_edit.setToolTip(
            "Accelerator ids to compare, comma-separated (e.g. h100-sxm, l40s, mi300x). Empty: the "
            "candidates ticked in the Compare tab (else the scenarios' own); the recommendation meets the "
            "Compare tab's targets either way."
        )
        self.page_size = QComboBox(self)
        for size in PAGE_SIZES:
            self.page_size.addItem("A4" if size == "a4" else size.capitalize(), size)
        self.author_edit = QLineEdit(project.author, self)
        self.path_edit = QLineEdit(self)
        self.path_edit.setObjectName("report_path")
        folder = default_folder or Path.home()
        self.path_edit.setText(str(folder / f"{_file_stem(project.name)} report.pdf"))
        self.path_edit.textChanged.connect(self._update_state)
        browse = QPushButton("Browse…", self)
        browse.clicked.connect(self.ask_path)
        path_row = QHBoxLayout()
        path_row.addWidget(self.path_edit, 1)
        path_row.addWidget(browse)
        form = QFormLayout()
        form.addRow("Compare with", self.candidates_edit)
        form.addRow("Paper", self.page_size)
        form.addRow("Prepared by", self.author_edit)
        form.addRow("Save as", path_row)

        self.progress = QProgressBar(self)
        self.progress.setObjectName("report_progress")
        self.progress.setRange(0, 100)
        self.progress.setValue(0)
        self.status = QLabel(" ", self)
        self.status.setObjectName("report_status")
        self.status.setWordWrap(True)

        self.buttons = QDialogButtonBox(self)
        self.export_button = self.buttons.addButton("Export", QDialogButtonBox.ButtonRole.AcceptRole)
        self.export_button.setObjectName("report_export")
        self.open_button = self.buttons.addButton("Open PDF", QDialogButtonBox.ButtonRole.ActionRole)
        self.open_button.setEnabled(False)
        self.close_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self.export_button.clicked.connect(self.start)
        self.open_button.clicked.connect(self.open_pdf)
        self.close_button.clicked.connect(self.cancel_or_close)

        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(scenario_box, 3)
        top.addWidget(section_box, 2)
        layout.addLayout(top)
        layout.addLayout(form)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        self.resize(780, 480)
        self._update_state()

    # --- choices ------------------------------------------------------------------------------

    def _check_all(self, checked: bool) -> None:
        state = Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked
        for i in range(self.scenario_list.count()):
            self.scenario_list.item(i).setCheckState(state)

    def chosen_scenarios(self) -> tuple[str, ...]:
        items = (self.scenario_list.item(i) for i in range(self.scenario_list.count()))
        return tuple(item.text() for item in items if item.checkState() == Qt.CheckState.Checked)

    def chosen_sections(self) -> tuple[str, ...]:
        return tuple(ident for ident, box in self.section_boxes.items() if box.isChecked())

    def set_sections(self, sections: set[str] | tuple[str, ...]) -> None:
        for ident, box in self.section_boxes.items():
            box.setChecked(ident in sections)

    def request(self) -> ReportRequest:
        candidates = tuple(
            dict.fromkeys(c.strip() for c in self.candidates_edit.text().split(",") if c.strip())
        )
        return ReportRequest(
            project=self.project,
            scenarios=self.chosen_scenarios(),
            sections=self.chosen_sections(),
            candidates=candidates,
            page_size=str(self.page_size.currentData()),
            author=self.author_edit.text().strip(),
            calibration=self.calibration,
        )

    def _update_state(self, *_: object) -> None:
        ready = (
            bool(self.chosen_scenarios())
            and bool(self.chosen_sections())
            and bool(self.path_edit.text().strip())
        )
        self.export_button.setEnabled(ready and not self._running)
        if not self._running and not ready:
            what = (
                "a scenario"
                if not self.chosen_scenarios()
                else "a section"
                if not self.chosen_sections()
                else "a file name"
            )
            self.status.setText(f"Choose {what}.")

    def ask_path(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save report", self.path_edit.text(), "PDF (*.pdf)")
        if path:
            self.path_edit.setText(path if path.lower().endswith(".pdf") else path + ".pdf")

    # --- the job ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._running

    def start(self) -> bool:
        """Start writing the report; False (with the reason shown) when the choices cannot make one."""
        if self._running:
            return False
        path = Path(self.path_edit.text().strip()).expanduser()
        request = self.request()
        try:
            request.check([s.id for s in available_sections()])
        except WorkbenchError as exc:
            self._show_error(str(exc))
            return False
        self._cancel.clear()
        self._running = True
        self.result = None
        self.last_error = ""
        self.open_button.setEnabled(False)
        self.close_button.setText("Cancel")
        self.progress.setValue(0)
        self.status.setText("Estimating…")
        self._update_state()
        signals = _Signals(self)
        signals.progress.connect(self._on_progress)
        signals.collected.connect(self._on_collected)
        signals.failed.connect(self._on_failed)
        signals.cancelled.connect(self._on_cancelled)
        self._signals = signals
        self._path = path
        self._started = time.perf_counter()
        self.pool.start(_ReportJob(request, path, self.engine, signals, self._cancel))
        return True

    def _on_collected(self, collected: tuple[Any, float]) -> None:
        """The estimates are in: lay out and write the PDF here, on the GUI thread (see the module
        docstring for why not on the worker)."""
        from workbench.report.pdf import ReportResult, write_pdf

        data, _ = collected
        if self._cancel.is_set():
            self._on_cancelled()
            return
        try:
            pages = write_pdf(data, self._path, self._on_progress)
        except WorkbenchError as exc:
            self._on_failed(str(exc))
        except Exception as exc:  # noqa: BLE001 - shown in the dialog, never lost
            self._on_failed(f"{type(exc).__name__}: {exc}")
        else:
            self._on_finished(ReportResult(Path(self._path), pages, time.perf_counter() - self._started))

    def _on_progress(self, done: int, total: int, message: str) -> None:
        # Estimates fill the first 70% of the bar, writing pages the rest.
        writing = message.startswith(("Writing", "Report"))
        share = done / total if total else 1.0
        self.progress.setValue(int(70 + 30 * share) if writing else int(70 * share))
        self.status.setText(message)

    def _finish(self) -> None:
        self._running = False
        self.close_button.setText("Close")
        self._update_state()

    def _on_finished(self, result: Any) -> None:
        self._finish()
        self.result = result
        self.progress.setValue(100)
        self.status.setText(f"Wrote {result.path} ({result.pages} pages) in {result.seconds:.1f} s.")
        self.open_button.setEnabled(True)
        self.report_written.emit(str(result.path))

    def _on_failed(self, message: str) -> None:
        self._finish()
        self._show_error(message)

    def _on_cancelled(self) -> None:
        self._finish()
        self.progress.setValue(0)
        self.status.setText("Cancelled: no file was written.")

    def _show_error(self, message: str) -> None:
        self.last_error = message
        self.status.setText(f"<span style='color:#c62828'>Cannot write the report: {message}</span>")

    def cancel_or_close(self) -> None:
        if self._running:
            self._cancel.set()
            self.status.setText("Cancelling…")
        else:
            self.reject()

    def open_pdf(self) -> None:
        if self.result is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.result.path)))

    def wait(self, msecs: int = 30000) -> bool:
        """Block until the job ends (tests, and closing the window mid-export)."""
        return self.pool.waitForDone(msecs)

    def done(self, code: int) -> None:
        if self._running:
            self._cancel.set()
            self.pool.waitForDone()
        super().done(code)


def _file_stem(name: str) -> str:
    stem = "".join(c if c.isalnum() or c in " -_." else "_" for c in name).strip()
    return stem or "project"


def open_report_dialog(window: Any) -> ReportDialog:
    """Show the dialog for the main window's project (File → Export Report…)."""
    folder = window.project_path.parent if getattr(window, "project_path", None) is not None else None
    runner = getattr(window, "runner", None)
    dialog = ReportDialog(
        window.controller.project,
        window,
        engine=(lambda: runner.engine) if runner is not None else None,
        current_scenario=window.controller.current,
        default_folder=folder,
    )
    calibration = getattr(window, "calibration", None)
    dialog.calibration = getattr(calibration, "profile", None)  # the report is calibrated as the window is
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.report_written.connect(
        lambda path: window.statusBar().showMessage(f"Report written: {path}", 8000)
    )
    dialog.show()
    return dialog
