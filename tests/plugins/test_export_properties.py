"""Random scenarios through every exporter: whatever the scenario, each export uses only the
engine's documented arguments and parses back to the scenario's values (the checks of
test_export_engine_args and test_export_training_and_kubernetes, on drawn scenarios)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_export_engine_args import check_bench, check_sglang, check_trtllm, check_vllm, resolved
from test_export_training_and_kubernetes import (
    check_accelerate,
    check_deepspeed,
    check_kubernetes,
    check_megatron,
    check_torchtitan,
)

from workbench.core.errors import InputError

PROPERTY = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

_layouts = st.sampled_from([(1, 1, 1), (2, 1, 1), (4, 1, 2), (8, 2, 1), (2, 2, 2), (1, 1, 4)])
_models = st.sampled_from(["llama-3.1-8b", "qwen3-30b-a3b", "mixtral-8x7b", "llama-3.1-70b", "gemma-3-27b"])
_gpus = st.sampled_from(["h100-sxm", "a100-80gb-sxm", "l40s", "mi300x", "h200-sxm"])


@st.composite
def serving_scenarios(draw: Any) -> dict[str, Any]:
    tp, pp, dp = draw(_layouts)
    serving: dict[str, Any] = {"engine": draw(st.sampled_from(["generic", "vllm", "sglang", "tensorrt-llm"]))}
    for name, values in (("batching", st.sampled_from(["static", "continuous", "chunked"])),
                         ("kv_block_size", st.sampled_from([8, 16, 32, 48, 64])),
                         ("prefill_chunk_tokens", st.sampled_from([512, 2048, 8192])),
                         ("max_running_sequences", st.integers(1, 512)),
                         ("gpu_memory_utilization", st.sampled_from([0.5, 0.85, 0.9, 0.95])),
                         ("arrival_rate", st.sampled_from([0.5, 3.0, 20.0])),
                         ("arrival_cv", st.sampled_from([0.5, 1.0, 2.0])),
                         ("slo_ttft_s", st.sampled_from([0.2, 2.0])),
                         ("slo_tpot_s", st.sampled_from([0.02, 0.1])),
                         ("speculative_draft_params", st.sampled_from([5e8, 1e9]))):
        if draw(st.booleans()):
            serving[name] = draw(values)
    return dict(
        model=draw(_models), gpu=draw(_gpus), num_gpus=tp * pp * dp, parallel={"tp": tp, "pp": pp, "dp": dp,
                                                                                "ep": draw(st.sampled_from([1, dp]))},
        batch_size=draw(st.integers(1, 256)), seq_len=draw(st.integers(16, 32768)), gen_len=draw(st.integers(1, 4096)),
        dtype=draw(st.sampled_from(["bf16", "fp16"])), kv_dtype=draw(st.sampled_from([None, "fp8", "bf16", "fp16"])),
        weights=draw(st.sampled_from([None, "fp8", "int4", "nf4", "int8", "fp4"])), serving=serving,
    )


@st.composite
def training_scenarios(draw: Any) -> dict[str, Any]:
    tp, pp, dp = draw(_layouts)
    zero = draw(st.integers(0, 3))
    batch = draw(st.integers(1, 16))
    accumulation = draw(st.integers(1, 8))
    return dict(
        model=draw(_models), gpu=draw(_gpus), num_gpus=tp * pp * dp, workload=draw(st.sampled_from(["finetune", "pretrain"])),
        method=draw(st.sampled_from(["full", "lora"])),
        parallel={"tp": tp, "pp": pp, "dp": dp, "zero_stage": zero, "sequence_parallel": draw(st.booleans()) and tp > 1,
                  "pipeline_schedule": draw(st.sampled_from(["1f1b", "interleaved", "gpipe"])),
                  "virtual_stages": draw(st.sampled_from([1, 2])),
                  "offload_optimizer": draw(st.sampled_from(["none", "cpu", "nvme"])) if zero else "none",
                  "offload_params": draw(st.sampled_from(["none", "cpu"])) if zero == 3 else "none"},
        dtype=draw(st.sampled_from(["bf16", "fp16", "fp8", "fp32"])), batch_size=batch,
        global_batch_size=batch * dp * accumulation, seq_len=draw(st.sampled_from([512, 2048, 8192])),
        recompute=draw(st.sampled_from(["none", "selective", "full"])),
        optimizer=draw(st.sampled_from(["adamw", "adamw-8bit", "sgd-momentum", "adafactor"])),
        train_tokens=draw(st.sampled_from([None, 1e9, 2e12])),
    )


@PROPERTY
@given(serving_scenarios())
def test_every_serving_export_of_any_scenario_is_documented_and_round_trips(fields: dict[str, Any]) -> None:
    r = resolved(**fields)
    check_vllm(r)
    check_sglang(r)
    check_trtllm(r)
    for exporter in ("vllm", "sglang", "trtllm"):
        check_bench(r, exporter)
    try:
        check_kubernetes(r)
    except InputError as exc:  # TensorRT-LLM across nodes: refused, with its reason
        assert "MPI" in str(exc)


@PROPERTY
@given(training_scenarios())
def test_every_training_export_of_any_scenario_is_documented_and_round_trips(fields: dict[str, Any]) -> None:
    r = resolved(**fields)
    check_deepspeed(r)
    check_megatron(r)
    check_torchtitan(r)
    check_accelerate(r)
