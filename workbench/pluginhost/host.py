"""Load plugins so that no plugin can break the app: each entry point, hook call and registered
object is guarded, and every plugin ends with a status record the CLI and the GUI show.

pluggy alone does not isolate plugins: ``load_setuptools_entrypoints`` raises on the first broken
import and one raising hookimpl aborts the whole hook call. So entry points are loaded one by
one, hookimpls are called one by one (``hook.get_hookimpls()``), and what they register is
validated here (:mod:`workbench.pluginhost.checks`).

Every import and hook call runs through :func:`workbench.engine.guard.call`: ``sys.exit()``,
KeyboardInterrupt and other BaseExceptions, ``print()`` and endless loops in plugin code fail that
plugin, nothing else. A plugin that fails contributes nothing: what its other hooks registered is
dropped too. Conflicts between plugins (an estimator id, a produced key, an assumption defined
differently, an accelerator or model id registered twice) and cycles between estimators fail the
plugin loaded later; first-party plugins load first.
"""

from __future__ import annotations

import importlib
import os
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from importlib.metadata import entry_points
from typing import Any

import pluggy

from workbench.core.exporter import ExporterInfo
from workbench.core.hardware import Accelerator
from workbench.core.model import ModelArchitecture
from workbench.engine import guard
from workbench.engine.estimator import Estimator, EstimatorInfo
from workbench.pluginhost import checks, hookspecs
from workbench.pluginhost.guarded import (
    GuardedArrayEstimator,
    GuardedEstimator,
    GuardedExporter,
    GuardedSection,
    PluginState,
)

#: First-party plugins, registered by module name: frozen builds carry no entry-point metadata.
FIRST_PARTY: tuple[str, ...] = (
    "workbench_memory", "workbench_compute", "workbench_performance", "workbench_cost", "workbench_export", "workbench_cluster",
)

LOADED, FAILED, DISABLED = "loaded", "failed", "disabled"
FIRST_PARTY_ORIGIN = "first-party"


@dataclass
class PluginStatus:
    name: str
    version: str
    origin: str
    status: str
    error: str | None = None
    registered: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "origin": self.origin,
            "status": self.status,
            "error": self.error,
            "registered": dict(self.registered),
        }


@dataclass
class Registry:
    estimators: list[Estimator] = field(default_factory=list)
    accelerators: list[Accelerator] = field(default_factory=list)
    models: list[tuple[str, ModelArchitecture]] = field(default_factory=list)
    report_sections: list[Any] = field(default_factory=list)
    exporters: list[Any] = field(default_factory=list)


#: hook -> the registry bucket it fills.
_HOOKS: dict[str, str] = {
    "workbench_register_estimators": "estimators",
    "workbench_register_accelerators": "accelerators",
    "workbench_register_models": "models",
    "workbench_register_report_sections": "report_sections",
    "workbench_register_exporters": "exporters",
}


