"""What every exporter reads from a resolved scenario, in one place.

A serving plan is the scenario as its estimate saw it: the serving engine's documented defaults
filled in (:func:`workbench.engine.serving_engines.resolve_scenario`), so that an exported
command pins the values the plan was sized with, whichever engine it targets. A field that a
target engine has no argument for is written as a note; :class:`Notes` collects them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from workbench.core.dtypes import DType, WeightFormat
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Batching, Scenario, ServingEngine
from workbench.engine import serving_engines

#: Where the plan needs a value that the scenario does not hold (the draft model's checkpoint):
#: the exported text names it, and a note says what to put there.
DRAFT_MODEL = "DRAFT_MODEL"


class Notes:
    """Scenario fields without an equivalent in the target engine, as one line each."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, text: str) -> None:
        self.lines.append(text)

    def comment_block(self, prefix: str = "# ") -> str:
        if not self.lines:
            return (f"{prefix}Every launch setting of the scenario is expressed here "
                    "(prices and estimation assumptions are not launch settings).\n")
        body = "".join(f"{prefix}- {line}\n" for line in self.lines)
        return f"{prefix}Not expressed as arguments (no equivalent in this engine):\n{body}"


def model_reference(resolved: ResolvedScenario) -> str:
    """The model as an engine loads it: the Hugging Face repository of a catalog model, or the
    folder of an imported config.json."""
    source = resolved.model.source or resolved.scenario.model
    if source.endswith("config.json"):
        return str(PurePosixPath(source).parent)
    return source


def dtype_name(dtype: DType) -> str:
    """PyTorch's spelling, which every engine here accepts for ``--dtype``."""
    return {DType.BF16: "bfloat16", DType.FP16: "float16", DType.FP32: "float32"}.get(dtype, "bfloat16")


@dataclass(frozen=True)
class ServingPlan:
    scenario: Scenario
    model: str
    tp: int
    pp: int
    dp: int
    ep: int
    max_model_len: int
    max_sequences: int
    memory_fraction: float
    memory_rule: str
    engine: ServingEngine
    batching: Batching
    step_tokens: int
    block_size: int
    nodes: int
    gpus_per_node: int
    gpu_name: str

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp

    @property
    def chunked(self) -> bool:
        return self.batching is Batching.CHUNKED

    @property
    def step_budget(self) -> int:
        """Tokens one scheduler step may carry: the chunk when chunking (never fewer than the
        running sequences, one token each), else a whole prompt of the plan's longest length."""
        if self.chunked:
            return max(self.step_tokens, self.max_sequences)
        return max(self.max_model_len, self.max_sequences)

    @property
    def kv_differs(self) -> bool:
        return self.scenario.kv_cache_dtype is not self.scenario.dtype

    @property
    def draft_params(self) -> float | None:
        return self.scenario.serving.speculative_draft_params


def serving_plan(resolved: ResolvedScenario) -> ServingPlan:
    gpu = resolved.cluster.accelerator
    scenario = serving_engines.resolve_scenario(resolved.scenario, gpu)
    serving, parallel = scenario.serving, scenario.parallel
    per_node = resolved.cluster.node.gpus_per_node
    return ServingPlan(
        scenario=scenario,
        model=model_reference(resolved),
        tp=parallel.tp, pp=parallel.pp, dp=parallel.dp, ep=parallel.ep,
        max_model_len=scenario.seq_len + scenario.gen_len,
        # The plan's concurrency, capped by the server's own limit where one is set.
        max_sequences=min(scenario.batch_size, serving.max_running_sequences or scenario.batch_size),
        memory_fraction=serving.gpu_memory_utilization,
        memory_rule=serving_engines.memory_rule(serving.engine),
        engine=serving.engine,
        batching=serving.batching,
        step_tokens=serving.prefill_chunk_tokens,
        block_size=serving.kv_block_size,
        nodes=max(1, math.ceil(parallel.world_size / per_node)),
        gpus_per_node=per_node,
        gpu_name=gpu.name,
    )


