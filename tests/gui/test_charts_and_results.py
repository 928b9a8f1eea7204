"""Charts and the results panel, fed estimates directly."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QLabel

from workbench.core.scenario import Scenario
from workbench.core.units import GiB
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine
from workbench.gui import theme
from workbench.gui.charts.memory_chart import MemoryStackChart
from workbench.gui.charts.roofline_chart import RooflineChart
from workbench.gui.charts.sweep_chart import SweepChart
from workbench.gui.estimate_runner import Outcome, SweepOutcome
from workbench.gui.panels.results_panel import ResultsPanel


def _estimate(catalogs, project, fake_engine: Engine, **changes) -> Estimate:  # type: ignore[no-untyped-def]
    scenario = project.scenarios[0].model_copy(update=changes)
    return fake_engine.run(catalogs.resolve(scenario, project))


def test_memory_stack_heights_tooltip_and_capacity(qtbot, catalogs, project, fake_engine) -> None:  # type: ignore[no-untyped-def]
    chart = MemoryStackChart()
    qtbot.addWidget(chart)
    items = list(chart.plot.items)
    estimate = _estimate(catalogs, project, fake_engine)
    chart.update_estimate(estimate)
    assert chart.segment_bytes()["weights"] == (estimate.get("memory.per_gpu.weights"),
                                               pytest.approx(estimate.get("memory.average_gpu.weights")))
    assert chart.fits is True
    assert chart.plot.getAxis("left").labelText == "Memory per GPU (GiB)"
    assert chart.capacity_label.toPlainText() == "capacity 80.0 GiB"
    assert chart.usable_label.toPlainText() == "usable 72.0 GiB"
    weights_gib = estimate.get("memory.per_gpu.weights") / GiB
    assert chart.segment_at(0.0, weights_gib / 2) == ("weights", 0)
    assert chart.segment_at(0.5, 1.0) is None
    tip = chart.segment_tooltip("weights", 0)
    assert "GiB" in tip and "on the most-loaded GPU" in tip and "fake formula" in tip
    # Over capacity: red line and a caption; the plot items are the same ones, moved.
    chart.update_estimate(_estimate(catalogs, project, fake_engine, batch_size=512, seq_len=8192))
    assert chart.fits is False
    assert chart.capacity_line.opts["pen"].color() == QColor(theme.BAD_COLOUR)
    assert chart.message.toPlainText().startswith("Out of memory")
    assert list(chart.plot.items) == items


def test_roofline_ceilings_points_ridge_and_readout(qtbot, catalogs, project, fake_engine) -> None:  # type: ignore[no-untyped-def]
    chart = RooflineChart()
    qtbot.addWidget(chart)
    estimate = _estimate(catalogs, project, fake_engine)
    chart.update_estimate(estimate)
    gpu = catalogs.accelerators["h100-sxm"]
    shown = [c for c in chart.ceilings if c.xData is not None and len(c.xData)]
    assert len(shown) == len(set(gpu.dense_tflops.values()))
    labels = " ".join(label.toPlainText() for label in chart.ceiling_labels)
    assert "bf16" in labels and "fp8" in labels
    assert chart.plot.getAxis("bottom").labelText == "Arithmetic intensity (FLOP/byte)"
    assert chart.plot.getAxis("left").labelText == "Attainable (TFLOPS)"
    assert chart.ridge_point == pytest.approx(989.4 * 1000 / 3350)
    assert chart.ridge.xData[0] == pytest.approx(chart.ridge_point)
    assert set(chart.point_data) == {"prefill", "decode"}
    assert chart.point_labels["decode"].toPlainText() == "decode"
    assert "decode: 8 FLOP/byte, 26.8 TFLOPS, memory-bound" in chart.readout.text()
    assert chart.attainable(1.0) == pytest.approx(3.35)
    assert chart.attainable(1e6) == pytest.approx(989.4)
    text = chart.readout_text(10.0)
    assert "10 FLOP/byte" in text and "33.5 TFLOPS" in text and "memory-bound" in text


def test_sweep_chart(qtbot) -> None:  # type: ignore[no-untyped-def]
    chart = SweepChart()
    qtbot.addWidget(chart)
    outcome = SweepOutcome(1, "batch_size", [1, 2, 4, 8], [10 * GiB, 20 * GiB, 40 * GiB, 80 * GiB],
                           80 * GiB, 72 * GiB, [100.0, 190.0, 350.0, None])
    chart.update_sweep(outcome)
    chart.set_current(4)
    assert list(chart.memory_curve.getData()[1]) == [10, 20, 40, 80]
    assert len(chart.speed_curve.getData()[1]) == 3
    assert chart.capacity_line.value() == pytest.approx(72)
    assert chart.status.text() == "fits up to 4"
    assert chart.current_lines[0].value() == pytest.approx(2)


def test_results_panel_figures_explanations_warnings_failures(qtbot, catalogs, project, fake_engine) -> None:  # type: ignore[no-untyped-def]
    from gui_fakes import Raising

    panel = ResultsPanel()
    qtbot.addWidget(panel)
    panel.show()
    engine = Engine([*fake_engine.estimators, Raising()])
    estimate = _estimate(catalogs, project, engine, batch_size=512, seq_len=8192)
    panel.update_outcome(Outcome(1, estimate.resolved.scenario, estimate.resolved, estimate))
    assert "Out of memory" in panel.verdict_text
    assert panel.gpus_needed.text() != "n/a"
    assert panel.values["memory.per_gpu.total"].text().endswith("GiB")
    explanation = panel.values["memory.usable_capacity"].explanation()
    assert "Usable capacity" in explanation and "x 0.9" in explanation
    assert "Not estimated" in panel.values["cost.usd_per_million_tokens"].explanation()
    # The out-of-memory finding and its fix sit under the verdict, not in the warnings below the figures.
    assert panel.oom_message.isVisible() and "does not fit" in panel.oom_message.text()
    assert panel.fixes_box.isVisible()
    assert any("Fix: use more GPUs" in label.text() for label in panel.fixes_box.findChildren(QLabel))
    assert "does not fit" not in panel.warnings.text()
    assert "price table exploded" in panel.failures.text()
    assert panel.values["performance.ttft_s"].isVisible()
    assert not panel.values["performance.step_time_s"].isVisible()
    training = _estimate(catalogs, project, fake_engine, workload="pretrain")
    panel.update_outcome(Outcome(2, training.resolved.scenario, training.resolved, training))
    assert panel.values["performance.step_time_s"].isVisible()
    assert not panel.values["performance.ttft_s"].isVisible()
    assert not panel.failures.isVisible()
    panel.show_error("unknown model 'x'")
    assert panel.error.isVisible() and panel.values["performance.step_time_s"].text() != "n/a"


def test_a_point_never_hides_its_ceiling_label(qtbot, catalogs) -> None:  # type: ignore[no-untyped-def]
    """QLoRA fine-tuning of a 70B model on L40S: the training point is compute-bound at ~1,500
    FLOP/byte, right where the bf16 ceiling's label would sit; the label moves out of its way."""
    import math

    from PySide6.QtCore import QPointF

    from workbench.core.project import Project
    from workbench.core.scenario import Scenario
    from workbench.pluginhost import default_engine

    scenario = Scenario(name="q", model="llama-3.1-70b", gpu="l40s", workload="finetune", method="qlora",
                        num_gpus=2, parallel={"pp": 2})
    resolved = catalogs.resolve(scenario, Project())
    estimate = default_engine().run(resolved)
    chart = RooflineChart()
    qtbot.addWidget(chart)
    chart.resize(380, 460)
    chart.show()
    qtbot.waitExposed(chart)
    chart.update_estimate(estimate, resolved.cluster.accelerator)
    ai, attainable = chart.point_data["training"]
    assert estimate.get("roofline.training.bound") == "compute"
    view = chart.plot.getViewBox()
    point = view.mapViewToScene(QPointF(math.log10(ai), math.log10(attainable)))
    label = next(lb for lb in chart.ceiling_labels if lb.toPlainText().startswith("bf16"))
    assert not label.sceneBoundingRect().adjusted(-7, -7, 7, 7).contains(point)


