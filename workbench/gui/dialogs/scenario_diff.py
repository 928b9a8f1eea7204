"""Compare two scenarios: the inputs that differ, and the key results side by side.

Inputs are the scenario's fields flattened to dotted paths (``parallel.tp``), labelled as in the
scenario panel. Results come from the engine, as everywhere else; the difference column is
B − A, coloured green where B is better and red where it is worse.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from html import escape
from typing import Any

from PySide6.QtCore import Qt, SignalInstance
from PySide6.QtGui import QBrush, QColor, QFont, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QGroupBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.model import ModelArchitecture
from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.core.units import format_count
from workbench.engine.estimate import Estimate
from workbench.engine.quantity import Quantity
from workbench.gui import theme
from workbench.gui.explain_text import NA, quantity_text, tooltip_html, value_text
from workbench.gui.panels.scenario_panel import SECTIONS

EstimateFn = Callable[[Scenario], Estimate]

#: Fields that name a scenario rather than describe it.
_NOT_INPUTS = {"name", "schema_version"}
_LABELS = {"model": "Model", "gpu": "GPU", "node": "Node shape", "num_gpus": "GPUs"}
_KNOBS = {knob.path: knob for _, knobs in SECTIONS for knob in knobs}

#: (result key, label, +1 when more is better / -1 when less is better / 0 neither)
KEY_RESULTS: tuple[tuple[str, str, int], ...] = (
    ("memory.per_gpu.total", "Memory per GPU (most-loaded)", -1),
    ("memory.fits", "Fits in memory", +1),
    ("memory.min_gpus", "GPUs needed", -1),
    ("performance.ttft_s", "Time to first token", -1),
    ("performance.tpot_s", "Time per output token", -1),
    ("performance.tokens_per_s", "Tokens/s", +1),
    ("performance.step_time_s", "Step time", -1),
    ("performance.mfu", "MFU", +1),
    ("cost.usd_per_hour", "USD per hour", -1),
    ("cost.usd_per_million_tokens", "USD per million tokens", -1),
    ("cost.total_usd", "Total USD (training run)", -1),
)


def flatten_scenario(scenario: Scenario) -> dict[str, Any]:
    """Every input of a scenario by dotted path (``parallel.tp``, ``assumptions.<id>``)."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), item)
        else:
            flat[prefix] = value

    walk("", scenario.model_dump(mode="json", exclude=_NOT_INPUTS))
    return flat


def field_label(path: str, training: tuple[bool, ...] = ()) -> str:
    """The scenario panel's label; ``training``: which sides train (some knobs change name)."""
    knob = _KNOBS.get(path)
    if knob is not None:
        if not knob.training_label or not any(training):
            return knob.label
        if all(training):
            return knob.training_label
        return f"{knob.label} / {knob.training_label.lower()}"
    if path in _LABELS:
        return _LABELS[path]
    if path.startswith("assumptions."):  # assumption ids have dots of their own
        return f"Assumption {path.removeprefix('assumptions.')}"
    words = path.replace(".", " › ").replace("_", " ")
    return words[:1].upper() + words[1:]


def input_text(path: str, value: Any) -> str:
    if value is None:
        knob = _KNOBS.get(path)
        return knob.none_text if knob is not None and knob.none_text else "not set"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, float):
        knob = _KNOBS.get(path)
        return format_count(value) if knob is not None and knob.kind == "number" else f"{value:,.6g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


@dataclass(frozen=True)
class InputDifference:
    path: str
    label: str
    a: Any
    b: Any
    #: Whether each side uses the field (the scenario panel shows its knob): the fine-tuning
    #: method means nothing to a serving scenario.
    used: tuple[bool, bool] = (True, True)

    @property
    def relevant(self) -> bool:
        """False when neither side uses the field: the dialog leaves it out."""
        return any(self.used)


