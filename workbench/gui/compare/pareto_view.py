"""The Compare tab's Pareto page: each candidate's serving configurations on one node
(:func:`workbench.engine.pareto.pareto_fronts`) as fronts, searched on the page's worker thread
with progress and Cancel; clicking a configuration applies it to its scenario as one undo step.

The fronts are searched while the page is on screen, for the scenario the ranking's bars show and
the best-ranked candidates there (at most :data:`MAX_FRONTS`: more curves would not be told apart).
A change of inputs drops the result on screen and searches again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction, QShowEvent
from PySide6.QtWidgets import QFileDialog, QVBoxLayout, QWidget

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.engine.compare import Candidate
from workbench.engine.pareto import Front, FrontPoint, pareto_fronts
from workbench.engine.pipeline import Engine
from workbench.gui import exports
from workbench.gui.background import BackgroundRunner, Report, Stale, engine_progress
from workbench.gui.catalogs import Catalogs
from workbench.gui.charts.pareto_chart import ParetoChart
from workbench.gui.compare.compare_format import gui_words, short_name
from workbench.gui.compare.progress_row import ProgressRow
from workbench.gui.compare.solver_panel import scenario_changes
from workbench.gui.controller import ProjectController

#: Candidates drawn at most (the best-ranked ones).
MAX_FRONTS = 8


def point_changes(scenario: Scenario, candidate: Candidate, point: FrontPoint) -> dict[str, Any]:
    """The edit that makes ``scenario`` the configuration at ``point``: the candidate accelerator
    (its node and price as the fronts were estimated with), ``point.tp`` GPUs in one TP group, the
    point's batch."""
    same = candidate.accelerator == scenario.gpu
    # As the engine sizes a candidate: a price entered for it wins; the scenario's own price and
    # node count only for its own accelerator.
    price = candidate.usd_per_gpu_hour
    if price is None and same:
        price = scenario.pricing.cloud_usd_per_gpu_hour
    purchase = candidate.purchase_usd_per_gpu
    if purchase is None and same:
        purchase = scenario.pricing.purchase_usd_per_gpu
    node = candidate.node if candidate.node is not None else (scenario.node if same else None)
    pricing = scenario.pricing.model_copy(update={"cloud_usd_per_gpu_hour": price, "purchase_usd_per_gpu": purchase})
    parallel = scenario.parallel.model_copy(update={"tp": point.tp, "pp": 1, "dp": 1, "ep": 1})
    sized = scenario.model_copy(update={"gpu": candidate.accelerator, "node": node, "pricing": pricing,
                                        "num_gpus": point.tp, "parallel": parallel, "batch_size": point.batch})
    return scenario_changes(scenario, sized)


def fronts_csv(scenario: str, fronts: list[Front]) -> str:
    """Every configuration of the fronts, one row each, with whether it is on each front."""
    rows = [["scenario", "candidate", "tp", "batch", "gpus", "tokens_per_s_per_gpu", "tokens_per_s_per_user",
             "tpot_s", "ttft_s", "usd_per_million_tokens", "on_throughput_front", "on_cost_front"]]
    for front in fronts:
        on_throughput, on_cost = set(front.throughput), set(front.cost)
        for p in front.points:
            rows.append([scenario, front.candidate.label, str(p.tp), str(p.batch), str(p.gpus),
                         repr(p.tokens_per_s_per_gpu), repr(p.tokens_per_s_per_user), repr(p.tpot_s), repr(p.ttft_s),
                         "" if p.usd_per_million_tokens is None else repr(p.usd_per_million_tokens),
                         str(p in on_throughput).lower(), str(p in on_cost).lower()])
    return exports.to_csv(rows)


def fronts_json(scenario: str, fronts: list[Front]) -> str:
    return json.dumps({"scenario": scenario, "fronts": [f.as_dict() for f in fronts]}, indent=1)


