"""The hooks a plugin may implement. Each receives a ``register`` callback (llm/datasette style):
the plugin calls it once per thing it contributes, and the host validates every call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

PROJECT = "workbench"
ENTRY_POINT_GROUP = "workbench.plugins"
#: Bumped when a hook's signature or the meaning of what it registers changes incompatibly.
PLUGIN_CONTRACT = 1

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def workbench_register_estimators(register: Callable[[Any], None]) -> None:
    """Register estimator objects (``info: EstimatorInfo`` and ``estimate(ctx) -> Outputs``)."""


@hookspec
def workbench_register_accelerators(register: Callable[[Any], None]) -> None:
    """Register :class:`workbench.core.Accelerator` objects (or dicts that validate as one)."""


@hookspec
def workbench_register_models(register: Callable[[Any], None]) -> None:
    """Register ``(id, ModelArchitecture)`` pairs for the model catalog."""


@hookspec
def workbench_register_report_sections(register: Callable[[Any], None]) -> None:
    """Register report sections (see :mod:`workbench.report`)."""


@hookspec
def workbench_register_exporters(register: Callable[[Any], None]) -> None:
    """Register launch-configuration exporters (:class:`workbench.core.exporter.Exporter`)."""
