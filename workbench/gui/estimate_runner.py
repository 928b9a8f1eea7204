"""Estimates off the GUI thread: throttled, numbered, stale results dropped.

A request made while the runner is idle starts at once (an isolated edit shows in one estimate's
time); requests arriving within the next ``debounce_ms`` coalesce into one trailing run, so a
spin box held down costs one estimate per interval, not one per step. Every run carries a
generation number; a result older than the newest request is dropped. Jobs touch no widget:
they hand a plain :class:`Outcome` back through a queued signal to the GUI thread.

After the main estimate, a second job computes the sweep for the sweep chart; it is skipped if a
newer request arrived in the meantime.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal

from workbench.core.errors import WorkbenchError
from workbench.core.project import Project
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.engine.estimate import Estimate
from workbench.engine.fixes import Fix, memory_fixes
from workbench.engine.pipeline import Engine
from workbench.engine.sweep import Axis, run_sweep
from workbench.engine.variations import validated_value
from workbench.gui.catalogs import Catalogs

log = logging.getLogger(__name__)

DEBOUNCE_MS = 35
#: Pause between an estimate reaching the charts and the start of its sweep.
SWEEP_DELAY_MS = 15

#: Sweep grids: powers of two, within each field's sensible range.
SWEEP_VALUES: dict[str, tuple[int, ...]] = {
    "batch_size": tuple(2**i for i in range(10)),  # 1 .. 512
    "seq_len": tuple(2**i for i in range(8, 18)),  # 256 .. 131072
}


@dataclass
class Outcome:
    """One estimate, or why there is none."""

    generation: int
    scenario: Scenario
    resolved: ResolvedScenario | None = None
    estimate: Estimate | None = None
    error: str | None = None
    elapsed_s: float = 0.0
    requested_at: float = 0.0
    #: Read from the project file's estimate cache (its inputs matched), not computed now.
    cached: bool = False
    #: Changes that make a plan that does not fit fit (None: it fits, or they were not sought).
    fixes: list[Fix] | None = None


@dataclass
class SweepOutcome:
    generation: int
    field: str
    values: list[int] = field(default_factory=list)
    memory: list[float | None] = field(default_factory=list)
    capacity: float | None = None
    usable: float | None = None
    speed: list[float | None] = field(default_factory=list)
    speed_key: str = "performance.tokens_per_s"
    error: str | None = None


class _Bridge(QObject):
    """Lives on the GUI thread; jobs emit through it (queued connection across threads)."""

    done = Signal(object)
    sweep_done = Signal(object)


class _Job(QRunnable):
    def __init__(self, fn: Callable[[], Any], emit: Callable[[Any], None]) -> None:
        super().__init__()
        self._fn, self._emit = fn, emit
        self.setAutoDelete(True)

    def run(self) -> None:
        try:
            result = self._fn()
        except Exception:  # a job must never take the worker thread down; the log has it
            log.exception("estimate job failed")
            return
        if result is not None:
            self._emit(result)


class EstimateRunner(QObject):
    """Runs the engine for the latest requested scenario and reports on the GUI thread."""

    estimate_ready = Signal(object)  # Outcome
    sweep_ready = Signal(object)  # SweepOutcome

    def __init__(self, catalogs: Catalogs, engine: Engine | Callable[[], Engine], parent: QObject | None = None,
                 debounce_ms: int = DEBOUNCE_MS) -> None:
        super().__init__(parent)
        self._catalogs = catalogs
        self._engine_source = engine
        self._engine: Engine | None = engine if isinstance(engine, Engine) else None
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)  # one estimate at a time; newer requests supersede older ones
        self._bridge = _Bridge()
        self._bridge.done.connect(self._on_done)
        self._bridge.sweep_done.connect(self._on_sweep_done)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(debounce_ms)
        self._timer.timeout.connect(self._on_cooldown)
        self._pending: tuple[Project, Scenario, float] | None = None
        self._sweep_request: tuple[int, Project, Scenario, str] | None = None
        self.generation = 0
        self.sweep_field = "batch_size"
        self.sweep_enabled = True
        self.last_outcome: Outcome | None = None

    @property
    def engine(self) -> Engine:
        """The engine (built on first use; jobs build it on the worker thread, off start-up's path)."""
        if self._engine is None:
            self._engine = self._engine_source()  # type: ignore[operator]
        return self._engine

    @property
    def loaded_engine(self) -> Engine | None:
        """The engine if it is built already (None while the first job still loads the plugins)."""
        return self._engine

    # --- requests -----------------------------------------------------------------------------

    def request(self, project: Project, scenario: Scenario) -> None:
        self._pending = (project, scenario, time.perf_counter())
        if not self._timer.isActive():
            self._launch()
            self._timer.start()

    def use_cached(self, project: Project, resolved: ResolvedScenario, estimate: Estimate) -> None:
        """Show an estimate known to match ``resolved`` (same input hash) without computing it.

        It supersedes any pending or running request, as a fresh result would; the sweep follows.
        """
        self._pending = None
        self.generation += 1
        scenario = resolved.scenario
        sweep_field = self.sweep_field if self.sweep_enabled else None
        self._sweep_request = (self.generation, project, scenario, sweep_field) if sweep_field else None
        outcome = Outcome(self.generation, scenario, resolved, estimate, cached=True,
                          requested_at=time.perf_counter())
        if estimate.get("memory.fits") is False and self._engine is not None:
            # Fixes are not cached: a few dozen memory-only runs, found here when the engine is
            # loaded (at start-up it is not, and the warning's own text stands in).
            outcome.fixes = memory_fixes(self._engine, resolved)
        self._on_done(outcome)

    def _on_cooldown(self) -> None:
        if self._pending is not None:
            self._launch()
            self._timer.start()

    def _launch(self) -> None:
        if self._pending is None:
            return
        project, scenario, requested_at = self._pending
        self._pending = None
        self.generation += 1
        generation = self.generation
        catalogs = self._catalogs
        sweep_field = self.sweep_field if self.sweep_enabled else None

        def work() -> Outcome:
            try:
                engine = self.engine
            except Exception as exc:  # plugin loading failed: the results panel says so
                log.exception("cannot build the estimation engine")
                return Outcome(generation, scenario, error=f"cannot load estimators: {exc}", requested_at=requested_at)
            outcome = _estimate(generation, engine, catalogs, project, scenario)
            outcome.requested_at = requested_at
            return outcome

        self.pool.start(_Job(work, self._bridge.done.emit))
        self._sweep_request = (generation, project, scenario, sweep_field) if sweep_field else None

    def _on_done(self, outcome: Outcome) -> None:
        if outcome.generation != self.generation:
            return  # stale: a newer request is on its way
        self.last_outcome = outcome
        self.estimate_ready.emit(outcome)
        if outcome.estimate is not None:
            # The sweep waits until the charts have painted this estimate: it would otherwise
            # compete with them for the interpreter while the user watches.
            QTimer.singleShot(SWEEP_DELAY_MS, self, lambda: self._start_sweep(outcome.generation))

    def _start_sweep(self, generation: int) -> None:
        request = self._sweep_request
        if request is None or request[0] != generation or generation != self.generation or self._pending:
            return
        self._sweep_request = None
        _, project, scenario, field_name = request
        def stale() -> bool:  # read on the worker thread, between sweep points
            return generation != self.generation

        def sweep() -> SweepOutcome | None:
            if stale():
                return None  # a newer edit arrived: its own sweep follows
            return _sweep(generation, self.engine, self._catalogs, project, scenario, field_name, stale)

        self.pool.start(_Job(sweep, self._bridge.sweep_done.emit))

    def _on_sweep_done(self, outcome: SweepOutcome) -> None:
        if outcome.generation == self.generation:
            self.sweep_ready.emit(outcome)

    def is_busy(self) -> bool:
        return self._pending is not None or self.pool.activeThreadCount() > 0

    def shutdown(self) -> None:
        self._timer.stop()
        self._pending = None
        self.generation += 1  # whatever still finishes is stale
        self.pool.clear()
        self.pool.waitForDone(5000)


def _estimate(generation: int, engine: Engine, catalogs: Catalogs, project: Project, scenario: Scenario) -> Outcome:
    start = time.perf_counter()
    outcome = Outcome(generation, scenario)
    try:
        outcome.resolved = catalogs.resolve(scenario, project)
        outcome.estimate = engine.run(outcome.resolved)
        if outcome.estimate.get("memory.fits") is False:
            outcome.fixes = memory_fixes(engine, outcome.resolved)
    except WorkbenchError as exc:
        outcome.error = str(exc)
    except Exception as exc:  # noqa: BLE001 - shown in the results panel, never raised at the user
        log.error("estimate failed:\n%s", traceback.format_exc())
        outcome.error = f"{type(exc).__name__}: {exc}"
    outcome.elapsed_s = time.perf_counter() - start
    return outcome


def _number(estimate: Estimate | None, key: str) -> float | None:
    if estimate is None:
        return None
    value = estimate.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _sweep(generation: int, engine: Engine, catalogs: Catalogs, project: Project, scenario: Scenario,
           field_name: str, stale: Callable[[], bool] = lambda: False) -> SweepOutcome | None:
    speed_key = "performance.step_time_s" if scenario.is_training else "performance.tokens_per_s"
    result = SweepOutcome(generation, field_name, speed_key=speed_key)
    values = []
    for value in SWEEP_VALUES[field_name]:
        try:
            values.append(validated_value(scenario, field_name, value))
        except WorkbenchError:
            continue  # e.g. a batch that does not divide the global batch
    try:
        anchor = catalogs.resolve(scenario, project)
    except Exception as exc:  # noqa: BLE001
        result.error = str(exc)
        return result
    for point in run_sweep(scenario, [Axis(field_name, field_name, tuple(values))], lambda s: anchor, engine):
        if stale():
            return None
        result.values.append(int(point.settings[field_name]))
        result.memory.append(_number(point.estimate, "memory.per_gpu.total"))
        result.speed.append(_number(point.estimate, speed_key))
        if result.capacity is None:
            result.capacity = _number(point.estimate, "memory.gpu_capacity")
            result.usable = _number(point.estimate, "memory.usable_capacity")
    if result.capacity is None:
        result.capacity = anchor.cluster.accelerator.memory_bytes
    return result
