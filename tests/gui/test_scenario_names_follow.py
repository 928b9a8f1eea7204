"""A scenario name that spells its model and GPUs ("Llama-3.1-8B chat on 1x H100") follows edits of
them, in one undo step with the edit; a name the user chose stays."""

from __future__ import annotations

from workbench.core.project import Comparison, Project
from workbench.core.scenario import Scenario
from workbench.gui.controller import ProjectController


def _controller(catalogs, name: str) -> ProjectController:  # type: ignore[no-untyped-def]
    project = Project(name="Names", scenarios=(
        Scenario(name=name, model="llama-3.1-8b", gpu="h100-sxm", batch_size=8),
        Scenario(name="other", model="llama-3.1-8b", gpu="h100-sxm")),
        comparisons=(Comparison(name="Compare tab", scenarios=(name,)),))
    return ProjectController(catalogs, project)


def test_a_generated_name_follows_the_model_and_the_gpus(qtbot, catalogs) -> None:  # type: ignore[no-untyped-def]
    controller = _controller(catalogs, "Llama-3.1-8B chat on 1x H100")
    qwen = catalogs.model("qwen3-8b", controller.project).name
    assert controller.set_field("model", "qwen3-8b") is None
    assert controller.current == controller.scenario.name == f"{qwen} chat on 1x H100"
    assert controller.set_field("gpu", "rtx-4090") is None
    assert controller.current == f"{qwen} chat on 1x RTX 4090"
    assert controller.set_field("num_gpus", 2) is None
    assert controller.current == f"{qwen} chat on 2x RTX 4090"
    # The saved comparison follows the rename (as with a rename by hand).
    assert controller.project.comparisons[0].scenarios == (f"{qwen} chat on 2x RTX 4090",)
    # Each edit and its rename are one undo step.
    controller.undo_stack.undo()
    assert controller.current == f"{qwen} chat on 1x RTX 4090" and controller.scenario.num_gpus == 1
    controller.undo_stack.undo()
    controller.undo_stack.undo()
    assert controller.current == "Llama-3.1-8B chat on 1x H100" and controller.scenario.model == "llama-3.1-8b"
    assert [s.name for s in controller.project.scenarios] == ["Llama-3.1-8B chat on 1x H100", "other"]


def test_a_name_the_user_chose_stays(qtbot, catalogs) -> None:  # type: ignore[no-untyped-def]
    controller = _controller(catalogs, "Llama-3.1-8B chat on 1x H100")
    assert controller.rename_scenario("Support bot") is None
    controller.set_field("model", "qwen3-8b")
    controller.set_field("gpu", "rtx-4090")
    assert controller.current == "Support bot"
    # Only the parts that spell the old values change; a GPU count that is not the scenario's stays.
    other = _controller(catalogs, "Llama-3.1-8B vs 8x H100 plan")
    other.set_field("gpu", "b200")
    assert other.current == "Llama-3.1-8B vs 8x H100 plan"