def test_memory_stack_shows_recurrent_state_only_when_a_model_keeps_one(qtbot) -> None:  # type: ignore[no-untyped-def]
    from engine_fixtures import GPU, LLAMA_8B, NODE
    from workbench_memory.kv_cache import KvCacheEstimator
    from workbench_memory.parameters import ParametersEstimator
    from workbench_memory.stack import MemoryStackEstimator

    from workbench.catalog.hf_config import import_hf_config
    from workbench.core import Cluster, Scenario
    from workbench.core.resolved import ResolvedScenario

    mamba = import_hf_config(
        {"model_type": "mamba2", "hidden_size": 1024, "num_heads": 32, "head_dim": 64, "n_groups": 1,
         "state_size": 128, "num_hidden_layers": 24, "vocab_size": 50288, "expand": 2}, name="Mamba-2 test",
    ).architecture  # fmt: skip
    engine = Engine([ParametersEstimator(), KvCacheEstimator(), MemoryStackEstimator()])

    def run(arch):  # type: ignore[no-untyped-def]
        scenario = Scenario(model=arch.name, gpu=GPU.id, batch_size=8, seq_len=2048)
        return engine.run(ResolvedScenario(scenario, arch, Cluster(accelerator=GPU, node=NODE, num_gpus=1)))

    chart = MemoryStackChart()
    qtbot.addWidget(chart)
    chart.update_estimate(run(LLAMA_8B))
    assert "recurrent_state" not in chart.legend_keys and "kv_cache" in chart.legend_keys
    estimate = run(mamba)
    chart.update_estimate(estimate)
    assert "recurrent_state" in chart.legend_keys
    assert chart.segment_bytes()["recurrent_state"][0] == pytest.approx(estimate.get("memory.per_gpu.recurrent_state"))
    assert chart.segment_bytes()["kv_cache"][0] == 0
    assert [name for _, name in ((i, lbl.text) for i, lbl in chart.legend.items)][-2:] == ["Recurrent state", "Overhead"]
    chart.update_estimate(run(LLAMA_8B))
    assert "recurrent_state" not in chart.legend_keys


