"""Hardware panel: accelerator table (sort, filter, sources), node shape, GPU count, custom GPUs."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox

from workbench.gui.controller import ProjectController
from workbench.gui.dialogs.accelerator_dialog import AcceleratorDialog
from workbench.gui.panels.hardware_panel import HardwarePanel


def _panel(qtbot, controller: ProjectController) -> HardwarePanel:  # type: ignore[no-untyped-def]
    panel = HardwarePanel(controller)
    qtbot.addWidget(panel)
    panel.show()
    return panel


def test_table_lists_filters_sorts_and_cites_sources(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    table = panel.table
    assert table.proxy.rowCount() == len(controller.catalogs.accelerators) >= 40
    assert table.selected_id == "h100-sxm"
    table.vendor_combo.setCurrentIndex(table.vendor_combo.findData("amd"))
    vendors = {table.proxy.index(r, 1).data() for r in range(table.proxy.rowCount())}
    assert vendors == {"amd"}
    table.filter_edit.setText("MI300X")
    assert table.proxy.rowCount() >= 1
    tooltip = table.proxy.index(0, 2).data(Qt.ItemDataRole.ToolTipRole)
    assert tooltip.startswith("Source: ") and "Taken: " in tooltip
    table.vendor_combo.setCurrentIndex(0)
    table.filter_edit.clear()
    table.view.sortByColumn(2, Qt.SortOrder.DescendingOrder)
    memories = [table.proxy.index(r, 2).data(Qt.ItemDataRole.UserRole) for r in range(table.proxy.rowCount())]
    assert memories == sorted(memories, reverse=True)
    assert controller.scenario.gpu == "h100-sxm"  # filtering and sorting never choose


def test_choose_gpu_count_and_node(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    assert panel.table.choose("mi300x")
    assert controller.scenario.gpu == "mi300x"
    assert "Infinity Fabric" in panel.interconnect.text() or "MI300X" in panel.interconnect.text()
    panel.gpu_spin.setValue(16)
    assert controller.scenario.num_gpus == 16
    assert controller.scenario.parallel.dp == 16  # the layout filled every GPU: DP follows
    assert "2 nodes of 8" in panel.interconnect.text()
    index = panel.node_combo.findData("pcie-gen5-8x")
    panel.node_combo.setCurrentIndex(index)
    assert controller.scenario.node == "pcie-gen5-8x"
    assert "PCIe" in panel.interconnect.text()


def test_a_gpu_count_below_the_layout_is_refused_with_its_reason(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    controller.set_current("B")  # TP 8 on 8 GPUs
    panel = _panel(qtbot, controller)
    panel.gpu_spin.setValue(4)
    assert controller.scenario.num_gpus == 8
    assert panel.gpu_error.isVisible() and "needs more GPUs" in panel.gpu_error.text()
    panel.gpu_spin.setValue(16)
    assert controller.scenario.num_gpus == 16 and not panel.gpu_error.isVisible()
    assert controller.scenario.parallel.dp == 2


def test_custom_accelerator_dialog_validates_as_you_type(qtbot, catalogs) -> None:  # type: ignore[no-untyped-def]
    dialog = AcceleratorDialog(catalogs.accelerators["l40s"], taken_ids=set(catalogs.accelerators))
    qtbot.addWidget(dialog)
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert ok.isEnabled()
    assert dialog.edits["id"].text() == "l40s-custom"
    dialog.edits["memory_gib"].setText("-4")
    assert not ok.isEnabled()
    assert "memory_gib" in dialog.message.text() and dialog.edits["memory_gib"].styleSheet()
    dialog.edits["memory_gib"].setText("96")
    dialog.edits["id"].setText("h100-sxm")
    assert not ok.isEnabled() and "already a catalog accelerator" in dialog.message.text()
    dialog.edits["id"].setText("l40s-96")
    for edit in dialog.rates.values():
        edit.clear()
    assert not ok.isEnabled() and "dense_tflops" in dialog.message.text()
    dialog.rates[next(iter(dialog.rates))].setText("100")
    assert ok.isEnabled()
    assert dialog.result_accelerator.memory_gib == 96
    assert dialog.result_accelerator.custom
    assert "memory_gib" in dialog.result_accelerator.provenance


def test_custom_accelerators_live_in_the_project(qtbot, controller, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)

    def accept(dialog: AcceleratorDialog) -> int:
        dialog.edits["id"].setText("my-gpu")
        dialog.edits["name"].setText("My GPU")
        dialog.edits["memory_gib"].setText("141")
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(AcceleratorDialog, "exec", accept)
    panel.edit_accelerator(controller.catalogs.accelerators["h100-sxm"])
    assert "my-gpu" in controller.project.accelerators
    assert controller.scenario.gpu == "my-gpu"
    names = [panel.table.proxy.index(r, 0).data() for r in range(panel.table.proxy.rowCount())]
    assert "My GPU (custom)" in names
    assert panel.remove_button.isEnabled()
    panel.remove_button.click()
    assert "my-gpu" not in controller.project.accelerators
    assert controller.scenario.gpu == "h100-sxm"
    controller.undo_stack.undo()
    assert controller.scenario.gpu == "my-gpu"


def test_memory_reads_in_gib_and_stays_in_view_in_a_narrow_panel(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    from workbench.gui.panels.accelerator_table import MEMORY_COLUMN

    panel = _panel(qtbot, controller)
    panel.resize(340, 700)  # the Hardware panel's width in a 1280x800 window
    qtbot.wait(20)
    table = panel.table
    table.filter_edit.setText("H200 SXM")
    assert table.proxy.rowCount() == 1
    index = table.proxy.index(0, MEMORY_COLUMN)
    assert index.data() == "141 GiB"
    assert table.proxy.index(0, 1).data() == "nvidia"
    table.filter_edit.clear()
    texts = {table.proxy.index(r, MEMORY_COLUMN).data() for r in range(table.proxy.rowCount())}
    assert "80 GiB" in texts and all(t.endswith(" GiB") for t in texts)
    # Name, vendor and memory all in the panel's view, memory wide enough for its widest text.
    view = table.view
    right = view.columnViewportPosition(MEMORY_COLUMN) + view.columnWidth(MEMORY_COLUMN)
    assert right <= view.viewport().width()
    widest = max(view.fontMetrics().horizontalAdvance(t) for t in texts)
    assert view.columnWidth(MEMORY_COLUMN) >= widest + 6
