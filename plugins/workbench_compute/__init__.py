"""First-party compute plugin: FLOPs per pass, per-GPU roofline per phase, compute guard-rails.

Depends only on pluggy, numpy (the engine's array protocol), :mod:`workbench.core` and
:mod:`workbench.engine`. See :mod:`workbench_compute.estimator` for the result keys and
:mod:`workbench_compute.flops` for the counting convention.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

from workbench_compute.estimator import VERSION, ComputeEstimator

__version__ = VERSION

hookimpl = pluggy.HookimplMarker("workbench")


@hookimpl
def workbench_register_estimators(register: Callable[[Any], None]) -> None:
    register(ComputeEstimator())


__all__ = ["ComputeEstimator", "__version__", "workbench_register_estimators"]
