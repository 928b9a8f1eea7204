"""Compare two scenarios: the inputs that differ and key results from the engine, side by side."""

from __future__ import annotations

import pytest

from workbench.catalog.resolve import resolve_scenario
from workbench.core.project import Project
from workbench.core.scenario import FinetuneMethod, Scenario
from workbench.gui.dialogs.scenario_diff import (
    ScenarioDiffDialog,
    engine_estimate,
    flatten_scenario,
    input_differences,
    result_rows,
    result_text,
)
from workbench.gui.explain_text import value_text
from workbench.gui.main_window import MainWindow
from workbench.pluginhost import default_engine


def test_flattened_inputs_and_their_differences() -> None:
    a = Scenario(name="A", model="llama-3.1-8b", gpu="h100-sxm", batch_size=4)
    b = a.model_copy(update={"name": "B", "batch_size": 32, "num_gpus": 2,
                             "parallel": a.parallel.model_copy(update={"tp": 2}),
                             "assumptions": {"memory.overhead_gib": 2.0}})
    flat = flatten_scenario(a)
    assert "name" not in flat and flat["parallel.tp"] == 1 and flat["pricing.pue"] == 1.3
    diffs = {d.path: (d.label, d.a, d.b) for d in input_differences(a, b)}
    assert diffs == {
        "num_gpus": ("GPUs", 1, 2),
        "batch_size": ("Concurrent requests", 4, 32),
        "parallel.tp": ("Tensor parallel (TP)", 1, 2),
        "assumptions.memory.overhead_gib": ("Assumption memory.overhead_gib", None, 2.0),
    }
    assert input_differences(a, a.model_copy(update={"name": "same inputs"})) == []
    # A field neither scenario uses (the fine-tuning method of two serving scenarios) is flagged.
    unused = input_differences(a, a.model_copy(update={"method": FinetuneMethod.LORA}))
    assert [(d.path, d.relevant) for d in unused] == [("method", False)]


def test_key_results_side_by_side_with_the_difference() -> None:
    engine = default_engine()
    small = Scenario(name="8B", model="llama-3.1-8b", gpu="h100-sxm", batch_size=8)
    big = small.model_copy(update={"name": "70B", "model": "llama-3.1-70b"})
    ea, eb = (engine.run(resolve_scenario(s)) for s in (small, big))
    rows = {r.key: r for r in result_rows(ea, eb)}
    for key in ("memory.per_gpu.total", "memory.fits", "memory.min_gpus", "performance.ttft_s",
                "performance.tpot_s", "performance.tokens_per_s", "cost.usd_per_million_tokens"):
        assert key in rows, key
        assert rows[key].a == result_text(ea, key) == value_text(ea, key).replace("1 GPUs", "1 GPU")
        assert rows[key].b == result_text(eb, key) == value_text(eb, key)
    assert "performance.step_time_s" not in rows  # a training figure neither serving estimate has
    memory = rows["memory.per_gpu.total"]
    assert memory.difference.startswith("+") and memory.difference.endswith("%)") and memory.verdict == -1
    assert rows["memory.fits"].difference == "changed" and rows["memory.fits"].verdict == -1  # 70B does not fit
    assert rows["performance.tokens_per_s"].verdict == -1  # slower
    same = {r.key: r for r in result_rows(ea, ea)}
    assert all(r.difference == "same" and r.verdict == 0 for r in same.values())


def test_dialog_in_the_window_uses_the_window_engine(qtbot, window: MainWindow) -> None:  # type: ignore[no-untyped-def]
    dialog = window.compare_scenarios()
    qtbot.addWidget(dialog)
    assert (dialog.combo_a.currentText(), dialog.combo_b.currentText()) == ("A", "B")
    inputs = {row[0]: row[1:] for row in dialog.table_rows(dialog.inputs_table)}
    assert inputs["Model"] == ["llama-3.1-8b", "llama-3.1-70b"]
    assert inputs["Workload"] == ["inference", "finetune"]
    assert inputs["Tensor parallel (TP)"] == ["1", "8"]
    assert inputs["Concurrent requests / micro-batch"] == ["4", "1"]  # A serves, B trains
    assert inputs["Fine-tuning method"] == ["full (not used)", "lora"]  # A serves: the method means nothing
    results = {row[0]: row[1:] for row in dialog.table_rows(dialog.results_table)}
    a, b = (window.controller.project.scenario(n) for n in ("A", "B"))
    expected_a = window.runner.engine.run(window.catalogs.resolve(a, window.controller.project))
    assert results["Memory per GPU (most-loaded)"][0] == value_text(expected_a, "memory.per_gpu.total")
    assert results["Tokens/s"][0] == value_text(expected_a, "performance.tokens_per_s")
    assert results["Step time"][1] != "n/a"  # B is a training scenario
    header = [dialog.results_table.horizontalHeaderItem(c) for c in range(4)]
    assert [h.text() for h in header] == ["Result", "A", "B", "B − A"]
    assert (header[1].toolTip(), header[2].toolTip()) == ("A", "B")  # the full names

    dialog.swap()
    assert (dialog.combo_a.currentText(), dialog.combo_b.currentText()) == ("B", "A")
    window.controller.rename_scenario("Alpha")  # renames the selected scenario, A: the dialog follows
    assert {dialog.combo_a.currentText(), dialog.combo_b.currentText()} == {"B", "Alpha"}
    dialog.choose("B", "B")
    assert "same scenario" in dialog.summary.text()


def test_dialog_reports_a_scenario_it_cannot_estimate(qtbot) -> None:  # type: ignore[no-untyped-def]
    project = Project(scenarios=(
        Scenario(name="ok", model="llama-3.1-8b", gpu="h100-sxm"),
        Scenario(name="bad", model="no-such-model", gpu="h100-sxm"),
    ))
    dialog = ScenarioDiffDialog(project, engine_estimate(project))
    qtbot.addWidget(dialog)
    assert dialog.error.isVisibleTo(dialog) and "no-such-model" in dialog.error.text()
    results = {row[0]: row[1:] for row in dialog.table_rows(dialog.results_table)}
    assert results["GPUs needed"][1] == "n/a" and results["GPUs needed"][2] == ""


@pytest.mark.parametrize("workload", ["finetune", "pretrain"])
def test_training_scenarios_compare_step_time(qtbot, workload: str) -> None:  # type: ignore[no-untyped-def]
    base = Scenario(name="1 GPU", model="llama-3.1-8b", gpu="h100-sxm", workload=workload, method="lora",
                    num_gpus=8, parallel={"dp": 8})
    project = Project(scenarios=(base, base.model_copy(update={"name": "micro-batch 4", "batch_size": 4})))
    dialog = ScenarioDiffDialog(project, engine_estimate(project))
    qtbot.addWidget(dialog)
    results = {row[0]: row[1:] for row in dialog.table_rows(dialog.results_table)}
    assert "Step time" in results and "Time to first token" not in results
    assert results["Step time"][2].startswith("+")
