"""An inference engine's memory rule: vLLM captures its CUDA graphs outside its memory budget.

vLLM sizes its KV cache so that weights, activations and cache fill ``gpu_memory_utilization`` of
the GPU, then captures CUDA graphs for the decode batch sizes. The graphs' memory comes out of what
the budget leaves, ``(1 - gpu_memory_utilization) x capacity``; when it does not fit, start-up ends
in an out-of-memory error during graph capture. The graphs' size is an assumption with its source,
and ``0`` models ``--enforce-eager`` (no graphs).
"""

from __future__ import annotations

import math

from workbench.core.units import GiB
from workbench.engine.assumptions import Assumption
from workbench.engine.estimator import EstimateContext, EstimatorInfo
from workbench.engine.quantity import Outputs, Warning, q

VERSION = "1.0.0"

CUDA_GRAPH_GIB = Assumption(
    id="vllm.cuda_graph_gib",
    title="vLLM CUDA-graph memory per GPU",
    default=1.0,
    unit="GiB",
    source=(
        "vLLM's model runner logs at capture: 'CUDA graphs can take additional 1~3 GiB memory per GPU. "
        "If you are running out of memory, consider decreasing `gpu_memory_utilization` or enforcing eager "
        "mode' (vllm/worker/model_runner.py, v0.4-v0.6); the default is the low end of that range"
    ),
    description="Device memory the captured decode graphs hold, outside the gpu_memory_utilization budget. "
    "0 models --enforce-eager.",
    minimum=0,
    maximum=64,
)

KEYS = (
    "cuda_graphs.bytes",
    "cuda_graphs.room",
    "cuda_graphs.headroom",
    "cuda_graphs.max_gpu_memory_utilization",
)


def _gib(x: float) -> str:
    return f"{x / GiB:,.2f} GiB"


class VllmCudaGraphEstimator:
    """Checks that vLLM's CUDA graphs fit beside the memory ``gpu_memory_utilization`` claims."""

    info = EstimatorInfo(
        id="example.vllm-cuda-graphs",
        title="vLLM CUDA-graph memory",
        version=VERSION,
        produces=KEYS,
        needs=("memory.gpu_capacity", "memory.usable_capacity"),
        assumptions=(CUDA_GRAPH_GIB,),
        description="CUDA-graph capture memory of a vLLM server and whether it fits outside "
        "the gpu_memory_utilization budget.",
    )

    def estimate(self, ctx: EstimateContext) -> Outputs:
        if ctx.scenario.is_training:
            why = "training: no vLLM server"
            return Outputs({key: q(None, note=why, formula=why) for key in KEYS})
        ids = (CUDA_GRAPH_GIB.id,)
        graph_gib = ctx.assumptions[CUDA_GRAPH_GIB.id]
        graphs = graph_gib * GiB
        capacity = ctx.number("memory.gpu_capacity")
        usable = ctx.number("memory.usable_capacity")
        utilization = ctx.scenario.serving.gpu_memory_utilization
        room = capacity - usable
        headroom = room - graphs
        highest = 1 - graphs / capacity
        values = {
            "cuda_graphs.bytes": q(graphs, "B", "CUDA graphs per GPU", lambda: f"{graph_gib:g} GiB", ids),
            "cuda_graphs.room": q(room, "B", "Memory outside the vLLM budget",
                                  lambda: f"{_gib(capacity)} x (1 - gpu_memory_utilization {utilization:g})"),
            "cuda_graphs.headroom": q(headroom, "B", "Headroom after CUDA graphs",
                                      lambda: f"{_gib(room)} - {_gib(graphs)}", ids),
            "cuda_graphs.max_gpu_memory_utilization": q(
                highest, "fraction", "Highest gpu_memory_utilization",
                lambda: f"1 - {_gib(graphs)} / {_gib(capacity)}", ids),
        }
        warnings = []
        if headroom < 0:
            fitting = math.floor(highest * 100) / 100
            warnings.append(Warning(
                "cuda-graphs-oom",
                f"vLLM's CUDA graphs ({_gib(graphs)}) do not fit in the {_gib(room)} that "
                f"gpu_memory_utilization {utilization:g} leaves: start-up fails during graph capture",
                fix=f"lower --gpu-mem-util to {fitting:.2f} or below, or serve with --enforce-eager "
                "(--set vllm.cuda_graph_gib=0)",
            ))
        return Outputs(values, warnings)
