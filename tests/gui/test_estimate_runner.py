"""Estimates run off the GUI thread, numbered; stale ones are dropped."""

from __future__ import annotations

import threading
import time

from gui_fakes import FakeMemory

from workbench.core.project import Project
from workbench.engine.estimator import EstimateContext
from workbench.engine.pipeline import Engine
from workbench.engine.quantity import Outputs
from workbench.gui.estimate_runner import EstimateRunner, Outcome


class SlowMemory(FakeMemory):
    def __init__(self) -> None:
        self.threads: list[int] = []

    def estimate(self, ctx: EstimateContext) -> Outputs:
        self.threads.append(threading.get_ident())
        time.sleep(0.15)
        return super().estimate(ctx)


def test_runs_off_the_gui_thread_and_drops_stale_results(qtbot, catalogs, project: Project) -> None:  # type: ignore[no-untyped-def]
    slow = SlowMemory()
    runner = EstimateRunner(catalogs, Engine([slow]), debounce_ms=5)
    received: list[Outcome] = []
    runner.estimate_ready.connect(received.append)
    runner.sweep_enabled = False
    first = project.scenarios[0]
    runner.request(project, first)  # starts at once (generation 1)
    qtbot.wait(40)
    runner.request(project, first.model_copy(update={"batch_size": 7}))  # generation 2, while 1 still runs
    qtbot.waitUntil(lambda: bool(received) and not runner.is_busy(), timeout=5000)
    qtbot.wait(50)
    assert [o.generation for o in received] == [2]
    assert received[0].estimate.resolved.scenario.batch_size == 7
    assert threading.get_ident() not in slow.threads
    runner.shutdown()


def test_bursts_coalesce_into_few_runs(qtbot, catalogs, project: Project, fake_engine) -> None:  # type: ignore[no-untyped-def]
    runner = EstimateRunner(catalogs, fake_engine, debounce_ms=40)
    runner.sweep_enabled = False
    received: list[Outcome] = []
    runner.estimate_ready.connect(received.append)
    base = project.scenarios[0]
    for batch in range(1, 21):
        runner.request(project, base.model_copy(update={"batch_size": batch}))
    qtbot.waitUntil(lambda: bool(received) and received[-1].scenario.batch_size == 20 and not runner.is_busy(),
                    timeout=5000)
    assert runner.generation <= 3  # first at once, the rest in one trailing run
    runner.shutdown()


def test_engine_failures_become_outcome_errors(qtbot, catalogs, project: Project) -> None:  # type: ignore[no-untyped-def]
    def broken() -> Engine:
        raise RuntimeError("plugin host is broken")

    runner = EstimateRunner(catalogs, broken)
    with qtbot.waitSignal(runner.estimate_ready, timeout=5000) as blocker:
        runner.request(project, project.scenarios[0])
    assert "plugin host is broken" in blocker.args[0].error
    runner.shutdown()


def test_sweep_points_carry_memory_and_speed(qtbot, catalogs, project: Project, fake_engine) -> None:  # type: ignore[no-untyped-def]
    runner = EstimateRunner(catalogs, fake_engine)
    runner.sweep_field = "seq_len"
    with qtbot.waitSignal(runner.sweep_ready, timeout=5000) as blocker:
        runner.request(project, project.scenarios[0])
    sweep = blocker.args[0]
    assert sweep.field == "seq_len" and sweep.values[0] == 256
    assert all(m is not None for m in sweep.memory) and sweep.memory == sorted(sweep.memory)
    assert sweep.capacity == catalogs.accelerators["h100-sxm"].memory_bytes
    assert sweep.speed_key == "performance.tokens_per_s" and all(s is not None for s in sweep.speed)
    runner.shutdown()
