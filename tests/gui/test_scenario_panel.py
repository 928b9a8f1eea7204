"""Scenario panel: knobs by workload, scenario list operations, refused values."""

from __future__ import annotations

from PySide6.QtWidgets import QInputDialog

from workbench.core.scenario import FinetuneMethod, Workload
from workbench.gui.controller import ProjectController
from workbench.gui.panels.scenario_panel import ScenarioPanel, parse_number


def _panel(qtbot, controller: ProjectController) -> ScenarioPanel:  # type: ignore[no-untyped-def]
    panel = ScenarioPanel(controller)
    qtbot.addWidget(panel)
    panel.resize(380, 900)
    panel.show()
    return panel


def test_only_the_knobs_of_the_workload_are_shown(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    for path in ("batch_size", "seq_len", "gen_len", "kv_dtype", "serving.gpu_memory_utilization", "parallel.tp"):
        assert panel.is_shown(path), path
    for path in ("optimizer", "parallel.zero_stage", "method", "lora_rank", "recompute", "parallel.ep"):
        assert not panel.is_shown(path), path
    assert panel.labels["batch_size"].text() == "Concurrent requests"
    panel.set_value("workload", Workload.FINETUNE)
    assert controller.scenario.workload is Workload.FINETUNE
    assert panel.is_shown("method") and panel.is_shown("optimizer") and panel.is_shown("parallel.zero_stage")
    assert not panel.is_shown("lora_rank") and not panel.is_shown("gen_len") and not panel.is_shown("kv_dtype")
    assert panel.labels["batch_size"].text() == "Micro-batch"
    panel.set_value("method", FinetuneMethod.LORA)
    assert panel.is_shown("lora_rank") and panel.is_shown("lora_targets")
    panel.set_value("workload", Workload.PRETRAIN)
    assert not panel.is_shown("method") and panel.is_shown("recompute") and panel.is_shown("global_batch_size")
    assert not panel.is_shown("parallel.offload_params")
    panel.set_value("parallel.zero_stage", 3)
    assert panel.is_shown("parallel.offload_params")


def test_knobs_follow_the_model_and_the_layout(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    controller.set_field("model", "mixtral-8x7b")
    assert panel.is_shown("parallel.ep")
    assert not panel.is_shown("parallel.pipeline_schedule") and not panel.is_shown("parallel.sequence_parallel")
    controller.set_field("num_gpus", 4)
    panel.set_value("parallel.pp", 2)
    assert controller.scenario.parallel.pp == 2 and controller.scenario.parallel.dp == 2
    assert panel.is_shown("parallel.pipeline_schedule")


def test_every_knob_edits_its_scenario_field(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    panel.set_value("seq_len", 8192)
    panel.set_value("gen_len", 64)
    panel.set_value("serving.gpu_memory_utilization", 0.8)
    panel.set_value("pricing.cloud_usd_per_gpu_hour", 2.5)
    panel.set_value("attention", panel.knobs["attention"].knob.choices[0])
    scenario = controller.scenario
    assert (scenario.seq_len, scenario.gen_len) == (8192, 64)
    assert scenario.serving.gpu_memory_utilization == 0.8
    assert scenario.pricing.cloud_usd_per_gpu_hour == 2.5
    assert scenario.attention.value == "eager"
    panel.set_value("pricing.cloud_usd_per_gpu_hour", 0)  # back to "catalog price"
    assert controller.scenario.pricing.cloud_usd_per_gpu_hour is None
    panel.set_value("workload", Workload.PRETRAIN)
    panel.set_value("train_tokens", "100B")
    assert controller.scenario.train_tokens == 1e11
    assert parse_number("2.5T") == 2.5e12 and parse_number("") is None


def test_a_refused_value_is_marked_and_the_scenario_stays(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    before = controller.scenario
    panel.set_value("parallel.tp", 4)  # 4-way TP on 1 GPU
    assert controller.scenario == before
    assert "needs more GPUs" in panel.errors["parallel.tp"]
    assert panel.knobs["parallel.tp"].widget.styleSheet()
    assert panel.knobs["parallel.tp"].widget.value() == 4  # the user's input stays to be corrected
    assert panel.error_label.isVisible()
    panel.set_value("train_tokens", "lots")
    assert "not a number" in panel.errors["train_tokens"]
    panel.set_value("parallel.tp", 1)
    assert not panel.errors and not panel.error_label.isVisible()


def test_scenarios_add_duplicate_rename_delete_and_switch(qtbot, controller, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    assert [panel.scenario_combo.itemText(i) for i in range(panel.scenario_combo.count())] == ["A", "B"]
    panel.scenario_combo.setCurrentIndex(1)
    assert controller.current == "B" and panel.is_shown("method")
    panel.duplicate_action.trigger()
    assert controller.current == "B (copy)" and controller.scenario.parallel.tp == 8
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("Seventy on eight", True))
    panel.rename_action.trigger()
    assert controller.current == "Seventy on eight"
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("A", True))
    messages: list[str] = []
    panel.status_message.connect(messages.append)
    panel.rename_action.trigger()
    assert controller.current == "Seventy on eight" and "already named" in messages[0]
    panel.add_button.click()
    assert controller.current == "New scenario" and len(controller.project.scenarios) == 4
    panel.delete_action.trigger()
    assert len(controller.project.scenarios) == 3 and panel.scenario_combo.currentText() == controller.current
    controller.undo_stack.undo()
    assert controller.current == "New scenario"


def test_image_inputs_follow_the_vision_tower(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    from workbench.catalog.hf_config import import_hf_path

    panel = _panel(qtbot, controller)
    assert not panel.is_shown("images_per_request")  # Llama-3.1-8B has no vision tower
    config = Path(__file__).resolve().parents[1] / "data" / "configs" / "qwen2.5-vl-3b-instruct"
    controller.add_model(import_hf_path(config).architecture)
    assert panel.is_shown("images_per_request")
    assert not panel.is_shown("image_width") and not panel.is_shown("image_height")  # no images yet
    assert panel.knobs["image_width"].widget.toolTip().startswith("Width of each image")
    panel.set_value("images_per_request", 2)
    assert panel.is_shown("image_width") and panel.is_shown("image_height")
    panel.set_value("image_width", 1920)
    panel.set_value("image_height", 1080)
    scenario = controller.scenario
    assert (scenario.images_per_request, scenario.image_width, scenario.image_height) == (2, 1920, 1080)
    controller.undo_stack.undo()  # each edit is one undo step
    assert controller.scenario.image_height == 1024 and panel.knobs["image_height"].widget.value() == 1024
    controller.undo_stack.redo()
    # a text model keeps the images knob while images are set, so they can be cleared
    controller.set_field("model", "llama-3.1-8b")
    assert panel.is_shown("images_per_request") and not panel.is_shown("image_width")
    panel.set_value("images_per_request", 0)
    assert not panel.is_shown("images_per_request")
    panel.set_value("workload", Workload.PRETRAIN)
    assert panel.labels["images_per_request"].text() == "Images per sample"


def test_serving_load_inputs_change_the_scenario_and_undo_restores_it(qtbot, controller: ProjectController, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from workbench.core.scenario import Batching

    panel = _panel(qtbot, controller)
    before = controller.scenario.serving
    for path in ("serving.batching", "serving.arrival_rate", "serving.requests", "serving.trace",
                 "serving.slo_ttft_s", "serving.slo_tpot_s"):
        assert panel.is_shown(path), path
        assert panel.knobs[path].widget.toolTip(), path
    assert not panel.is_shown("serving.arrival_cv")  # a closed loop has no arrival gaps
    assert not panel.is_shown("serving.prefill_chunk_tokens")
    panel.set_value("serving.batching", Batching.CHUNKED)
    assert panel.is_shown("serving.prefill_chunk_tokens")
    panel.set_value("serving.arrival_rate", 12.5)
    assert panel.is_shown("serving.arrival_cv")
    panel.set_value("serving.arrival_cv", 2.0)
    panel.set_value("serving.requests", 500)
    panel.set_value("serving.slo_ttft_s", 0.5)
    panel.set_value("serving.slo_tpot_s", 0.05)
    trace = tmp_path / "requests.csv"
    panel.set_value("serving.trace", str(trace))
    sv = controller.scenario.serving
    assert (sv.batching, sv.chunked_prefill, sv.arrival_rate, sv.arrival_cv, sv.requests) == (
        Batching.CHUNKED, True, 12.5, 2.0, 500)
    assert (sv.slo_ttft_s, sv.slo_tpot_s, sv.trace) == (0.5, 0.05, str(trace))
    # Setting a target back to its lowest value means "no target".
    panel.set_value("serving.slo_tpot_s", 0.0)
    assert controller.scenario.serving.slo_tpot_s is None
    for _ in range(8):  # one undo step per edit
        controller.undo_stack.undo()
    assert controller.scenario.serving == before
    assert panel.knobs["serving.batching"].read() == Batching.CONTINUOUS
    assert panel.knobs["serving.arrival_rate"].read() is None
    assert panel.knobs["serving.trace"].read() is None


def test_the_kv_cache_offers_llama_cpp_block_types(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    from workbench.core.dtypes import DType

    combo = _panel(qtbot, controller).knobs["kv_dtype"].widget
    offered = [combo.itemData(i) for i in range(combo.count())]
    assert DType.Q8_0 in offered and DType.Q4_0 in offered
