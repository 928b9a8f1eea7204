"""First-party cost plugin: rental cost per hour and per token, cost and energy of a training run,
CO2, and buy-vs-rent total cost of ownership.

Depends only on pluggy, :mod:`workbench.core` and :mod:`workbench.engine`; reads the
performance plugin's throughput, time-to-train and utilization keys. Result keys are listed in
:mod:`workbench_cost.keys` (and docs/validation.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

from workbench_cost.estimator import CostEstimator
from workbench_cost.tco import BuyVsRent, buy_vs_rent

__version__ = "1.0.0"

hookimpl = pluggy.HookimplMarker("workbench")


@hookimpl
def workbench_register_estimators(register: Callable[[Any], None]) -> None:
    register(CostEstimator())


__all__ = ["BuyVsRent", "CostEstimator", "__version__", "buy_vs_rent", "workbench_register_estimators"]