class PluginHost:
    """Discovers, loads and calls plugins; keeps a :class:`PluginStatus` for each."""

    def __init__(
        self,
        first_party: Iterable[str] = FIRST_PARTY,
        *,
        entry_point_group: str | None = hookspecs.ENTRY_POINT_GROUP,
        disabled: Iterable[str] = (),
        extra_plugins: Iterable[tuple[str, object]] = (),
    ) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.statuses: dict[str, PluginStatus] = {}
        self.disabled = set(disabled)
        #: (plugin, message) of plugins disabled while running (an estimate that called sys.exit).
        self.runtime_faults: list[tuple[str, str]] = []
        self._fatal: set[str] = set()
        for module_name in first_party:
            self._load_module(module_name, origin=FIRST_PARTY_ORIGIN)
        if entry_point_group and not os.environ.get("WORKBENCH_NO_ENTRY_POINTS"):
            self._load_entry_points(entry_point_group)
        for name, plugin in extra_plugins:
            self._register(name, plugin, origin="in-process", version=_version_of(plugin))
        self.registry = self._collect()

    # --- loading -----------------------------------------------------------------------------

    def _load_module(self, module_name: str, origin: str) -> None:
        if module_name in self.disabled:
            self.statuses[module_name] = PluginStatus(module_name, "", origin, DISABLED)
            return
        try:
            module = guard.call(importlib.import_module, module_name, what=f"plugin {module_name}: import",
                                limit="load")
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop the app
            self.statuses[module_name] = PluginStatus(module_name, "", origin, FAILED, self._problem(module_name, exc))
            return
        self._register(module_name, module, origin, _version_of(module))

    def _load_entry_points(self, group: str) -> None:
        only = os.environ.get("WORKBENCH_PLUGINS")
        allowed = {n.strip() for n in only.split(",") if n.strip()} if only else None
        for ep in entry_points(group=group):
            dist = getattr(ep, "dist", None)
            origin = f"entry point ({dist.name} {dist.version})" if dist else "entry point"
            if ep.name in self.statuses:
                continue
            if ep.name in self.disabled or (allowed is not None and ep.name not in allowed):
                self.statuses[ep.name] = PluginStatus(ep.name, dist.version if dist else "", origin, DISABLED)
                continue
            try:
                plugin = guard.call(ep.load, what=f"plugin {ep.name}: import", limit="load")
            except Exception as exc:  # noqa: BLE001
                self.statuses[ep.name] = PluginStatus(ep.name, dist.version if dist else "", origin, FAILED,
                                                      self._problem(ep.name, exc))
                continue
            self._register(ep.name, plugin, origin, dist.version if dist else _version_of(plugin))

    def _register(self, name: str, plugin: object, origin: str, version: str) -> None:
        if name in self.disabled:
            self.statuses[name] = PluginStatus(name, version, origin, DISABLED)
            return
        try:
            # pluggy reads the plugin's attributes (properties, __getattr__: plugin code) to find hooks.
            guard.call(self._register_hooks, plugin, name, what=f"plugin {name}: registration", limit="load")
        except Exception as exc:  # noqa: BLE001 - e.g. a hookimpl with a wrong signature
            try:
                if self.pm.is_registered(plugin):
                    self.pm.unregister(plugin)
            except Exception:  # noqa: BLE001 - pluggy could not even look at it: it is not registered
                pass
            self.statuses[name] = PluginStatus(name, version, origin, FAILED, self._problem(name, exc))
            return
        self.statuses[name] = PluginStatus(name, version, origin, LOADED)

    def _register_hooks(self, plugin: object, name: str) -> None:
        self.pm.register(plugin, name=name)
        self.pm.check_pending()

    # --- calling -----------------------------------------------------------------------------

    def _collect(self) -> Registry:
        """Call every hook of every plugin, check what they register, settle conflicts."""
        contributions: dict[str, dict[str, list[Any]]] = {}
        states: dict[str, PluginState] = {}
        for hook_name, bucket in _HOOKS.items():
            hook = getattr(self.pm.hook, hook_name)
            for impl in hook.get_hookimpls():
                name = impl.plugin_name
                if name in self._fatal:
                    continue  # it ended a call with sys.exit or a timeout: do not run it again
                if self.statuses[name].origin != FIRST_PARTY_ORIGIN:
                    states.setdefault(name, PluginState(name, self._on_runtime_fault))
                accepted = self._call_hook(impl, hook_name, bucket, states.get(name))
                if accepted is not None:
                    contributions.setdefault(name, {}).setdefault(bucket, []).extend(accepted)
        contributions = {n: c for n, c in contributions.items() if self.statuses[n].status != FAILED}
        self._settle_conflicts(contributions)
        self._break_cycles(contributions)
        registry = Registry()
        for name, status in self.statuses.items():
            found = contributions.get(name)
            if found is None or status.status == FAILED:
                continue
            for bucket, items in found.items():
                getattr(registry, bucket).extend(items)
                if items:
                    status.registered[bucket] = len(items)
        return registry

    def _call_hook(self, impl: Any, hook_name: str, bucket: str, state: PluginState | None) -> list[Any] | None:
        """What one plugin's hookimpl registered, checked; None (and the plugin failed) on a problem."""
        name = impl.plugin_name
        accepted: list[Any] = []
        problems: list[str] = []
        is_open = True

        def register(obj: Any) -> None:
            if not is_open:
                raise RuntimeError(f"{hook_name}: register() was called after the hook returned")
            try:
                accepted.append(self._check(bucket, obj, state))
            except TypeError as exc:
                problems.append(guard.describe(exc))  # recorded even if the plugin catches it
                raise

        try:
            returned = guard.call(impl.function, register=register, what=f"plugin {name}: {hook_name}", limit="load")
        except guard.PluginFault as exc:  # sys.exit, a timeout...: do not call this plugin again
            self._fail(name, self._problem(name, exc), fatal=True)
            return None
        except Exception as exc:  # noqa: BLE001 - a raising hook or garbage registration
            self._fail(name, f"{hook_name}: {guard.describe(exc)}")
            return None
        finally:
            is_open = False
        if problems:
            self._fail(name, f"{hook_name}: {problems[0]}")
            return None
        if returned is not None:
            self._fail(name, f"{hook_name} returned {type(returned).__name__}: a hook registers through "
                             "register(...) and returns None")
            return None
        return accepted

    @staticmethod
    def _check(bucket: str, obj: Any, state: PluginState | None) -> Any:
        """One registered object, checked (TypeError naming the problem)."""
        if bucket == "estimators":
            return _checked_estimator(obj, state)
        if bucket == "accelerators":
            return checks.check_accelerator(obj)
        if bucket == "models":
            return checks.check_model(obj)
        if bucket == "exporters":
            return _checked_exporter(obj, state)
        return _checked_section(obj, state)

    def _settle_conflicts(self, contributions: dict[str, dict[str, list[Any]]]) -> None:
        """Fail each plugin (in load order) whose registrations clash with an earlier plugin's or
        with its own: ids, produced keys, assumptions defined differently."""
        seen = _Seen()
        for name in list(self.statuses):
            found = contributions.get(name)
            if found is None:
                continue
            problem = seen.add(name, found)
            if problem is not None:
                self._fail(name, problem)
                del contributions[name]

    def _break_cycles(self, contributions: dict[str, dict[str, list[Any]]]) -> None:
        """While estimators depend on each other in a cycle, fail the latest-loaded plugin in it."""
        order = {name: i for i, name in enumerate(self.statuses)}
        while True:
            owner = {e.info.id: n for n, found in contributions.items() for e in found.get("estimators", ())}
            estimators = [e for found in contributions.values() for e in found.get("estimators", ())]
            producer = {key: e.info.id for e in estimators for key in e.info.produces}
            graph = {e.info.id: {producer[k] for k in e.info.needs if k in producer} for e in estimators}
            try:
                TopologicalSorter(graph).prepare()
                return
            except CycleError as exc:
                cycle = [str(i) for i in exc.args[1]]
            culprit = max({owner[i] for i in cycle}, key=order.__getitem__)
            self._fail(culprit, f"estimators depend on each other in a cycle: {' -> '.join(cycle)}")
            del contributions[culprit]

    # --- failures ----------------------------------------------------------------------------

    def _problem(self, name: str, exc: Exception) -> str:
        if isinstance(exc, guard.PluginFault):
            return str(exc).removeprefix(f"plugin {name}: ")
        return guard.describe(exc)

    def _fail(self, name: str, problem: str, fatal: bool = False) -> None:
        status = self.statuses[name]
        status.status = FAILED
        status.registered = {}
        status.error = f"{status.error}; {problem}" if status.error else problem
        if fatal:
            self._fatal.add(name)

    def _on_runtime_fault(self, name: str, message: str) -> None:
        """A guarded estimator of ``name`` ended fatally: the plugin is off from now on."""
        status = self.statuses[name]
        status.status = FAILED
        problem = f"disabled while running: {message.removeprefix(f'plugin {name}: ')}"
        status.error = f"{status.error}; {problem}" if status.error else problem
        self.runtime_faults.append((name, problem))

    def status_list(self) -> list[PluginStatus]:
        return list(self.statuses.values())


