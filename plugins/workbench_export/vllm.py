"""``vllm serve`` arguments (vLLM 0.11, V1 engine) from a serving plan."""

from __future__ import annotations

import json

from workbench.core.dtypes import DType
from workbench.core.scenario import Batching, ServingEngine
from workbench_export.formats import ENGINES
from workbench_export.plan import (
    DRAFT_MODEL,
    Notes,
    ServingPlan,
    common_serving_notes,
    dtype_name,
    quantization_args,
)

ENGINE, VERSION, SOURCE = ENGINES["vllm"]
#: vllm serve's default port (the OpenAI server's --port, left at its default).
PORT = 8000
HEALTH = "/health"
IMAGE = "vllm/vllm-openai:v0.11.0"
#: CacheConfig's BlockSize (vllm/config/cache.py); CUDA takes up to 32.
BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)


def server_argv(plan: ServingPlan, notes: Notes) -> list[str]:
    s = plan.scenario
    argv = ["vllm", "serve", plan.model,
            "--tensor-parallel-size", str(plan.tp),
            "--pipeline-parallel-size", str(plan.pp),
            "--data-parallel-size", str(plan.dp)]
    if plan.ep > 1:
        argv.append("--enable-expert-parallel")
        if plan.ep != plan.tp * plan.dp:
            notes.add(f"ep={plan.ep}: vLLM's expert-parallel group is TP x DP = {plan.tp * plan.dp} GPUs, "
                      "not a separate degree")
    argv += ["--max-model-len", str(plan.max_model_len),
             "--max-num-seqs", str(plan.max_sequences),
             "--gpu-memory-utilization", f"{plan.memory_fraction:g}",
             "--dtype", dtype_name(s.dtype)]
    if plan.block_size in BLOCK_SIZES:
        argv += ["--block-size", str(plan.block_size)]
    else:
        notes.add(f"kv_block_size={plan.block_size}: vLLM's block size is one of "
                  f"{', '.join(map(str, BLOCK_SIZES))}; left to vLLM's default")
    if s.dtype is DType.FP8:
        notes.add("dtype=fp8: vLLM computes in fp8 through --quantization fp8; activations stay bfloat16")
    if s.kv_cache_dtype is DType.FP8:
        argv += ["--kv-cache-dtype", "fp8"]
    elif plan.kv_differs:
        notes.add(f"kv_dtype={s.kv_cache_dtype.value}: vLLM keeps a 16-bit KV cache in the model dtype (auto)")
    argv += quantization_args(s.weight_format, notes)
    argv += ["--enable-chunked-prefill" if plan.chunked else "--no-enable-chunked-prefill",
             "--max-num-batched-tokens", str(plan.step_budget)]
    if plan.batching is Batching.STATIC:
        notes.add("batching=static: vLLM always batches continuously (new requests join between steps)")
    if plan.draft_params is not None:
        spec = {"method": "draft_model", "model": DRAFT_MODEL, "num_speculative_tokens": s.serving.speculative_tokens}
        argv += ["--speculative-config", json.dumps(spec, separators=(",", ":"))]
    if s.images_per_request:
        argv += ["--limit-mm-per-prompt", json.dumps({"image": s.images_per_request}, separators=(",", ":"))]
        notes.add(f"images of {s.image_width}x{s.image_height}: the processor resizes them as the plan assumed")
    common_serving_notes(plan, notes, ServingEngine.VLLM)
    return argv