def input_differences(a: Scenario, b: Scenario, models: tuple[ModelArchitecture | None, ModelArchitecture | None]
                      = (None, None)) -> list[InputDifference]:
    """The inputs whose values differ, in the scenario's field order (fields of either side).

    ``models`` are the resolved architectures where known: a model-dependent field (EP applies
    to MoE models only) counts as used only on a side whose model is known to need it.
    """
    fa, fb = flatten_scenario(a), flatten_scenario(b)
    paths = list(fa) + [p for p in fb if p not in fa]
    training = (a.is_training, b.is_training)
    differences = []
    for path in paths:
        if fa.get(path) == fb.get(path):
            continue
        knob = _KNOBS.get(path)
        used = (True, True) if knob is None else (knob.applies(a, models[0]), knob.applies(b, models[1]))
        differences.append(InputDifference(path, field_label(path, training), fa.get(path), fb.get(path), used))
    return differences


@dataclass(frozen=True)
class ResultRow:
    key: str
    label: str
    a: str
    b: str
    difference: str
    verdict: int  # +1 B better, -1 B worse, 0 same or not comparable


def _numeric(estimate: Estimate | None, key: str) -> tuple[float | None, str]:
    quantity = estimate.values.get(key) if estimate is not None else None
    if quantity is None or isinstance(quantity.value, bool) or not isinstance(quantity.value, (int, float)):
        return None, ""
    return float(quantity.value), quantity.unit


def _difference(a: Estimate | None, b: Estimate | None, key: str, better: int) -> tuple[str, int]:
    qa = a.values.get(key) if a is not None else None
    qb = b.values.get(key) if b is not None else None
    if qa is None or qb is None or qa.value is None or qb.value is None:
        return "", 0
    if isinstance(qa.value, bool) or isinstance(qb.value, bool) or isinstance(qa.value, str):
        if qa.value == qb.value:
            return "same", 0
        verdict = better * (1 if qb.value is True else -1) if isinstance(qb.value, bool) else 0
        return "changed", verdict
    va, unit = _numeric(a, key)
    vb, _ = _numeric(b, key)
    if va is None or vb is None or not (math.isfinite(va) and math.isfinite(vb)):
        return "", 0
    delta = vb - va
    if delta == 0:
        return "same", 0
    if unit == "fraction":  # MFU and the like: a change in percentage points, not a percentage of one
        return f"{100 * delta:+.1f} pp", (1 if delta > 0 else -1) * better
    text = quantity_text(Quantity(delta, unit))
    text = text if text.startswith("-") else f"+{text}"
    if va != 0:
        text += f" ({100 * delta / abs(va):+.0f}%)"
    return text, (1 if delta > 0 else -1) * better


def result_text(estimate: Estimate | None, key: str) -> str:
    text = value_text(estimate, key)
    return "1 GPU" if text == "1 GPUs" else text


def result_rows(a: Estimate | None, b: Estimate | None) -> list[ResultRow]:
    """Key results of both estimates; a result neither estimate has is left out."""
    rows = []
    for key, label, better in KEY_RESULTS:
        ta, tb = result_text(a, key), result_text(b, key)
        if ta == NA and tb == NA:
            continue
        difference, verdict = _difference(a, b, key, better)
        rows.append(ResultRow(key, label, ta, tb, difference, verdict))
    return rows


def engine_estimate(project: Project) -> EstimateFn:
    """Estimates with the installed plugins, resolved as the CLI does (for use outside the window)."""
    from workbench.catalog.resolve import resolve_scenario
    from workbench.pluginhost import default_engine

    return lambda scenario: default_engine().run(resolve_scenario(scenario, project))


def _item(text: str, tip: str = "", align_right: bool = False) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
    if tip:
        item.setToolTip(tip)
    if align_right:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def _table(headers: list[str], parent: QWidget) -> QTableWidget:
    columns = len(headers)
    table = QTableWidget(0, columns, parent)
    table.setHorizontalHeaderLabels(headers)
    table.verticalHeader().setVisible(False)
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 8)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setAlternatingRowColors(True)
    table.setWordWrap(False)
    header = table.horizontalHeader()
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
    for column in (1, 2):
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
    for column in range(3, columns):  # the difference: never cut off
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
    return table


