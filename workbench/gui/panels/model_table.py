"""Table of model architectures with exact parameter counts, searchable and filterable."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QHeaderView, QLineEdit, QTableView, QVBoxLayout, QWidget

from workbench.core.model import ModelArchitecture, ModelKind
from workbench.core.params import count_parameters
from workbench.core.units import format_count

_HEADERS = ["Model", "Family", "Kind", "Attention", "Layers", "Hidden", "Parameters", "Active / token", "Source"]
#: Name, family and kind stay in a narrow panel's view; the name column gives up width for them.
KEY_COLUMNS, NAME_MIN_PX = 3, 110
ID_ROLE = Qt.ItemDataRole.UserRole + 1
FAMILY_ROLE = Qt.ItemDataRole.UserRole + 2
TAGS_ROLE = Qt.ItemDataRole.UserRole + 3
PARAMS_ROLE = Qt.ItemDataRole.UserRole + 4

#: Kind filter: label -> tag every matching row carries.
KIND_FILTERS = {
    "All kinds": "", "Dense": "dense", "MoE": "moe", "MLA": "mla", "Encoder": "encoder",
    "Encoder-decoder": "encoder-decoder", "Vision": "vision", "Sliding window": "sliding-window",
}
#: Size filter: label -> (min, max) total parameters.
SIZE_FILTERS = {
    "All sizes": (0.0, float("inf")), "< 3B": (0.0, 3e9), "3B – 15B": (3e9, 15e9),
    "15B – 80B": (15e9, 80e9), "> 80B": (80e9, float("inf")),
}
_Index = QModelIndex | QPersistentModelIndex


def model_tags(arch: ModelArchitecture) -> set[str]:
    tags = {"moe" if arch.moe else "dense"}
    if arch.mla:
        tags.add("mla")
    if arch.kind is ModelKind.ENCODER:
        tags.add("encoder")
    if arch.kind is ModelKind.ENCODER_DECODER:
        tags.add("encoder-decoder")
    if arch.vision:
        tags.add("vision")
    if arch.sliding_window:
        tags.add("sliding-window")
    return tags


def _item(text: str, sort_key: object = None, tooltip: str | None = None) -> QStandardItem:
    item = QStandardItem(text)
    item.setEditable(False)
    item.setData(sort_key if sort_key is not None else text.lower(), Qt.ItemDataRole.UserRole)
    item.setToolTip(tooltip or text)  # a cell shortened in a narrow panel reads whole on hover
    if isinstance(sort_key, (int, float)):
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


class ModelFilter(QSortFilterProxyModel):
    """Free text over every column, plus family, kind and size."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.text = ""
        self.family = ""
        self.kind = ""
        self.size = SIZE_FILTERS["All sizes"]
        self.setSortRole(Qt.ItemDataRole.UserRole)

    def set_filters(self, text: str, family: str, kind: str, size: tuple[float, float]) -> None:
        self.beginFilterChange()
        self.text, self.family, self.kind, self.size = text.lower().strip(), family, kind, size
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, row: int, parent: _Index) -> bool:  # noqa: N802 - Qt override
        model = self.sourceModel()
        first = model.index(row, 0, parent)
        if self.family and first.data(FAMILY_ROLE) != self.family:
            return False
        if self.kind and self.kind not in (first.data(TAGS_ROLE) or "").split():
            return False
        params = first.data(PARAMS_ROLE) or 0
        if not self.size[0] <= params < self.size[1]:
            return False
        if self.text:
            haystack = " ".join(str(model.index(row, c, parent).data() or "") for c in range(model.columnCount()))
            haystack += " " + (first.data(TAGS_ROLE) or "") + " " + (first.data(ID_ROLE) or "")
            return all(word in haystack.lower() for word in self.text.split())
        return True


