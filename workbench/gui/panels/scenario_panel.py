"""Scenario panel: the project's scenarios (add, duplicate, rename, delete, switch) and the knobs
of the selected one. Only the knobs that apply to its workload (and model) are shown.

Each knob's tooltip is the scenario field's description. An edit the scenario refuses (say TP x
PP x DP above the GPU count) marks the knob red with the reason; the last valid scenario, and its
estimate, stay on screen.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMenu,
    QScrollArea,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.dtypes import ACTIVATION_DTYPES, KV_CACHE_DTYPES, WeightFormat
from workbench.core.limits import MAX_SIMULATED_REQUESTS
from workbench.core.model import ModelArchitecture
from workbench.core.scenario import (
    MAX_IMAGE_SIDE,
    MAX_IMAGES_PER_REQUEST,
    AttentionKernel,
    Batching,
    FinetuneMethod,
    Offload,
    Optimizer,
    PipelineSchedule,
    Recompute,
    Scenario,
    Workload,
)
from workbench.gui import theme
from workbench.gui.elided_label import fit_to_width
from workbench.gui.controller import ProjectController
from workbench.gui.panels.model_editor import INVALID_STYLE

Applies = Callable[[Scenario, ModelArchitecture | None], bool]


def _always(s: Scenario, a: ModelArchitecture | None) -> bool:
    return True


def _inference(s: Scenario, a: ModelArchitecture | None) -> bool:
    return s.workload is Workload.INFERENCE


def _training(s: Scenario, a: ModelArchitecture | None) -> bool:
    return s.workload is not Workload.INFERENCE


def _lora(s: Scenario, a: ModelArchitecture | None) -> bool:
    return s.workload is Workload.FINETUNE and s.method is not FinetuneMethod.FULL


def _images(s: Scenario, a: ModelArchitecture | None) -> bool:
    # shown for a vision-language model, and while images are set (so a text model's can be cleared)
    return (a is not None and a.vision_tower is not None) or s.images_per_request > 0


def _image_size(s: Scenario, a: ModelArchitecture | None) -> bool:
    return a is not None and a.vision_tower is not None and s.images_per_request > 0


@dataclass(frozen=True)
class Knob:
    path: str
    label: str
    kind: str  # int | float | enum | bool | number | text
    applies: Applies = _always
    minimum: float = 0
    maximum: float = 1 << 24
    step: float = 1
    decimals: int = 2
    choices: tuple[Any, ...] = ()
    none_text: str = ""  # optional field: the text shown for None
    training_label: str = ""  # label when the workload is training
    options: dict[str, Any] = field(default_factory=dict)


SECTIONS: list[tuple[str, list[Knob]]] = [
    ("Workload", [
        Knob("workload", "Workload", "enum", choices=tuple(Workload)),
        Knob("method", "Fine-tuning method", "enum", lambda s, a: s.workload is Workload.FINETUNE,
             choices=tuple(FinetuneMethod)),
        Knob("lora_rank", "LoRA rank", "int", _lora, 1, 4096),
        Knob("lora_targets", "LoRA on", "enum", _lora, choices=("all-linear", "attention")),
    ]),
    ("Precision", [
        Knob("dtype", "Compute precision", "enum", choices=ACTIVATION_DTYPES),
        Knob("weights", "Weights stored as", "enum", choices=tuple(WeightFormat), none_text="same as compute"),
        Knob("quant_group_size", "Quantization group", "int",
             lambda s, a: s.weight_format in (WeightFormat.INT4,), 1, 1 << 16),
        Knob("kv_dtype", "KV cache", "enum", _inference, choices=KV_CACHE_DTYPES, none_text="same as compute"),
    ]),
    ("Batch and sequence", [
        Knob("batch_size", "Concurrent requests", "int", _always, 1, 1 << 20, training_label="Micro-batch"),
        Knob("seq_len", "Prompt tokens", "int", _always, 1, 1 << 24, training_label="Sequence length"),
        Knob("gen_len", "Generated tokens", "int", _inference, 0, 1 << 24),
        Knob("global_batch_size", "Global batch", "int", _training, 0, 1 << 24, none_text="batch × DP"),
        Knob("train_tokens", "Training tokens", "number", _training, none_text="not set"),
    ]),
    ("Images", [
        Knob("images_per_request", "Images per request", "int", _images, 0, MAX_IMAGES_PER_REQUEST,
             training_label="Images per sample"),
        Knob("image_width", "Image width (px)", "int", _image_size, 1, MAX_IMAGE_SIDE),
        Knob("image_height", "Image height (px)", "int", _image_size, 1, MAX_IMAGE_SIDE),
    ]),
    ("Parallelism", [
        Knob("parallel.tp", "Tensor parallel (TP)", "int", _always, 1, 1024),
        Knob("parallel.pp", "Pipeline parallel (PP)", "int", _always, 1, 1024),
        Knob("parallel.dp", "Data parallel (DP)", "int", _always, 1, 1 << 16),
        Knob("parallel.ep", "Expert parallel (EP)", "int", lambda s, a: a is not None and a.moe is not None, 1, 1024),
        Knob("parallel.sequence_parallel", "Sequence parallel", "bool", lambda s, a: s.parallel.tp > 1),
        Knob("parallel.zero_stage", "ZeRO stage", "int", _training, 0, 3),
        Knob("parallel.pipeline_schedule", "Pipeline schedule", "enum", lambda s, a: s.parallel.pp > 1,
             choices=tuple(PipelineSchedule)),
        Knob("parallel.virtual_stages", "Virtual stages", "int",
             lambda s, a: s.parallel.pp > 1 and s.parallel.pipeline_schedule is PipelineSchedule.INTERLEAVED, 1, 64),
        Knob("parallel.offload_optimizer", "Offload optimizer", "enum", _training, choices=tuple(Offload)),
        Knob("parallel.offload_params", "Offload weights", "enum",
             lambda s, a: s.is_training and s.parallel.zero_stage == 3, choices=tuple(Offload)),
    ]),
    ("Training", [
        Knob("optimizer", "Optimizer", "enum", _training, choices=tuple(Optimizer)),
        Knob("master_weights", "FP32 master weights", "bool", _training),
        Knob("recompute", "Activation recompute", "enum", _training, choices=tuple(Recompute)),
    ]),
    ("Kernels", [
        Knob("attention", "Attention kernel", "enum", choices=tuple(AttentionKernel)),
    ]),
    ("Serving", [
        Knob("serving.gpu_memory_utilization", "GPU memory claimed", "float", _inference, 0.05, 1.0, 0.01, 2),
        Knob("serving.paged_kv", "Paged KV cache", "bool", _inference),
        Knob("serving.kv_block_size", "KV page (tokens)", "int", lambda s, a: _inference(s, a) and s.serving.paged_kv,
             1, 4096),
        Knob("serving.batching", "Batching", "enum", _inference, choices=tuple(Batching)),
        Knob("serving.prefill_chunk_tokens", "Prefill chunk (tokens)", "int",
             lambda s, a: _inference(s, a) and s.serving.chunked_prefill, 1, 1 << 20),
        Knob("serving.disaggregated", "Disaggregated prefill/decode", "bool", _inference),
        Knob("serving.speculative_draft_params", "Draft model parameters", "number", _inference, none_text="off"),
        Knob("serving.speculative_tokens", "Drafted tokens per step", "int",
             lambda s, a: _inference(s, a) and s.serving.speculative_draft_params is not None, 1, 64),
        Knob("serving.speculative_acceptance", "Draft acceptance", "float",
             lambda s, a: _inference(s, a) and s.serving.speculative_draft_params is not None, 0.01, 1.0, 0.05, 2),
    ]),
    ("Serving load (simulated)", [
        Knob("serving.arrival_rate", "Arrival rate (requests/s)", "float", _inference, 0, 1e6, 1, 2,
             none_text="closed loop"),
        Knob("serving.arrival_cv", "Arrival variation (CV)", "float",
             lambda s, a: _inference(s, a) and s.serving.arrival_rate is not None, 0.05, 10, 0.1, 2),
        Knob("serving.requests", "Simulated requests", "int", _inference, 1, MAX_SIMULATED_REQUESTS),
        Knob("serving.trace", "Request trace (CSV/JSONL)", "text", _inference, none_text="none: generated load"),
        Knob("serving.slo_ttft_s", "TTFT target (s)", "float", _inference, 0, 3600, 0.05, 3, none_text="no target"),
        Knob("serving.slo_tpot_s", "TPOT target (s)", "float", _inference, 0, 3600, 0.005, 3, none_text="no target"),
    ]),
    ("Prices and power", [
        Knob("pricing.cloud_usd_per_gpu_hour", "Cloud USD per GPU-hour", "float", _always, 0, 1000, 0.1, 2,
             none_text="catalog price"),
        Knob("pricing.purchase_usd_per_gpu", "Purchase USD per GPU", "float", _always, 0, 10_000_000, 1000, 0,
             none_text="catalog price"),
        Knob("pricing.server_overhead_fraction", "Server overhead", "float", _always, 0, 10, 0.05, 2),
        Knob("pricing.power_usd_per_kwh", "Power USD per kWh", "float", _always, 0, 10, 0.01, 3),
        Knob("pricing.pue", "PUE", "float", _always, 1, 3, 0.05, 2),
        Knob("pricing.years", "Ownership years", "float", _always, 0.1, 10, 0.5, 1),
        Knob("pricing.utilization", "Utilization", "float", _always, 0.01, 1, 0.05, 2),
        Knob("mfu", "MFU override", "float", _always, 0, 1, 0.01, 2, none_text="estimated"),
    ]),
]

_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


def parse_number(text: str) -> float | None:
    """'1e11', '100B', '2.5T', '7,000,000' -> float; '' -> None; ValueError otherwise."""
    text = text.strip().replace(",", "").replace("_", "")
    if not text:
        return None
    match = re.fullmatch(r"([0-9.]+(?:e[+-]?\d+)?)\s*([kmbgt]?)", text.lower())
    if not match:
        raise ValueError(f"'{text}' is not a number (examples: 1e11, 100B, 2.5T)")
    return float(match.group(1)) * _SUFFIXES.get(match.group(2), 1.0)


def field_description(path: str) -> str:
    head, _, tail = path.partition(".")
    info = Scenario.model_fields[head]
    if tail:
        info = info.annotation.model_fields[tail]  # type: ignore[union-attr]
    return info.description or ""


class _KnobWidget:
    def __init__(self, knob: Knob, parent: QWidget) -> None:
        self.knob = knob
        self.optional = bool(knob.none_text)
        kind = knob.kind
        if kind == "int":
            spin = QSpinBox(parent)
            low = int(knob.minimum)
            spin.setRange(low, int(knob.maximum))
            if self.optional:
                spin.setSpecialValueText(knob.none_text)
            spin.setAccelerated(True)
            self.widget: QWidget = spin
        elif kind == "float":
            dspin = QDoubleSpinBox(parent)
            dspin.setDecimals(knob.decimals)
            dspin.setRange(knob.minimum, knob.maximum)
            dspin.setSingleStep(knob.step)
            if self.optional:
                dspin.setSpecialValueText(knob.none_text)
            self.widget = dspin
        elif kind == "enum":
            combo = QComboBox(parent)
            if self.optional:
                combo.addItem(knob.none_text, None)
            for choice in knob.choices:
                combo.addItem(choice.value if isinstance(choice, Enum) else str(choice), choice)
            self.widget = combo
        elif kind == "bool":
            self.widget = QCheckBox(parent)
        elif kind == "text":
            text_edit = QLineEdit(parent)
            text_edit.setPlaceholderText(knob.none_text)
            text_edit.setClearButtonEnabled(True)
            self.widget = text_edit
        else:
            edit = QLineEdit(parent)
            edit.setPlaceholderText(knob.none_text or "")
            self.widget = edit
        if isinstance(self.widget, QAbstractSpinBox):
            self.widget.setKeyboardTracking(True)
            self.widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # no accidental wheel edits while scrolling
        self.widget.setObjectName(f"knob:{knob.path}")
        self.tooltip = field_description(knob.path)
        self.widget.setToolTip(self.tooltip)

    def show(self, value: Any) -> None:
        w = self.widget
        w.blockSignals(True)
        try:
            if isinstance(w, QSpinBox):
                w.setValue(w.minimum() if value is None else int(value))
            elif isinstance(w, QDoubleSpinBox):
                w.setValue(w.minimum() if value is None else float(value))
            elif isinstance(w, QComboBox):
                index = w.findData(value)
                w.setCurrentIndex(max(index, 0))
            elif isinstance(w, QCheckBox):
                w.setChecked(bool(value))
            elif isinstance(w, QLineEdit) and self.knob.kind == "text":
                if (w.text().strip() or None) != value:
                    w.setText(value or "")
            elif isinstance(w, QLineEdit):
                text = "" if value is None else _short_number(value)
                if parse_or_none(w.text()) != value:
                    w.setText(text)
        finally:
            w.blockSignals(False)

    def read(self) -> Any:
        w = self.widget
        if isinstance(w, (QSpinBox, QDoubleSpinBox)):
            if self.optional and w.value() == w.minimum():
                return None
            return w.value()
        if isinstance(w, QComboBox):
            return w.currentData()
        if isinstance(w, QCheckBox):
            return w.isChecked()
        if self.knob.kind == "text":
            return w.text().strip() or None  # type: ignore[union-attr]
        return parse_number(w.text())  # type: ignore[union-attr]

    def connect(self, slot: Callable[[], None]) -> None:
        w = self.widget
        if isinstance(w, (QSpinBox, QDoubleSpinBox)):
            w.valueChanged.connect(lambda _: slot())
        elif isinstance(w, QComboBox):
            w.currentIndexChanged.connect(lambda _: slot())
        elif isinstance(w, QCheckBox):
            w.toggled.connect(lambda _: slot())
        else:
            w.textEdited.connect(lambda _: slot())  # type: ignore[union-attr]

    def mark(self, message: str | None) -> None:
        self.widget.setStyleSheet(INVALID_STYLE if message else "")
        self.widget.setToolTip(
            f"<b style='color:{theme.BAD_COLOUR}'>{message}</b><br>{self.tooltip}" if message else self.tooltip
        )


def _short_number(value: float) -> str:
    """1e11 -> '100B', 2.5e12 -> '2.5T' (what :func:`parse_number` reads back)."""
    for suffix, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.12g}{suffix}"
    return f"{value:.12g}"


def parse_or_none(text: str) -> float | None:
    try:
        return parse_number(text)
    except ValueError:
        return None


def _value(scenario: Scenario, path: str) -> Any:
    obj: Any = scenario
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


class ScenarioPanel(QWidget):
    status_message = Signal(str)

    def __init__(self, controller: ProjectController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("scenario_panel")
        self.controller = controller
        self.scenario_combo = QComboBox(self)
        self.scenario_combo.setObjectName("scenario_combo")
        self.scenario_combo.setToolTip("Scenarios of this project; each keeps its own model, hardware and knobs")
        self.scenario_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.scenario_combo.setMinimumContentsLength(12)
        self.scenario_combo.currentIndexChanged.connect(self._on_scenario_picked)
        self.add_button = QToolButton(self)
        self.add_button.setText("+")
        self.add_button.setToolTip("Add a scenario (same model and GPU)")
        self.add_button.clicked.connect(lambda: controller.add_scenario())
        self.menu = QMenu(self)
        self.add_action = self.menu.addAction("Add scenario", lambda: controller.add_scenario())
        self.duplicate_action = self.menu.addAction("Duplicate", lambda: controller.duplicate_scenario())
        self.rename_action = self.menu.addAction("Rename…", self.ask_rename)
        self.move_up_action = self.menu.addAction("Move up", lambda: controller.move_scenario(-1))
        self.move_down_action = self.menu.addAction("Move down", lambda: controller.move_scenario(1))
        self.menu.addSeparator()
        #: "Compare two scenarios…": the main window connects it (the dialog needs its engine).
        self.compare_action = self.menu.addAction("Compare two scenarios…")
        self.menu.addSeparator()
        self.delete_action = self.menu.addAction("Delete (Ctrl+Z brings it back)", lambda: controller.delete_scenario())
        self.menu_button = QToolButton(self)
        self.menu_button.setText("⋯")
        self.menu_button.setToolTip("Duplicate, rename, reorder, compare or delete scenarios")
        self.menu_button.setMenu(self.menu)
        self.menu_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.scenario_combo, 1)
        top.addWidget(self.add_button)
        top.addWidget(self.menu_button)
        self.summary = QLabel("", self)
        self.summary.setObjectName("scenario_summary")
        self.summary.setWordWrap(True)
        self.error_label = QLabel("", self)
        self.error_label.setObjectName("scenario_error")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(f"color: {theme.BAD_COLOUR}")
        self.error_label.setVisible(False)
        body = QWidget(self)
        body_layout = QVBoxLayout(body)
        body_layout.setContentsMargins(0, 0, 0, 0)
        self.knobs: dict[str, _KnobWidget] = {}
        self.labels: dict[str, QLabel] = {}
        self.groups: list[tuple[QGroupBox, QFormLayout, list[Knob]]] = []
        for title, knobs in SECTIONS:
            box = QGroupBox(title, body)
            form = QFormLayout(box)
            form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
            for knob in knobs:
                widget = _KnobWidget(knob, box)
                widget.connect(lambda path=knob.path: self._on_knob(path))
                label = QLabel(knob.label, box)
                label.setToolTip(widget.tooltip)
                form.addRow(label, widget.widget)
                self.knobs[knob.path] = widget
                self.labels[knob.path] = label
            self.groups.append((box, form, knobs))
            body_layout.addWidget(box)
        body_layout.addStretch(1)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setWidget(body)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        fit_to_width(scroll, *(form for _, form, _ in self.groups))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(self.error_label)
        layout.addWidget(scroll, 1)
        self.errors: dict[str, str] = {}
        self._shown_name = ""
        controller.changed.connect(self.refresh)
        self.refresh()

    # --- showing ------------------------------------------------------------------------------

    def refresh(self) -> None:
        controller = self.controller
        names = [s.name for s in controller.project.scenarios]
        combo = self.scenario_combo
        combo.blockSignals(True)
        if [combo.itemText(i) for i in range(combo.count())] != names:
            combo.clear()
            combo.addItems(names)
        combo.setCurrentIndex(max(combo.findText(controller.current), 0))
        combo.blockSignals(False)
        self.delete_action.setEnabled(len(names) > 1)
        self.move_up_action.setEnabled(controller.can_move_scenario(-1))
        self.move_down_action.setEnabled(controller.can_move_scenario(1))
        self.compare_action.setEnabled(len(names) > 1)
        scenario = controller.scenario
        if scenario is None:
            return
        if scenario.name != self._shown_name:
            self._set_errors({})
            self._shown_name = scenario.name
        arch = controller.model_architecture()
        training = scenario.is_training
        weights = self.knobs["weights"].widget
        assert isinstance(weights, QComboBox)
        # What "not set" means follows Scenario.weight_format: 4-bit NF4 under QLoRA.
        weights.setItemText(0, "nf4 (QLoRA)" if scenario.method is FinetuneMethod.QLORA else "same as compute")
        for path, widget in self.knobs.items():
            if path not in self.errors:
                widget.show(_value(scenario, path))
            knob = widget.knob
            if knob.training_label:
                self.labels[path].setText(knob.training_label if training else knob.label)
        for box, form, knobs in self.groups:
            any_visible = False
            for knob in knobs:
                visible = knob.applies(scenario, arch)
                form.setRowVisible(self.knobs[knob.path].widget, visible)
                any_visible |= visible
            box.setVisible(any_visible)
        try:
            gpu = controller.catalogs.accelerator(scenario.gpu, controller.project).name
        except Exception:  # noqa: BLE001 - an unknown id is reported by the estimate
            gpu = scenario.gpu
        self.summary.setText(self._summary(scenario, arch, gpu))

    @staticmethod
    def _summary(scenario: Scenario, arch: ModelArchitecture | None, gpu: str) -> str:
        model = arch.name if arch else scenario.model
        what = {"inference": "Serving", "finetune": "Fine-tuning", "pretrain": "Pre-training"}[scenario.workload.value]
        if scenario.workload is Workload.FINETUNE:
            what += f" ({scenario.method.value})"
        p = scenario.parallel
        layout = f"TP {p.tp} × PP {p.pp} × DP {p.dp}" + (f", EP {p.ep}" if p.ep > 1 else "")
        idle = scenario.num_gpus - p.world_size
        extra = f" — {idle} GPU{'s' if idle > 1 else ''} idle" if idle > 0 else ""
        return f"{what} <b>{model}</b> on {scenario.num_gpus} × {gpu}; {layout}{extra}"

    # --- editing ------------------------------------------------------------------------------

    def _on_knob(self, path: str) -> None:
        widget = self.knobs[path]
        try:
            value = widget.read()
        except ValueError as exc:
            self._set_errors({**self.errors, path: str(exc)})
            return
        error = self.controller.set_field(path, value)
        if error:
            self._set_errors({**self.errors, path: error})
        elif self.errors:
            self._set_errors({})
            self.refresh()

    def _set_errors(self, errors: dict[str, str]) -> None:
        self.errors = errors
        for path, widget in self.knobs.items():
            widget.mark(errors.get(path))
        if errors:
            path, message = next(reversed(errors.items()))
            self.error_label.setText(f"{self.labels[path].text()}: {message}. The last valid scenario stays in use.")
        self.error_label.setVisible(bool(errors))

    def _on_scenario_picked(self, index: int) -> None:
        if index >= 0:
            self.controller.set_current(self.scenario_combo.itemText(index))

    def ask_rename(self) -> None:
        scenario = self.controller.scenario
        if scenario is None:
            return
        name, ok = QInputDialog.getText(self, "Rename scenario", "Name:", text=scenario.name)
        if ok:
            error = self.controller.rename_scenario(name)
            if error:
                self.status_message.emit(error)

    # --- tests and scripting ------------------------------------------------------------------

    def set_value(self, path: str, value: Any) -> None:
        """Set a knob as the user would (its change signal fires)."""
        w = self.knobs[path].widget
        if isinstance(w, (QSpinBox, QDoubleSpinBox)):
            w.setValue(value)
        elif isinstance(w, QComboBox):
            w.setCurrentIndex(w.findData(value))
        elif isinstance(w, QCheckBox):
            w.setChecked(bool(value))
        elif isinstance(w, QLineEdit):
            w.setText(str(value))
            w.textEdited.emit(str(value))

    def is_shown(self, path: str) -> bool:
        for box, form, knobs in self.groups:
            if any(k.path == path for k in knobs):
                return box.isVisibleTo(self) and form.isRowVisible(self.knobs[path].widget)
        return False

