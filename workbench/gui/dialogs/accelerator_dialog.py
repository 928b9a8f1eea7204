"""Add or edit a custom accelerator; validated as you type against :class:`Accelerator`."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import ValidationError
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from workbench.core.dtypes import DType
from workbench.core.errors import describe_validation_error
from workbench.core.hardware import Accelerator, Source, Vendor
from workbench.gui import theme
from workbench.gui.panels.model_editor import INVALID_STYLE

CATEGORIES = ("datacenter", "workstation", "consumer", "tpu", "soc")
#: (field, label) of the plain fields, in form order.
TEXT_FIELDS = (
    ("id", "Id"), ("name", "Name"), ("memory_gib", "Memory (GiB)"), ("memory_type", "Memory type"),
    ("memory_bandwidth_gbps", "Bandwidth (GB/s)"), ("tdp_watts", "TDP (W)"), ("interconnect", "Interconnect"),
    ("interconnect_gbps", "Interconnect (GB/s)"), ("pcie_gen", "PCIe generation"), ("form_factor", "Form factor"),
    ("launch_year", "Launch year"), ("list_price_usd", "Price (USD)"), ("cloud_usd_per_hour", "Cloud (USD/GPU-hour)"),
)
OPTIONAL = {"tdp_watts", "interconnect", "interconnect_gbps", "pcie_gen", "list_price_usd", "cloud_usd_per_hour"}


class AcceleratorDialog(QDialog):
    def __init__(self, base: Accelerator | None = None, parent: QWidget | None = None,
                 taken_ids: set[str] | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Custom accelerator")
        self.setObjectName("accelerator_dialog")
        self.taken_ids = taken_ids or set()
        self.edits: dict[str, QLineEdit] = {}
        form = QFormLayout()
        fields = Accelerator.model_fields
        for name, label in TEXT_FIELDS:
            edit = QLineEdit(self)
            edit.setObjectName(f"field:{name}")
            edit.setToolTip(fields[name].description or "")
            if name in OPTIONAL:
                edit.setPlaceholderText("not published")
            edit.textChanged.connect(self.validate)
            self.edits[name] = edit
            form.addRow(label, edit)
            if name == "name":
                self.vendor = QComboBox(self)
                for vendor in Vendor:
                    self.vendor.addItem(vendor.value, vendor)
                self.vendor.setToolTip(fields["vendor"].description or "")
                form.addRow("Vendor", self.vendor)
                self.category = QComboBox(self)
                self.category.addItems(CATEGORIES)
                self.category.setToolTip(fields["category"].description or "")
                form.addRow("Category", self.category)
        rates = QGroupBox("Peak dense TFLOPS per dtype (blank: not supported)", self)
        rates_form = QFormLayout(rates)
        self.rates: dict[DType, QLineEdit] = {}
        for dtype in DType:
            edit = QLineEdit(self)
            edit.setObjectName(f"rate:{dtype.value}")
            edit.setToolTip(f"Dense {dtype.value} peak in TFLOPS" + (" (TOPS)" if dtype is DType.INT8 else ""))
            edit.textChanged.connect(self.validate)
            self.rates[dtype] = edit
            rates_form.addRow(dtype.value, edit)
        self.message = QLabel("", self)
        self.message.setObjectName("accelerator_error")
        self.message.setWordWrap(True)
        self.message.setStyleSheet(f"color: {theme.BAD_COLOUR}")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(rates)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)
        self.result_accelerator: Accelerator | None = None
        self._fill(base)
        self.validate()

    def _fill(self, base: Accelerator | None) -> None:
        if base is None:
            base_values: dict[str, Any] = {"memory_type": "HBM3", "form_factor": "PCIe", "launch_year": dt.date.today().year}
        else:
            base_values = base.model_dump()
            if not base.custom:
                base_values["id"] = f"{base.id}-custom"
                base_values["name"] = f"{base.name} (custom)"
            self.vendor.setCurrentIndex(max(self.vendor.findData(base.vendor), 0))
            self.category.setCurrentText(base.category)
            for dtype, value in base.dense_tflops.items():
                self.rates[dtype].setText(f"{value:.15g}")
        for name, edit in self.edits.items():
            value = base_values.get(name)
            edit.setText("" if value is None else (f"{value:.15g}" if isinstance(value, float) else str(value)))

    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for name, edit in self.edits.items():
            text = edit.text().strip()
            if text or name not in OPTIONAL:
                data[name] = text
        data["vendor"] = self.vendor.currentData()
        data["category"] = self.category.currentText()
        data["dense_tflops"] = {d.value: e.text().strip() for d, e in self.rates.items() if e.text().strip()}
        data["custom"] = True
        return data

    def validate(self) -> Accelerator | None:
        data = self.data()
        errors: dict[str, str] = {}
        accelerator = None
        try:
            accelerator = Accelerator.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                loc = [str(p) for p in err.get("loc", ())]
                key = ".".join(loc[:2]) if loc and loc[0] == "dense_tflops" else (loc[0] if loc else "")
                errors.setdefault(key, str(err.get("msg", "invalid")).removeprefix("Value error, "))
            self.message.setText(describe_validation_error(exc))
        if accelerator is not None and accelerator.id in self.taken_ids:
            errors["id"] = f"'{accelerator.id}' is already a catalog accelerator; pick another id"
            self.message.setText(f"id: {errors['id']}")
            accelerator = None
        for name, edit in self.edits.items():
            edit.setStyleSheet(INVALID_STYLE if name in errors else "")
        for dtype, edit in self.rates.items():
            bad = f"dense_tflops.{dtype.value}" in errors or ("dense_tflops" in errors and dtype is DType.BF16)
            edit.setStyleSheet(INVALID_STYLE if bad else "")
        if accelerator is not None:
            self.message.setText("")
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(accelerator is not None)
        self.result_accelerator = self._with_provenance(accelerator) if accelerator else None
        return self.result_accelerator

    @staticmethod
    def _with_provenance(accelerator: Accelerator) -> Accelerator:
        source = Source(title="Entered by the user in the workbench", retrieved=dt.date.today())
        keys = [name for name, _ in TEXT_FIELDS if name not in ("id", "name") and getattr(accelerator, name) is not None]
        keys += [f"dense_tflops.{d.value}" for d in accelerator.dense_tflops]
        return accelerator.model_copy(update={"provenance": {k: source for k in keys}})
