"""The Python API: the same engine the CLI and the window use.

    >>> from workbench.api import estimate
    >>> est = estimate(model="llama-3.1-8b", gpu="h100-sxm", workload="inference")
    >>> est.get("memory.per_gpu.total")
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from workbench.catalog.resolve import resolve_scenario
from workbench.core.errors import InputError, describe_validation_error
from workbench.core.project import Project
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine
from workbench.pluginhost import default_engine


def make_scenario(**fields: Any) -> Scenario:
    try:
        return Scenario.model_validate(fields)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, "scenario")) from None


def resolve(scenario: Scenario, project: Project | None = None) -> ResolvedScenario:
    return resolve_scenario(scenario, project)


def engine() -> Engine:
    return default_engine()


def estimate(scenario: Scenario | None = None, *, project: Project | None = None, **fields: Any) -> Estimate:
    """Estimate a scenario (or one built from keyword fields) with every loaded estimator."""
    if scenario is None:
        scenario = make_scenario(**fields)
    elif fields:
        raise TypeError("pass a Scenario or fields, not both")
    return default_engine().run(resolve_scenario(scenario, project))
