"""Invariants of the memory stack over random scenarios (hypothesis).

ARCHITECTURE.md Sec. 7 and the memory issue: memory is never negative, the total equals the sum of
its parts, more batch never means less memory, ZeRO stage n+1 never needs more per GPU than stage
n, and more tensor parallelism never puts more weight bytes on a GPU.
"""

from __future__ import annotations

import re
from typing import Any

from engine_fixtures import GPU, LLAMA_8B, NODE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workbench_memory.kv_cache import KvCacheEstimator
from workbench_memory.shapes import model_constants
from workbench_memory.stack import PARTS, MemoryStackEstimator

from workbench.core import (
    Cluster,
    EncoderDecoderConfig,
    Head,
    MLAConfig,
    ModelArchitecture,
    ModelKind,
    MoEConfig,
    Scenario,
    SlidingWindow,
)
from workbench.core.params import count_parameters
from workbench.core.resolved import ResolvedScenario
from workbench.engine.pipeline import Engine

ENGINE = Engine([KvCacheEstimator(), MemoryStackEstimator()])

MODELS = [
    LLAMA_8B,
    ModelArchitecture(
        name="moe",
        num_layers=8,
        hidden_size=1024,
        num_attention_heads=16,
        num_kv_heads=4,
        head_dim=64,
        intermediate_size=4096,
        vocab_size=32000,
        moe=MoEConfig(
            num_experts=8,
            experts_per_token=2,
            expert_intermediate_size=1024,
            num_shared_experts=1,
            dense_layers=(0,),
        ),
    ),
    ModelArchitecture(
        name="mla",
        num_layers=8,
        hidden_size=1024,
        num_attention_heads=16,
        num_kv_heads=16,
        head_dim=96,
        intermediate_size=2816,
        vocab_size=32000,
        mla=MLAConfig(
            q_lora_rank=384, kv_lora_rank=128, qk_rope_head_dim=32, qk_nope_head_dim=64, v_head_dim=64
        ),
    ),
    ModelArchitecture(
        name="sliding",
        num_layers=8,
        hidden_size=1024,
        num_attention_heads=16,
        num_kv_heads=8,
        head_dim=64,
        intermediate_size=2816,
        vocab_size=32000,
        sliding_window=SlidingWindow(window=512, layers=(0, 2, 4, 6)),
    ),
    ModelArchitecture(
        name="t5",
        kind=ModelKind.ENCODER_DECODER,
        head=Head.SEQ2SEQ_LM,
        num_layers=4,
        hidden_size=512,
        num_attention_heads=8,
        num_kv_heads=8,
        head_dim=64,
        intermediate_size=2048,
        gated_mlp=False,
        vocab_size=32128,
        tie_word_embeddings=True,
        position_embedding="relative-bias",
        encoder_decoder=EncoderDecoderConfig(num_decoder_layers=4),
    ),
]


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[ModelArchitecture, dict[str, Any]]:
    model = draw(st.sampled_from(MODELS))
    workload = draw(st.sampled_from(["inference", "finetune", "pretrain"]))
    method = draw(st.sampled_from(["full", "lora", "qlora"])) if workload == "finetune" else "full"
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    pp = draw(st.sampled_from([1, 2, 4]))
    dp = draw(st.sampled_from([1, 2, 3, 8]))
    ep = draw(st.sampled_from([e for e in (1, 2, 4, 8) if e <= tp * dp]))
    fields: dict[str, Any] = {
        "workload": workload,
        "method": method,
        "lora_rank": draw(st.sampled_from([8, 64])),
        "lora_targets": draw(st.sampled_from(["all-linear", "attention"])),
        "dtype": draw(st.sampled_from(["bf16", "fp16", "fp32"])),
        "weights": None
        if method == "qlora"
        else draw(st.sampled_from([None, "bf16", "int8", "int4", "fp8"])),
        "kv_dtype": draw(st.sampled_from([None, "fp8"])),
        "batch_size": draw(st.integers(1, 64)),
        "seq_len": draw(st.integers(1, 8192)),
        "gen_len": draw(st.integers(0, 2048)),
        "optimizer": draw(st.sampled_from(["adamw", "adamw-8bit", "sgd-momentum", "adafactor"])),
        "recompute": draw(st.sampled_from(["none", "selective", "full"])),
        "attention": draw(st.sampled_from(["eager", "sdpa", "flash"])),
        "num_gpus": tp * pp * dp,
        "parallel": {
            "tp": tp,
            "pp": pp,
            "dp": dp,
            "ep": ep,
            "zero_stage": draw(st.integers(0, 3)),
            "sequence_parallel": draw(st.booleans()),
            "pipeline_schedule": draw(st.sampled_from(["1f1b", "interleaved", "gpipe"])),
            "virtual_stages": draw(st.sampled_from([1, 2])),
            "offload_optimizer": draw(st.sampled_from(["none", "cpu"])),
            "offload_params": draw(st.sampled_from(["none", "cpu"])),
        },
        "serving": {"paged_kv": draw(st.booleans()), "chunked_prefill": draw(st.booleans())},
    }
    return model, fields


