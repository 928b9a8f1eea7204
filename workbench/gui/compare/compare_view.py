"""Compare accelerators: pick candidates and scenarios, set targets, read the ranked table, the
recommendation and why every other candidate loses.

The comparison runs on the view's worker thread (:class:`BackgroundRunner`: numbered jobs, stale
results dropped) through :class:`Comparer`, which sizes each (scenario, candidate) pair once and
re-ranks kept pairs when only targets or the candidate set change. It runs only while the view is
on screen; edits made while it is hidden are caught up when it shows again.

Beside the ranking: the decision confidence (how often each candidate wins over draws of the
uncertain assumptions), a column of the table computed after each comparison on a runner of its
own, with progress and Cancel; a new comparison drops it. Two more pages next to the ranking
search configurations per candidate: the Pareto fronts (:class:`ParetoView`, a click applies a
configuration) and the ranking at equal service level (:class:`IsoSlaView`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from html import escape

from PySide6.QtCore import QEvent, QItemSelection, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFontMetrics, QPalette, QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStyle,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.core.errors import InputError
from workbench.core.hardware import Accelerator
from workbench.core.project import Comparison as SavedComparison
from workbench.core.scenario import Scenario
from workbench.engine.compare import METRIC_BY_ID, Candidate, Comparison, ScenarioComparison, Targets
from workbench.engine.confidence import Confidence, decision_confidence
from workbench.engine.pipeline import Engine
from workbench.gui import exports, theme
from workbench.gui.background import BackgroundRunner, Report, Stale, engine_progress
from workbench.gui.catalogs import Catalogs
from workbench.gui.charts.compare_chart import CompareBarChart
from workbench.gui.compare.compare_format import CONFIDENCE_DRAWS, gui_words, headline, low_high, short_name
from workbench.gui.compare.compare_table import (
    COLUMN_INDEX,
    COLUMNS,
    ComparisonSortProxy,
    ComparisonTableModel,
)
from workbench.gui.compare.comparer import Comparer, CompareRequest, CompareResult
from workbench.gui.compare.iso_sla_view import IsoSlaView, choose_draws
from workbench.gui.compare.pareto_view import ParetoView
from workbench.gui.compare.progress_row import ProgressRow
from workbench.gui.compare.solver_panel import SolverPanel, parse_amount
from workbench.gui.controller import ProjectController
from workbench.gui.elided_label import WholeLinesLabel, fit_to_width

DEBOUNCE_MS = 40
#: Below this width (logical pixels) the setup tabs stack above the results instead of beside them.
STACK_BELOW_PX = 1200
#: The accelerator column's widest (a longer name is elided; its tooltip names it in full).
ACCELERATOR_MAX_PX = 120
#: Columns a narrow table leaves out first (each row's tooltip keeps their figures), and the
#: verdict's least width (it stretches into what is left; its text is whole in the tooltip).
DROP_FOR_WIDTH = ("tco_rent_usd", "tco_buy_usd", "tokens_per_kwh", "layout", "fits", "ttft", "gpus", "tpot")
VERDICT_MIN_PX = 90
#: The name of the comparison the view keeps in the project (its first saved comparison).
SAVED_NAME = "Compare tab"
ID_ROLE = Qt.ItemDataRole.UserRole
VENDORS = (("", "All vendors"), ("nvidia", "NVIDIA"), ("amd", "AMD"), ("intel", "Intel"), ("google", "Google"),
           ("apple", "Apple"), ("other", "Other"), ("custom", "This project's own"))

#: (Targets field, label, unit, factor from the unit to the field's unit, tooltip)
TARGET_FIELDS: tuple[tuple[str, str, str, float, str], ...] = (
    ("max_ttft_s", "Max TTFT", "ms", 1e-3, "Time to first token at most this (serving)"),
    ("max_tpot_s", "Max TPOT", "ms", 1e-3, "Time per output token at most this (serving)"),
    ("min_tokens_per_s", "Min throughput", "tokens/s", 1.0, "Tokens per second on all the GPUs at least this"),
    ("deadline_days", "Deadline", "days", 1.0, "Training finishes within this many days (needs tokens to train on)"),
    ("budget_usd", "Budget", "USD", 1.0, "Spend at most this much (see the basis below)"),
)
BUDGET_BASES = (("auto", "auto: the run for training, else cheaper of buy/rent"), ("run", "the training run"),
                ("tco", "cheaper of buy and rent over the years"), ("capex", "buying the GPUs and servers"))


class CompareView(QWidget):
    #: A comparison is on screen (its job's generation number).
    comparison_shown = Signal(int)
    #: Candidates, scenarios or targets changed (the solver panel and the sensitivity view read them).
    setup_changed = Signal()

    def __init__(self, controller: ProjectController, catalogs: Catalogs, engine_source: Callable[[], Engine],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("compare_view")
        self.controller = controller
        self.catalogs = catalogs
        self.engine_source = engine_source
        self.comparer = Comparer(catalogs)
        self.runner = BackgroundRunner(self)
        self.runner.finished.connect(self._on_result)
        self.runner.failed.connect(self._on_failed)
        self.result: CompareResult | None = None
        self._banner_good: bool | None = None
        #: Seconds from the newest request to its comparison on screen (table, banner, bars).
        self.last_update_s: float | None = None
        self._requested_at = 0.0
        self._shown_request: CompareRequest | None = None
        self._dirty = True
        self._follow_current = True  # scenarios: the selected one, until the user ticks others
        self._restoring = False  # applying the project's saved setup: not an edit to save back
        self._seen_saved: SavedComparison | None = None  # the saved setup this view last wrote or showed
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self._run)
        #: Prices per GPU-hour entered in this tab, by accelerator id (saved with the setup).
        self.prices: dict[str, float] = {}

        self.setup_tabs = QTabWidget(self)
        self.setup_tabs.setObjectName("compare_setup")
        self.setup_tabs.setDocumentMode(True)
        # Each page scrolls on its own: in a short window the setup gives up height to the table.
        self.setup_tabs.addTab(_scrolled(self._build_candidates()), "Candidates")
        self.setup_tabs.addTab(_scrolled(self._build_targets()), "Targets")
        self.solver_panel = SolverPanel(controller, catalogs, engine_source, self, self)
        self.setup_tabs.addTab(_scrolled(_padded(self.solver_panel)), "Solve")
        self.setup_tabs.setMinimumWidth(230)

        self.banner = WholeLinesLabel("", self)
        self.banner.setObjectName("compare_banner")
        self.banner.setTextFormat(Qt.TextFormat.RichText)
        self.banner.setFrameShape(QFrame.Shape.StyledPanel)
        self.banner.setAutoFillBackground(True)
        self.banner.setContentsMargins(8, 6, 8, 6)
        self.status = WholeLinesLabel("", self)
        self.status.setObjectName("compare_status")  # one long line must not widen the tab past a laptop screen
        self.table_model = ComparisonTableModel(self)
        self.proxy = ComparisonSortProxy(self)
        self.proxy.setSourceModel(self.table_model)
        self.table = QTableView(self)
        self.table.setObjectName("compare_table")
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(COLUMN_INDEX["rank"], Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignCenter)
        # The verdict (a sentence, whole in its tooltip) is shown last and takes the width left:
        # in a narrow window it is shortened, never the number columns pushed behind a scrollbar.
        header.moveSection(header.visualIndex(COLUMN_INDEX["verdict"]), len(COLUMNS) - 1)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self._widths: dict[str, int] = {}
        self._split_for: Qt.Orientation | None = None  # the arrangement the splitter shares were set for
        self._empty_columns: set[str] = set()
        #: Columns left out because the table is too narrow for them (see ``_fit_columns``).
        self.dropped_columns: list[str] = []
        self.width_note = WholeLinesLabel("", self)
        self.width_note.setObjectName("compare_width_note")
        self.width_note.setVisible(False)
        self.table.viewport().installEventFilter(self)
        self.table.selectionModel().selectionChanged.connect(self._on_selection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                   | QAbstractItemView.EditTrigger.EditKeyPressed
                                   | QAbstractItemView.EditTrigger.AnyKeyPressed)
        self.table_model.price_entered.connect(self._on_price_entered)
        self.chart = CompareBarChart(self)
        exports.add_table_actions(self.table, "comparison")
        exports.add_chart_actions(self.chart, "comparison")

        results = QWidget(self)
        results_layout = QVBoxLayout(results)
        results_layout.setContentsMargins(0, 0, 0, 0)
        results_layout.setSpacing(4)
        results_layout.addWidget(self.banner)
        results_layout.addWidget(self.status)
        results_layout.addWidget(self.width_note)
        self.results_splitter = QSplitter(Qt.Orientation.Vertical, results)
        self.results_splitter.addWidget(self.table)
        self.results_splitter.addWidget(self.chart)
        self.results_splitter.setStretchFactor(0, 3)
        self.results_splitter.setStretchFactor(1, 2)
        ranking = QWidget(results)
        ranking_layout = QVBoxLayout(ranking)
        ranking_layout.setContentsMargins(0, 4, 0, 0)
        ranking_layout.setSpacing(4)
        ranking_layout.addLayout(self._build_confidence(ranking))
        ranking_layout.addWidget(self.results_splitter, 1)
        self.pareto_view = ParetoView(controller, catalogs, engine_source, results)
        self.iso_view = IsoSlaView(catalogs, engine_source, results)
        self.iso_view.settings_edited.connect(lambda: self._save_setup("Equal service level setting"))
        self.result_tabs = QTabWidget(results)
        self.result_tabs.setObjectName("compare_result_tabs")
        self.result_tabs.setDocumentMode(True)
        self.result_tabs.addTab(ranking, "Ranking")
        self.result_tabs.addTab(self.pareto_view, "Pareto fronts")
        self.result_tabs.addTab(self.iso_view, "Equal service level")
        self.result_tabs.setTabToolTip(0, "The candidates at the scenario's own batch, ranked; the decision "
                                          "confidence beside them")
        self.result_tabs.setTabToolTip(1, "Each candidate's serving configurations on one node: throughput per GPU "
                                          "against speed per user, cost against TPOT; click one to apply it")
        self.result_tabs.setTabToolTip(2, "Each candidate in its cheapest configuration that meets the targets")
        results_layout.addWidget(self.result_tabs, 1)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.setObjectName("compare_splitter")
        self.splitter.addWidget(self.setup_tabs)
        # In a low window the results scroll (the table and the chart keep their least heights)
        # instead of the chart being squeezed under the table until its bars are cut off.
        results_scroll = QScrollArea(self)
        results_scroll.setObjectName("compare_results")
        results_scroll.setWidgetResizable(True)
        results_scroll.setFrameShape(QFrame.Shape.NoFrame)
        results_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        results_scroll.setWidget(results)
        self.splitter.addWidget(results_scroll)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([260, 900])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter)

        controller.changed.connect(self._on_project_changed)
        controller.project_replaced.connect(self._on_project_replaced)
        self._fill_candidates(check_all=True)
        self._fill_scenarios()
        self._apply_saved()
        self._set_banner("Comparing…", None)

    # --- building -----------------------------------------------------------------------------

    def _build_candidates(self) -> QWidget:
        page = QWidget(self)
        self.vendor_filter = QComboBox(page)
        for key, label in VENDORS:
            self.vendor_filter.addItem(label, key)
        self.vendor_filter.setToolTip("Show the accelerators of one vendor (ticks are kept)")
        self.search = QLineEdit(page)
        self.search.setPlaceholderText("Filter by name")
        self.search.setClearButtonEnabled(True)
        self.select_all_button = QPushButton("All", page)
        self.select_all_button.setToolTip("Tick every accelerator shown")
        self.select_none_button = QPushButton("None", page)
        self.select_none_button.setToolTip("Untick every accelerator shown")
        self.select_priced_button = QPushButton("Priced", page)
        self.select_priced_button.setToolTip("Tick only the shown accelerators with a rental price (the others "
                                             "cannot be costed, so they are never recommended)")
        self.candidate_list = QListWidget(page)
        self.candidate_list.setObjectName("candidate_list")
        self.candidate_list.setUniformItemSizes(True)
        self.candidate_count = QLabel("", page)
        buttons = QHBoxLayout()
        for button in (self.select_all_button, self.select_none_button, self.select_priced_button):
            buttons.addWidget(button)
        layout = QVBoxLayout(page)
        layout.setContentsMargins(4, 6, 4, 4)
        layout.addWidget(self.vendor_filter)
        layout.addWidget(self.search)
        layout.addLayout(buttons)
        layout.addWidget(self.candidate_list, 1)
        layout.addWidget(self.candidate_count)
        self.vendor_filter.currentIndexChanged.connect(lambda _: self._apply_filter())
        self.search.textChanged.connect(lambda _: self._apply_filter())
        self.select_all_button.clicked.connect(lambda: self._tick_shown(lambda acc: True))
        self.select_none_button.clicked.connect(lambda: self._tick_shown(lambda acc: False))
        self.select_priced_button.clicked.connect(
            lambda: self._tick_shown(lambda acc: bool(acc.cloud_usd_per_hour or self.prices.get(acc.id))))
        self.candidate_list.itemChanged.connect(lambda _: self._on_setup_edited())
        return page

    def _build_confidence(self, parent: QWidget) -> QHBoxLayout:
        self.confidence_choice = QComboBox(parent)
        self.confidence_choice.setObjectName("confidence_choice")
        for draws, label in CONFIDENCE_DRAWS:
            self.confidence_choice.addItem(label, draws)
        self.confidence_choice.setToolTip(
            "Decision confidence: compare again over this many draws of the uncertain assumptions (each uniform "
            "over its documented range, seeded) and show how often each candidate is the cheapest that meets the "
            "targets")
        self.confidence_choice.currentIndexChanged.connect(lambda _: self._on_confidence_choice())
        self.confidence_row = ProgressRow("confidence", parent)
        self.confidence_row.cancel_requested.connect(self.cancel_confidence)
        self.confidence_runner = BackgroundRunner(self)
        self.confidence_runner.finished.connect(self._on_confidence)
        self.confidence_runner.failed.connect(
            lambda _g, message: self.confidence_row.stopped(f"Confidence: cannot compute: {gui_words(message)}"))
        self.confidence_runner.progress.connect(lambda _g, value: self.confidence_row.progressed(*value))
        #: The newest confidence on screen, and the comparison request it was computed for.
        self.confidence: Confidence | None = None
        self._confidence_for: tuple[CompareRequest, int] | None = None
        row = QHBoxLayout()
        row.setSpacing(6)
        label = QLabel("Confidence:", parent)
        label.setToolTip(self.confidence_choice.toolTip())
        row.addWidget(label)
        row.addWidget(self.confidence_choice)
        row.addWidget(self.confidence_row, 1)
        return row

    def _build_targets(self) -> QWidget:
        page = QWidget(self)
        self.scenario_list = QListWidget(page)
        self.scenario_list.setObjectName("compare_scenarios")
        self.scenario_list.setToolTip("The scenarios every candidate is sized for and compared on")
        self.scenario_list.itemChanged.connect(self._on_scenario_ticked)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.target_edits: dict[str, QLineEdit] = {}
        for name, label, unit, _, tip in TARGET_FIELDS:
            edit = QLineEdit(page)
            edit.setObjectName(f"target:{name}")
            edit.setPlaceholderText("none")
            edit.setToolTip(f"{tip}. Empty: no target.")
            edit.textChanged.connect(lambda _text, e=edit: self._on_target_edited(e))
            self.target_edits[name] = edit
            row = QHBoxLayout()
            row.addWidget(edit, 1)
            unit_label = QLabel(unit, page)
            unit_label.setMinimumWidth(self.fontMetrics().horizontalAdvance("tokens/s"))
            row.addWidget(unit_label)
            form.addRow(label, row)
        self.budget_basis = QComboBox(page)
        for key, label in BUDGET_BASES:
            self.budget_basis.addItem(label, key)
        self.budget_basis.setToolTip("What the budget pays for")
        self.budget_basis.currentIndexChanged.connect(lambda _: self._on_setup_edited())
        form.addRow("Budget is", self.budget_basis)
        self.targets_error = QLabel("", page)
        self.targets_error.setWordWrap(True)
        self.targets_error.setStyleSheet(f"color: {theme.BAD_COLOUR}")
        self.targets_error.setVisible(False)
        layout = QVBoxLayout(page)
        layout.setContentsMargins(4, 6, 4, 4)
        layout.addWidget(QLabel("<b>Scenarios</b> to compare on", page))
        layout.addWidget(self.scenario_list, 1)
        layout.addWidget(QLabel("<b>Targets</b> (empty: none)", page))
        layout.addLayout(form)
        layout.addWidget(self.targets_error)
        layout.addStretch(1)
        return page

    # --- candidates ---------------------------------------------------------------------------

    def _accelerators(self) -> list[Accelerator]:
        return self.catalogs.all_accelerators(self.controller.project)

    def _fill_candidates(self, check_all: bool = False) -> None:
        """(Re)build the list from the catalog and the project's own accelerators, keeping ticks;
        accelerators new to the list come ticked."""
        ticked = set(self._ticked_ids())
        known = {self.candidate_list.item(i).data(ID_ROLE) for i in range(self.candidate_list.count())}
        self.candidate_list.blockSignals(True)
        self.candidate_list.clear()
        for acc in self._accelerators():
            own = self.prices.get(acc.id)
            price = (f"${own:.2f}/h, yours" if own else f"${acc.cloud_usd_per_hour:.2f}/h" if acc.cloud_usd_per_hour
                     else "no price")
            item = QListWidgetItem(f"{short_name(acc.name, 22)}  ({price})")
            item.setData(ID_ROLE, acc.id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            on = check_all or acc.id in ticked or acc.id not in known
            item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
            custom = " (this project's own)" if acc.custom else ""
            item.setToolTip(f"{acc.name}{custom}\nid {acc.id}, {acc.memory_gib:g} GiB, {acc.vendor.value}\n"
                            f"rental {price}" + (f", purchase ${acc.list_price_usd:,.0f}" if acc.list_price_usd
                                                 else ", no purchase price"))
            self.candidate_list.addItem(item)
        self.candidate_list.blockSignals(False)
        self._apply_filter()
        self._update_count()

    def _ticked_ids(self) -> list[str]:
        out = []
        for i in range(self.candidate_list.count()):
            item = self.candidate_list.item(i)
            if item.checkState() == Qt.CheckState.Checked:
                out.append(str(item.data(ID_ROLE)))
        return out

    def _apply_filter(self) -> None:
        vendor = str(self.vendor_filter.currentData() or "")
        text = self.search.text().strip().lower()
        accelerators = {a.id: a for a in self._accelerators()}
        for i in range(self.candidate_list.count()):
            item = self.candidate_list.item(i)
            acc = accelerators.get(str(item.data(ID_ROLE)))
            shown = acc is not None
            if acc is not None and vendor:
                shown = acc.custom if vendor == "custom" else acc.vendor.value == vendor
            if shown and text:
                shown = text in item.text().lower() or text in str(item.data(ID_ROLE))
            item.setHidden(not shown)

    def _tick_shown(self, rule: Callable[[Accelerator], bool]) -> None:
        accelerators = {a.id: a for a in self._accelerators()}

        def on(item: QListWidgetItem) -> bool | None:
            acc = accelerators.get(str(item.data(ID_ROLE)))
            return None if item.isHidden() or acc is None else rule(acc)

        _set_checked(self.candidate_list, on)
        self._on_setup_edited()

    def _update_count(self) -> None:
        self.candidate_count.setText(f"{len(self._ticked_ids())} of {self.candidate_list.count()} ticked")

    def set_candidates(self, ids: list[str]) -> None:
        """Tick exactly these accelerators (by id)."""
        wanted = set(ids)
        _set_checked(self.candidate_list, lambda item: item.data(ID_ROLE) in wanted)
        self._on_setup_edited()

    def candidates(self) -> tuple[Candidate, ...]:
        return tuple(Candidate(i, usd_per_gpu_hour=self.prices.get(i)) for i in self._ticked_ids())

    # --- prices per candidate -----------------------------------------------------------------

    def price(self, accelerator_id: str) -> float | None:
        """The price per GPU-hour entered here for a candidate (None: the catalog's)."""
        return self.prices.get(accelerator_id)

    def set_price(self, accelerator_id: str, usd_per_gpu_hour: float | None) -> None:
        """Price a candidate (USD per GPU-hour; None: back to the catalog price), one undo step."""
        if usd_per_gpu_hour is not None and not usd_per_gpu_hour > 0:
            raise InputError("a price per GPU-hour must be a positive number (empty: the catalog price)")
        prices = dict(self.prices)
        if usd_per_gpu_hour is None:
            prices.pop(accelerator_id, None)
        else:
            prices[accelerator_id] = float(usd_per_gpu_hour)
        if prices == self.prices:
            return
        self.prices = prices
        self._fill_candidates()
        name = next((a.name for a in self._accelerators() if a.id == accelerator_id), accelerator_id)
        label = (f"Price {short_name(name)} at ${usd_per_gpu_hour:.2f}/GPU-h" if usd_per_gpu_hour is not None
                 else f"Catalog price for {short_name(name)}")
        self._on_setup_edited(label=label)

    # --- scenarios ----------------------------------------------------------------------------

    def _fill_scenarios(self) -> None:
        names = [s.name for s in self.controller.project.scenarios]
        ticked = set(self._ticked_scenarios())
        if self._follow_current or not ticked & set(names):
            ticked = {self.controller.current}
        self.scenario_list.blockSignals(True)
        self.scenario_list.clear()
        for name in names:
            item = QListWidgetItem(name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if name in ticked else Qt.CheckState.Unchecked)
            self.scenario_list.addItem(item)
        self.scenario_list.blockSignals(False)

    def _ticked_scenarios(self) -> list[str]:
        return [self.scenario_list.item(i).text() for i in range(self.scenario_list.count())
                if self.scenario_list.item(i).checkState() == Qt.CheckState.Checked]

    def _on_scenario_ticked(self, _item: QListWidgetItem) -> None:
        self._follow_current = False
        self._on_setup_edited()

    def set_scenarios(self, names: list[str]) -> None:
        """Compare on exactly these scenarios (by name); the selection no longer follows the current one."""
        self._follow_current = False
        wanted = set(names)
        _set_checked(self.scenario_list, lambda item: item.text() in wanted)
        self._on_setup_edited()

    def scenarios(self) -> tuple[Scenario, ...]:
        ticked = set(self._ticked_scenarios())
        return tuple(s for s in self.controller.project.scenarios if s.name in ticked)

    # --- targets ------------------------------------------------------------------------------

    def _target_value(self, name: str) -> float | None:
        """The target in the field's unit; None when empty; raises InputError when not a positive number."""
        text = self.target_edits[name].text().strip()
        if not text:
            return None
        value = parse_amount(text)
        if value is None:
            label = next(f[1] for f in TARGET_FIELDS if f[0] == name)
            raise InputError(f"{label}: enter a positive number or leave it empty")
        factor = next(f[3] for f in TARGET_FIELDS if f[0] == name)
        return value * factor

    def targets(self) -> Targets:
        """The targets as entered; a field that is not a positive number counts as no target."""
        values = {}
        for name, *_ in TARGET_FIELDS:
            try:
                values[name] = self._target_value(name)
            except InputError:
                values[name] = None
        return Targets(**values, budget_basis=str(self.budget_basis.currentData()))

    def set_target(self, name: str, value: float | None) -> None:
        """Enter a target in the field's display unit (ms for TTFT and TPOT), None to clear it."""
        self.target_edits[name].setText("" if value is None else f"{value:g}")

    def _on_target_edited(self, edit: QLineEdit) -> None:
        problems = []
        for name, *_ in TARGET_FIELDS:
            try:
                self._target_value(name)
                self.target_edits[name].setStyleSheet("")
            except InputError as exc:
                problems.append(str(exc))
                self.target_edits[name].setStyleSheet(f"border: 1px solid {theme.BAD_COLOUR}")
        self.targets_error.setText("; ".join(problems))
        self.targets_error.setVisible(bool(problems))
        self._on_setup_edited()

    # --- running ------------------------------------------------------------------------------

    def request(self) -> CompareRequest:
        return CompareRequest(self.controller.project, self.scenarios(), self.candidates(), self.targets())

    def _on_setup_edited(self, label: str | None = None) -> None:
        self._update_count()
        self._save_setup(label, own_step=label is not None)  # a price: an undo step of its own
        self.setup_changed.emit()
        self.schedule()

    def _save_setup(self, label: str | None = None, own_step: bool = False) -> None:
        """Keep the setup on screen as the project's (not while showing the project's own)."""
        if self._restoring:
            return
        self._seen_saved = self.setup()
        if own_step:
            self.controller.set_comparison(self._seen_saved, label or "Compare setup", merge_key=None)
        else:
            self.controller.set_comparison(self._seen_saved, label or "Compare setup")

    # --- the project's saved setup ------------------------------------------------------------

    def setup(self) -> SavedComparison:
        """The setup on screen, as the project keeps it (a target that is not a number: none)."""
        targets = self.targets()
        return SavedComparison(
            name=SAVED_NAME,
            accelerators=tuple(self._ticked_ids()),
            scenarios=() if self._follow_current else tuple(self._ticked_scenarios()),
            usd_per_gpu_hour=dict(self.prices),
            confidence_draws=self.confidence_draws(),
            iso_sla=self.iso_view.mode_button.isChecked(),
            iso_sla_weights=self.iso_view.chosen_weights(),
            iso_sla_confidence_draws=self.iso_view.draws(),
            **{name: getattr(targets, name) for name in SavedComparison.TARGET_FIELDS},
        )

    def _saved(self) -> SavedComparison | None:
        kept = self.controller.project.comparisons
        return kept[0] if kept else None

    def _apply_saved(self, defaults_if_none: bool = False) -> None:
        """Show the project's saved setup (opened, reverted, undone). With none: leave the view as
        it is, or (``defaults_if_none``: the first setup edit was undone) every accelerator ticked,
        the selected scenario, no targets."""
        saved = self._seen_saved = self._saved()
        if saved is None:
            if not defaults_if_none:
                return
            saved = SavedComparison(name=SAVED_NAME, accelerators=tuple(a.id for a in self._accelerators()))
        self._restoring = True
        try:
            if saved.usd_per_gpu_hour != self.prices:
                self.prices = dict(saved.usd_per_gpu_hour)
                self._fill_candidates()
            wanted = set(saved.accelerators)
            _set_checked(self.candidate_list, lambda item: item.data(ID_ROLE) in wanted)
            existing = {self.scenario_list.item(i).text() for i in range(self.scenario_list.count())}
            names = set(saved.scenarios) & existing
            self._follow_current = not names
            if names:
                _set_checked(self.scenario_list, lambda item: item.text() in names)
            else:
                self._fill_scenarios()
            for name, _label, _unit, factor, _tip in TARGET_FIELDS:
                value = getattr(saved, name)
                text = "" if value is None else f"{value / factor:g}"
                if self.target_edits[name].text() != text:
                    self.target_edits[name].setText(text)
            index = self.budget_basis.findData(saved.budget_basis)
            if index >= 0 and index != self.budget_basis.currentIndex():
                self.budget_basis.setCurrentIndex(index)
            self._apply_saved_pages(saved)
        finally:
            self._restoring = False
        self._update_count()
        self.setup_changed.emit()
        self.schedule()

    def _apply_saved_pages(self, saved: SavedComparison) -> None:
        """The confidence draws and the equal-service-level choices of ``saved``."""
        if saved.confidence_draws != self.confidence_draws():
            choose_draws(self.confidence_choice, saved.confidence_draws)
        self.iso_view.apply_settings(saved.iso_sla, tuple(w.value for w in saved.iso_sla_weights),
                                     saved.iso_sla_confidence_draws)

    def _on_price_entered(self, accelerator_id: str, text: str) -> None:
        """A price typed in the table's price column: a number (a $ and /h are fine), or empty."""
        text = text.strip()
        value = None if not text else parse_amount(text.replace("$", "").replace("/h", "").strip())
        if text and value is None:
            self.status.setText("Price: enter a positive number of USD per GPU-hour, or nothing for the catalog price")
            return
        self.set_price(accelerator_id, value)

    def _on_project_replaced(self) -> None:
        self._follow_current = True
        self.prices = {}
        self._restoring = True
        try:  # a project without a saved setup starts with these pages' defaults
            self._apply_saved_pages(SavedComparison(name=SAVED_NAME))
        finally:
            self._restoring = False
        self.comparer.forget()
        self._fill_candidates(check_all=True)
        self._fill_scenarios()
        self._apply_saved()

    def _on_project_changed(self) -> None:
        project = self.controller.project
        ids = [self.candidate_list.item(i).data(ID_ROLE) for i in range(self.candidate_list.count())]
        if ids != [a.id for a in self._accelerators()]:
            self._fill_candidates()
        names = [self.scenario_list.item(i).text() for i in range(self.scenario_list.count())]
        if names != [s.name for s in project.scenarios] or (
                self._follow_current and self._ticked_scenarios() != [self.controller.current]):
            self._fill_scenarios()
        if self._saved() != self._seen_saved:  # an undo or redo of a compare setup
            self._apply_saved(defaults_if_none=True)
        self.schedule()

    def schedule(self) -> None:
        """Compare again soon (debounced) if the inputs changed; only while on screen."""
        self._dirty = True
        if self.isVisible():
            self._timer.start()

    def refresh(self) -> int:
        """Compare now (tests, the benchmark); returns the job's generation (0: nothing to do)."""
        self._timer.stop()
        return self._run(force=True)

    def _run(self, force: bool = False) -> int:
        request = self.request()
        shown = self._shown_request
        if not force and shown is not None and _same_request(shown, request) and not self.runner.is_busy():
            self._dirty = False
            return 0
        self._dirty = False
        if not request.candidates or not request.scenarios:
            self.runner.cancel()
            self._drop_confidence()
            self._show(CompareResult(request, None, 0.0, 0), None)
            return 0
        self._requested_at = time.perf_counter()
        self._drop_confidence()  # it was for the inputs before this edit
        comparer, source = self.comparer, self.engine_source

        def job(stale: Stale, report: Report) -> CompareResult | None:
            return comparer.run(source(), request, stale)

        return self.runner.submit(job)

    def _on_result(self, generation: int, result: CompareResult | None) -> None:
        if result is None:
            return
        self._show(result, generation)

    def _on_failed(self, generation: int, message: str) -> None:
        self._set_banner(f"<b>Cannot compare:</b> {escape(gui_words(message))}", False)
        self.comparison_shown.emit(generation)

    def _show(self, result: CompareResult, generation: int | None) -> None:
        self.result = result
        self._shown_request = result.request
        comparison = result.comparison
        selected = self._selected_key()
        self.table.setUpdatesEnabled(False)
        self.table_model.set_comparison(comparison)
        self._relayout_columns()
        self.table.setUpdatesEnabled(True)
        self._restore_selection(selected)
        self._update_chart()
        self._update_analyses()
        self._start_confidence()
        self._update_banner(result)
        if generation is not None:
            self.last_update_s = time.perf_counter() - self._requested_at
        self.comparison_shown.emit(generation or 0)

    # --- decision confidence ------------------------------------------------------------------

    def confidence_draws(self) -> int:
        """Draws the confidence is computed over (0: off)."""
        return int(self.confidence_choice.currentData() or 0)

    def set_confidence_draws(self, draws: int) -> None:
        """Turn the decision confidence on over ``draws`` draws (one of :data:`CONFIDENCE_DRAWS`), or off (0)."""
        index = self.confidence_choice.findData(draws)
        if index < 0:
            raise InputError(f"confidence: choose one of {', '.join(str(d) for d, _ in CONFIDENCE_DRAWS)} draws")
        self.confidence_choice.setCurrentIndex(index)

    def _on_confidence_choice(self) -> None:
        self._drop_confidence()
        self._start_confidence()
        self._save_setup("Confidence draws")

    def _drop_confidence(self) -> None:
        """Forget the confidence on screen and stop computing one (the inputs changed)."""
        self.confidence_runner.cancel()
        self.confidence, self._confidence_for = None, None
        if self.table_model.shares is not None:
            self.table_model.set_confidence(None)
            self._relayout_columns()
        self.confidence_row.stopped("" if self.confidence_draws() else
                                    "off: how sure the ranking is, over draws of the uncertain assumptions")

    def _start_confidence(self) -> int:
        """Compute the confidence of the comparison on screen, unless off or already done; returns
        the job's generation (0: nothing started)."""
        draws, result = self.confidence_draws(), self.result
        if not draws or result is None or result.comparison is None:
            return 0
        request, comparison = result.request, result.comparison
        done = self._confidence_for
        if done is not None and done[1] == draws and _same_request(done[0], request):
            return 0  # on screen or on its way
        # The comparison's candidates: one that cannot be resolved is left out of it (and said so).
        candidates, scenarios, targets = comparison.candidates, request.scenarios, request.targets
        project, catalogs, source = request.project, self.catalogs, self.engine_source

        def job(stale: Stale, report: Report) -> Confidence:
            return decision_confidence(source(), scenarios, candidates, lambda s: catalogs.resolve(s, project),
                                       targets, draws=draws, max_gpus=request.max_gpus,
                                       progress=engine_progress(stale, report))

        self._confidence_for = (request, draws)
        self.confidence_row.started(f"Comparing over {draws:,} draws of the assumptions…")
        return self.confidence_runner.submit(job)

    def cancel_confidence(self) -> None:
        """Stop the confidence being computed and turn it off (nothing partial is shown)."""
        self.confidence_runner.cancel()
        self._confidence_for = None
        self.confidence_choice.blockSignals(True)
        self.confidence_choice.setCurrentIndex(self.confidence_choice.findData(0))
        self.confidence_choice.blockSignals(False)
        self._save_setup("Confidence draws")
        self.confidence_row.stopped("Cancelled, so off: choose a number of draws to compute it again.")

    def _on_confidence(self, _generation: int, confidence: Confidence) -> None:
        self.confidence = confidence
        self.table_model.set_confidence(confidence.shares, confidence.draws)
        self._relayout_columns()
        names = {r.candidate.label: r.accelerator_name for r in confidence.base.rows()}
        self.confidence_row.stopped(confidence_text(confidence, names))

    # --- the other pages ----------------------------------------------------------------------

    def _update_analyses(self) -> None:
        """Give the Pareto and equal-service-level pages the scenario the bars show and its
        candidates, best-ranked first."""
        shown = self.chart_scenario()
        result = self.result
        project = result.request.project if result is not None else self.controller.project
        if shown is None or result is None:
            self.pareto_view.set_inputs(project, None, (), {})
            self.iso_view.set_inputs(project, None, (), Targets(), {})
            return
        candidates = tuple(r.candidate for r in shown.results)
        names = {r.candidate: r.accelerator_name for r in shown.results}
        self.pareto_view.set_inputs(project, shown.scenario, candidates, names)
        self.iso_view.set_inputs(project, shown.scenario, candidates, result.request.targets, names)

    def current_table(self) -> QTableView:
        """The table of the page on screen (File > Export Table)."""
        return self.iso_view.table if self.result_tabs.currentWidget() is self.iso_view else self.table

    # --- showing ------------------------------------------------------------------------------

    def _relayout_columns(self) -> None:
        """Hide the columns with nothing to show, size the rest, leave out what the width cannot hold."""
        comparison = self.table_model.comparison
        hidden = self.table_model.empty_columns()
        if comparison is None or len(comparison.scenarios) < 2:
            hidden.add("scenario")
        self._empty_columns = hidden
        for column in COLUMNS:
            self.table.setColumnHidden(COLUMN_INDEX[column.id], column.id in hidden)
        self._size_columns()
        self._fit_columns()

    def _size_columns(self) -> None:
        """Columns as wide as their widest text (measured here: resizeColumnsToContents asks the
        model for every cell and role, which costs more than the comparison itself)."""
        body = QFontMetrics(self.table.font())
        bold_font = self.table.font()
        bold_font.setBold(True)
        bold = QFontMetrics(bold_font)
        head = QFontMetrics(self.table.horizontalHeader().font())
        recommended = set(self.table_model.recommended_rows())
        for index, column in enumerate(COLUMNS):
            if self.table.isColumnHidden(index):
                continue
            texts = self.table_model.texts(index)
            widest = max((bold if row in recommended else body).horizontalAdvance(text)
                         for row, text in enumerate(texts)) if texts else 0
            title = max(head.horizontalAdvance(line) for line in self.table_model.headerData(
                index, Qt.Orientation.Horizontal).split("\n"))
            # Room for the sort arrow only on the column sorted by (headers stay narrow otherwise).
            sorted_by = self.table.horizontalHeader().sortIndicatorSection() == index
            width = max(widest + 12, title + (26 if sorted_by else 14))
            if column.id == "accelerator":
                width = min(width, ACCELERATOR_MAX_PX)  # longer names are elided (whole in the tooltip)
            if column.id == "verdict":
                # Last and stretched into what is left (its text whole in the tooltip): a wider
                # set width would only push the table past its view.
                width = VERDICT_MIN_PX
            self.table.setColumnWidth(index, width)
            self._widths[column.id] = width

    def _fit_columns(self) -> None:
        """In a table too narrow for every figure, leave out the least-read columns (in
        :data:`DROP_FOR_WIDTH` order) rather than put figures behind a scrollbar; a line above the
        table names what is left out, and each row's tooltip still has every figure."""
        room = self.table.viewport().width()
        if not self.table.verticalScrollBar().isVisible():  # leave room for one that may come
            room -= self.table.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, self.table)
        if room <= 0 or not self._widths:
            return
        dropped: list[str] = []
        shown = [c.id for c in COLUMNS if c.id not in self._empty_columns and c.id != "verdict"]
        needed = sum(self._widths.get(ident, 0) for ident in shown) + VERDICT_MIN_PX
        for ident in DROP_FOR_WIDTH:
            if needed <= room:
                break
            if ident in shown:
                dropped.append(ident)
                needed -= self._widths.get(ident, 0)
        for ident in DROP_FOR_WIDTH:
            if ident not in self._empty_columns:
                self.table.setColumnHidden(COLUMN_INDEX[ident], ident in dropped)
        self.dropped_columns = dropped
        titles = [COLUMNS[COLUMN_INDEX[i]].header.format(years="").split("\n")[0] for i in dropped]
        self.width_note.setText(f"Left out at this width: {', '.join(titles)} (in each row's tooltip; a wider "
                                "window or Hide side panels shows them)" if dropped else "")
        self.width_note.setVisible(bool(dropped))

    def _update_banner(self, result: CompareResult) -> None:
        comparison = result.comparison
        request = result.request
        if not request.candidates:
            self._set_banner("Tick at least one candidate accelerator (Candidates tab).", None)
            self.status.setText("")
            return
        if not request.scenarios:
            self._set_banner("Tick at least one scenario to compare on (Targets tab).", None)
            self.status.setText("")
            return
        if comparison is None:
            self._set_banner("No candidate could be compared: " + escape("; ".join(result.problems)), False)
            return
        self._set_banner(banner_html(comparison), comparison.recommendation is not None)
        n_c, n_s = len(comparison.candidates), len(comparison.scenarios)
        text = (f"{n_c} candidate{'s' * (n_c != 1)} × {n_s} scenario{'s' * (n_s != 1)}, "
                f"compared in {result.elapsed_s * 1000:.0f} ms ({result.sized} sized now, the rest kept)")
        if result.problems:
            text += " · left out: " + "; ".join(result.problems)
        self.status.setText(text)

    def _set_banner(self, html: str, good: bool | None) -> None:
        self.banner.setText(html)
        self._banner_good = good
        pal = self.palette()
        if good is None:
            colour = pal.color(QPalette.ColorRole.AlternateBase)
        else:
            colour = QColor(theme.OK_COLOUR if good else theme.WARN_COLOUR)
            colour.setAlpha(45)
            base = pal.color(QPalette.ColorRole.Window)
            colour = _blend(base, colour)
        pal.setColor(QPalette.ColorRole.Window, colour)
        self.banner.setPalette(pal)

    @property
    def banner_text(self) -> str:
        return self.banner.text()

    def _selected_key(self) -> tuple[str, Candidate] | None:
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        result = self.table_model.result(self.proxy.mapToSource(rows[0]).row())
        return result.scenario, result.candidate

    def _restore_selection(self, key: tuple[str, Candidate] | None) -> None:
        if key is None:
            return
        for row, (_, result) in enumerate(self.table_model.rows):
            if (result.scenario, result.candidate) == key:
                index = self.proxy.mapFromSource(self.table_model.index(row, 0))
                self.table.selectRow(index.row())
                return

    def _on_selection(self, _selected: QItemSelection, _deselected: QItemSelection) -> None:
        self._update_chart()
        self._update_analyses()

    def chart_scenario(self) -> ScenarioComparison | None:
        """The scenario the bars show: the selected row's, else the first."""
        comparison = self.table_model.comparison
        if comparison is None or not comparison.scenarios:
            return None
        key = self._selected_key()
        if key is not None:
            for scenario in comparison.scenarios:
                if scenario.scenario.name == key[0]:
                    return scenario
        return comparison.scenarios[0]

    def _update_chart(self) -> None:
        self.chart.update_comparison(self.chart_scenario())

    def recommended_proxy_rows(self) -> list[int]:
        """Rows of the table as shown (sorted) that are highlighted as recommended."""
        return sorted(self.proxy.mapFromSource(self.table_model.index(r, 0)).row()
                      for r in self.table_model.recommended_rows())

    # --- events -------------------------------------------------------------------------------

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Resize and watched is self.table.viewport():
            self._fit_columns()
        return False

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        # Under a width the setup goes above the results, so the table keeps the whole width.
        narrow = event.size().width() < STACK_BELOW_PX
        wanted = Qt.Orientation.Vertical if narrow else Qt.Orientation.Horizontal
        if self.splitter.orientation() != wanted:
            self.splitter.setOrientation(wanted)
            self._split_for = None
        total = event.size().height() if narrow else event.size().width()
        if self._split_for != wanted and total > 200 and self.isVisible():
            # Shares once per arrangement (the user's splitter drags are kept after that).
            self._split_for = wanted
            self.splitter.setSizes([int(total * 0.38), int(total * 0.62)] if narrow else [260, max(total - 260, 1)])

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._dirty:
            self._timer.start(0)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "banner"):
            # The banner's tint is mixed from the window colour: mix it again (light <-> dark).
            self._set_banner(self.banner.text(), self._banner_good)
            self.table.viewport().update()

    def shutdown(self) -> None:
        self._timer.stop()
        self.runner.shutdown()
        self.confidence_runner.shutdown()
        self.pareto_view.shutdown()
        self.iso_view.shutdown()
        self.solver_panel.shutdown()


