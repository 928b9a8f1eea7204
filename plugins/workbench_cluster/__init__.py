"""First-party cluster plugin: storage and the data pipeline, checkpoints, failures and goodput.

Depends only on pluggy, :mod:`workbench.core` and :mod:`workbench.engine` (the storage catalog
is read through :mod:`workbench.engine.storage_catalog`); reads the memory plugin's per-GPU
weights and optimizer states, the performance plugin's throughput, step and run time, and the cost
plugin's run cost. Result keys are listed in :mod:`workbench_cluster.keys` (and docs/output-keys.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

__version__ = "1.0.0"

hookimpl = pluggy.HookimplMarker("workbench")


@hookimpl
def workbench_register_estimators(register: Callable[[Any], None]) -> None:
    from workbench_cluster.estimator import ClusterEstimator

    register(ClusterEstimator())


__all__ = ["__version__", "workbench_register_estimators"]