def run(model: ModelArchitecture, fields: dict[str, Any]) -> dict[str, Any]:
    scenario = Scenario(model="m", gpu="test-gpu", **fields)
    est = ENGINE.run(
        ResolvedScenario(scenario, model, Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus))
    )
    assert not est.failures, est.failures
    return {k: q.value for k, q in est.values.items()}


def with_parallel(fields: dict[str, Any], **changes: Any) -> dict[str, Any]:
    parallel = {**fields["parallel"], **changes}
    world = parallel["tp"] * parallel["pp"] * parallel["dp"]
    return {**fields, "parallel": parallel, "num_gpus": world}


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(scenarios())
def test_parts_are_non_negative_and_sum_to_the_total(drawn: tuple[ModelArchitecture, dict[str, Any]]) -> None:
    values = run(*drawn)
    for rank in ("per_gpu", "average_gpu"):
        parts = [values[f"memory.{rank}.{k}"] for k in PARTS]
        assert all(p >= 0 for p in parts), parts
        assert values[f"memory.{rank}.total"] == sum(parts)
    assert values["memory.average_gpu.total"] <= values["memory.per_gpu.total"] * (1 + 1e-12)
    assert values["kv_cache.bytes"] >= 0 and values["kv_cache.bytes_per_token"] >= 0
    assert values["memory.headroom"] == values["memory.usable_capacity"] - values["memory.per_gpu.total"]
    assert values["memory.fits"] == (values["memory.headroom"] >= 0)
    concurrency = values["kv_cache.max_concurrency"]
    assert concurrency is None or concurrency >= 0


@SETTINGS
@given(scenarios(), st.integers(1, 32))
def test_more_batch_never_less_memory(drawn: tuple[ModelArchitecture, dict[str, Any]], extra: int) -> None:
    model, fields = drawn
    small = run(model, fields)
    large = run(model, {**fields, "batch_size": fields["batch_size"] + extra})
    assert large["memory.per_gpu.total"] >= small["memory.per_gpu.total"]
    assert large["memory.average_gpu.total"] >= small["memory.average_gpu.total"]
    assert large["kv_cache.bytes"] >= small["kv_cache.bytes"]


@SETTINGS
@given(scenarios(), st.integers(0, 2))
def test_higher_zero_stage_never_needs_more_per_gpu(
    drawn: tuple[ModelArchitecture, dict[str, Any]], stage: int
) -> None:
    model, fields = drawn
    lower = run(model, with_parallel(fields, zero_stage=stage))
    higher = run(model, with_parallel(fields, zero_stage=stage + 1))
    assert higher["memory.per_gpu.total"] <= lower["memory.per_gpu.total"] * (1 + 1e-12)
    assert higher["memory.average_gpu.total"] <= lower["memory.average_gpu.total"] * (1 + 1e-12)


@SETTINGS
@given(scenarios())
def test_more_tp_never_more_weight_bytes_per_gpu(drawn: tuple[ModelArchitecture, dict[str, Any]]) -> None:
    model, fields = drawn
    tp = fields["parallel"]["tp"]
    narrow = run(model, with_parallel(fields, tp=tp))
    wide = run(model, with_parallel(fields, tp=tp * 2))
    assert wide["memory.per_gpu.weights"] <= narrow["memory.per_gpu.weights"] * (1 + 1e-12)
    assert wide["memory.average_gpu.weights"] <= narrow["memory.average_gpu.weights"] * (1 + 1e-12)


def test_model_constants_account_for_every_parameter() -> None:
    """The shard categories of :mod:`workbench_memory.shapes` add up to the exact parameter count."""
    for model in [*MODELS, LLAMA_8B.model_copy(update={"tie_word_embeddings": True})]:
        c = model_constants(model)
        blocks = sum(getattr(c, k)[c.layers] for k in ("split", "kv", "repl_linear", "norms", "routed"))
        outside = c.word_embedding + c.embedding_other + c.lm_head + c.final_norm + c.other
        assert blocks + outside == count_parameters(model).total, model.name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_the_layout_min_gpus_names_fits_and_one_dp_rank_less_does_not(
    drawn: tuple[ModelArchitecture, dict[str, Any]],
) -> None:
    model, fields = drawn
    scenario = Scenario(model="m", gpu="test-gpu", **fields)
    est = ENGINE.run(
        ResolvedScenario(scenario, model, Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus))
    )
    gpus = est.get("memory.min_gpus")
    if gpus is None:
        return
    tp, pp, dp = map(
        int, re.match(r"TP (\d+) x PP (\d+) x DP (\d+)", est.values["memory.min_gpus"].formula).groups()
    )
    assert tp * pp * dp == gpus
    assert run(model, with_parallel(fields, tp=tp, pp=pp, dp=dp))["memory.fits"]
    ep = fields["parallel"]["ep"]
    if dp > max(1, -(-ep // tp)):
        assert not run(model, with_parallel(fields, tp=tp, pp=pp, dp=dp - 1))["memory.fits"]
