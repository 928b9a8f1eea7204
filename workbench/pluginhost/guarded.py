"""A third-party estimator as the engine sees it: checked metadata, guarded calls, clean outputs.

The engine calls first-party estimators directly (they are ours, tested, and on the hot path of
every sweep). A third-party one is wrapped in :class:`GuardedEstimator`: its ``info`` and
``needs_by_key`` are the clean copies made at registration, each ``estimate`` runs through
:func:`workbench.engine.guard.call` (stdout to stderr, time limit, BaseException caught), and what
it returns is copied into plain ``Quantity``/``Warning`` objects after checking every value: a
number must be finite (``NaN`` and ``inf`` are not JSON and not a plan), formulas are rendered
under the guard as well. A fatal fault (``sys.exit``, a timeout...) disables the whole plugin:
its estimators then fail at once, without running its code again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from workbench.engine import guard
import numpy as np

from workbench.engine.estimator import EstimateContext, EstimatorInfo
from workbench.engine.points import Column, PointOutputs, PointsContext, PointWarning
from workbench.engine.quantity import Outputs, Quantity, Warning

#: Longest text a plugin may put in one result (label, note, string value, formula).
MAX_TEXT = 10_000
_SEVERITIES = frozenset({"error", "warning", "info"})
#: Read through the base class's slot descriptors: a plugin's subclass cannot override them.
_SLOTS = {name: Quantity.__dict__[name] for name in ("value", "unit", "label", "_formula", "assumptions", "note")}
_WARNING_SLOTS = {name: Warning.__dict__[name] for name in ("code", "message", "severity", "fix")}


class PluginState:
    """One third-party plugin's runtime state, shared by its estimators."""

    def __init__(self, name: str, on_fatal: Callable[[str, str], None]) -> None:
        self.name = name
        self.disabled: str | None = None
        self._on_fatal = on_fatal

    def fault(self, message: str) -> None:
        """Disable the plugin after ``message`` ("plugin x: estimate of x.y timed out after 5 s")."""
        if self.disabled is None:
            self.disabled = message.removeprefix(f"plugin {self.name}: ")
            self._on_fatal(self.name, message)


class GuardedEstimator:
    __slots__ = ("info", "needs_by_key", "plugin", "_estimate")

    def __init__(self, info: EstimatorInfo, needs_by_key: dict[str, tuple[str, ...]],
                 estimate: Callable[[EstimateContext], Any], plugin: PluginState) -> None:
        self.info = info
        self.needs_by_key = needs_by_key
        self.plugin = plugin
        self._estimate = estimate

    def estimate(self, ctx: EstimateContext) -> Outputs:
        return self._guarded(self._run, ctx)

    def _guarded(self, run: Callable[[Any], Any], ctx: Any) -> Any:
        """``run(ctx)`` under the guard; a fatal fault disables the whole plugin."""
        plugin = self.plugin
        if plugin.disabled is not None:
            raise guard.PluginFault(f"plugin {plugin.name} is disabled: {plugin.disabled}")
        what = f"plugin {plugin.name}: estimate of {self.info.id}"
        try:
            return guard.call(run, ctx, what=what)
        except guard.PluginFault as exc:
            plugin.fault(str(exc))
            raise

    def _run(self, ctx: EstimateContext) -> Outputs:
        return clean_outputs(self._estimate(ctx), frozenset(self.info.produces), self.plugin)

    def __repr__(self) -> str:
        return f"<estimator {self.info.id} of plugin {self.plugin.name}>"


class GuardedArrayEstimator(GuardedEstimator):
    """A third-party array estimator: ``estimate_points`` guarded, its columns checked and copied."""

    __slots__ = ()

    def estimate(self, ctx: EstimateContext) -> Outputs:  # the engine calls estimate_points
        raise TypeError(f"{self.info.id} is an array estimator: the engine calls estimate_points")

    def estimate_points(self, ctx: PointsContext) -> PointOutputs:
        return self._guarded(self._run_points, ctx)  # type: ignore[no-any-return]

    def _run_points(self, ctx: PointsContext) -> PointOutputs:
        return clean_point_outputs(self._estimate(ctx), frozenset(self.info.produces), ctx.n, self.plugin)