def banner_html(comparison: Comparison) -> str:
    """The recommendation in a sentence (and its range), or why there is none."""
    scenarios = comparison.scenarios
    rec = comparison.recommendation
    if rec is None:
        return f"<b>No recommendation:</b> {escape(gui_words(comparison.why_no_recommendation or ''))}"
    rows = [next(r for r in s.results if r.candidate == rec) for s in scenarios]
    if len(scenarios) == 1:
        row = rows[0]
        unit = METRIC_BY_ID[row.cost_metric].unit
        span = low_high(row, row.cost_metric, unit)
        detail = f"{escape(row.sizing)}; layout TP {row.tp} × PP {row.pp} × DP {row.dp}"
        if span:
            detail += f"; cost {escape(span)} with every efficiency assumption at one end of its range"
        return (f"<span style='font-size:13pt'><b>Recommended: {escape(headline(row))}</b></span>"
                f"<br><small>The cheapest of {len(comparison.candidates)} candidates that meets the targets: "
                f"{detail}.</small>")
    lines = "".join(f"<br>{escape(r.scenario)}: {escape(headline(r))}" for r in rows)
    return (f"<span style='font-size:13pt'><b>Recommended for all {len(scenarios)} scenarios: "
            f"{escape(short_name(rows[0].accelerator_name))}</b></span><small>{lines}</small>")


