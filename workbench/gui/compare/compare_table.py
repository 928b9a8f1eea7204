"""The comparison as a table model: one row per (scenario, candidate), ranked as ``compare()``
ranks, units in the headers, numbers sortable, the recommendation bold on green.

Rows come in the engine's order (scenario by scenario, best first); the view sorts through a
:class:`ComparisonSortProxy` on :data:`SORT_ROLE` (plain numbers; unknown values last).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QFont

from workbench.engine.compare import METRIC_BY_ID, CandidateResult, Comparison
from workbench.gui import theme
from workbench.gui.compare.compare_format import (
    gui_words,
    low_high,
    money,
    number,
    short_name,
    usd,
    verdict,
    with_unit,
)

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
ModelIndex = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class Column:
    id: str
    header: str
    tip: str
    metric: str | None = None  # a METRICS id: the cell shows values[metric]
    text: Callable[[float], str] = number


def _ms(seconds: float) -> str:
    return number(seconds * 1000)


COLUMNS: tuple[Column, ...] = (
    Column("rank", "#", "Rank within the scenario, as compare() ranks: fits, meets the targets, cost, speed"),
    Column("accelerator", "Accelerator", "The candidate accelerator"),
    # Filled by the decision confidence (Monte Carlo over the assumptions' documented ranges) when
    # it is turned on; hidden otherwise.
    Column("confidence", "Cheapest in\n(% of draws)", "Decision confidence: the share of the draws of the "
           "uncertain assumptions (each uniform over its documented range) in which this candidate is the cheapest "
           "that meets the targets in every scenario"),
    Column("scenario", "Scenario", "The scenario the candidate was sized for"),
    Column("verdict", "Verdict: why not", "Why each candidate loses to the recommendation, or misses the targets"),
    Column("fits", "Fits", "Fits in memory on some GPU count up to the sizing limit"),
    Column("gpus", "GPUs", "GPUs needed: the scenario's own count when it runs, else the fewest that fit", "gpus",
           lambda v: f"{v:,.0f}"),
    Column("layout", "Layout\nTP×PP×DP", "Parallel layout the sizing chose"),
    Column("ttft", "TTFT\n(ms)", "Time to first token", "ttft_s", _ms),
    Column("tpot", "TPOT\n(ms)", "Time per output token", "tpot_s", _ms),
    # Simulated under the scenario's load (an arrival rate or a trace): hidden without one (no values).
    Column("sim_ttft_p99", "TTFT p99\nunder load (ms)", "Simulated 99th-percentile TTFT under the load",
           "sim_ttft_p99_s", _ms),
    Column("sim_tpot_p99", "TPOT p99\nunder load (ms)", "Simulated 99th-percentile TPOT under the load",
           "sim_tpot_p99_s", _ms),
    Column("sim_goodput", "Goodput\n(req/s)", "Simulated requests per second that meet the targets",
           "sim_goodput_rps"),
    Column("tokens_per_s", "Tokens/s", "Tokens per second on all the GPUs", "tokens_per_s"),
    Column("train_days", "Train\n(days)", "Days to train on the scenario's tokens", "train_days"),
    Column("price", "Price\n($/GPU-h)", "Rental price per GPU-hour used for the costs. Double-click (or type) "
           "to enter your own for this accelerator; empty: the catalog price", "usd_per_gpu_hour", money),
    Column("usd_per_m_tokens", "Cost\n($/M tok)", "Rental cost per million tokens", "usd_per_m_tokens", usd),
    Column("run_usd", "Run cost\n(USD)", "Rental cost of the whole training run", "run_usd", usd),
    Column("tokens_per_kwh", "Energy\n(tok/kWh)", "Tokens per kWh of facility power (PUE included)",
           "tokens_per_kwh"),
    Column("tco_buy_usd", "TCO buy\n({years})", "Buying: GPUs, servers and power over the ownership period",
           "tco_buy_usd", usd),
    Column("tco_rent_usd", "TCO rent\n({years})", "Renting the same useful hours over the ownership period",
           "tco_rent_usd", usd),
)
COLUMN_INDEX = {c.id: i for i, c in enumerate(COLUMNS)}
_NUMERIC = {c.id for c in COLUMNS if c.metric} | {"rank", "confidence"}
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_ROLES = frozenset({Qt.ItemDataRole.DisplayRole, SORT_ROLE, Qt.ItemDataRole.ToolTipRole, Qt.ItemDataRole.FontRole,
                    Qt.ItemDataRole.BackgroundRole, Qt.ItemDataRole.ForegroundRole,
                    Qt.ItemDataRole.TextAlignmentRole})


#: Cost columns that read "no price" (never 0 or a dash) when the candidate has no rental price.
_PRICED = frozenset({"price", "usd_per_m_tokens", "run_usd", "tco_rent_usd"})
NO_PRICE = "no price"


class ComparisonTableModel(QAbstractTableModel):
    #: A price was typed in the price column: (accelerator id, the text; empty: the catalog price).
    price_entered = Signal(str, str)

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.comparison: Comparison | None = None
        self.rows: list[tuple[int, CandidateResult]] = []  # (scenario index, result), engine order
        # Texts and sort keys are computed once per comparison: painting and sizing ask for them often.
        self._texts: list[list[str]] = []
        self._keys: list[list[Any]] = []
        self._years = "3 yr"
        self._bold = QFont()
        self._bold.setBold(True)
        self._highlight = QColor(theme.OK_COLOUR)
        self._highlight.setAlpha(70)
        #: Decision confidence: candidate label -> share of the draws it wins (None: not computed).
        self.shares: dict[str, float] | None = None
        self.draws = 0

    def set_comparison(self, comparison: Comparison | None) -> None:
        self.beginResetModel()
        self.comparison = comparison
        self.rows = [] if comparison is None else [
            (i, r) for i, s in enumerate(comparison.scenarios) for r in s.results
        ]
        best = {i: s.recommendation for i, s in enumerate(comparison.scenarios)} if comparison else {}
        self._texts = [[self._text(c, r, best.get(i)) for c in COLUMNS] for i, r in self.rows]
        self._keys = [[self._sort_value(c, i, r) for c in COLUMNS] for i, r in self.rows]
        years = {s.scenario.pricing.years for s in comparison.scenarios} if comparison else {3.0}
        self._years = f"{next(iter(years)):g} yr" if len(years) == 1 else "per scenario"
        self._fill_confidence()
        self.endResetModel()

    def set_confidence(self, shares: dict[str, float] | None, draws: int = 0) -> None:
        """Show each candidate's share of the draws (by candidate label), or none (``None``)."""
        self.shares, self.draws = (None, 0) if shares is None else (dict(shares), draws)
        self._fill_confidence()
        if self.rows:
            col = COLUMN_INDEX["confidence"]
            self.dataChanged.emit(self.index(0, col), self.index(len(self.rows) - 1, col))

    def share(self, row: int) -> float | None:
        """The share of the draws the row's candidate wins (None: confidence not computed)."""
        if self.shares is None:
            return None
        return self.shares.get(self.rows[row][1].candidate.label, 0.0)

    def _fill_confidence(self) -> None:
        col = COLUMN_INDEX["confidence"]
        for n in range(len(self.rows)):
            share = self.share(n)
            self._texts[n][col] = "–" if share is None else f"{share:.0%}"
            self._keys[n][col] = None if share is None else -share  # ascending: most often cheapest first

    def texts(self, column: int) -> list[str]:
        """Every row's text in one column (to size the column)."""
        return [row[column] for row in self._texts]

    def result(self, row: int) -> CandidateResult:
        return self.rows[row][1]

    def recommended_rows(self) -> list[int]:
        return [i for i, (_, r) in enumerate(self.rows) if r.recommended]

    def empty_columns(self) -> set[str]:
        """Metric columns with no value in any row (TTFT for training, time to train for serving)."""
        empty = {c.id for c in COLUMNS if c.metric and c.id != "price"  # prices are entered there
                 and all(r.values.get(c.metric) is None for _, r in self.rows)}
        return empty | ({"confidence"} if self.shares is None else set())

    # --- Qt model -----------------------------------------------------------------------------

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: N802, B008 - Qt override
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: N802, B008 - Qt override
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802 - Qt override
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        column = COLUMNS[section]
        if role == Qt.ItemDataRole.DisplayRole:
            return column.header.format(years=self._years)
        if role == Qt.ItemDataRole.ToolTipRole:
            metric = METRIC_BY_ID.get(column.metric or "")
            better = f" ({metric.better} is better)" if metric is not None and metric.better else ""
            return column.tip + better
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        flags = super().flags(index)
        if index.isValid() and COLUMNS[index.column()].id == "price":
            flags |= Qt.ItemFlag.ItemIsEditable
        return flags

    def setData(self, index: ModelIndex, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        if role != Qt.ItemDataRole.EditRole or not index.isValid() or COLUMNS[index.column()].id != "price":
            return False
        # The view prices the accelerator (an undo step) and compares again; the new table follows.
        self.price_entered.emit(self.rows[index.row()][1].candidate.accelerator, str(value))
        return True

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.EditRole and index.isValid():
            own = self.rows[index.row()][1].candidate.usd_per_gpu_hour
            return "" if own is None else f"{own:g}"
        if role not in _ROLES or not index.isValid():
            return None  # painting asks for a dozen roles per cell: most are answered here
        row, col = index.row(), index.column()
        result = self.rows[row][1]
        column = COLUMNS[col]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._texts[row][col]
        if role == SORT_ROLE:
            return self._keys[row][col]
        if role == Qt.ItemDataRole.ToolTipRole:
            if column.id == "confidence":
                return self._confidence_tip(row)
            return self._tooltip(column, result)
        if role == Qt.ItemDataRole.FontRole and result.recommended:
            return self._bold
        if role == Qt.ItemDataRole.BackgroundRole and result.recommended:
            return self._highlight
        if role == Qt.ItemDataRole.ForegroundRole:
            if not result.fits:
                return theme.muted()
            if column.id == "verdict" and result.failures:
                return QColor(theme.BAD_COLOUR)
            if column.id == "fits":
                return QColor(theme.OK_COLOUR)
            if column.id in _PRICED and self._texts[row][col] == NO_PRICE:
                return QColor(theme.WARN_COLOUR)
        if role == Qt.ItemDataRole.TextAlignmentRole and column.id in _NUMERIC:
            return _RIGHT
        return None

    @staticmethod
    def _text(column: Column, result: CandidateResult, best: CandidateResult | None) -> str:
        ident = column.id
        if ident == "rank":
            return f"★ {result.rank}" if result.recommended else str(result.rank)
        if ident == "accelerator":
            return short_name(result.accelerator_name, 22)
        if ident == "confidence":
            return "–"  # filled by set_confidence
        if ident == "scenario":
            return result.scenario
        if ident == "fits":
            return "✔" if result.fits else "✘"
        if ident == "layout":
            return f"{result.tp}×{result.pp}×{result.dp}" if result.fits else "–"
        if ident == "verdict":
            return verdict(result, best)
        if ident == "gpus" and not result.fits:
            return "–"
        value = result.values.get(column.metric or "")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            if ident in _PRICED and result.values.get("usd_per_gpu_hour") is None and result.fits:
                return NO_PRICE
            return "–"
        return column.text(float(value))

    @staticmethod
    def _sort_value(column: Column, scenario_index: int, result: CandidateResult) -> Any:
        ident = column.id
        if ident == "rank":
            return scenario_index * 1_000_000 + result.rank
        if ident == "accelerator":
            return short_name(result.accelerator_name).lower()
        if ident == "confidence":
            return None
        if ident == "scenario":
            return scenario_index
        if ident == "fits":
            return 0 if result.fits else 1
        if ident == "layout":
            return result.tp * 10_000 + result.pp * 100 + result.dp if result.fits else None
        if ident == "verdict":
            return len(result.failures)
        if ident == "gpus" and not result.fits:
            return None
        value = result.values.get(column.metric or "")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def _confidence_tip(self, row: int) -> str:
        share, result = self.share(row), self.rows[row][1]
        if share is None:
            return "Decision confidence is off (Confidence, above the table)"
        name = escape(short_name(result.accelerator_name))
        return (f"<b>{name}</b>: the cheapest that meets the targets in <b>{share:.0%}</b> of {self.draws:,} draws "
                "of the uncertain assumptions (each uniform over its documented range; seed 0, the same every run)")

    @staticmethod
    def _tooltip(column: Column, result: CandidateResult) -> str:
        lines = [f"<b>{escape(result.accelerator_name)}</b> ({escape(result.candidate.label)}), "
                 f"scenario “{escape(result.scenario)}”"]
        metric = METRIC_BY_ID.get(column.metric or "")
        if metric is not None:
            value = result.values.get(metric.id)
            text = with_unit(float(value), metric.unit) if isinstance(value, (int, float)) else "not estimated"
            lines.append(f"{escape(metric.title)}: <b>{escape(text)}</b>")
            span = low_high(result, metric.id, metric.unit)
            if span:
                lines.append(f"Range {escape(span)} with every efficiency assumption at one end of its range")
        if column.id == "price":
            own = result.candidate.usd_per_gpu_hour
            lines.append("Your price, entered here (empty it for the catalog price)" if own is not None else
                         "The catalog price (or the scenario's, for its own GPU); double-click to enter yours"
                         if result.values.get("usd_per_gpu_hour") is not None else
                         "No rental price known: double-click to enter one")
        if column.id in ("rank", "accelerator", "verdict"):
            # Every figure of the row: a narrow table leaves some columns out.
            figures = [(c.header.replace("\n", " ").format(years=""), ComparisonTableModel._text(c, result, None))
                       for c in COLUMNS if c.metric]
            lines.append(" · ".join(f"{escape(h.strip())}: {escape(t)}" for h, t in figures if t != "–"))
        lines.append(f"Sizing: {escape(result.sizing)}")
        if result.fits:
            lines.append(f"Layout: TP {result.tp} × PP {result.pp} × DP {result.dp} on {escape(result.node)}")
        lines.append(f"Verdict: {escape(gui_words(result.verdict))}")
        if result.warnings:
            lines.append("Warnings:<br>" + "<br>".join(f"• {escape(w)}" for w in result.warnings[:5]))
        return "<br>".join(lines)


class ComparisonSortProxy(QSortFilterProxyModel):
    """Sorts on :data:`SORT_ROLE`; unknown values (None) sort after every known one."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)

    def lessThan(self, left: ModelIndex, right: ModelIndex) -> bool:  # noqa: N802 - Qt override
        a, b = left.data(SORT_ROLE), right.data(SORT_ROLE)
        descending = self.sortOrder() == Qt.SortOrder.DescendingOrder
        if a is None or b is None:
            # None last in either direction: it is "greater" ascending, "smaller" descending.
            if a is None and b is None:
                return False
            return (a is None) == descending
        try:
            return bool(a < b)
        except TypeError:
            return str(a) < str(b)