def clean_point_outputs(out: Any, produces: frozenset[str], n: int, plugin: PluginState) -> PointOutputs:
    """Plain copies of an array estimator's columns: every array of ``n`` finite numbers or bools,
    every shared value as a scalar result's, texts bounded, warning masks of ``n`` bools."""
    if type(out) is not PointOutputs:
        raise TypeError(f"estimate_points returned {type(out).__name__}, not PointOutputs")
    values, warnings = out.values, out.warnings
    if type(values) is not dict or type(warnings) is not list:
        raise TypeError("PointOutputs.values must be a dict and PointOutputs.warnings a list")
    clean: dict[str, Column] = {}
    for key, column in values.items():
        if type(key) is not str or key not in produces:
            raise TypeError(f"returned undeclared result {key!r:.80}")
        if type(column) is not Column:
            raise TypeError(f"returned {type(column).__name__} for {key!r}, not a Column")
        array = column.values
        if isinstance(array, np.ndarray):
            if array.shape != (n,) or array.dtype.kind not in "biuf":
                raise TypeError(f"returned {array.dtype} values of shape {array.shape} for {key!r}: {n} numbers")
            if array.dtype.kind == "f" and not np.isfinite(array).all():
                raise ValueError(f"returned a value that is not finite for {key!r}: results are finite numbers")
            array = array.copy()
        else:
            array = _clean_quantity(key, Quantity(array), plugin).value
        for field, text in (("unit", column.unit), ("label", column.label), ("note", column.note)):
            _text(text, key, field)
        formula = column.formula
        if callable(formula):
            formula = _guarded_point_formula(formula, key, plugin)
        elif formula is not None:
            _text(formula, key, "formula")
        if type(column.assumptions) not in (tuple, list) or any(type(a) is not str for a in column.assumptions):
            raise TypeError(f"{key}: assumptions must be a tuple of ids")
        clean[key] = Column(array, column.unit, column.label, formula, tuple(column.assumptions), column.note)
    return PointOutputs(clean, [_clean_point_warning(w, n, plugin) for w in warnings])


def _clean_point_warning(warning: Any, n: int, plugin: PluginState) -> PointWarning:
    if type(warning) is not PointWarning:
        raise TypeError(f"warnings must be PointWarning objects, not {type(warning).__name__}")
    where = warning.where
    if where is not None:
        if not isinstance(where, np.ndarray) or where.shape != (n,):
            raise TypeError(f"a warning's mask must be an array of {n} bools")
        where = where.astype(bool)
    for field, text in (("code", warning.code), ("fix", warning.fix)):
        _text(text, "a warning", field)
    if warning.severity not in _SEVERITIES:
        raise ValueError(f"a warning's severity must be one of {sorted(_SEVERITIES)}, not {warning.severity!r:.40}")
    message = warning.message
    if callable(message):
        message = _guarded_point_formula(message, f"warning {warning.code}", plugin)
    else:
        _text(message, "a warning", "message")
    return PointWarning(warning.code, message, warning.severity, warning.fix, where)


def _guarded_point_formula(formula: Callable[[int], Any], key: str, plugin: PluginState) -> Callable[[int], str]:
    """A per-point formula (or warning text), rendered under the guard for the point asked."""

    def render(i: int) -> str:
        return _guarded_formula(lambda: formula(i), key, plugin)()

    return render


def clean_outputs(out: Any, produces: frozenset[str], plugin: PluginState) -> Outputs:
    """Plain copies of what an estimator returned (TypeError/ValueError naming the first problem)."""
    if type(out) is not Outputs:
        raise TypeError(f"estimate returned {type(out).__name__}, not Outputs")
    values, warnings = Outputs.__dict__["values"].__get__(out), Outputs.__dict__["warnings"].__get__(out)
    if type(values) is not dict or type(warnings) is not list:
        raise TypeError("Outputs.values must be a dict and Outputs.warnings a list")
    clean: dict[str, Quantity] = {}
    for key, quantity in values.items():
        if type(key) is not str or key not in produces:
            raise TypeError(f"returned undeclared result {key!r:.80}")
        clean[key] = _clean_quantity(key, quantity, plugin)
    return Outputs(clean, [_clean_warning(w) for w in warnings])


