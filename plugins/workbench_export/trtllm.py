"""TensorRT-LLM ``trtllm-serve`` arguments and its extra LLM-API YAML from a serving plan."""

from __future__ import annotations

from typing import Any

from workbench.core.dtypes import DType
from workbench.core.scenario import Batching, ServingEngine
from workbench_export.formats import ENGINES
from workbench_export.plan import DRAFT_MODEL, Notes, ServingPlan, common_serving_notes, weight_note

ENGINE, VERSION, SOURCE = ENGINES["trtllm"]
PORT = 8000
HEALTH = "/health"
IMAGE = "nvcr.io/nvidia/tensorrt-llm/release:latest"
EXTRA_FILE = "extra_llm_api_options.yaml"


def server_argv(plan: ServingPlan, notes: Notes, extra_path: str = EXTRA_FILE) -> list[str]:
    s = plan.scenario
    argv = ["trtllm-serve", plan.model,
            "--backend", "pytorch",
            "--tp_size", str(plan.tp),
            "--pp_size", str(plan.pp)]
    if plan.ep > 1:
        argv += ["--ep_size", str(plan.ep)]
    if plan.dp > 1:
        notes.add(f"dp={plan.dp}: trtllm-serve runs one TP x PP group; start {plan.dp} servers behind a load "
                  "balancer (the Kubernetes export sets replicas)")
    argv += ["--max_batch_size", str(plan.max_sequences),
             "--max_num_tokens", str(plan.step_budget),
             "--max_seq_len", str(plan.max_model_len),
             "--kv_cache_free_gpu_memory_fraction", f"{plan.memory_fraction:g}"]
    if plan.chunked:
        argv.append("--enable_chunked_prefill")
    argv += ["--extra_llm_api_options", extra_path, "--host", "0.0.0.0", "--port", str(PORT)]
    if s.dtype is not DType.BF16:
        notes.add(f"dtype={s.dtype.value}: the PyTorch backend runs the checkpoint's dtype")
    if s.kv_cache_dtype is not s.dtype:
        notes.add(f"kv_dtype={s.kv_cache_dtype.value}: KvCacheConfig has no dtype at this version; the "
                  "checkpoint's quantization config sets the KV-cache precision")
    if s.weight_format.is_quantized or s.weight_format.value == "fp8":
        notes.add(weight_note(s.weight_format))
    notes.add(f"kv_block_size={plan.block_size}: no tokens-per-block argument at this version (LlmArgs)")
    if s.images_per_request:
        notes.add(f"images_per_request={s.images_per_request}: no server-side image limit")
    common_serving_notes(plan, notes, ServingEngine.TENSORRT_LLM)
    return argv


def extra_options(plan: ServingPlan) -> dict[str, Any]:
    """The LLM-API options trtllm-serve has no flag for (``--extra_llm_api_options``)."""
    options: dict[str, Any] = {
        "kv_cache_config": {"free_gpu_memory_fraction": plan.memory_fraction},
        "enable_chunked_prefill": plan.chunked,
    }
    if plan.batching is Batching.STATIC:
        options["batching_type"] = "STATIC"
    if plan.draft_params is not None:
        options["speculative_config"] = {
            "decoding_type": "DraftTarget",
            "max_draft_len": plan.scenario.serving.speculative_tokens,
            "speculative_model": DRAFT_MODEL,
        }
    return options