def confidence_text(confidence: Confidence, names: dict[str, str]) -> str:
    """The shares in a line, most often cheapest first: "B200 cheapest in 83% of 1,000 draws, …"."""
    ranked = sorted(((share, label) for label, share in confidence.shares.items() if share > 0), reverse=True)
    parts = [f"{short_name(names.get(label, label))} cheapest in {share:.0%}" for share, label in ranked]
    text = (", ".join(parts) or "no candidate is the cheapest in any draw") + f" of {confidence.draws:,} draws"
    if confidence.no_recommendation:
        text += f"; none meets the targets in {confidence.no_recommendation:.0%}"
    drawn = len(confidence.drawn)
    if drawn:
        text += f" ({drawn} assumption{'s' * (drawn != 1)}, each drawn over its documented range)"
    else:
        text += f" ({'; '.join(confidence.notes)})"
    return text


def _set_checked(items: QListWidget, on: Callable[[QListWidgetItem], bool | None]) -> None:
    """Tick each item for which ``on`` is true, untick it when false, leave it when None; no
    itemChanged signals (callers say themselves what changed)."""
    items.blockSignals(True)
    for i in range(items.count()):
        item = items.item(i)
        state = on(item)
        if state is not None:
            item.setCheckState(Qt.CheckState.Checked if state else Qt.CheckState.Unchecked)
    items.blockSignals(False)


def _same_request(a: CompareRequest, b: CompareRequest) -> bool:
    return (a.candidates == b.candidates and a.targets == b.targets and len(a.scenarios) == len(b.scenarios)
            and all(x is y for x, y in zip(a.scenarios, b.scenarios))
            and a.project.models is b.project.models and a.project.accelerators is b.project.accelerators)


def _blend(base: QColor, tint: QColor) -> QColor:
    alpha = tint.alphaF()
    return QColor.fromRgbF(base.redF() * (1 - alpha) + tint.redF() * alpha,
                           base.greenF() * (1 - alpha) + tint.greenF() * alpha,
                           base.blueF() * (1 - alpha) + tint.blueF() * alpha)


def _scrolled(page: QWidget) -> QScrollArea:
    scroll = QScrollArea()
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setWidget(page)
    for form in page.findChildren(QFormLayout):
        fit_to_width(scroll, form)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    return scroll


def _padded(widget: QWidget) -> QWidget:
    holder = QWidget()
    layout = QVBoxLayout(holder)
    layout.setContentsMargins(4, 6, 4, 4)
    layout.addWidget(widget)
    return holder