def test_results_show_the_recurrent_state_of_hybrid_models_only(qtbot, catalogs, project) -> None:  # type: ignore[no-untyped-def]
    from workbench.pluginhost import default_engine

    panel = ResultsPanel()
    qtbot.addWidget(panel)
    panel.show()
    engine = default_engine()
    for model, shown in (("bamba-9b", True), ("llama-3.1-8b", False)):
        scenario = Scenario(model=model, gpu="h100-sxm", batch_size=8)
        estimate = engine.run(catalogs.resolve(scenario, project))
        panel.update_outcome(Outcome(1, scenario, estimate.resolved, estimate))
        row = panel.values["recurrent_state.bytes_per_sequence"]
        assert row.isVisible() is shown, model
        if shown:
            assert row.text().endswith("MiB")  # Bamba-9B: 32 layers' fp32 SSM states, ~118 MiB


# --- roofline labels and peak ------------------------------------------------------------------------

ROOFLINE_CASES = {
    "training": dict(model="llama-3.1-70b", gpu="h100-sxm", workload="pretrain", num_gpus=64, parallel={"dp": 64}),
    "serving, fp8 weights": dict(model="llama-3.1-8b", gpu="h100-sxm", weights="fp8", batch_size=16),
    "qlora on L40S": dict(model="llama-3.1-70b", gpu="l40s", workload="finetune", method="qlora", num_gpus=2,
                          parallel={"pp": 2}),
}


@pytest.fixture(scope="module")
def real_engine():  # type: ignore[no-untyped-def]
    from workbench.pluginhost import default_engine

    return default_engine()


