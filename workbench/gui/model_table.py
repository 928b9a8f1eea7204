"""Table of model architectures with their exact parameter counts."""

from __future__ import annotations

from PySide6.QtCore import QSortFilterProxyModel, Qt
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QHeaderView, QLineEdit, QTableView, QVBoxLayout, QWidget

from workbench.core.model import ModelArchitecture
from workbench.core.params import count_parameters
from workbench.core.units import format_count

_HEADERS = ["Model", "Family", "Kind", "Attention", "Layers", "Hidden", "Parameters", "Active / token", "Source"]


def _item(text: str, sort_key: object = None, tooltip: str | None = None) -> QStandardItem:
    item = QStandardItem(text)
    item.setEditable(False)
    item.setData(sort_key if sort_key is not None else text, Qt.ItemDataRole.UserRole)
    if tooltip:
        item.setToolTip(tooltip)
    if isinstance(sort_key, (int, float)):
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


class ModelTable(QWidget):
    """Catalog and imported models; a filter box narrows the list."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = QStandardItemModel(0, len(_HEADERS), self)
        self.model.setHorizontalHeaderLabels(_HEADERS)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.proxy.setFilterKeyColumn(-1)
        self.filter_edit = QLineEdit(self)
        self.filter_edit.setPlaceholderText("Filter models (name, family, MoE, MLA…)")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(self.proxy.setFilterFixedString)
        self.view = QTableView(self)
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.view.verticalHeader().setVisible(False)
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.view.horizontalHeader().setStretchLastSection(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.filter_edit)
        layout.addWidget(self.view)

    def add_model(self, arch: ModelArchitecture, source: str) -> None:
        counts = count_parameters(arch)
        kind = arch.attention_kind.upper() + (" + MoE" if arch.moe else "")
        self.model.appendRow(
            [
                _item(arch.name, arch.name.lower()),
                _item(arch.family),
                _item(arch.kind.value),
                _item(kind),
                _item(str(arch.total_layers), arch.total_layers),
                _item(str(arch.hidden_size), arch.hidden_size),
                _item(format_count(counts.total), counts.total, f"{counts.total:,} parameters"),
                _item(format_count(counts.active), counts.active, f"{counts.active:,} parameters per token"),
                _item(source, source, source),
            ]
        )

    @property
    def row_count(self) -> int:
        return self.model.rowCount()
