"""Sortable, filterable table of accelerators; each figure's source is its tooltip."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtWidgets import QHeaderView, QLineEdit, QTableView, QVBoxLayout, QWidget

from workbench.core.dtypes import DType
from workbench.core.hardware import Accelerator

_Index = QModelIndex | QPersistentModelIndex

# (header, provenance key, getter, unit shown in the header tooltip)
_COLUMNS: list[tuple[str, str | None, Any, str]] = [
    ("Accelerator", None, lambda a: a.name, "Product name"),
    ("Vendor", None, lambda a: a.vendor.value, "Manufacturer"),
    ("Memory (GiB)", "memory_gib", lambda a: a.memory_gib, "Device memory, GiB (2^30 bytes)"),
    ("Type", "memory_type", lambda a: a.memory_type, "Memory technology"),
    ("Bandwidth (GB/s)", "memory_bandwidth_gbps", lambda a: a.memory_bandwidth_gbps, "Peak memory bandwidth, GB/s (1e9 B/s)"),
    ("BF16 TFLOPS", "dense_tflops.bf16", lambda a: a.dense_tflops.get(DType.BF16), "Dense BF16 Tensor peak, TFLOPS"),
    ("FP8 TFLOPS", "dense_tflops.fp8", lambda a: a.dense_tflops.get(DType.FP8), "Dense FP8 peak, TFLOPS (blank: not native)"),
    ("FP4 TFLOPS", "dense_tflops.fp4", lambda a: a.dense_tflops.get(DType.FP4), "Dense FP4 peak, TFLOPS (blank: not native)"),
    ("TDP (W)", "tdp_watts", lambda a: a.tdp_watts, "Board / module power, watts"),
    ("Interconnect", "interconnect", lambda a: a.interconnect or "PCIe only", "Scale-up link"),
    ("Year", "launch_year", lambda a: a.launch_year, "Launch year"),
    ("Price (USD)", "list_price_usd", lambda a: a.list_price_usd, "Approximate purchase price per device"),
    ("Cloud ($/h)", "cloud_usd_per_hour", lambda a: a.cloud_usd_per_hour, "Typical on-demand price per GPU-hour"),
]


class AcceleratorTableModel(QAbstractTableModel):
    def __init__(self, accelerators: Sequence[Accelerator] = (), parent: Any = None) -> None:
        super().__init__(parent)
        self._rows = list(accelerators)

    def set_accelerators(self, accelerators: Sequence[Accelerator]) -> None:
        self.beginResetModel()
        self._rows = list(accelerators)
        self.endResetModel()

    def accelerator(self, row: int) -> Accelerator:
        return self._rows[row]

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802 (Qt override)
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(_COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return _COLUMNS[section][0]
        if role == Qt.ItemDataRole.ToolTipRole:
            return _COLUMNS[section][3]
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        accel = self._rows[index.row()]
        _, key, getter, _ = _COLUMNS[index.column()]
        value = getter(accel)
        if role == Qt.ItemDataRole.DisplayRole:
            if value is None:
                return ""
            if isinstance(value, float):
                return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"
            return str(value)
        if role == Qt.ItemDataRole.UserRole:  # sort key
            return value if value is not None else -1
        if role == Qt.ItemDataRole.TextAlignmentRole and isinstance(value, (int, float)):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            if key is None:
                return f"{accel.name} ({accel.id})"
            source = accel.provenance.get(key)
            if source is None:
                return "No published figure" if value is None else "Source not recorded"
            lines = [f"Source: {source.title}", f"Taken: {source.retrieved.isoformat()}"]
            if source.url:
                lines.append(source.url)
            if source.note:
                lines.append(source.note)
            return "\n".join(lines)
        return None


class AcceleratorTable(QWidget):
    """A filter box over a sortable accelerator table."""

    def __init__(self, accelerators: Sequence[Accelerator], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = AcceleratorTableModel(accelerators, self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.proxy.setFilterKeyColumn(-1)
        self.filter_edit = QLineEdit(self)
        self.filter_edit.setPlaceholderText("Filter accelerators (name, vendor, memory type…)")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(self.proxy.setFilterFixedString)
        self.view = QTableView(self)
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(2, Qt.SortOrder.DescendingOrder)
        self.view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.view.verticalHeader().setVisible(False)
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.view.horizontalHeader().setStretchLastSection(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.filter_edit)
        layout.addWidget(self.view)
