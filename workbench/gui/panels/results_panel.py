"""Results: the fit verdict first, with the fixes that make a plan fit (one click applies one),
then warnings and failures, then the key figures.

Every number explains itself on hover (label, formula with the values, assumptions); the
explanation is rendered only when asked for.
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from workbench.core.units import format_bytes
from workbench.engine.estimate import Estimate
from workbench.engine.fixes import Fix, fix_text
from workbench.gui import theme
from workbench.gui.elided_label import ElidedLabel
from workbench.gui.estimate_runner import Outcome
from workbench.gui.explain_text import NA, number, tooltip_html, value_text

# (section, [(key, label, workloads it applies to: "i" inference, "t" training; "r": only for models
# with recurrent layers)])
FIGURES: list[tuple[str, list[tuple[str, str, str]]]] = [
    ("Model", [
        ("parameters.total", "Parameters", "it"),
        ("parameters.active", "Active per token", "it"),
    ]),
    ("Memory (per GPU)", [
        ("memory.per_gpu.total", "Most-loaded GPU", "it"),
        ("memory.average_gpu.total", "Average GPU", "it"),
        ("memory.usable_capacity", "Usable", "it"),
        ("memory.headroom", "Headroom", "it"),
        ("kv_cache.bytes_per_token", "KV cache per token", "i"),
        ("recurrent_state.bytes_per_sequence", "Recurrent state per sequence", "ir"),
        ("kv_cache.max_concurrency", "Max concurrent requests", "i"),
    ]),
    ("Compute", [
        ("flops.forward", "Forward FLOPs", "it"),
        ("flops.training_step", "FLOPs per step", "t"),
        ("roofline.bound", "Bound by", "it"),
        ("roofline.attainable_tflops", "Attainable TFLOPS", "it"),
    ]),
    ("Performance", [
        ("performance.ttft_s", "Time to first token", "i"),
        ("performance.tpot_s", "Time per output token", "i"),
        ("performance.tokens_per_s", "Tokens/s", "it"),
        ("performance.e2e_latency_s", "Request latency", "i"),
        ("performance.step_time_s", "Step time", "t"),
        ("performance.mfu", "MFU", "t"),
        ("performance.train_time_days", "Training time", "t"),
    ]),
    ("Cost", [
        ("cost.usd_per_hour", "USD per hour", "it"),
        ("cost.usd_per_million_tokens", "USD per million tokens", "i"),
        ("cost.total_usd", "Total USD (training run)", "t"),
        ("cost.energy_kwh", "Energy (kWh)", "t"),
    ]),
]

SEVERITY_COLOURS = {"error": theme.BAD_COLOUR, "warning": theme.WARN_COLOUR, "info": "#56B4E9"}


class QuantityLabel(QLabel):
    """A value whose tooltip is the explanation of one result key, rendered on hover."""

    def __init__(self, key: str, parent: QWidget | None = None) -> None:
        super().__init__(NA, parent)
        self.key = key
        self.estimate: Estimate | None = None
        self.setObjectName(f"value:{key}")
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def set_estimate(self, estimate: Estimate | None) -> None:
        self.estimate = estimate
        text = value_text(estimate, self.key)
        if text != self.text():  # an unchanged label needs no relayout or repaint
            self.setText(text)

    def explanation(self) -> str:
        return tooltip_html(self.estimate, self.key)

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            QToolTip.showText(event.globalPos(), self.explanation(), self)  # type: ignore[attr-defined]
            return True
        return super().event(event)


class ResultsPanel(QScrollArea):
    """The current estimate; ``set_calibration`` marks it calibrated."""

    #: A fix's Apply button was clicked (the :class:`Fix`); the window applies it as one undo step.
    fix_requested = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("results_panel")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        # Never scroll sideways: a narrow panel shortens the figure names (whole on hover) and
        # keeps every value whole, instead of hiding the values behind a scrollbar.
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        body = QWidget(self)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(8, 6, 8, 6)
        self.verdict = QLabel("Not estimated yet", body)
        self.verdict.setObjectName("verdict")
        font = QFont()
        font.setPointSizeF(font.pointSizeF() * 1.7)
        font.setBold(True)
        self.verdict.setFont(font)
        self.verdict_detail = QLabel("", body)
        self.verdict_detail.setWordWrap(True)
        self.calibration = QLabel("", body)
        self.calibration.setObjectName("calibration_mark")
        self.calibration.setStyleSheet(f"color: {theme.OK_COLOUR}")
        self.calibration.setVisible(False)
        self.gpus_needed = QuantityLabel("memory.min_gpus", body)
        self.gpus_needed.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.error = QLabel("", body)
        self.error.setObjectName("estimate_error")
        self.error.setWordWrap(True)
        self.error.setStyleSheet(f"color: {theme.BAD_COLOUR}")
        self.error.setVisible(False)
        self.oom_message = QLabel("", body)
        self.oom_message.setObjectName("oom_message")
        self.oom_message.setWordWrap(True)
        self.fixes_title = QLabel("<b>To make it fit</b> (one click applies; Ctrl+Z undoes)", body)
        self.fixes_box = QWidget(body)
        self.fixes_box.setObjectName("fixes")
        self._fix_grid = QGridLayout(self.fixes_box)
        self._fix_grid.setContentsMargins(0, 0, 0, 0)
        self._fix_grid.setColumnStretch(1, 1)
        self.fix_buttons: list[QPushButton] = []
        self.fixes: list[Fix] = []
        layout.addWidget(self.verdict)
        layout.addWidget(self.verdict_detail)
        layout.addWidget(self.calibration)
        layout.addWidget(self.oom_message)
        layout.addWidget(self.fixes_title)
        layout.addWidget(self.fixes_box)
        for widget in (self.oom_message, self.fixes_title, self.fixes_box):
            widget.setVisible(False)
        needed = QGridLayout()
        needed.addWidget(QLabel("GPUs needed:", body), 0, 0)
        needed.addWidget(self.gpus_needed, 0, 1)
        needed.setColumnStretch(2, 1)
        layout.addLayout(needed)
        layout.addWidget(self.error)
        # Guard-rail findings come before any figure (a plan that cannot run is read first).
        self.warnings_title = QLabel("<b>Warnings</b>", body)
        self.warnings = QLabel("", body)
        self.warnings.setObjectName("warnings")
        self.warnings.setWordWrap(True)
        self.warnings.setTextFormat(Qt.TextFormat.RichText)
        self.failures_title = QLabel("<b>Estimators that failed</b>", body)
        self.failures = QLabel("", body)
        self.failures.setObjectName("failures")
        self.failures.setWordWrap(True)
        self.failures.setTextFormat(Qt.TextFormat.RichText)
        for widget in (self.warnings_title, self.warnings, self.failures_title, self.failures):
            layout.addWidget(widget)
            widget.setVisible(False)
        self.values: dict[str, QuantityLabel] = {}
        self._rows: dict[str, tuple[ElidedLabel, QuantityLabel, str]] = {}
        self._headers: list[tuple[QLabel, list[str]]] = []
        grid = QGridLayout()
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(2)
        row = 0
        for section, figures in FIGURES:
            header = QLabel(f"<b>{escape(section)}</b>", body)
            grid.addWidget(header, row, 0, 1, 2)
            self._headers.append((header, [k for k, _, _ in figures]))
            row += 1
            for key, label, applies in figures:
                name = ElidedLabel(label, body)
                value = QuantityLabel(key, body)
                value.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Preferred)
                grid.addWidget(name, row, 0)
                grid.addWidget(value, row, 1)
                self.values[key] = value
                self._rows[key] = (name, value, applies)
                row += 1
        grid.setColumnStretch(0, 1)
        layout.addLayout(grid)
        layout.addStretch(1)
        self.setWidget(body)
        self.outcome: Outcome | None = None
        self._shown_for: tuple[bool, bool] | None = None  # (training, recurrent) the rows are shown for

    # --- update -------------------------------------------------------------------------------

    def update_outcome(self, outcome: Outcome) -> None:
        self.outcome = outcome
        estimate = outcome.estimate
        self.error.setVisible(bool(outcome.error))
        self.error.setText(f"Cannot estimate: {escape(outcome.error)}" if outcome.error else "")
        training = outcome.scenario.is_training
        recurrent = estimate is not None and estimate.resolved.model.recurrent_layers > 0
        if (training, recurrent) != self._shown_for:
            self._shown_for = (training, recurrent)

            def relevant(applies: str) -> bool:
                return ("t" if training else "i") in applies and (recurrent or "r" not in applies)

            for name, value, applies in self._rows.values():
                name.setVisible(relevant(applies))
                value.setVisible(relevant(applies))
            for header, keys in self._headers:
                header.setVisible(any(relevant(self._rows[k][2]) for k in keys))
        for _, value, _ in self._rows.values():
            value.set_estimate(estimate)
        self.gpus_needed.set_estimate(estimate)
        needed = number(estimate, "memory.min_gpus")
        if needed is not None:
            self.gpus_needed.setText(f"{needed:,.0f} GPU" + ("" if needed == 1 else "s"))
        self._update_verdict(estimate)
        warnings = estimate.warnings if estimate is not None else []
        oom = [w for w in warnings if w.code == "out-of-memory"]
        self._show_fixes(oom, outcome.fixes)
        order = {"error": 0, "warning": 1, "info": 2}
        items = []
        # The out-of-memory finding and its fixes are at the top, under the verdict.
        for w in sorted((w for w in warnings if w.code != "out-of-memory"), key=lambda w: order.get(w.severity, 3)):
            colour = SEVERITY_COLOURS.get(w.severity, theme.WARN_COLOUR)
            text = f"<span style='color:{colour}'>&#9679;</span> {escape(w.message)}"
            fix = fix_text(w)
            if fix:
                text += f"<br>&nbsp;&nbsp;&nbsp;<i>Fix: {escape(fix)}</i>"
            items.append(text)
        self.warnings.setText("<br>".join(items))
        self.warnings.setVisible(bool(items))
        self.warnings_title.setVisible(bool(items))
        failures = estimate.failures if estimate is not None else []
        text = "<br>".join(
            f"<span style='color:{theme.BAD_COLOUR}'>&#10007;</span> <b>{escape(f.estimator)}</b>: {escape(f.message)}"
            for f in failures
        )
        self.failures.setText(text)
        self.failures.setVisible(bool(failures))
        self.failures_title.setVisible(bool(failures))

    def _show_fixes(self, oom: list, fixes: list[Fix] | None) -> None:
        """The out-of-memory finding under the verdict, and one Apply button per fix."""
        self.oom_message.setText("<br>".join(escape(w.message) for w in oom))
        self.oom_message.setVisible(bool(oom))
        shown = fixes or []
        if [f.label for f in shown] != [f.label for f in self.fixes] or not shown:
            while self._fix_grid.count():
                item = self._fix_grid.takeAt(0)
                if item.widget() is not None:
                    item.widget().deleteLater()
            self.fix_buttons = []
            body = self.fixes_box
            for row, fix in enumerate(shown):
                button = QPushButton("Apply", body)
                button.setObjectName(f"fix_button:{row}")
                button.setToolTip(f"Apply: {fix.label}")
                button.setAccessibleName(f"Apply fix: {fix.label}")
                button.clicked.connect(lambda _=False, f=fix: self.fix_requested.emit(f))
                label = QLabel(escape(fix.label), body)
                label.setWordWrap(True)
                self._fix_grid.addWidget(button, row, 0, Qt.AlignmentFlag.AlignTop)
                self._fix_grid.addWidget(label, row, 1)
                self.fix_buttons.append(button)
            if oom and fixes is not None and not fixes:
                note = QLabel(escape(fix_text(oom[0], [])[0].upper() + fix_text(oom[0], [])[1:]) + ".", body)
                note.setWordWrap(True)
                self._fix_grid.addWidget(note, 0, 0, 1, 2)
            elif oom and fixes is None:
                note = QLabel(escape(f"Fix: {oom[0].fix}"), body)
                note.setWordWrap(True)
                self._fix_grid.addWidget(note, 0, 0, 1, 2)
        self.fixes = list(shown)
        self.fixes_title.setVisible(bool(oom))
        self.fixes_box.setVisible(bool(oom))

    def show_error(self, message: str) -> None:
        """No new estimate: say why, and leave the last figures on screen."""
        self.error.setText(f"Cannot estimate: {escape(message)}. The figures below are from the last valid estimate.")
        self.error.setVisible(True)

    def _update_verdict(self, estimate: Estimate | None) -> None:
        fits = estimate.get("memory.fits") if estimate is not None else None
        total = number(estimate, "memory.per_gpu.total")
        usable = number(estimate, "memory.usable_capacity") or number(estimate, "memory.gpu_capacity")
        if not isinstance(fits, bool) and total is not None and usable:
            fits = total <= usable
        if fits is True:
            text, colour = "✔ Fits", theme.OK_COLOUR
        elif fits is False:
            text, colour = "✘ Out of memory", theme.BAD_COLOUR
        else:
            text, colour = "Fit not estimated", theme.WARN_COLOUR
        self.verdict.setText(text)
        self.verdict.setStyleSheet(f"color: {colour}")
        self.verdict.setToolTip(tooltip_html(estimate, "memory.fits"))
        if total is not None and usable:
            share = 100 * total / usable
            self.verdict_detail.setText(
                f"{format_bytes(total)} of {format_bytes(usable)} usable on the most-loaded GPU ({share:.0f}%)"
            )
        elif estimate is not None and estimate.failures:
            self.verdict_detail.setText("Some estimators failed; see below.")
        else:
            self.verdict_detail.setText("")

    @property
    def verdict_text(self) -> str:
        return self.verdict.text()

    def set_calibration(self, mark: str | None) -> None:
        """Say 'calibrated on N measurements (date)' above the figures, or nothing (None)."""
        self.calibration.setText(mark[0].upper() + mark[1:] if mark else "")
        self.calibration.setVisible(bool(mark))