class ParetoView(QWidget):
    #: Fronts are on screen (the job's generation; 0 when cleared).
    fronts_shown = Signal(int)

    def __init__(self, controller: ProjectController, catalogs: Catalogs, engine_source: Callable[[], Engine],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("pareto_view")
        self.controller, self.catalogs, self.engine_source = controller, catalogs, engine_source
        self.runner = BackgroundRunner(self)
        self.runner.finished.connect(self._on_result)
        self.runner.failed.connect(self._on_failed)
        self.runner.progress.connect(lambda _g, value: self.progress.progressed(*value))
        self.progress = ProgressRow("pareto", self)
        self.progress.cancel_requested.connect(self.cancel)
        self.chart = ParetoChart(self)
        self.chart.point_clicked.connect(self.apply_point)
        exports.add_chart_actions(self.chart, "pareto-fronts")
        for text, kind in (("Save Points as CSV…", "csv"), ("Save Points as JSON…", "json")):
            action = QAction(text, self.chart)
            action.triggered.connect(lambda *_, k=kind: self.ask_save(k))
            self.chart.addAction(action)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.progress)
        layout.addWidget(self.chart, 1)
        #: (project, scenario, candidates) to search; None: nothing to show.
        self._inputs: tuple[Project, Scenario, tuple[Candidate, ...], dict[Candidate, str]] | None = None
        self._why_none = "Compare first: the fronts are drawn for the ranking's best candidates."
        self._shown_inputs: tuple[Any, ...] | None = None
        self._all_candidates: tuple[Candidate, ...] = ()
        self._applied_note = ""  # the last click's edit, said until the next fronts are on screen
        self._dirty = False
        self.fronts: list[Front] = []
        self.scenario: Scenario | None = None
        self.progress.stopped(self._why_none)

    # --- inputs -------------------------------------------------------------------------------

    def set_inputs(self, project: Project, scenario: Scenario | None, candidates: tuple[Candidate, ...],
                   names: dict[Candidate, str], why_none: str = "") -> None:
        """What to search: ``candidates`` (best-ranked first) on ``scenario``; with no scenario,
        ``why_none`` says why there is nothing to show."""
        inputs = None if scenario is None or not candidates else (project, scenario, candidates[:MAX_FRONTS], names)
        self._all_candidates = candidates
        if _key(inputs) == _key(self._inputs) and (inputs is not None or self._why_none == why_none):
            return
        self._inputs = inputs
        self._why_none = why_none or "Tick candidates and a serving scenario to see their fronts."
        self.runner.cancel()
        self._clear()
        self._dirty = True
        if self.isVisible():
            self.refresh()

    def _clear(self) -> None:
        self.fronts, self.scenario, self._shown_inputs = [], None, None
        self.chart.set_fronts([], {})
        self.progress.stopped(self._why_none if self._inputs is None else "")
        self.fronts_shown.emit(0)

    def refresh(self) -> int:
        """Search the fronts now; returns the job's generation (0: nothing to search)."""
        self._dirty = False
        if self._inputs is None:
            self.progress.stopped(self._why_none)
            return 0
        project, scenario, candidates, _names = self._inputs
        if scenario.is_training:
            self.progress.stopped("Pareto fronts are for serving scenarios: pick a serving scenario's row.")
            return 0
        catalogs, source = self.catalogs, self.engine_source

        def job(stale: Stale, report: Report) -> list[Front]:
            return pareto_fronts(source(), scenario, candidates, lambda s: catalogs.resolve(s, project),
                                 progress=engine_progress(stale, report))

        self.progress.started(f"Searching TP × batch on one node for {len(candidates)} candidate"
                              f"{'s' * (len(candidates) != 1)} on “{scenario.name}”…")
        return self.runner.submit(job)

    def cancel(self) -> None:
        self.runner.cancel()
        self._dirty = True  # shown again, the page searches again
        self.progress.stopped("Cancelled: no fronts. Leave this page and come back (or change the comparison) "
                              "to search again.")

    def _on_result(self, generation: int, fronts: list[Front]) -> None:
        assert self._inputs is not None
        project, scenario, candidates, names = self._inputs
        self.fronts, self.scenario, self._shown_inputs = fronts, scenario, _key(self._inputs)
        self.chart.set_fronts(fronts, names)
        points = sum(len(f.points) for f in fronts)
        left_out = len(self._all_candidates) - len(candidates)
        more = f", the best-ranked {len(candidates)} of {len(self._all_candidates)}" if left_out > 0 else ""
        note, self._applied_note = self._applied_note, ""
        self.progress.stopped(f"“{scenario.name}”: {points} configurations (TP × batch on one node) of "
                              f"{len(fronts)} candidate{'s' * (len(fronts) != 1)}{more}. {note}".rstrip())
        self.fronts_shown.emit(generation)

    def _on_failed(self, generation: int, message: str) -> None:
        self.progress.stopped(f"Cannot draw the fronts: {gui_words(message)}")
        self.fronts_shown.emit(generation)

    # --- applying -----------------------------------------------------------------------------

    def apply_point(self, candidate: Candidate, point: FrontPoint) -> str | None:
        """Make the configuration at ``point`` the scenario's (one undo step); the error, if any."""
        if self.scenario is None or self._inputs is None:
            return "nothing to apply"
        name = self.scenario.name
        current = next((s for s in self.controller.project.scenarios if s.name == name), None)
        if current is None:
            return self._say(f"the scenario “{name}” is gone")
        self.controller.set_current(name)
        acc = self._inputs[3].get(candidate, candidate.label)
        text = f"Apply Pareto point: {short_name(acc)}, TP {point.tp}, batch {point.batch}"
        changes = point_changes(current, candidate, point)
        if not changes:
            return self._say("this configuration is already the scenario's", error=False)
        error = self.controller.apply_changes(changes, text)
        if error:
            return self._say(f"cannot apply: {error}")
        # Said now and again under the fronts searched for the edited scenario (the edit starts that search).
        self._applied_note = (f"Applied to the scenario: {short_name(acc)}, TP {point.tp} on {point.tp} "
                              f"GPU{'s' * (point.tp != 1)}, batch {point.batch} (Edit > Undo to go back).")
        if not self.runner.is_busy():
            self.progress.stopped(self._applied_note)
        return None

    def _say(self, text: str, error: bool = True) -> str:
        self.progress.stopped(("Cannot apply: " if error else "") + text)
        return text

    # --- export -------------------------------------------------------------------------------

    def export_text(self, kind: str) -> str | None:
        """The fronts' points as CSV or JSON (None: nothing on screen)."""
        if not self.fronts or self.scenario is None:
            return None
        return (fronts_csv if kind == "csv" else fronts_json)(self.scenario.name, self.fronts)

    def ask_save(self, kind: str) -> None:
        text = self.export_text(kind)
        if text is None:
            return
        label = "CSV files (*.csv)" if kind == "csv" else "JSON files (*.json)"
        path, _ = QFileDialog.getSaveFileName(self.window(), "Save Pareto Points", f"pareto-fronts.{kind}", label)
        if path:
            exports.save_text(self.window(), path, text)

    # --- events -------------------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._dirty:
            self.refresh()

    def shutdown(self) -> None:
        self.runner.shutdown()


def _key(inputs: tuple[Project, Scenario, tuple[Candidate, ...], dict[Candidate, str]] | None) -> tuple[Any, ...] | None:
    """What the fronts depend on: the scenario (by value), the candidates, the project's models and
    accelerators."""
    if inputs is None:
        return None
    project, scenario, candidates, _ = inputs
    return (scenario.model_dump_json(), candidates, project.models, project.accelerators)