def _clean_quantity(key: str, quantity: Any, plugin: PluginState) -> Quantity:
    if not isinstance(quantity, Quantity):
        raise TypeError(f"returned {type(quantity).__name__} for {key!r}, not a Quantity")
    value, unit, label, formula, assumptions, note = (slot.__get__(quantity) for slot in _SLOTS.values())
    kind = type(value)
    if kind is float:
        if not math.isfinite(value):
            raise ValueError(f"returned {value!r} for {key!r}: results are finite numbers (or None)")
    elif kind is int:
        if not -1e300 < value < 1e300:
            raise ValueError(f"returned an integer of {value.bit_length():,} bits for {key!r}: too large for a result")
    elif kind is str:
        _text(value, key, "value")
    elif value is not None and kind is not bool:
        raise TypeError(f"returned a {kind.__name__} value for {key!r}: a number, bool, string or None")
    for field, text in (("unit", unit), ("label", label), ("note", note)):
        _text(text, key, field)
    if type(assumptions) not in (tuple, list) or any(type(a) is not str for a in assumptions):
        raise TypeError(f"{key}: assumptions must be a tuple of ids")
    if callable(formula):
        formula = _guarded_formula(formula, key, plugin)
    elif formula is not None:
        _text(formula, key, "formula")
    return Quantity(value, unit, label, formula, tuple(assumptions), note)


def _text(value: Any, key: str, field: str) -> None:
    if type(value) is not str:
        raise TypeError(f"{key}: {field} must be a string, not {type(value).__name__}")
    if len(value) > MAX_TEXT:
        raise ValueError(f"{key}: {field} is {len(value):,} characters long (at most {MAX_TEXT:,})")


def _clean_warning(warning: Any) -> Warning:
    if not isinstance(warning, Warning):
        raise TypeError(f"warnings must be Warning objects, not {type(warning).__name__}")
    code, message, severity, fix = (slot.__get__(warning) for slot in _WARNING_SLOTS.values())
    for field, text in (("code", code), ("message", message), ("fix", fix)):
        _text(text, "a warning", field)
    if severity not in _SEVERITIES:
        raise ValueError(f"a warning's severity must be one of {sorted(_SEVERITIES)}, not {severity!r:.40}")
    return Warning(code, message, severity, fix)


def _guarded_formula(formula: Callable[[], Any], key: str, plugin: PluginState) -> Callable[[], str]:
    """The plugin's lazy formula, rendered under the guard when someone reads it."""

    def render() -> str:
        if plugin.disabled is not None:
            return f"(not shown: plugin {plugin.name} is disabled)"
        try:
            text = guard.call(formula, what=f"plugin {plugin.name}: formula of {key}")
        except guard.PluginFault as exc:
            plugin.fault(str(exc))
            return f"(not shown: {exc})"
        except Exception as exc:  # noqa: BLE001 - a formula bug costs the formula, not the output
            return f"(not shown: the formula raised {guard.describe(exc)})"
        if type(text) is not str:
            return f"(not shown: the formula returned {type(text).__name__}, not text)"
        return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."

    return render


class GuardedSection:
    """A third-party report section: plain ``id``/``title``/``description`` read at registration,
    ``html(data)`` run under the guard (a fault is raised as an ordinary exception, which the
    report shows in the section's place)."""

    __slots__ = ("id", "title", "description", "plugin", "_html")

    def __init__(self, ident: str, title: str, description: str, html: Callable[[Any], Any],
                 plugin: PluginState) -> None:
        self.id, self.title, self.description = ident, title, description
        self.plugin = plugin
        self._html = html

    def html(self, data: Any) -> str:
        plugin = self.plugin
        if plugin.disabled is not None:
            raise guard.PluginFault(f"plugin {plugin.name} is disabled: {plugin.disabled}")
        try:
            return guard.call(lambda: str(self._html(data)), what=f"plugin {plugin.name}: report section {self.id}",
                              limit="load")
        except guard.PluginFault as exc:
            plugin.fault(str(exc))
            raise


class GuardedExporter:
    """A third-party exporter: its checked ``info`` read at registration, ``export`` run under the
    guard (a fault disables the plugin and is raised as an ordinary exception)."""

    __slots__ = ("info", "plugin", "_export")

    def __init__(self, info: Any, export: Callable[[Any, Any], Any], plugin: PluginState) -> None:
        self.info = info
        self.plugin = plugin
        self._export = export

    def export(self, resolved: Any, estimate: Any) -> Any:
        plugin = self.plugin
        if plugin.disabled is not None:
            raise guard.PluginFault(f"plugin {plugin.name} is disabled: {plugin.disabled}")
        try:
            return guard.call(self._export, resolved, estimate, what=f"plugin {plugin.name}: exporter {self.info.id}",
                              limit="load")
        except guard.PluginFault as exc:
            plugin.fault(str(exc))
            raise
