"""A third-party estimator stuck in a loop does not freeze the window: its estimate runs on the
runner's worker thread, the watchdog stops it at the time limit, the outcome names the plugin, the
GUI thread keeps serving events meanwhile, and Help → Plugins… lists the plugin as failed."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pluggy
import pytest
from PySide6.QtCore import QSettings, QTimer

from workbench.core.project import Project
from workbench.engine import guard
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.pipeline import Engine
from workbench.gui.dialogs.plugins_dialog import COLUMNS, PluginsDialog
from workbench.gui.estimate_runner import EstimateRunner, Outcome
from workbench.gui.settings import Settings
from workbench.pluginhost import FIRST_PARTY, PluginHost

hookimpl = pluggy.HookimplMarker("workbench")


class Stuck:
    info = EstimatorInfo(id="stuck.loop", title="Stuck", version="1", produces=("stuck.value",),
                         needs=("memory.per_gpu.total",))

    def estimate(self, ctx):  # type: ignore[no-untyped-def]
        while True:
            pass


class StuckPlugin:
    @hookimpl
    def workbench_register_estimators(self, register):  # type: ignore[no-untyped-def]
        register(Stuck())


@pytest.fixture
def short_limit() -> Iterator[None]:
    before = guard.timeout_s()
    guard.set_timeout(1.0)
    yield
    guard.set_timeout(before)


def test_a_stuck_plugin_times_out_on_the_worker_and_the_window_keeps_responding(  # type: ignore[no-untyped-def]
        qtbot, catalogs, project: Project, settings: QSettings, short_limit: None) -> None:
    host = PluginHost(FIRST_PARTY, entry_point_group=None, extra_plugins=[("stuck", StuckPlugin())])
    runner = EstimateRunner(catalogs, lambda: Engine(host.registry.estimators))
    runner.sweep_enabled = False
    ticks: list[float] = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start(20)
    started = time.monotonic()
    with qtbot.waitSignal(runner.estimate_ready, timeout=10_000) as blocker:
        runner.request(project, project.scenarios[0])
    timer.stop()
    outcome: Outcome = blocker.args[0]
    assert outcome.error is None and outcome.estimate is not None
    failures = {f.estimator: f.message for f in outcome.estimate.failures}
    assert failures == {"stuck.loop": "plugin stuck: estimate of stuck.loop timed out after 1 s"}
    assert outcome.estimate.get("memory.per_gpu.total") > 0
    # The GUI thread served its timer all along: no gap near the second the plugin held its thread.
    gaps = [b - a for a, b in zip([started, *ticks], ticks)]
    assert time.monotonic() - started >= 1.0 and len(ticks) >= 5 and max(gaps) < 0.5

    dialog = PluginsDialog(host.status_list(), Settings(settings))
    qtbot.addWidget(dialog)
    row = [s.name for s in host.status_list()].index("stuck")
    assert dialog.table.item(row, COLUMNS.index("Status")).text() == "failed"
    assert dialog.table.item(row, COLUMNS.index("Error")).text() == (
        "disabled while running: estimate of stuck.loop timed out after 1 s")

    # The next estimate does not wait for the plugin again.
    with qtbot.waitSignal(runner.estimate_ready, timeout=5000) as again:
        runner.request(project, project.scenarios[0].model_copy(update={"batch_size": 2}))
    assert again.args[0].elapsed_s < 0.5
    runner.shutdown()
