"""An editor for every field of :class:`ModelArchitecture`, built from the pydantic model itself.

Each field's description is its tooltip. Every keystroke re-validates the whole architecture;
an invalid field turns red with pydantic's message and the last valid architecture stays in use.
"""

from __future__ import annotations

import json
import types
import typing
from enum import Enum
from typing import Any

from pydantic import BaseModel, ValidationError
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from workbench.core.model import ModelArchitecture
from workbench.core.params import count_parameters
from workbench.core.units import format_count
from workbench.gui import theme
from workbench.gui.elided_label import fit_to_width
from workbench.gui.panels.model_labels import label_for, tooltip_for

INVALID_STYLE = f"border: 2px solid {theme.BAD_COLOUR}; border-radius: 3px;"

#: Values a sub-section starts with when the user switches it on (then edits them).
SECTION_DEFAULTS: dict[str, dict[str, Any]] = {
    "moe": {"num_experts": 8, "experts_per_token": 2},
    "mla": {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128},
    "sliding_window": {"window": 4096},
    "vision": {"image_size": 224, "patch_size": 16},
    "encoder_decoder": {},
}
#: Section titles, keyed by the first field of each section (in declaration order).
SECTIONS = {
    "name": "Identity", "num_layers": "Shape", "norm_kind": "Norms and biases",
    "position_embedding": "Positions", "torch_dtype": "Storage and origin",
}
SECTION_TITLES = {
    "moe": "Mixture of experts", "mla": "Multi-head latent attention", "sliding_window": "Sliding-window attention",
    "vision": "Vision patch embedding", "encoder_decoder": "Decoder stack (encoder-decoder)",
    "recurrent": "Recurrent mixer (state-space / linear attention)", "indexer": "Sparse-attention indexer",
    "vision_tower": "Vision tower (vision-language)",
}


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """(inner type, optional) for ``X | None`` annotations."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return (args[0] if len(args) == 1 else annotation), True
    return annotation, False


class _Field:
    """One editable field: its widget and how to read and show its value."""

    def __init__(self, path: str, annotation: Any, description: str, parent: QWidget) -> None:
        self.path = path
        self.type, self.optional = _unwrap(annotation)
        origin = typing.get_origin(self.type)
        self.kind: str
        if self.type is bool:
            self.kind, self.widget = "bool", QCheckBox(parent)
        elif isinstance(self.type, type) and issubclass(self.type, Enum):
            self.kind = "enum"
            combo = QComboBox(parent)
            if self.optional:
                combo.addItem("(not set)", None)
            for member in self.type:
                combo.addItem(member.value, member)
            self.widget = combo
        else:
            nested = origin is tuple and any(typing.get_origin(a) is tuple for a in typing.get_args(self.type))
            # A tuple of pairs (a recurrent mixer's projections) is edited as JSON, like a mapping.
            self.kind = "dict" if origin is dict or nested else "tuple" if origin is tuple else "text"
            edit = QLineEdit(parent)
            if self.kind == "tuple":
                edit.setPlaceholderText("comma-separated, e.g. 0, 1, 2" + (" (empty: not set)" if self.optional else ""))
            elif self.kind == "dict":
                edit.setPlaceholderText(
                    "JSON list, e.g. [[4096, 8192], [8192, 4096]]" if origin is tuple
                    else 'JSON object, e.g. {"rope_type": "llama3", "factor": 8}'
                )
            elif self.optional:
                edit.setPlaceholderText("not set")
            self.widget = edit
        self.widget.setObjectName(f"field:{path}")
        self.tooltip = description
        self.widget.setToolTip(description)

    def show(self, value: Any) -> None:
        w = self.widget
        w.blockSignals(True)
        try:
            if self.kind == "bool":
                w.setChecked(bool(value))  # type: ignore[union-attr]
            elif self.kind == "enum":
                index = w.findData(value)  # type: ignore[union-attr]
                w.setCurrentIndex(max(index, 0))  # type: ignore[union-attr]
            elif self.kind == "tuple":
                shown = (v.value if isinstance(v, Enum) else str(v) for v in value or ())
                w.setText("" if value is None else ", ".join(shown))  # type: ignore[union-attr]
            elif self.kind == "dict":
                w.setText("" if value is None else json.dumps(value))  # type: ignore[union-attr]
            else:
                text = "" if value is None else (f"{value:.15g}" if isinstance(value, float) else str(value))
                if w.text() != text:  # type: ignore[union-attr]
                    w.setText(text)  # type: ignore[union-attr]
        finally:
            w.blockSignals(False)

    def read(self) -> Any:
        """The raw value for pydantic (it converts and validates); raises ValueError on bad JSON."""
        w = self.widget
        if self.kind == "bool":
            return w.isChecked()  # type: ignore[union-attr]
        if self.kind == "enum":
            return w.currentData()  # type: ignore[union-attr]
        text = w.text().strip()  # type: ignore[union-attr]
        if self.kind == "tuple":
            if not text:
                return None if self.optional else ()
            return [part.strip() for part in text.replace(";", ",").split(",") if part.strip()]
        if self.kind == "dict":
            if not text:
                return None
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not valid JSON ({exc.msg})") from None
        if not text and self.optional:
            return None
        return text

    def mark(self, message: str | None) -> None:
        self.widget.setStyleSheet(INVALID_STYLE if message else "")
        self.widget.setToolTip(f"<b style='color:{theme.BAD_COLOUR}'>{message}</b><br>{self.tooltip}" if message
                               else self.tooltip)

    def connect(self, slot: Any) -> None:
        if self.kind == "bool":
            self.widget.toggled.connect(slot)  # type: ignore[union-attr]
        elif self.kind == "enum":
            self.widget.currentIndexChanged.connect(slot)  # type: ignore[union-attr]
        else:
            self.widget.textEdited.connect(slot)  # type: ignore[union-attr]


class ModelEditor(QScrollArea):
    """Edits one architecture; emits :attr:`architecture_edited` with each valid result."""

    architecture_edited = Signal(object)  # ModelArchitecture

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("model_editor")
        self.setWidgetResizable(True)
        body = QWidget(self)
        outer = QVBoxLayout(body)
        outer.setContentsMargins(4, 4, 4, 4)
        self.param_label = QLabel("", body)
        self.param_label.setObjectName("param_count")
        self.param_label.setWordWrap(True)
        self.error_label = QLabel("", body)
        self.error_label.setObjectName("model_error")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(f"color: {theme.BAD_COLOUR}")
        self.error_label.setVisible(False)
        outer.addWidget(self.param_label)
        outer.addWidget(self.error_label)
        self.fields: dict[str, _Field] = {}
        self.sections: dict[str, QGroupBox] = {}
        self.sub_defaults: dict[str, Any] = {}  # defaults of a section's fields, shown while it is off
        form: QFormLayout | None = None
        for name, info in ModelArchitecture.model_fields.items():
            inner, _ = _unwrap(info.annotation)
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                box = QGroupBox(SECTION_TITLES.get(name, name), body)
                box.setCheckable(True)
                box.setChecked(False)
                box.setObjectName(f"section:{name}")
                box.setToolTip(info.description or "")
                sub = QFormLayout(box)
                for sub_name, sub_info in inner.model_fields.items():
                    self._add_field(sub, f"{name}.{sub_name}", sub_info.annotation, sub_info.description or "", box)
                    if not sub_info.is_required():
                        self.sub_defaults[f"{name}.{sub_name}"] = sub_info.get_default(call_default_factory=True)
                box.toggled.connect(lambda on, section=name: self._on_section_toggled(section, on))
                self.sections[name] = box
                outer.addWidget(box)
                form = None
                continue
            if name in SECTIONS or form is None:
                box = QGroupBox(SECTIONS.get(name, "More"), body)
                form = QFormLayout(box)
                form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
                outer.addWidget(box)
            self._add_field(form, name, info.annotation, info.description or "", body)
        outer.addStretch(1)
        self.setWidget(body)
        fit_to_width(self, *body.findChildren(QFormLayout))
        self.architecture: ModelArchitecture | None = None
        self.errors: dict[str, str] = {}
        self._last_edited = ""

    def _add_field(self, form: QFormLayout, path: str, annotation: Any, description: str, parent: QWidget) -> None:
        field = _Field(path, annotation, description, parent)
        field.connect(lambda *_, p=path: self._on_edited(p))
        label = QLabel(label_for(path), parent)
        field.tooltip = tooltip_for(path, description)
        label.setToolTip(field.tooltip)
        field.widget.setToolTip(field.tooltip)
        form.addRow(label, field.widget)
        self.fields[path] = field

    # --- showing ------------------------------------------------------------------------------

    def set_architecture(self, arch: ModelArchitecture | None) -> None:
        """Show ``arch`` (no signal). An architecture already shown is left alone (keeps the cursor)."""
        if arch is not None and arch == self.architecture:
            return  # already shown (or being edited here: keep the user's text and cursor)
        self.architecture = arch
        self.setEnabled(arch is not None)
        if arch is None:
            self.param_label.setText("No model selected")
            return
        data = arch.model_dump()
        for section, box in self.sections.items():
            box.blockSignals(True)
            box.setChecked(data.get(section) is not None)
            box.blockSignals(False)
        for path, field in self.fields.items():
            head, _, tail = path.partition(".")
            value = data.get(head)
            if tail:
                value = self.sub_defaults.get(path) if value is None else value.get(tail)
            field.show(value)
        self._set_errors({})
        self._show_count(arch)

    def _show_count(self, arch: ModelArchitecture) -> None:
        counts = count_parameters(arch)
        text = f"<b>{format_count(counts.total)}</b> parameters ({counts.total:,})"
        if counts.active != counts.total:
            text += f"; <b>{format_count(counts.active)}</b> active per token"
        self.param_label.setText(text)
        self.param_label.setToolTip(
            "Exact count, as transformers instantiates it:<br>"
            + "<br>".join(f"{k}: {v:,}" for k, v in counts.breakdown.items() if v)
        )

    # --- editing ------------------------------------------------------------------------------

    def _on_section_toggled(self, section: str, on: bool) -> None:
        if on and self.architecture is not None:
            defaults = dict(SECTION_DEFAULTS.get(section, {}))
            arch = self.architecture
            if section == "moe":
                defaults.setdefault("expert_intermediate_size", arch.intermediate_size)
            if section == "encoder_decoder":
                defaults.setdefault("num_decoder_layers", arch.num_layers)
            for path, field in self.fields.items():
                head, _, tail = path.partition(".")
                if head == section and tail in defaults and not field.read():
                    field.show(defaults[tail])
        self._on_edited(section)

    def collect(self) -> tuple[dict[str, Any], dict[str, str]]:
        """The form's values as a dict for pydantic, and per-field parse errors."""
        data: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for path, field in self.fields.items():
            head, _, tail = path.partition(".")
            if tail and not self.sections[head].isChecked():
                data[head] = None
                continue
            try:
                value = field.read()
            except ValueError as exc:
                errors[path] = str(exc)
                continue
            if tail:
                if value is not None:  # a required sub-field left empty is pydantic's "Field required"
                    data.setdefault(head, {})[tail] = value
                else:
                    data.setdefault(head, {})
            else:
                data[path] = value
        return data, errors

    def validate(self) -> ModelArchitecture | None:
        data, errors = self.collect()
        arch = None
        if not errors:
            try:
                arch = ModelArchitecture.model_validate(data)
            except ValidationError as exc:
                errors = self._map_errors(exc)
        self._set_errors(errors)
        return arch

    def _map_errors(self, exc: ValidationError) -> dict[str, str]:
        errors: dict[str, str] = {}
        for err in exc.errors():
            loc = [str(p) for p in err.get("loc", ()) if not str(p).isdigit()]
            message = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            path = ".".join(loc)
            if path not in self.fields:
                # Whole-model checks name their field first ("moe.dense_layers: ..."), or name none.
                named = message.split(":", 1)[0].strip()
                path = named if named in self.fields else (path if path in self.sections else self._last_edited)
            if path and path not in errors:
                errors[path] = message
        return errors

    def _set_errors(self, errors: dict[str, str]) -> None:
        self.errors = errors
        for path, field in self.fields.items():
            field.mark(errors.get(path))
        for name, box in self.sections.items():
            box.setStyleSheet(f"QGroupBox {{ color: {theme.BAD_COLOUR}; }}" if name in errors else "")
        if errors:
            path, message = next(iter(errors.items()))
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            self.error_label.setText(f"{path}: {message}{more}. The last valid model stays in use.")
        self.error_label.setVisible(bool(errors))

    def _on_edited(self, path: str) -> None:
        self._last_edited = path
        arch = self.validate()
        if arch is None:
            return
        self.architecture = arch
        self._show_count(arch)
        self.architecture_edited.emit(arch)

    # --- tests and scripting ------------------------------------------------------------------

    def edit_text(self, path: str, text: str) -> None:
        """Type ``text`` into a text field as a user would (emits as typing does)."""
        widget = self.fields[path].widget
        assert isinstance(widget, QLineEdit)
        widget.setText(text)
        widget.textEdited.emit(text)
