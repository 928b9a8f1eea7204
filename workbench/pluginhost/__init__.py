"""Plugin host: pluggy hookspecs, guarded loading, plugin status records. No Qt."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from workbench.pluginhost.hookspecs import ENTRY_POINT_GROUP, PLUGIN_CONTRACT, hookimpl
from workbench.pluginhost.host import FIRST_PARTY, PluginHost, PluginStatus

if TYPE_CHECKING:
    from workbench.engine.pipeline import Engine

__all__ = ["ENTRY_POINT_GROUP", "FIRST_PARTY", "PLUGIN_CONTRACT", "PluginHost", "PluginStatus", "default_engine", "get_host", "hookimpl"]


@lru_cache(maxsize=1)
def get_host() -> PluginHost:
    """The process-wide plugin host (plugins load once)."""
    return PluginHost()


@lru_cache(maxsize=1)
def default_engine() -> Engine:
    """An engine over every estimator the loaded plugins registered."""
    from workbench.engine.pipeline import Engine

    return Engine(get_host().registry.estimators)