def common_serving_notes(plan: ServingPlan, notes: Notes, target: ServingEngine) -> None:
    """Notes every serving target shares: sizing inputs that are not server settings."""
    s = plan.scenario
    serving = s.serving
    if plan.engine is not target and plan.engine is not ServingEngine.GENERIC:
        notes.add(f"the plan was sized for {serving_engines.title(plan.engine)}; the values above pin "
                  "that plan's settings in this engine's arguments")
    if serving_engines.memory_rule(target) != plan.memory_rule:
        whole = "the whole GPU's memory"
        free = "the memory left after weights and workspace"
        plan_of, here_of = (whole, free) if plan.memory_rule == "total" else (free, whole)
        notes.add(f"memory fraction {plan.memory_fraction:g} is a share of {plan_of} in the plan, "
                  f"of {here_of} here: the value is carried unchanged, check the KV-cache size at start-up")
    if not serving.paged_kv:
        notes.add("paged_kv=false: this engine always pages its KV cache")
    if serving.disaggregated:
        notes.add("disaggregated=true: prefill and decode pools are separate deployments, one command each")
    if plan.draft_params is not None:
        notes.add(f"speculative decoding: replace {DRAFT_MODEL} with a draft checkpoint of about "
                  f"{plan.draft_params / 1e9:.3g}B parameters; the plan's acceptance rate "
                  f"{serving.speculative_acceptance:g} is a property of that model pair, not a setting")
    if s.attention.value != "flash":
        notes.add(f"attention={s.attention.value}: the engine picks its own attention kernels")
    if plan.nodes > 1:
        notes.add(f"{plan.gpus} GPUs span {plan.nodes} nodes of {plan.gpus_per_node}: start one process per node "
                  "(the Kubernetes export does this with a LeaderWorkerSet)")


def weight_note(weights: WeightFormat) -> str:
    """Why a quantized weight format is not a flag: its method comes with the checkpoint."""
    return (f"weights={weights.value}: serve a checkpoint quantized to {weights.value} (AWQ/GPTQ/ModelOpt...); "
            "the engine reads the method from its quantization config")


def quantization_args(weights: WeightFormat, notes: Notes) -> list[str]:
    """``--quantization`` as vLLM and SGLang both spell it: fp8 and bitsandbytes (NF4) are
    quantized on load; any other quantized format comes with its checkpoint (a note says so)."""
    if weights is WeightFormat.FP8:
        return ["--quantization", "fp8"]
    if weights is WeightFormat.NF4:
        return ["--quantization", "bitsandbytes"]
    if weights.is_quantized:
        notes.add(weight_note(weights))
    return []


def expected_serving(estimate: Any) -> list[str]:
    """The plan's own numbers for the benchmark to check, as comment lines: the simulated
    percentiles when the scenario sets a load to simulate, else the steady-state figures."""
    if estimate is None:
        return []
    simulated = (
        ("TTFT p50", "performance.sim.ttft_p50_s", 1.0, "s"),
        ("TTFT p99", "performance.sim.ttft_p99_s", 1.0, "s"),
        ("TPOT p50", "performance.sim.tpot_p50_s", 1000.0, "ms"),
        ("TPOT p99", "performance.sim.tpot_p99_s", 1000.0, "ms"),
        ("output throughput", "performance.sim.output_tokens_per_s", 1.0, "tokens/s"),
        ("request throughput", "performance.sim.requests_per_s", 1.0, "requests/s"),
    )
    steady = (
        ("TTFT", "performance.ttft_s", 1.0, "s"),
        ("TPOT", "performance.tpot_s", 1000.0, "ms"),
        ("output throughput", "performance.tokens_per_s", 1.0, "tokens/s"),
    )
    return _numbers(estimate, simulated) or _numbers(estimate, steady)


def _numbers(estimate: Any, rows: tuple[tuple[str, str, float, str], ...]) -> list[str]:
    found = []
    for label, key, scale, unit in rows:
        value = estimate.get(key)
        if isinstance(value, int | float) and math.isfinite(value):
            found.append(f"{label} {value * scale:,.4g} {unit}")
    return found


def expected_training(estimate: Any) -> list[str]:
    if estimate is None:
        return []
    return _numbers(estimate, (
        ("step time", "performance.step_time_s", 1.0, "s"),
        ("throughput", "performance.tokens_per_s", 1.0, "tokens/s"),
        ("memory per GPU", "memory.per_gpu.total", 2.0 ** -30, "GiB"),
    ))


def header(title: str, resolved: ResolvedScenario, engine: str, version: str, source: str,
           prefix: str = "# ") -> str:
    s = resolved.scenario
    lines = [
        f"{title}: scenario '{s.name}', {s.workload.value} of {model_reference(resolved)} on "
        f"{s.num_gpus} x {resolved.cluster.accelerator.name}",
        f"Argument names follow {engine} {version} ({source}).",
    ]
    return "".join(f"{prefix}{line}\n" for line in lines)