class ScenarioDiffDialog(QDialog):
    """Pick two scenarios of the project; see what differs going in and coming out."""

    def __init__(self, project: Callable[[], Project] | Project, estimate: EstimateFn,
                 parent: QWidget | None = None, first: str | None = None, second: str | None = None,
                 changed: SignalInstance | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("scenario_diff_dialog")
        self.setWindowTitle("Compare two scenarios")
        self._project_source = project if callable(project) else (lambda: project)
        self._estimate = estimate
        self.estimates: dict[str, Estimate | None] = {}
        self.errors: dict[str, str] = {}
        self.combo_a = QComboBox(self)
        self.combo_a.setObjectName("diff_a")
        self.combo_b = QComboBox(self)
        self.combo_b.setObjectName("diff_b")
        for combo in (self.combo_a, self.combo_b):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(24)
        self.swap_button = QToolButton(self)
        self.swap_button.setText("⇄")
        self.swap_button.setToolTip("Swap A and B")
        self.swap_button.clicked.connect(self.swap)
        pick = QGridLayout()
        pick.addWidget(QLabel("<b>A</b>", self), 0, 0)
        pick.addWidget(self.combo_a, 0, 1)
        pick.addWidget(self.swap_button, 0, 2)
        pick.addWidget(QLabel("<b>B</b>", self), 0, 3)
        pick.addWidget(self.combo_b, 0, 4)
        pick.setColumnStretch(1, 1)
        pick.setColumnStretch(4, 1)
        self.summary = QLabel("", self)
        self.summary.setObjectName("diff_summary")
        self.summary.setWordWrap(True)
        self.inputs_box = QGroupBox("Inputs that differ", self)
        self.inputs_table = _table(["Input", "A", "B"], self.inputs_box)
        self.inputs_table.setObjectName("diff_inputs")
        inputs_layout = QVBoxLayout(self.inputs_box)
        inputs_layout.addWidget(self.inputs_table)
        self.results_box = QGroupBox("Key results", self)
        self.results_table = _table(["Result", "A", "B", "B − A"], self.results_box)
        self.results_table.setObjectName("diff_results")
        results_layout = QVBoxLayout(self.results_box)
        results_layout.addWidget(self.results_table)
        self.error = QLabel("", self)
        self.error.setObjectName("diff_error")
        self.error.setWordWrap(True)
        self.error.setStyleSheet(f"color: {theme.BAD_COLOUR}")
        self.error.setVisible(False)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(pick)
        layout.addWidget(self.summary)
        layout.addWidget(self.inputs_box, 1)
        layout.addWidget(self.results_box)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self.resize(900, 700)
        self._fill_combos(first, second)
        self.combo_a.currentIndexChanged.connect(lambda _: self.refresh())
        self.combo_b.currentIndexChanged.connect(lambda _: self.refresh())
        if changed is not None:
            changed.connect(self.project_changed)
        self.refresh()

    # --- choosing -----------------------------------------------------------------------------

    @property
    def project(self) -> Project:
        return self._project_source()

    def _fill_combos(self, first: str | None, second: str | None) -> None:
        names = [s.name for s in self.project.scenarios]
        for combo, wanted, fallback in ((self.combo_a, first, 0), (self.combo_b, second, 1)):
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(names)
            index = names.index(wanted) if wanted in names else min(fallback, len(names) - 1)
            combo.setCurrentIndex(index)
            combo.blockSignals(False)
        if self.combo_a.currentIndex() == self.combo_b.currentIndex() and len(names) > 1:
            self.combo_b.setCurrentIndex(1 if self.combo_a.currentIndex() == 0 else 0)

    def choose(self, a: str, b: str) -> None:
        self.combo_a.blockSignals(True)
        self.combo_a.setCurrentText(a)
        self.combo_a.blockSignals(False)
        self.combo_b.setCurrentText(b)
        self.refresh()

    def swap(self) -> None:
        self.choose(self.combo_b.currentText(), self.combo_a.currentText())

    def project_changed(self) -> None:
        """The project was edited: keep the chosen names where they still exist, recompute."""
        self._fill_combos(self.combo_a.currentText(), self.combo_b.currentText())
        self.refresh()

    def scenarios(self) -> tuple[Scenario | None, Scenario | None]:
        by_name = {s.name: s for s in self.project.scenarios}
        return by_name.get(self.combo_a.currentText()), by_name.get(self.combo_b.currentText())

    # --- showing ------------------------------------------------------------------------------

    def _run(self, scenario: Scenario) -> Estimate | None:
        try:
            return self._estimate(scenario)
        except Exception as exc:  # noqa: BLE001 - shown under the table, never raised at the user
            self.errors[scenario.name] = str(exc) or type(exc).__name__
            return None

    def refresh(self) -> None:
        a, b = self.scenarios()
        self.errors = {}
        self.inputs_table.setRowCount(0)
        self.results_table.setRowCount(0)
        if a is None or b is None:
            self.summary.setText("The project needs two scenarios to compare.")
            self.error.setVisible(False)
            return
        for table in (self.inputs_table, self.results_table):
            for column, name in ((1, a.name), (2, b.name)):
                table.horizontalHeaderItem(column).setToolTip(name)
        ea, eb = self._run(a), self._run(b)
        self.estimates = {"A": ea, "B": eb}
        models = (ea.resolved.model if ea else None, eb.resolved.model if eb else None)
        every = input_differences(a, b, models)
        differences = [d for d in every if d.relevant]
        for row, diff in enumerate(differences):
            self.inputs_table.insertRow(row)
            self.inputs_table.setItem(row, 0, _item(diff.label, diff.path))
            for column, value, used in ((1, diff.a, diff.used[0]), (2, diff.b, diff.used[1])):
                item = _item(input_text(diff.path, value))
                if not used:
                    item.setText(f"{item.text()} (not used)")
                    item.setToolTip("This scenario does not use this setting (its workload or model ignores it)")
                    item.setForeground(QBrush(self.palette().color(QPalette.ColorRole.PlaceholderText)))
                self.inputs_table.setItem(row, column, item)
        rows = result_rows(ea, eb)
        bold = QFont()
        bold.setBold(True)
        for row, result in enumerate(rows):
            self.results_table.insertRow(row)
            self.results_table.setItem(row, 0, _item(result.label, result.key))
            self.results_table.setItem(row, 1, _item(result.a, tooltip_html(ea, result.key), True))
            self.results_table.setItem(row, 2, _item(result.b, tooltip_html(eb, result.key), True))
            diff = _item(result.difference, align_right=True)
            if result.verdict:
                diff.setForeground(QBrush(QColor(theme.OK_COLOUR if result.verdict > 0 else theme.BAD_COLOUR)))
                diff.setFont(bold)
            self.results_table.setItem(row, 3, diff)
        self._fit_height(self.results_table, len(KEY_RESULTS))
        name_a, name_b = escape(a.name), escape(b.name)
        if a.name == b.name:
            self.summary.setText("A and B are the same scenario: pick another one on either side.")
        elif not differences:
            self.summary.setText(f"<b>{name_a}</b> and <b>{name_b}</b> have the same inputs.")
        else:
            count, unused = len(differences), len(every) - len(differences)
            self.summary.setText(
                f"<b>{count}</b> input{'s differ' if count != 1 else ' differs'} between <b>{name_a}</b> (A) and "
                f"<b>{name_b}</b> (B)" + (f"; {unused} more that neither uses are not listed." if unused else ".")
            )
        self.error.setText("<br>".join(f"Cannot estimate {escape(name)}: {escape(message)}"
                                       for name, message in self.errors.items()))
        self.error.setVisible(bool(self.errors))

    @staticmethod
    def _fit_height(table: QTableWidget, most_rows: int) -> None:
        """Tall enough for its rows (at most ``most_rows``): the key results never scroll."""
        rows = max(1, min(table.rowCount(), most_rows))
        height = table.horizontalHeader().sizeHint().height() + rows * table.verticalHeader().defaultSectionSize()
        table.setFixedHeight(height + 2 * table.frameWidth() + 2)

    # --- tests and scripting ------------------------------------------------------------------

    def table_rows(self, table: QTableWidget) -> list[list[str]]:
        return [[table.item(r, c).text() if table.item(r, c) else "" for c in range(table.columnCount())]
                for r in range(table.rowCount())]
