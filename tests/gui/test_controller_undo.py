"""The controller applies every edit through its QUndoStack."""

from __future__ import annotations

import pytest

from workbench.core.dtypes import WeightFormat
from workbench.gui import controller as controller_module
from workbench.gui.controller import ProjectController


def test_edit_undo_redo(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(controller.changed):
        assert controller.set_field("batch_size", 64) is None
    assert controller.scenario.batch_size == 64
    assert controller.undo_stack.undoText() == "Set batch size to 64"
    with qtbot.waitSignal(controller.changed):
        controller.undo_stack.undo()
    assert controller.scenario.batch_size == 4
    controller.undo_stack.redo()
    assert controller.scenario.batch_size == 64


def test_rapid_edits_of_one_field_merge_other_fields_do_not(controller: ProjectController,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for value in (5, 6, 7, 8):
        controller.set_field("batch_size", value)
    controller.set_field("seq_len", 4096)
    assert controller.undo_stack.count() == 2
    controller.undo_stack.undo()
    assert controller.scenario.seq_len == 1024 and controller.scenario.batch_size == 8
    controller.undo_stack.undo()
    assert controller.scenario.batch_size == 4
    # Edits further apart than the merge window are separate steps.
    clock = iter([100.0, 100.0 + controller_module.MERGE_WINDOW_S + 1])
    monkeypatch.setattr(controller_module.time, "monotonic", lambda: next(clock))
    controller.undo_stack.clear()
    controller.set_field("batch_size", 16)
    controller.set_field("batch_size", 32)
    assert controller.undo_stack.count() == 2


def test_invalid_edits_change_nothing(controller: ProjectController) -> None:
    project = controller.project
    assert "greater than 0" in controller.set_field("batch_size", 0)
    assert "needs more GPUs" in controller.set_field("parallel.tp", 2)
    assert controller.project is project and controller.undo_stack.count() == 0


def test_gpu_count_and_degrees_keep_the_layout_full(controller: ProjectController) -> None:
    controller.set_field("num_gpus", 8)
    assert controller.scenario.parallel.dp == 8
    controller.set_field("parallel.tp", 4)
    assert (controller.scenario.parallel.tp, controller.scenario.parallel.dp) == (4, 2)
    controller.set_field("parallel.dp", 1)  # the user chose DP: GPUs may idle
    controller.set_field("num_gpus", 16)
    assert controller.scenario.parallel.dp == 1


def test_qlora_replaces_a_16_bit_weight_format(controller: ProjectController) -> None:
    controller.set_field("workload", "finetune")
    controller.set_field("weights", WeightFormat.BF16)
    assert controller.set_field("method", "qlora") is None
    assert controller.scenario.weight_format is WeightFormat.NF4


def test_scenario_list_operations_are_undoable(controller: ProjectController) -> None:
    controller.add_scenario()
    assert controller.current == "New scenario"
    controller.duplicate_scenario()
    assert controller.current == "New scenario (copy)"
    assert controller.rename_scenario("A") == "another scenario is already named 'A'"
    assert controller.rename_scenario("  ") == "a scenario needs a name"
    assert controller.rename_scenario("C") is None
    assert [s.name for s in controller.project.scenarios] == ["A", "B", "New scenario", "C"]
    assert controller.delete_scenario()
    assert controller.current == "New scenario"
    for _ in range(4):
        controller.undo_stack.undo()
    assert [s.name for s in controller.project.scenarios] == ["A", "B"]
    controller.set_current("B")
    controller.delete_scenario()
    assert not controller.delete_scenario()  # the last scenario stays


def test_loading_a_project_clears_the_history(qtbot, controller: ProjectController, project) -> None:  # type: ignore[no-untyped-def]
    controller.set_field("batch_size", 9)
    with qtbot.waitSignal(controller.project_replaced):
        controller.load_project(project)
    assert controller.undo_stack.count() == 0 and controller.current == "A"