class ModelTable(QWidget):
    """Catalog and project models; a search box and three filters narrow the list."""

    model_chosen = Signal(str)  # model id, when the user picks a row

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = QStandardItemModel(0, len(_HEADERS), self)
        self.model.setHorizontalHeaderLabels(_HEADERS)
        self.proxy = ModelFilter(self)
        self.proxy.setSourceModel(self.model)
        self.filter_edit = QLineEdit(self)
        self.filter_edit.setPlaceholderText("Search models (name, family, moe, mla…)")
        self.filter_edit.setClearButtonEnabled(True)
        self.family_combo = QComboBox(self)
        self.family_combo.addItem("All families", "")
        self.family_combo.setToolTip("Show one model family")
        self.kind_combo = QComboBox(self)
        for label, tag in KIND_FILTERS.items():
            self.kind_combo.addItem(label, tag)
        self.kind_combo.setToolTip("Dense, mixture-of-experts, latent attention (MLA), encoder…")
        self.size_combo = QComboBox(self)
        for label in SIZE_FILTERS:
            self.size_combo.addItem(label, label)
        self.size_combo.setToolTip("Total parameters")
        self.filter_edit.textChanged.connect(self._refilter)
        for combo in (self.family_combo, self.kind_combo, self.size_combo):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(6)
            combo.currentIndexChanged.connect(self._refilter)
        self.view = QTableView(self)
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(6, Qt.SortOrder.AscendingOrder)
        self.view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.view.setEditTriggers(QTableView.EditTrigger.NoEditTriggers)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(self.view.fontMetrics().height() + 6)
        header = self.view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.view.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self._name_width = NAME_MIN_PX
        self.view.viewport().installEventFilter(self)
        self._syncing = False
        filters = QHBoxLayout()
        filters.setContentsMargins(0, 0, 0, 0)
        filters.addWidget(self.family_combo)
        filters.addWidget(self.kind_combo)
        filters.addWidget(self.size_combo)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.filter_edit)
        layout.addLayout(filters)
        layout.addWidget(self.view)
        self._rows: dict[str, tuple[ModelArchitecture, str]] = {}
        self.selected_id = ""

    # --- content ------------------------------------------------------------------------------

    def set_models(self, entries: Iterable[tuple[str, ModelArchitecture, str]]) -> None:
        """Show exactly ``entries`` (id, architecture, source); unchanged rows are left alone."""
        wanted = {model_id: (arch, source) for model_id, arch, source in entries}
        if wanted == self._rows:
            return
        self._syncing = True
        try:
            self._apply(wanted)
        finally:
            self._syncing = False
        if self.selected_id:
            self.select_id(self.selected_id)

    def _apply(self, wanted: dict[str, tuple[ModelArchitecture, str]]) -> None:
        for row in reversed(range(self.model.rowCount())):
            model_id = self.model.item(row, 0).data(ID_ROLE)
            if model_id not in wanted or wanted[model_id] != self._rows.get(model_id):
                self.model.removeRow(row)
                self._rows.pop(model_id, None)
        self.view.setSortingEnabled(False)
        for model_id, (arch, source) in wanted.items():
            if model_id not in self._rows:
                self._append(model_id, arch, source)
        self.view.setSortingEnabled(True)
        self._rows = wanted
        self._update_families()
        for column in range(len(_HEADERS) - 1):
            self.view.resizeColumnToContents(column)
        self._name_width = self.view.columnWidth(0)
        self._fit_name_column()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if watched is self.view.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_name_column()
        return False

    def _fit_name_column(self) -> None:
        """Narrow the name column (names elided, whole on hover) so family and kind stay in view."""
        others = sum(self.view.columnWidth(c) for c in range(1, KEY_COLUMNS))
        room = self.view.viewport().width() - others
        self.view.setColumnWidth(0, max(NAME_MIN_PX, min(self._name_width, room)))

    def add_model(self, model_id: str, arch: ModelArchitecture, source: str) -> None:
        self.set_models([*((k, a, s) for k, (a, s) in self._rows.items()), (model_id, arch, source)])

    def _append(self, model_id: str, arch: ModelArchitecture, source: str) -> None:
        counts = count_parameters(arch)
        kind = arch.attention_kind.upper() + (" + MoE" if arch.moe else "")
        first = _item(arch.name, arch.name.lower(), f"{arch.name} ({model_id})")
        first.setData(model_id, ID_ROLE)
        first.setData(arch.family, FAMILY_ROLE)
        first.setData(" ".join(sorted(model_tags(arch))), TAGS_ROLE)
        first.setData(counts.total, PARAMS_ROLE)
        self.model.appendRow([
            first,
            _item(arch.family),
            _item(arch.kind.value),
            _item(kind),
            _item(str(arch.total_layers), arch.total_layers),
            _item(str(arch.hidden_size), arch.hidden_size),
            _item(format_count(counts.total), counts.total, f"{counts.total:,} parameters"),
            _item(format_count(counts.active), counts.active, f"{counts.active:,} parameters per token"),
            _item(source, source.lower(), source),
        ])

    def _update_families(self) -> None:
        current = self.family_combo.currentData()
        families = sorted({arch.family for arch, _ in self._rows.values()})
        self.family_combo.blockSignals(True)
        self.family_combo.clear()
        self.family_combo.addItem("All families", "")
        for family in families:
            self.family_combo.addItem(family, family)
        index = self.family_combo.findData(current)
        self.family_combo.setCurrentIndex(max(index, 0))
        self.family_combo.blockSignals(False)

    def _refilter(self) -> None:
        self._syncing = True  # rows vanishing under the cursor must not count as a choice
        try:
            self.proxy.set_filters(self.filter_edit.text(), self.family_combo.currentData() or "",
                                   self.kind_combo.currentData() or "",
                                   SIZE_FILTERS[self.size_combo.currentData() or "All sizes"])
        finally:
            self._syncing = False
        if self.selected_id:
            self.select_id(self.selected_id)

    # --- selection ----------------------------------------------------------------------------

    def _on_current_changed(self, current: QModelIndex, previous: QModelIndex) -> None:
        if self._syncing or not current.isValid():
            return
        model_id = self.proxy.index(current.row(), 0).data(ID_ROLE)
        if model_id:
            self.selected_id = model_id
            self.model_chosen.emit(model_id)

    def choose(self, model_id: str) -> bool:
        """Pick ``model_id`` as the user would (emits :attr:`model_chosen`)."""
        for row in range(self.proxy.rowCount()):
            if self.proxy.index(row, 0).data(ID_ROLE) == model_id:
                self.view.selectRow(row)
                return True
        return False

    def select_id(self, model_id: str) -> None:
        """Highlight ``model_id`` without emitting :attr:`model_chosen`."""
        self.selected_id = model_id
        for row in range(self.proxy.rowCount()):
            index = self.proxy.index(row, 0)
            if index.data(ID_ROLE) == model_id:
                if self.view.currentIndex().row() != row:
                    self._syncing = True
                    try:
                        self.view.selectRow(row)
                        self.view.scrollTo(index)
                    finally:
                        self._syncing = False
                return
        self._syncing = True
        try:
            self.view.clearSelection()
            self.view.setCurrentIndex(QModelIndex())
        finally:
            self._syncing = False

    def visible_ids(self) -> list[str]:
        return [self.proxy.index(r, 0).data(ID_ROLE) for r in range(self.proxy.rowCount())]

    @property
    def row_count(self) -> int:
        return self.model.rowCount()
