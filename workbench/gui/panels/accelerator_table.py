"""Sortable, filterable table of accelerators; each figure's source is its tooltip.

Memory is shown with its unit in the cell ("141 GiB", binary as the README's Units section says):
in a narrow side panel the header scrolls out of sight while the cell stays. The product name column
gives up width (elided, the full name is the tooltip) so that name, vendor and memory fit the
panel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QEvent,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QHeaderView, QLineEdit, QTableView, QVBoxLayout, QWidget

from workbench.core.dtypes import DType
from workbench.core.hardware import Accelerator, Vendor

_Index = QModelIndex | QPersistentModelIndex
ID_ROLE = Qt.ItemDataRole.UserRole + 1
VENDOR_ROLE = Qt.ItemDataRole.UserRole + 2
MEMORY_COLUMN = 2
#: The product name column's width: at most (long names are elided) and at least.
NAME_MAX_PX, NAME_MIN_PX = 210, 110


def memory_text(gib: float) -> str:
    """``141 GiB``, ``95.5 GiB``."""
    return f"{gib:,.0f} GiB" if float(gib).is_integer() else f"{gib:,.1f} GiB"

# (header, provenance key, getter, unit shown in the header tooltip)
_COLUMNS: list[tuple[str, str | None, Any, str]] = [
    ("Accelerator", None, lambda a: a.name + (" (custom)" if a.custom else ""), "Product name"),
    ("Vendor", None, lambda a: a.vendor.value, "Manufacturer"),
    ("Memory", "memory_gib", lambda a: a.memory_gib, "Device memory, GiB (2^30 bytes)"),
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
            if index.column() == MEMORY_COLUMN:
                return memory_text(value)
            if isinstance(value, float):
                return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"
            return str(value)
        if role == Qt.ItemDataRole.UserRole:  # sort key
            if isinstance(value, str):
                return value.lower()
            return value if value is not None else -1
        if role == ID_ROLE:
            return accel.id
        if role == VENDOR_ROLE:
            return accel.vendor.value
        if role == Qt.ItemDataRole.FontRole and accel.custom and index.column() == 0:
            font = QFont()
            font.setItalic(True)
            return font
        if role == Qt.ItemDataRole.TextAlignmentRole and isinstance(value, (int, float)):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            if key is None:
                origin = "custom, kept in this project" if accel.custom else "catalog"
                return f"{accel.name} ({accel.id}, {origin})"
            source = accel.provenance.get(key)
            if source is None:
                if value is None:
                    return "No published figure"
                return "Entered by you (custom accelerator)" if accel.custom else "Source not recorded"
            lines = [f"Source: {source.title}", f"Taken: {source.retrieved.isoformat()}"]
            if source.url:
                lines.append(source.url)
            if source.note:
                lines.append(source.note)
            return "\n".join(lines)
        return None


class AcceleratorFilter(QSortFilterProxyModel):
    """Free text over every column, plus a vendor."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.vendor = ""
        self.setSortRole(Qt.ItemDataRole.UserRole)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setFilterKeyColumn(-1)

    def set_vendor(self, vendor: str) -> None:
        self.beginFilterChange()
        self.vendor = vendor
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, row: int, parent: _Index) -> bool:  # noqa: N802 - Qt override
        if self.vendor and self.sourceModel().index(row, 0, parent).data(VENDOR_ROLE) != self.vendor:
            return False
        return super().filterAcceptsRow(row, parent)


