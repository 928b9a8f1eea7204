"""The Kernels chart: where a step's time goes, per kernel group, from the real per-operator model."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QAction, QColor, QImage, QPainter
from PySide6.QtWidgets import QTabWidget
from workbench_performance import kernels_for

from workbench.api import estimate
from workbench.catalog.resolve import resolve_scenario
from workbench.core.scenario import Scenario
from workbench.engine.pipeline import Engine
from workbench.gui.charts.kernel_chart import BOUND_COLOURS, KernelChart
from workbench.pluginhost.host import PluginHost

SERVING = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "batch_size": 64}
MOE = {"model": "deepseek-v3", "gpu": "h200-sxm", "num_gpus": 8, "parallel": {"tp": 8}}


@pytest.fixture(scope="module")
def serving():  # type: ignore[no-untyped-def]
    return estimate(**SERVING)


@pytest.fixture(scope="module")
def moe():  # type: ignore[no-untyped-def]
    return estimate(**MOE)


@pytest.fixture
def chart(qtbot):  # type: ignore[no-untyped-def]
    """The chart in a tab, as the window holds it (a top-level widget would widen itself)."""
    host = QTabWidget()
    qtbot.addWidget(host)
    widget = KernelChart()
    host.addTab(widget, "Kernels")
    host.resize(575, 720)  # the tab in a 1280x800 window
    host.show()
    qtbot.waitExposed(host)
    yield widget
    host.close()  # the host, held to here: the chart lives as long as it does


def _bars(chart: KernelChart) -> list[tuple[float, float, str]]:
    """(y, width in ms, brush colour) of each drawn bar."""
    opts = chart.bars.opts
    return [(float(y), float(w), QColor(b).name()) for y, w, b in zip(opts["y"], opts["width"], opts["brushes"])]


def _tick_names(chart: KernelChart) -> list[str]:
    return [name for _, name in chart.plot.getAxis("left")._tickLevels[0]]


def _drawn_ticks(axis) -> list[tuple[QRectF, str]]:  # type: ignore[no-untyped-def]
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(rect, text) for rect, _, text in specs[2]]


def test_bars_are_the_kernel_groups_longest_first_coloured_by_bound(chart: KernelChart, serving) -> None:  # type: ignore[no-untyped-def]
    chart.update_estimate(serving)
    decode = kernels_for(serving)[0]
    assert decode.title.startswith("decode step")
    expected = sorted(decode.kernels, key=lambda k: k.seconds, reverse=True)
    bars = _bars(chart)
    assert len(bars) == len(decode.kernels) == 7
    assert [y for y, _, _ in bars] == list(range(7))
    assert [w for _, w, _ in bars] == pytest.approx([k.seconds * 1000 for k in expected])
    assert _tick_names(chart) == [k.name for k in expected]
    assert [c for _, _, c in bars] == [QColor(BOUND_COLOURS[k.bound]).name() for k in expected]
    # Llama's decode step at 64 sequences: attention over the KV cache leads, memory-bound; the
    # small kernels (norms, rotary) are latency-bound: two colours on screen.
    assert expected[0].name == "attention" and expected[0].bound == "memory"
    assert {c for _, _, c in bars} == {BOUND_COLOURS["memory"].lower(), BOUND_COLOURS["latency"].lower()}
    assert "NVIDIA Hopper" in chart.title.text() and "Where a step" in chart.title.text()
    assert not chart.note.isVisible() and not chart.empty.isVisible()
    labels = [label.toPlainText() for label in chart.labels[:7]]
    total = decode.total_s
    first = expected[0].seconds
    assert labels[0] == f"{first * 1e3:.3g} ms · {first / total:.0%}", labels
    assert "ms" in chart.plot.getAxis("bottom").labelText
    assert chart.readout.text().startswith(f"decode step, 64 sequences: {total * 1e3:.3g} ms of kernels")


def test_the_picker_switches_between_decode_and_prefill(chart: KernelChart, serving) -> None:  # type: ignore[no-untyped-def]
    chart.update_estimate(serving)
    assert chart.phase_picker.isVisible() and chart.phase_picker.count() == 2
    assert chart.phase_picker.itemText(1).startswith("Prefill of one 2,048-token prompt")
    chart.phase_picker.setCurrentIndex(1)
    prefill = kernels_for(serving)[1]
    widths = [w for _, w, _ in _bars(chart)]
    assert widths == pytest.approx(sorted((k.seconds * 1000 for k in prefill.kernels), reverse=True))
    assert _tick_names(chart)[0] == "mlp.up"  # prefill: the big GEMMs, compute-bound
    assert _bars(chart)[0][2] == BOUND_COLOURS["compute"].lower()
    assert chart.readout.text().startswith("prefill of one")
    # An edit keeps the phase on screen: the prefill of a 64-sequence batch at another batch size.
    chart.update_estimate(estimate(**{**SERVING, "batch_size": 32}))
    assert chart.phase_picker.currentIndex() == 1 and chart.readout.text().startswith("prefill")


def test_training_has_one_phase_and_no_picker(chart: KernelChart) -> None:
    chart.update_estimate(estimate(model="llama-3.1-8b", gpu="h100-sxm", workload="pretrain"))
    assert not chart.phase_picker.isVisible()
    assert chart.phase is not None and chart.phase.title.startswith("forward of one micro-batch")
    assert len(_bars(chart)) == len(chart.phase.rows) > 0


def test_tooltip_names_kernel_time_share_and_bound(chart: KernelChart, serving) -> None:  # type: ignore[no-untyped-def]
    chart.update_estimate(serving)
    text = chart.bar_tooltip(0)
    decode = kernels_for(serving)[0]
    top = max(decode.kernels, key=lambda k: k.seconds)
    assert f"<b>{top.name}</b>" in text and f"{top.seconds * 1e3:.3g} ms" in text
    assert f"{top.seconds / decode.total_s:.1%} of the phase" in text
    assert "memory-bound" in text and "decode step, 64 sequences" in text
    # A hover finds the bar of its row, and nothing between rows or left of the axis.
    assert chart.bar_at(1.0, 0.1) == 0 and chart.bar_at(0.2, 3.0) == 3
    assert chart.bar_at(1.0, 0.5) is None and chart.bar_at(-1.0, 0.0) is None and chart.bar_at(1.0, 7.0) is None


def test_generic_profile_note_for_tpu_v5e(chart: KernelChart) -> None:
    chart.update_estimate(estimate(model="llama-3.1-8b", gpu="tpu-v5e"))
    assert chart.note.isVisible()
    assert "Generic kernel profile" in chart.note.text() and "TPU v5e" in chart.note.text()
    assert "Generic" in chart.title.text()
    assert chart.phase is not None and chart.phase.generic and len(_bars(chart)) == 7
    chart.update_estimate(estimate(**SERVING))
    assert not chart.note.isVisible()


def test_empty_state_without_a_speed_model(chart: KernelChart) -> None:
    chart.update_estimate(None)
    assert chart.empty.isVisible() and not chart.plot_widget.isVisible()
    assert chart.empty.text() == "No estimate yet."
    host = PluginHost(first_party=("workbench_memory", "workbench_compute", "workbench_cost"), entry_point_group=None)
    no_speed = Engine(host.registry.estimators).run(resolve_scenario(Scenario(**SERVING)))
    assert "memory.per_gpu.total" in no_speed.values
    chart.update_estimate(no_speed)
    assert chart.empty.isVisible() and not chart.plot_widget.isVisible()
    assert chart.empty.text().startswith("No speed model for this scenario")
    assert _bars(chart) == [] and not chart.phase_picker.isVisible()
    assert all(not label.isVisible() for label in chart.labels)
    chart.update_estimate(estimate(**SERVING))  # and back
    assert chart.plot_widget.isVisible() and not chart.empty.isVisible() and len(_bars(chart)) == 7


SMALLEST = (320, 280)


@pytest.mark.parametrize("size", [(575, 720), (1660, 1330), SMALLEST],
                         ids=["tab-at-1280x800", "tab-at-2560x1440", "smallest"])
def test_labels_stay_inside_and_apart(qtbot, chart: KernelChart, moe, size) -> None:  # type: ignore[no-untyped-def]
    chart.window().resize(*size)
    chart.update_estimate(moe)
    chart.phase_picker.setCurrentIndex(1)  # DeepSeek-V3's prefill: 15 kernel groups
    qtbot.wait(30)
    rows = len(chart.phase.rows)  # type: ignore[union-attr]
    assert rows == 15
    view = chart.plot.vb.sceneBoundingRect()
    shown = [label for label in chart.labels[:rows] if label.isVisible()]
    if size != SMALLEST:
        assert len(shown) == rows  # every bar has its value at the sizes a window gives the tab
    rects = [label.sceneBoundingRect() for label in shown]
    for label, rect in zip(shown, rects):
        assert view.contains(rect), (label.toPlainText(), rect, view)
    for n, rect in enumerate(rects):
        assert not any(rect.intersects(other) for other in rects[n + 1:]), shown[n].toPlainText()
    ticks = _drawn_ticks(chart.plot.getAxis("left"))
    assert ticks and len(ticks) <= rows
    if size != SMALLEST:
        assert len(ticks) == rows
    # The names' column takes at most 40% of the chart: a long name is cut short, not the bars.
    assert chart.plot.getAxis("left").width() <= 0.4 * chart.plot_widget.width() + 12
    for n, (rect, text) in enumerate(ticks):
        assert all(not rect.intersects(other) for other, _ in ticks[n + 1:]), text
        assert rect.width() > 0 and "…" not in text or size == SMALLEST


def test_a_long_name_is_cut_short_on_a_narrow_tab(qtbot, chart: KernelChart, serving) -> None:  # type: ignore[no-untyped-def]
    chart.window().resize(*SMALLEST)
    chart.update_estimate(serving)
    qtbot.wait(30)
    texts = [text for _, text in _drawn_ticks(chart.plot.getAxis("left"))]
    assert len(texts) == 7  # seven rows fit even here: every one named
    assert any(t.startswith("norms") and t.endswith("…") for t in texts), texts
    assert chart.plot.getAxis("left").width() <= 0.4 * chart.plot_widget.width() + 12
    row = next(n for n, r in enumerate(chart.phase.rows) if r.name.startswith("norms"))  # type: ignore[union-attr]
    assert "<b>norms, activation, rotary, routing</b>" in chart.bar_tooltip(row)  # the tooltip names it in full


def test_the_window_has_a_kernels_tab_that_follows_the_current_estimate(qtbot, settings, catalogs, project) -> None:  # type: ignore[no-untyped-def]
    from workbench.gui.main_window import MainWindow

    win = MainWindow(settings=settings, catalogs=catalogs, project=project)  # the real engine
    win.ask_before_discard = False
    qtbot.addWidget(win)
    with qtbot.waitSignal(win.estimate_shown, timeout=10000):
        win.show()
    actions = {a.objectName(): a for a in win.findChildren(QAction)}
    assert actions["show_kernels"].shortcut().toString() == "Ctrl+Shift+K"
    shortcuts = [a.shortcut().toString() for a in win.findChildren(QAction) if not a.shortcut().isEmpty()]
    assert shortcuts.count("Ctrl+Shift+K") == 1
    actions["show_kernels"].trigger()
    chart = win.tabs.kernel_chart
    assert win.tabs.currentWidget() is chart and win.tabs.tabText(win.tabs.currentIndex()) == "Kernels"
    assert chart.phase is not None and chart.phase.title == "decode step, 4 sequences" and len(_bars(chart)) == 7
    with qtbot.waitSignal(win.estimate_shown, timeout=10000):
        win.controller.set_current("B")  # 70B LoRA fine-tuning: one forward pass, no picker
    qtbot.waitUntil(lambda: chart.phase is not None and chart.phase.title.startswith("forward"), timeout=10000)
    assert not chart.phase_picker.isVisible()
