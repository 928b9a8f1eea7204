"""SGLang ``python -m sglang.launch_server`` arguments from a serving plan."""

from __future__ import annotations

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

ENGINE, VERSION, SOURCE = ENGINES["sglang"]
PORT = 30000
HEALTH = "/health"
IMAGE = "lmsysorg/sglang:latest"


def server_argv(plan: ServingPlan, notes: Notes) -> list[str]:
    s = plan.scenario
    argv = ["python", "-m", "sglang.launch_server",
            "--model-path", plan.model,
            "--tp-size", str(plan.tp),
            "--pp-size", str(plan.pp),
            "--dp-size", str(plan.dp),
            "--ep-size", str(plan.ep),
            "--context-length", str(plan.max_model_len),
            "--max-running-requests", str(plan.max_sequences),
            "--mem-fraction-static", f"{plan.memory_fraction:g}",
            "--page-size", str(plan.block_size),
            "--dtype", dtype_name(s.dtype)]
    if s.dtype is DType.FP8:
        notes.add("dtype=fp8: SGLang computes in fp8 through --quantization fp8; activations stay bfloat16")
    if s.kv_cache_dtype is DType.FP8:
        argv += ["--kv-cache-dtype", "fp8_e4m3"]
    elif plan.kv_differs and s.kv_cache_dtype is DType.BF16:
        argv += ["--kv-cache-dtype", "bfloat16"]
    elif plan.kv_differs:
        notes.add(f"kv_dtype={s.kv_cache_dtype.value}: SGLang keeps the KV cache in the model dtype (auto)")
    argv += quantization_args(s.weight_format, notes)
    # SGLang's chunked_prefill_size: the chunk when chunking, -1 to turn chunking off.
    argv += ["--chunked-prefill-size", str(plan.step_tokens if plan.chunked else -1)]
    if plan.batching is Batching.STATIC:
        notes.add("batching=static: SGLang always batches continuously (new requests join between steps)")
    if plan.draft_params is not None:
        k = s.serving.speculative_tokens
        # A separate draft model proposing k tokens in a chain (top-1): k steps, k + 1 verified tokens.
        argv += ["--speculative-algorithm", "STANDALONE",
                 "--speculative-draft-model-path", DRAFT_MODEL,
                 "--speculative-num-steps", str(k),
                 "--speculative-eagle-topk", "1",
                 "--speculative-num-draft-tokens", str(k + 1)]
    if s.images_per_request:
        notes.add(f"images_per_request={s.images_per_request}: SGLang takes images per request, no server limit")
    argv += ["--host", "0.0.0.0", "--port", str(PORT)]
    common_serving_notes(plan, notes, ServingEngine.SGLANG)
    return argv
