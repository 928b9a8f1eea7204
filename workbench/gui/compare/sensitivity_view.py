"""Sensitivity of the current scenario: the tornado of its headline number, low / likely / high of
its headline figures, and whether a swing changes the compare view's recommendation.

The tornado (:func:`workbench.engine.sensitivity.tornado`, every factor swung alone) comes first;
then, on the same worker job, each factor is swung at both ends over the compare view's
candidates, scenarios and targets and the recommendation of each swung comparison is compared
with the unswung one (as :func:`~workbench.engine.sensitivity.comparison_tornado` does, checking
between comparisons whether a newer request superseded the job). When that check would take long
(many candidates on a training scenario) it waits for a click instead.

The metric picker chooses which headline number the bars swing: any of
:data:`~workbench.engine.sensitivity.HEADLINES` the scenario has a value for. The choice is a
preference (kept in the settings like the sweep chart's axis, :meth:`set_preferred_metric`); a
scenario without that number (a time to train when serving) shows its natural headline instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.project import Project
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.engine import sensitivity as S
from workbench.engine.compare import Candidate, Comparison, Resolve, Targets, compare
from workbench.engine.pipeline import Engine
from workbench.gui import exports, theme
from workbench.gui.background import BackgroundRunner, Report, Stale
from workbench.gui.catalogs import Catalogs
from workbench.gui.charts.tornado_chart import TornadoChart, factor_value
from workbench.gui.compare.compare_format import gui_words, short_name, with_unit
from workbench.gui.compare.solver_panel import CompareSetup
from workbench.gui.controller import ProjectController

DEBOUNCE_MS = 120
#: The recommendation check starts by itself when it should take at most this long.
AUTO_CHECK_S = 4.0


@dataclass(frozen=True)
class Change:
    """A swing that changes the recommendation: the factor, which end, and the new pick."""

    factor: S.Factor
    end: str  # "low" or "high"
    at: float
    recommendation: str | None  # candidate label, None: nothing qualifies at that end


@dataclass
class Check:
    """The recommendation at both ends of every factor."""

    recommendation: str | None
    factors: int
    changes: list[Change] = field(default_factory=list)
    why_none: str | None = None


@dataclass
class SensitivityOutcome:
    sensitivity: S.Sensitivity
    check: Check | None = None
    check_estimate_s: float | None = None  # set when the check was left for a click
    check_skipped: str = ""  # why there is no check (no candidates ...)


def recommendation_changes(engine: Engine, factors: Sequence[S.Factor], scenarios: Sequence[Scenario],
                           candidates: Sequence[Candidate], resolve: Resolve,
                           targets: Targets, base: Comparison, stale: Stale = lambda: False,
                           report: Report = lambda _: None) -> Check | None:
    """Swing each factor to both ends over the comparison; None when ``stale()`` turned true."""
    label = None if base.recommendation is None else base.recommendation.label
    check = Check(label, len(factors), why_none=base.why_no_recommendation)
    # the assumption swings at once: one point group per candidate and layout for all of them
    at_ends = S.swung_comparisons(engine, factors, scenarios, candidates, resolve, targets)
    for n, factor in enumerate(factors):
        for end, at in (("low", factor.low), ("high", factor.high)):
            if stale():
                return None
            if factor in at_ends:
                swung = at_ends[factor][0 if end == "low" else 1]
            elif factor.kind == "price":
                rental, purchase = (at, 1.0) if factor.target == "rental" else (1.0, at)
                swung = compare(engine, scenarios, candidates, resolve, targets,
                                price_scale=rental, purchase_scale=purchase)
            else:
                swung = compare(engine, [factor.apply(s, at) for s in scenarios], candidates, resolve, targets)
            pick = None if swung.recommendation is None else swung.recommendation.label
            if pick != label:
                check.changes.append(Change(factor, end, at, pick))
        report(("check", n + 1, len(factors)))
    return check


class SensitivityView(QWidget):
    #: The tornado of the newest request is on screen (generation).
    sensitivity_shown = Signal(int)
    #: The recommendation check of the newest request finished, or was left for a click (generation).
    check_finished = Signal(int)
    #: The user picked the metric to swing (a HEADLINES key): a preference to remember.
    metric_chosen = Signal(str)

    def __init__(self, controller: ProjectController, catalogs: Catalogs, engine_source: Callable[[], Engine],
                 setup: CompareSetup, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sensitivity_view")
        self.controller = controller
        self.catalogs = catalogs
        self.engine_source = engine_source
        self.setup = setup  # the compare view: what the recommendation check compares
        self._shown_inputs: tuple[object, ...] | None = None
        self.runner = BackgroundRunner(self)
        self.runner.progress.connect(self._on_progress)
        self.runner.finished.connect(self._on_outcome)
        self.runner.failed.connect(self._on_failed)
        self.outcome: SensitivityOutcome | None = None
        self._dirty = True
        self._force_check = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self._run)
        #: The headline key the user picked ("" : the scenario's natural headline).
        self.preferred_metric = ""

        self.metric_combo = QComboBox(self)
        self.metric_combo.setObjectName("sensitivity_metric")
        self.metric_combo.setToolTip("The headline number the bars swing (the ones this scenario has)")
        self.metric_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.metric_combo.activated.connect(self._on_metric_picked)
        picker = QHBoxLayout()
        picker.setContentsMargins(0, 0, 0, 0)
        metric_label = QLabel("&Metric:", self)
        metric_label.setBuddy(self.metric_combo)
        picker.addWidget(metric_label)
        picker.addWidget(self.metric_combo)
        picker.addStretch(1)
        self.header = QLabel("", self)
        self.header.setObjectName("sensitivity_header")
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.chart = TornadoChart(self)
        self.spans = QTableWidget(0, 4, self)
        self.spans.setObjectName("sensitivity_spans")
        exports.add_table_actions(self.spans, "sensitivity")
        exports.add_chart_actions(self.chart, "sensitivity")
        self.spans.setHorizontalHeaderLabels(["Headline figure", "Low", "Likely", "High"])
        self.spans.verticalHeader().setVisible(False)
        self.spans.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.spans.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.spans.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.spans.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        for column in (1, 2, 3):
            self.spans.horizontalHeader().setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.spans.setToolTip("Low and high: every efficiency assumption at one end of its plausible range at "
                              "once; likely: every assumption at its value")
        self.notes = QLabel("", self)
        self.notes.setObjectName("sensitivity_notes")
        self.notes.setWordWrap(True)
        self.notes.setTextFormat(Qt.TextFormat.RichText)
        self.check_button = QPushButton("Check the recommendation at both ends of every swing", self)
        self.check_button.setVisible(False)
        self.check_button.clicked.connect(self.check_now)
        self.chart.title.setVisible(False)  # the header above says what the bars are
        lower = QWidget(self)
        lower_layout = QVBoxLayout(lower)
        lower_layout.setContentsMargins(0, 0, 0, 0)
        lower_layout.addWidget(self.notes)
        lower_layout.addWidget(self.check_button, 0, Qt.AlignmentFlag.AlignLeft)
        lower_layout.addWidget(QLabel("<b>Low / likely / high</b> of the headline figures", lower))
        lower_layout.addWidget(self.spans)
        # The notes and the table scroll in a low window instead of being cut at their bottom.
        lower_scroll = QScrollArea(self)
        lower_scroll.setObjectName("sensitivity_lower")
        lower_scroll.setWidgetResizable(True)
        lower_scroll.setFrameShape(QFrame.Shape.NoFrame)
        lower_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        lower_scroll.setWidget(lower)
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.chart)
        splitter.addWidget(lower_scroll)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(picker)
        layout.addWidget(self.header)
        layout.addWidget(splitter, 1)

        controller.changed.connect(self.schedule)
        setup_changed = getattr(setup, "setup_changed", None)  # the compare view's signal
        if setup_changed is not None:
            setup_changed.connect(self.schedule)

    # --- running ------------------------------------------------------------------------------

    def schedule(self) -> None:
        self._dirty = True
        if self.isVisible():
            self._timer.start()

    def refresh(self, force_check: bool = False) -> int:
        """Run now, even when nothing changed; returns the job's generation (0: no scenario)."""
        self._timer.stop()
        self._force_check = force_check
        return self._run(always=True)

    def check_now(self) -> int:
        return self.refresh(force_check=True)

    def set_preferred_metric(self, key: str) -> None:
        """Swing ``key`` (a HEADLINES key; "" for the natural headline) from the next run on."""
        if key and key not in _HEADLINE_KEYS:
            key = ""  # a key from an older version's settings: nothing to swing
        if key != self.preferred_metric:
            self.preferred_metric = key
            self._shown_inputs = None
            self.schedule()

    def pick_metric(self, key: str) -> int:
        """Choose the metric as the user does; returns the job's generation (0: no scenario)."""
        self.preferred_metric = key
        self.metric_chosen.emit(key)
        return self.refresh()

    def _on_metric_picked(self, index: int) -> None:
        key = self.metric_combo.itemData(index)
        if key and key != self.shown_metric():
            self.pick_metric(key)

    def shown_metric(self) -> str:
        """The key of the metric the chart shows ("" before the first tornado)."""
        sens = self.chart.sensitivity
        return sens.metric if sens is not None else ""

    def _fill_metrics(self, sens: S.Sensitivity) -> None:
        """The picker offers the headline figures this scenario has, the one shown selected."""
        self.metric_combo.blockSignals(True)
        self.metric_combo.clear()
        for span in sens.spans:
            self.metric_combo.addItem(span.title, span.key)
        index = self.metric_combo.findData(sens.metric)
        if index < 0:
            self.metric_combo.addItem(sens.metric_title, sens.metric)
            index = self.metric_combo.count() - 1
        self.metric_combo.setCurrentIndex(index)
        self.metric_combo.blockSignals(False)

    def _run(self, always: bool = False) -> int:
        self._dirty = False
        scenario = self.controller.scenario
        if scenario is None:
            return 0
        project = self.controller.project
        force, self._force_check = self._force_check, False
        candidates, scenarios, targets = self.setup.candidates(), self.setup.scenarios(), self.setup.targets()
        inputs = (scenario, project.models, project.accelerators, candidates, scenarios, targets)
        if not always and self._same_inputs(inputs):
            return 0  # an edit elsewhere in the project: nothing here changed
        self._shown_inputs = inputs
        catalogs, source, metric = self.catalogs, self.engine_source, self.preferred_metric
        self.check_button.setVisible(False)
        self.notes.setText("Estimating the swings…")

        def job(stale: Stale, report: Report) -> SensitivityOutcome | None:
            return _sensitivity(source(), catalogs, project, scenario, scenarios, candidates, targets, force,
                                stale, report, metric)

        return self.runner.submit(job)

    def _same_inputs(self, inputs: tuple[object, ...]) -> bool:
        """Nothing this view reads changed (scenarios are immutable: the same objects, the same numbers)."""
        shown = self._shown_inputs
        if shown is None or self.runner.is_busy() or self.outcome is None:
            return False
        scenario, models, accelerators, candidates, scenarios, targets = inputs
        old_scenario, old_models, old_accelerators, old_candidates, old_scenarios, old_targets = shown
        return (scenario is old_scenario and models is old_models and accelerators is old_accelerators
                and candidates == old_candidates and targets == old_targets
                and len(scenarios) == len(old_scenarios)  # type: ignore[arg-type]
                and all(a is b for a, b in zip(scenarios, old_scenarios)))  # type: ignore[call-overload]

    def _on_progress(self, generation: int, value: object) -> None:
        if isinstance(value, S.Sensitivity):
            self._show_sensitivity(value, set())
            self.notes.setText("Checking whether any swing changes the recommendation of the Compare tab…")
            self.sensitivity_shown.emit(generation)
        elif isinstance(value, tuple) and value[0] == "check":
            self.notes.setText(f"Checking whether any swing changes the recommendation of the Compare tab… "
                               f"{value[1]} of {value[2]} assumptions")

    def _on_outcome(self, generation: int, outcome: SensitivityOutcome | None) -> None:
        if outcome is None:
            return
        self.outcome = outcome
        check = outcome.check
        changing = {c.factor.id for c in check.changes} if check is not None else set()
        self._show_sensitivity(outcome.sensitivity, changing)
        self.notes.setText(self._notes_html(outcome))
        self.check_button.setVisible(outcome.check_estimate_s is not None)
        if outcome.check_estimate_s is not None:
            self.check_button.setText(f"Check the recommendation at both ends of every swing "
                                      f"(about {outcome.check_estimate_s:.0f} s)")
        self.sensitivity_shown.emit(generation)
        self.check_finished.emit(generation)

    def _on_failed(self, generation: int, message: str) -> None:
        self.header.setText(f"<span style='color:{theme.BAD_COLOUR}'><b>No sensitivity:</b> "
                            f"{escape(gui_words(message))}</span>")
        self.notes.setText("")
        self.chart.update_sensitivity(None)
        self.spans.setRowCount(0)
        self.sensitivity_shown.emit(generation)
        self.check_finished.emit(generation)

    # --- showing ------------------------------------------------------------------------------

    def _show_sensitivity(self, sens: S.Sensitivity, changing: set[str]) -> None:
        self._fill_metrics(sens)
        base = with_unit(sens.base, sens.unit) if sens.base is not None else "n/a"
        self.header.setText(f"How much each assumption moves <b>{escape(sens.metric_title)}</b> of "
                            f"“{escape(sens.scenario)}” (as set, likely <b>{escape(base)}</b>), each swung alone "
                            f"over its plausible range. Bars sorted by swing.")
        self.chart.update_sensitivity(sens, changing)
        self.spans.setRowCount(len(sens.spans))
        for row, span in enumerate(sens.spans):
            cells = [span.title, with_unit(span.low, span.unit),
                     with_unit(span.likely, span.unit), with_unit(span.high, span.unit)]
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if column:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.spans.setItem(row, column, item)
        self.spans.resizeRowsToContents()
        height = self.spans.horizontalHeader().height() + 2 * self.spans.frameWidth()
        height += sum(self.spans.rowHeight(r) for r in range(self.spans.rowCount()))
        self.spans.setFixedHeight(height)

    def _name(self, label: str | None) -> str:
        if label is None:
            return "nothing (no candidate qualifies)"
        acc = self.catalogs.accelerators.get(label) or self.controller.project.accelerators.get(label)
        return short_name(acc.name) if acc is not None else label

    def _notes_html(self, outcome: SensitivityOutcome) -> str:
        sens = outcome.sensitivity
        lines = [escape(n) for n in sens.notes]
        still = [b.factor.title for b in sens.bars if b.swing == 0]
        if still:
            lines.append(f"<small>Not moved by: {escape(', '.join(still))}.</small>")
        check = outcome.check
        if outcome.check_skipped:
            lines.append(escape(outcome.check_skipped))
        elif outcome.check_estimate_s is not None:
            lines.append("The check whether a swing changes the recommendation is slow here "
                         f"(about {outcome.check_estimate_s:.0f} s): start it below.")
        elif check is not None:
            name = escape(self._name(check.recommendation))
            if not check.changes:
                lines.insert(0, f"<span style='color:{theme.OK_COLOUR}'>✔</span> The recommendation of the "
                                f"Compare tab (<b>{name}</b>) holds at both ends of all {check.factors} swings.")
            else:
                items = "".join(
                    f"<br>&nbsp;&nbsp;• {escape(c.factor.title)} at its {c.end} end "
                    f"({escape(factor_range_end(c))}): <b>{escape(self._name(c.recommendation))}</b>"
                    for c in check.changes)
                lines.insert(0, f"<span style='color:{theme.WARN_COLOUR}'>⚠</span> <b>The recommendation "
                                f"changes</b> (now <b>{name}</b>; marked ⚠ in the chart):{items}")
        return "<br>".join(lines)

    # --- events -------------------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._dirty:
            self._timer.start(0)

    def shutdown(self) -> None:
        self._timer.stop()
        self.runner.shutdown()