# The roofline's size in the window at 1280x800 and at 1600x1000.
@pytest.mark.parametrize("size", [(290, 330), (420, 430)])
@pytest.mark.parametrize("case", list(ROOFLINE_CASES))
def test_roofline_labels_stay_inside_and_clear_of_each_other_and_of_other_ceilings(
        qtbot, catalogs, real_engine, case, size) -> None:  # type: ignore[no-untyped-def]
    import math

    from PySide6.QtCore import QPointF, QRectF

    from workbench.core.project import Project
    from workbench.gui.charts.label_layout import Segment, hits

    resolved = catalogs.resolve(Scenario(name=case, **ROOFLINE_CASES[case]), Project())
    chart = RooflineChart()
    qtbot.addWidget(chart)
    chart.resize(*size)
    chart.show()
    qtbot.waitExposed(chart)
    chart.update_estimate(real_engine.run(resolved))
    qtbot.wait(20)
    rects = chart.label_rects()
    view = chart.plot.getViewBox()
    area = QRectF(0, 0, view.width(), view.height())
    phases = {"training"} if "pretrain" in str(ROOFLINE_CASES[case]) or "finetune" in str(ROOFLINE_CASES[case]) \
        else {"prefill", "decode"}
    assert phases <= set(rects)  # every point is named
    assert len([t for t in rects if "ridge" in t]) == 1
    assert len(rects) == len(phases) + 1 + len(chart._ceiling_levels)
    items = list(rects.items())
    for n, (text, rect) in enumerate(items):
        assert area.contains(rect), (text, rect, area)
        for other, other_rect in items[n + 1:]:
            assert not rect.intersects(other_rect), (text, other)
    # No ceiling runs through another ceiling's label (its own hides under the label's veil).
    for i, level in chart._ceiling_levels.items():
        start = view.mapFromView(QPointF(math.log10(level * 1000 / chart.bandwidth), math.log10(level)))
        end = view.mapFromView(QPointF(view.viewRange()[0][1], math.log10(level)))
        for text, rect in items:
            if text in chart._ceiling_texts[i] or text in ("prefill", "decode", "training"):
                continue
            assert not hits(rect, Segment(start, end)), (text, level)


def test_the_roofline_names_the_rate_the_estimate_computes_at(qtbot, catalogs, real_engine) -> None:  # type: ignore[no-untyped-def]
    from workbench.core.project import Project

    chart = RooflineChart()
    qtbot.addWidget(chart)
    # fp8 weights under a bf16 compute precision: weight-only fp8, matmuls at the bf16 rate.
    weights_only = real_engine.run(catalogs.resolve(
        Scenario(model="llama-3.1-8b", gpu="h100-sxm", weights="fp8", batch_size=16), Project()))
    assert weights_only.get("roofline.compute_dtype") == "bf16"
    chart.update_estimate(weights_only)
    assert chart.readout.text().startswith("989 TFLOPS bf16 peak (fp8 weights, matmuls at the bf16 rate)")
    current = [lb.toPlainText() for lb, c in zip(chart.ceiling_labels, chart.ceilings)
               if c.opts["pen"].widthF() > 2]
    assert len(current) == 1 and current[0].startswith("bf16")
    # fp8 compute with fp8 weights: the fp8 peak.
    fp8 = real_engine.run(catalogs.resolve(
        Scenario(model="llama-3.1-8b", gpu="h100-sxm", dtype="fp8", weights="fp8", batch_size=16), Project()))
    assert fp8.get("roofline.compute_dtype") == "fp8"
    chart.update_estimate(fp8)
    assert chart.readout.text().startswith("1,979 TFLOPS fp8 peak, 3,350 GB/s")
    assert chart.peak == pytest.approx(1978.9)


def test_memory_labels_keep_their_numbers_in_a_narrow_chart(qtbot, catalogs, project, fake_engine) -> None:  # type: ignore[no-untyped-def]
    chart = MemoryStackChart()
    qtbot.addWidget(chart)
    chart.resize(700, 400)
    chart.show()
    qtbot.waitExposed(chart)
    chart.update_estimate(_estimate(catalogs, project, fake_engine, batch_size=4096))
    assert chart.capacity_label.toPlainText() == "capacity 80.0 GiB"
    assert chart.message.toPlainText().startswith("Out of memory: ")
    # The narrowest chart (its legend under the plot) with a large font: the words no longer fit.
    big = QFont()
    big.setPointSizeF(big.pointSizeF() * 1.8)
    for label in (chart.capacity_label, chart.usable_label, chart.message):
        label.setFont(big)
    chart.resize(200, 400)
    qtbot.waitUntil(lambda: chart.capacity_label.toPlainText() == "80.0 GiB", timeout=2000)
    assert chart.usable_label.toPlainText() == "72.0 GiB"
    note = chart.message.toPlainText()
    assert note.endswith(" over") or note.startswith("+"), note
    assert "GiB" in note and not note.startswith("Out")
    chart.resize(700, 400)
    qtbot.waitUntil(lambda: chart.capacity_label.toPlainText() == "capacity 80.0 GiB", timeout=2000)


