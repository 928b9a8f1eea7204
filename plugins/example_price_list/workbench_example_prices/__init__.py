"""Example third-party plugin for the GPU Planning Workbench.

Registered through the entry point ``example_price_list`` in the group ``workbench.plugins``
(see this package's ``pyproject.toml``). It contributes a private price list (an estimator and a
custom MIG-slice accelerator) and vLLM's CUDA-graph memory rule (an estimator with a named,
sourced assumption). It imports only ``workbench.core`` and ``workbench.engine``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

from workbench_example_prices.price_list import MIG_SLICE, PRICES, PrivatePriceEstimator
from workbench_example_prices.vllm_memory import CUDA_GRAPH_GIB, VllmCudaGraphEstimator

__version__ = "1.0.0"

hookimpl = pluggy.HookimplMarker("workbench")


@hookimpl
def workbench_register_estimators(register: Callable[[Any], None]) -> None:
    register(PrivatePriceEstimator())
    register(VllmCudaGraphEstimator())


@hookimpl
def workbench_register_accelerators(register: Callable[[Any], None]) -> None:
    register(MIG_SLICE)


__all__ = [
    "CUDA_GRAPH_GIB",
    "MIG_SLICE",
    "PRICES",
    "PrivatePriceEstimator",
    "VllmCudaGraphEstimator",
    "__version__",
    "workbench_register_accelerators",
    "workbench_register_estimators",
]
