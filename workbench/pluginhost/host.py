"""Load plugins so that no plugin can break the app: each entry point, hook call and registered
object is guarded, and every plugin ends with a status record the CLI and the GUI show.

pluggy alone does not isolate plugins: ``load_setuptools_entrypoints`` raises on the first broken
import and one raising hookimpl aborts the whole hook call. So entry points are loaded one by
one, hookimpls are called one by one (``hook.get_hookimpls()``), and what they register is
validated here.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import pluggy
from pydantic import ValidationError

from workbench.core.errors import describe_validation_error
from workbench.core.hardware import Accelerator
from workbench.core.model import ModelArchitecture
from workbench.engine.estimator import ESTIMATOR_CONTRACT, Estimator, EstimatorInfo
from workbench.pluginhost import hookspecs

#: First-party plugins, registered by module name: frozen builds carry no entry-point metadata.
FIRST_PARTY: tuple[str, ...] = ("workbench_memory", "workbench_compute", "workbench_performance", "workbench_cost")

LOADED, FAILED, DISABLED = "loaded", "failed", "disabled"


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


def _validate_estimator(obj: Any) -> Estimator:
    info = getattr(obj, "info", None)
    if not isinstance(info, EstimatorInfo):
        raise TypeError(f"estimator {obj!r} has no EstimatorInfo `info`")
    if info.contract != ESTIMATOR_CONTRACT:
        raise TypeError(f"estimator {info.id} speaks contract {info.contract}, the engine {ESTIMATOR_CONTRACT}")
    if not callable(getattr(obj, "estimate", None)):
        raise TypeError(f"estimator {info.id} has no estimate(ctx) method")
    return obj  # type: ignore[no-any-return]


def _validate_accelerator(obj: Any) -> Accelerator:
    if isinstance(obj, Accelerator):
        return obj
    try:
        return Accelerator.model_validate({**obj, "custom": True} if isinstance(obj, dict) else obj)
    except ValidationError as exc:
        raise TypeError(describe_validation_error(exc, "accelerator")) from None


def _validate_model(obj: Any) -> tuple[str, ModelArchitecture]:
    if not (isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], str)):
        raise TypeError("a model is registered as (id, ModelArchitecture)")
    ident, arch = obj
    if not isinstance(arch, ModelArchitecture):
        try:
            arch = ModelArchitecture.model_validate(arch)
        except ValidationError as exc:
            raise TypeError(describe_validation_error(exc, f"model {ident}")) from None
    return ident, arch


_HOOKS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "workbench_register_estimators": ("estimators", _validate_estimator),
    "workbench_register_accelerators": ("accelerators", _validate_accelerator),
    "workbench_register_models": ("models", _validate_model),
    "workbench_register_report_sections": ("report_sections", lambda obj: obj),
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
        for module_name in first_party:
            self._load_module(module_name, origin="first-party")
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
            module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop the app
            self.statuses[module_name] = PluginStatus(module_name, "", origin, FAILED, _describe(exc))
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
                plugin = ep.load()
            except Exception as exc:  # noqa: BLE001
                self.statuses[ep.name] = PluginStatus(ep.name, dist.version if dist else "", origin, FAILED, _describe(exc))
                continue
            self._register(ep.name, plugin, origin, dist.version if dist else _version_of(plugin))

    def _register(self, name: str, plugin: object, origin: str, version: str) -> None:
        if name in self.disabled:
            self.statuses[name] = PluginStatus(name, version, origin, DISABLED)
            return
        try:
            self.pm.register(plugin, name=name)
            self.pm.check_pending()
        except Exception as exc:  # noqa: BLE001 - e.g. a hookimpl with a wrong signature
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            self.statuses[name] = PluginStatus(name, version, origin, FAILED, _describe(exc))
            return
        self.statuses[name] = PluginStatus(name, version, origin, LOADED)

    # --- calling -----------------------------------------------------------------------------

    def _collect(self) -> Registry:
        registry = Registry()
        for hook_name, (bucket, validate) in _HOOKS.items():
            hook = getattr(self.pm.hook, hook_name)
            for impl in hook.get_hookimpls():
                status = self.statuses[impl.plugin_name]
                accepted: list[Any] = []

                def register(obj: Any, _accepted: list[Any] = accepted, _validate: Callable[[Any], Any] = validate) -> None:
                    _accepted.append(_validate(obj))

                try:
                    impl.function(register=register)
                except Exception as exc:  # noqa: BLE001 - a raising hook or garbage registration
                    status.status = FAILED
                    problem = f"{hook_name}: {_describe(exc)}"
                    status.error = f"{status.error}; {problem}" if status.error else problem
                    continue
                getattr(registry, bucket).extend(accepted)
                if accepted:
                    status.registered[bucket] = status.registered.get(bucket, 0) + len(accepted)
        return registry

    def status_list(self) -> list[PluginStatus]:
        return list(self.statuses.values())


def _version_of(obj: object) -> str:
    return str(getattr(obj, "__version__", "") or "")


def _describe(exc: BaseException) -> str:
    """One line for a status record: the exception type and its message, lines joined."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    if len(text) > 400:
        text = text[:397] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