def _checked_estimator(obj: Any, state: PluginState | None) -> Estimator:
    """A first-party estimator itself (its metadata checked); a third-party one wrapped."""
    info = checks.static_attribute(obj, "info")
    if info is None or not isinstance(info, EstimatorInfo):
        text = repr(obj) if type(obj) in (str, int, float, type(None)) else f"of type {type(obj).__name__}"
        raise TypeError(f"estimator {text[:80]} has no EstimatorInfo `info` (a plain attribute)")
    clean = checks.check_info(info)
    estimate_points = getattr(obj, "estimate_points", None)
    estimate = getattr(obj, "estimate", None)
    if not callable(estimate_points) and not callable(estimate):
        raise TypeError(f"estimator {clean.id} has neither estimate(ctx) nor estimate_points(ctx)")
    needs_by_key = checks.check_needs_by_key(checks.static_attribute(obj, "needs_by_key"), clean)
    if state is None:
        return obj  # type: ignore[no-any-return]
    if callable(estimate_points):
        return GuardedArrayEstimator(clean, needs_by_key, estimate_points, state)
    return GuardedEstimator(clean, needs_by_key, estimate, state)


def _checked_section(obj: Any, state: PluginState | None) -> Any:
    """A report section: ``id`` and ``html(data)``, ``title`` and ``description`` optional."""
    ident = checks.static_attribute(obj, "id")
    if type(ident) is not str:
        raise TypeError(f"a report section needs a string `id` attribute, not {type(ident).__name__}")
    ident = checks.name(ident, "a report section id")
    title = checks.static_attribute(obj, "title")
    description = checks.static_attribute(obj, "description")
    title = ident if title is None else checks.text(title, f"report section {ident}: title")
    description = "" if description is None else checks.text(description, f"report section {ident}: description")
    html = getattr(obj, "html", None)
    if not callable(html):
        raise TypeError(f"report section {ident} has no html(data) method")
    if state is None:
        return obj
    return GuardedSection(ident, title, description, html, state)


