"""Hardware panel: the accelerator catalog, custom accelerators, node shape and GPU count."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.core.hardware import Accelerator
from workbench.core.units import format_bytes
from workbench.gui.controller import ProjectController
from workbench.gui.dialogs.accelerator_dialog import AcceleratorDialog
from workbench.gui.elided_label import fit_to_width
from workbench.gui.panels.accelerator_table import AcceleratorTable
from workbench.gui.panels.model_editor import INVALID_STYLE

MAX_GPUS = 65536


class HardwarePanel(QWidget):
    status_message = Signal(str)

    def __init__(self, controller: ProjectController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("hardware_panel")
        self.controller = controller
        catalogs = controller.catalogs
        self.table = AcceleratorTable(catalogs.all_accelerators(controller.project), self)
        self.table.accelerator_chosen.connect(lambda gpu: controller.set_field("gpu", gpu))
        self.add_button = QPushButton("Add custom…", self)
        self.add_button.setToolTip("Describe an accelerator the catalog does not have (kept in this project)")
        self.add_button.clicked.connect(lambda: self.edit_accelerator(None))
        self.edit_button = QPushButton("Edit as custom…", self)
        self.edit_button.setToolTip("Start a custom accelerator from the selected one (a catalog entry is copied)")
        self.edit_button.clicked.connect(lambda: self.edit_accelerator(self.table.current_accelerator()))
        self.remove_button = QPushButton("Remove custom", self)
        self.remove_button.clicked.connect(self._remove)
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        for button in (self.add_button, self.edit_button, self.remove_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        self.node_combo = QComboBox(self)
        self.node_combo.setObjectName("node_combo")
        self.node_combo.setToolTip("Server the GPUs sit in: how many per node and how they are linked")
        self.node_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.node_combo.setMinimumContentsLength(10)
        self.node_combo.addItem("Default for this GPU", None)
        for node in catalogs.nodes.values():
            self.node_combo.addItem(f"{node.name} ({node.gpus_per_node} GPUs)", node.id)
        self.node_combo.currentIndexChanged.connect(self._on_node)
        self.gpu_spin = QSpinBox(self)
        self.gpu_spin.setObjectName("num_gpus")
        self.gpu_spin.setRange(1, MAX_GPUS)
        self.gpu_spin.setToolTip("GPUs in the job. When the layout used every GPU, data parallelism follows.")
        self.gpu_spin.valueChanged.connect(self._on_gpus)
        self.gpu_error = QLabel("", self)
        self.gpu_error.setWordWrap(True)
        self.gpu_error.setStyleSheet("color: #d62728")
        self.gpu_error.setVisible(False)
        self.interconnect = QLabel("", self)
        self.interconnect.setObjectName("interconnect")
        self.interconnect.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Node shape", self.node_combo)
        form.addRow("GPUs", self.gpu_spin)
        form.addRow("", self.gpu_error)
        form.addRow("Links", self.interconnect)
        # The settings under the list scroll in a low dock instead of cutting the links' last lines.
        settings = QWidget(self)
        settings.setLayout(form)
        form.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea(self)
        scroll.setObjectName("hardware_settings")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(settings)
        fit_to_width(scroll, form)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        layout.addWidget(scroll)
        controller.changed.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        controller = self.controller
        self.table.set_accelerators(controller.catalogs.all_accelerators(controller.project))
        scenario = controller.scenario
        if scenario is None:
            return
        self.table.select_id(scenario.gpu)
        self.remove_button.setEnabled(scenario.gpu in controller.project.accelerators)
        self.node_combo.blockSignals(True)
        self.node_combo.setCurrentIndex(max(self.node_combo.findData(scenario.node), 0))
        self.node_combo.blockSignals(False)
        if self.gpu_spin.value() != scenario.num_gpus and not self.gpu_error.isVisible():
            self.gpu_spin.blockSignals(True)
            self.gpu_spin.setValue(scenario.num_gpus)
            self.gpu_spin.blockSignals(False)
        self._show_links()

    def _show_links(self) -> None:
        controller = self.controller
        scenario = controller.scenario
        if scenario is None:
            return
        try:
            accelerator = controller.catalogs.accelerator(scenario.gpu, controller.project)
            node = controller.catalogs.node_for(scenario, accelerator)
        except Exception as exc:  # noqa: BLE001 - an unknown id shows as a message
            self.interconnect.setText(str(exc))
            return
        scale_up = accelerator.interconnect or "PCIe only"
        if accelerator.interconnect_gbps:
            scale_up += f" ({accelerator.interconnect_gbps:,.0f} GB/s both ways)"
        nodes = -(-scenario.num_gpus // node.gpus_per_node)
        self.interconnect.setText(
            f"<b>{accelerator.name}</b>, {format_bytes(accelerator.memory_bytes)} {accelerator.memory_type}, "
            f"{accelerator.memory_bandwidth_gbps:,.0f} GB/s<br>"
            f"Scale-up: {scale_up}<br>"
            f"In the node: {node.intra_node}, {node.intra_node_gbps:,.0f} GB/s per GPU each way<br>"
            f"Between nodes: {node.inter_node}, {node.inter_node_gbps:,.0f} GB/s per GPU<br>"
            f"{scenario.num_gpus} GPU{'s' if scenario.num_gpus > 1 else ''} on {nodes} node{'s' if nodes > 1 else ''} "
            f"of {node.gpus_per_node}"
        )

    def _on_node(self) -> None:
        self.controller.set_field("node", self.node_combo.currentData())

    def _on_gpus(self, value: int) -> None:
        error = self.controller.set_field("num_gpus", value)
        self.gpu_spin.setStyleSheet(INVALID_STYLE if error else "")
        self.gpu_error.setText(error or "")
        self.gpu_error.setVisible(bool(error))
        self.gpu_spin.setToolTip(error or "GPUs in the job.")

    def edit_accelerator(self, base: Accelerator | None) -> Accelerator | None:
        taken = set(self.controller.catalogs.accelerators)
        dialog = AcceleratorDialog(base, self, taken_ids=taken)
        if dialog.exec() != QDialog.DialogCode.Accepted or dialog.result_accelerator is None:
            return None
        self.controller.upsert_accelerator(dialog.result_accelerator)
        self.status_message.emit(f"Custom accelerator {dialog.result_accelerator.name} added to the project")
        return dialog.result_accelerator

    def _remove(self) -> None:
        scenario = self.controller.scenario
        if scenario is None:
            return
        error = self.controller.remove_accelerator(scenario.gpu)
        if error:
            QMessageBox.information(self, "Cannot remove", error)
