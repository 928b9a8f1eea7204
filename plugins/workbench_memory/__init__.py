"""First-party memory estimators: parameters, KV cache, and the memory stack per GPU.

The stack follows what frameworks really allocate: weights by storage format (quantization scales
included), gradients and optimizer states of the trainable parameters (full, LoRA, QLoRA),
activations of in-flight micro-batches, the KV cache as serving engines page it, and runtime
overhead (CUDA context, NCCL buffers, allocator fragmentation, vLLM's memory reservation), on the
most-loaded and the average GPU under TP/PP/DP/EP, ZeRO 1-3 and offload.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

__version__ = "1.0.0"

hookimpl = pluggy.HookimplMarker("workbench")


@hookimpl
def workbench_register_estimators(register: Callable[[Any], None]) -> None:
    from workbench_memory.guards import LayoutChecks
    from workbench_memory.kv_cache import KvCacheEstimator
    from workbench_memory.parameters import ParametersEstimator
    from workbench_memory.stack import MemoryStackEstimator

    for estimator in (ParametersEstimator(), KvCacheEstimator(), MemoryStackEstimator(), LayoutChecks()):
        register(estimator)