def _checked_exporter(obj: Any, state: PluginState | None) -> Any:
    """A launch-configuration exporter: an ``ExporterInfo`` ``info`` and ``export(resolved, estimate)``."""
    info = checks.static_attribute(obj, "info")
    if type(info) is not ExporterInfo:
        raise TypeError(f"exporter of type {type(obj).__name__} has no ExporterInfo `info` (a plain attribute)")
    export = getattr(obj, "export", None)
    if not callable(export):
        raise TypeError(f"exporter {info.id} has no export(resolved, estimate) method")
    if state is None:
        return obj
    return GuardedExporter(info, export, state)


class _Seen:
    """What earlier plugins registered, by id, to find a later plugin's clashes."""

    def __init__(self) -> None:
        self.estimators: dict[str, str] = {}
        self.producers: dict[str, str] = {}
        self.assumptions: dict[str, tuple[Any, str]] = {}
        self.accelerators: dict[str, str] = {}
        self.models: dict[str, str] = {}
        self.exporters: dict[str, str] = {}

    def add(self, name: str, found: dict[str, list[Any]]) -> str | None:
        """Record ``name``'s registrations; the first clash instead (nothing recorded then)."""
        estimators, producers = dict(self.estimators), dict(self.producers)
        assumptions, accelerators, models = dict(self.assumptions), dict(self.accelerators), dict(self.models)
        exporters = dict(self.exporters)
        for est in found.get("estimators", ()):
            info = est.info
            if info.id in estimators:
                return f"estimator id {info.id} is already registered by plugin {estimators[info.id]}"
            estimators[info.id] = name
            for key in info.produces:
                if key in producers:
                    return f"estimator {info.id} produces {key}, already produced by {producers[key]}"
                producers[key] = f"{info.id} (plugin {name})"
            for assumption in info.assumptions:
                known = assumptions.get(assumption.id)
                if known is not None and known[0] != assumption:
                    return f"assumption {assumption.id} is already defined differently by plugin {known[1]}"
                assumptions.setdefault(assumption.id, (assumption, name))
        for accelerator in found.get("accelerators", ()):
            if accelerator.id in accelerators:
                return f"accelerator id {accelerator.id} is already registered by plugin {accelerators[accelerator.id]}"
            accelerators[accelerator.id] = name
        for ident, _arch in found.get("models", ()):
            if ident in models:
                return f"model id {ident} is already registered by plugin {models[ident]}"
            models[ident] = name
        for exporter in found.get("exporters", ()):
            if exporter.info.id in exporters:
                return f"exporter id {exporter.info.id} is already registered by plugin {exporters[exporter.info.id]}"
            exporters[exporter.info.id] = name
        self.estimators, self.producers, self.assumptions = estimators, producers, assumptions
        self.accelerators, self.models, self.exporters = accelerators, models, exporters
        return None


def _version_of(obj: object) -> str:
    """``__version__`` read without running plugin code (a module's ``__getattr__``, a property)."""
    namespace = obj.__dict__ if isinstance(obj, types.ModuleType) else None
    found = namespace.get("__version__") if namespace is not None else checks.static_attribute(obj, "__version__")
    return found if type(found) is str and len(found) <= 100 else ""