def test_the_memory_legend_moves_under_a_narrow_plot_and_leaves_the_bars_room(qtbot, catalogs, project, fake_engine) -> None:  # type: ignore[no-untyped-def]
    chart = MemoryStackChart()
    qtbot.addWidget(chart)
    chart.resize(700, 400)
    chart.show()
    qtbot.waitExposed(chart)
    chart.update_estimate(_estimate(catalogs, project, fake_engine))
    qtbot.waitUntil(lambda: chart.legend_place == ("side", 1), timeout=2000)
    view = chart.plot.getViewBox()
    assert view.sceneBoundingRect().right() <= chart.legend.sceneBoundingRect().left() + 1
    chart.resize(244, 260)  # the chart at 1280x800 and 150%: beside the plot, the legend left 48 px
    qtbot.waitUntil(lambda: chart.legend_place[0] == "below", timeout=2000)
    qtbot.wait(20)
    legend = chart.legend.sceneBoundingRect()
    assert view.width() >= 150 and view.height() >= 90, (view.width(), view.height())
    assert legend.top() >= view.sceneBoundingRect().bottom()
    visible = chart.plot_widget.mapToScene(chart.plot_widget.viewport().rect()).boundingRect()
    assert visible.adjusted(-1, -1, 1, 1).contains(legend), (legend, visible)
    assert [label.text for _, label in chart.legend.items][0] == "Weights"  # every entry still there
    assert len(chart.legend.items) == len(chart.legend_keys)
    chart.resize(700, 400)
    qtbot.waitUntil(lambda: chart.legend_place == ("side", 1), timeout=2000)


@pytest.mark.parametrize("size", [(244, 260), (300, 330), (700, 420)])
def test_the_roofline_and_memory_charts_fit_their_view_at_a_laptop_size(qtbot, catalogs, real_engine, size) -> None:  # type: ignore[no-untyped-def]
    """At 1280x800 and 150% each top chart is 244x260: the roofline's title and axis titles (whole,
    they made the plot 30 px wider than its view, its right part cut) and the memory chart's legend
    (beside the plot it left the two bars 48 px) must leave a readable plot inside the view."""
    from layout_check import chart_problems

    from workbench.core.project import Project

    estimate = real_engine.run(catalogs.resolve(Scenario(model="llama-3.1-8b", gpu="h100-sxm", batch_size=16),
                                                Project()))
    for chart in (RooflineChart(), MemoryStackChart()):
        qtbot.addWidget(chart)
        chart.resize(*size)
        chart.show()
        qtbot.waitExposed(chart)
        chart.update_estimate(estimate)
        qtbot.wait(30)
        assert chart_problems(chart.plot_widget) == [], (type(chart).__name__, size)


def test_titles_take_the_longest_form_that_fits_and_the_whole_text_as_tooltip(qtbot, catalogs, real_engine) -> None:  # type: ignore[no-untyped-def]
    from workbench.core.project import Project

    chart = RooflineChart()
    qtbot.addWidget(chart)
    chart.resize(700, 420)
    chart.show()
    qtbot.waitExposed(chart)
    chart.update_estimate(real_engine.run(catalogs.resolve(Scenario(model="llama-3.1-8b", gpu="h100-sxm"), Project())))
    qtbot.waitUntil(lambda: chart.titles.shown("bottom") == "Arithmetic intensity (FLOP/byte)", timeout=2000)
    assert chart.titles.shown("title") == "Roofline: NVIDIA H100 SXM5 80 GB"
    assert not chart.plot.getAxis("bottom").toolTip()
    chart.resize(210, 260)
    qtbot.waitUntil(lambda: chart.titles.shown("bottom") != "Arithmetic intensity (FLOP/byte)", timeout=2000)
    assert chart.titles.shown("bottom") in ("Intensity (FLOP/byte)", "FLOP/byte")
    assert chart.plot.getAxis("bottom").toolTip() == "Arithmetic intensity (FLOP/byte)"
    title = chart.titles.shown("title")
    assert title != "Roofline: NVIDIA H100 SXM5 80 GB" and chart.plot.titleLabel.toolTip().startswith("Roofline")
    view = chart.plot_widget
    assert chart.plot.sceneBoundingRect().width() <= view.viewport().width() + 1