class AcceleratorTable(QWidget):
    """A search box and a vendor filter over a sortable accelerator table."""

    accelerator_chosen = Signal(str)  # accelerator id, when the user picks a row

    def __init__(self, accelerators: Sequence[Accelerator], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = AcceleratorTableModel(accelerators, self)
        self.proxy = AcceleratorFilter(self)
        self.proxy.setSourceModel(self.model)
        self.filter_edit = QLineEdit(self)
        self.filter_edit.setPlaceholderText("Filter accelerators (name, memory type, interconnect…)")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(self._set_text)
        self.vendor_combo = QComboBox(self)
        self.vendor_combo.addItem("All vendors", "")
        for vendor in Vendor:
            self.vendor_combo.addItem(vendor.value.upper() if len(vendor.value) <= 3 else vendor.value.capitalize(),
                                      vendor.value)
        self.vendor_combo.setToolTip("Show one vendor's accelerators")
        self.vendor_combo.currentIndexChanged.connect(self._set_vendor)
        self.view = QTableView(self)
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(2, Qt.SortOrder.DescendingOrder)
        self.view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(self.view.fontMetrics().height() + 6)
        header = self.view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.view.resizeColumnsToContents()
        self._name_width = self.view.columnWidth(0)  # what the longest name needs
        # Long product names are elided (the full name is the tooltip) so the figures stay in view.
        self.view.setColumnWidth(0, min(self._name_width, NAME_MAX_PX))
        self.view.viewport().installEventFilter(self)
        self.view.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self._syncing = False
        self.selected_id = ""
        filters = QHBoxLayout()
        filters.setContentsMargins(0, 0, 0, 0)
        filters.addWidget(self.filter_edit, 1)
        filters.addWidget(self.vendor_combo)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(filters)
        layout.addWidget(self.view)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if watched is self.view.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_name_column()
        return False

    def _fit_name_column(self) -> None:
        """Narrow the name column so vendor and memory stay in the panel's view."""
        others = sum(self.view.columnWidth(c) for c in range(1, MEMORY_COLUMN + 1))
        room = self.view.viewport().width() - others
        self.view.setColumnWidth(0, max(NAME_MIN_PX, min(self._name_width, NAME_MAX_PX, room)))

    def set_accelerators(self, accelerators: Sequence[Accelerator]) -> None:
        if list(accelerators) == self.model._rows:
            return
        self._syncing = True
        try:
            self.model.set_accelerators(accelerators)
        finally:
            self._syncing = False
        if self.selected_id:
            self.select_id(self.selected_id)

    def _set_text(self, text: str) -> None:
        self._syncing = True
        try:
            self.proxy.setFilterFixedString(text)
        finally:
            self._syncing = False
        self.select_id(self.selected_id)

    def _set_vendor(self) -> None:
        self._syncing = True
        try:
            self.proxy.set_vendor(self.vendor_combo.currentData() or "")
        finally:
            self._syncing = False
        self.select_id(self.selected_id)

    def _on_current_changed(self, current: QModelIndex, previous: QModelIndex) -> None:
        if self._syncing or not current.isValid():
            return
        accel_id = self.proxy.index(current.row(), 0).data(ID_ROLE)
        if accel_id:
            self.selected_id = accel_id
            self.accelerator_chosen.emit(accel_id)

    def choose(self, accel_id: str) -> bool:
        """Pick ``accel_id`` as the user would (emits :attr:`accelerator_chosen`)."""
        for row in range(self.proxy.rowCount()):
            if self.proxy.index(row, 0).data(ID_ROLE) == accel_id:
                self.view.selectRow(row)
                return True
        return False

    def select_id(self, accel_id: str) -> None:
        """Highlight ``accel_id`` without emitting :attr:`accelerator_chosen`."""
        self.selected_id = accel_id
        self._syncing = True
        try:
            for row in range(self.proxy.rowCount()):
                index = self.proxy.index(row, 0)
                if index.data(ID_ROLE) == accel_id:
                    if self.view.currentIndex().row() != row:
                        self.view.selectRow(row)
                        self.view.scrollTo(index)
                    return
            self.view.clearSelection()
            self.view.setCurrentIndex(QModelIndex())
        finally:
            self._syncing = False

    def current_accelerator(self) -> Accelerator | None:
        index = self.view.currentIndex()
        if not index.isValid():
            return None
        return self.model.accelerator(self.proxy.mapToSource(index).row())