def factor_range_end(change: Change) -> str:
    return factor_value(change.at, change.factor.unit)


_HEADLINE_KEYS = frozenset(key for key, _, _ in S.HEADLINES)


def _metric_for(engine: Engine, resolved: ResolvedScenario, preferred: str) -> str | None:
    """``preferred`` when the scenario has a number for it, else None (its natural headline)."""
    if not preferred:
        return None
    value = engine.run(resolved).get(preferred)
    return preferred if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _sensitivity(engine: Engine, catalogs: Catalogs, project: Project, scenario: Scenario,
                 scenarios: Sequence[Scenario], candidates: Sequence[Candidate], targets: Targets, force: bool,
                 stale: Stale, report: Report, metric: str = "") -> SensitivityOutcome | None:
    """The worker job: the tornado of ``metric`` (or the natural headline; reported at once), then
    the recommendation check."""
    resolved = catalogs.resolve(scenario, project)
    sens = S.tornado(engine, resolved, _metric_for(engine, resolved, metric))
    report(sens)
    outcome = SensitivityOutcome(sens)
    if not candidates or not scenarios:
        outcome.check_skipped = "Tick candidates and scenarios in the Compare tab to check the recommendation."
        return outcome
    factors = [b.factor for b in sens.bars]

    def resolve(s: Scenario) -> ResolvedScenario:
        return catalogs.resolve(s, project)

    start = time.perf_counter()
    base = compare(engine, scenarios, candidates, resolve, targets)
    took = time.perf_counter() - start
    # one comparison per end of a price or pricing factor; the assumption swings run together, in
    # about the time of four comparisons for a dozen of them (tests/benchmarks/bench_compare.py)
    one_by_one = sum(1 for f in factors if f.kind != "assumption")
    estimate_s = took * (2 * one_by_one + (4 if one_by_one < len(factors) else 0))
    if estimate_s > AUTO_CHECK_S and not force:
        outcome.check_estimate_s = estimate_s
        return outcome
    if stale():
        return None
    outcome.check = recommendation_changes(engine, factors, scenarios, candidates, resolve, targets, base,
                                           stale, report)
    return None if outcome.check is None else outcome

