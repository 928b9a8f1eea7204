"""Roofline of the compute plugin: ridge point, per-phase intensity and bound, per-GPU layout, dtypes."""

from __future__ import annotations

import pytest
from engine_fixtures import GPU, LLAMA_8B, NODE
from hypothesis import given, settings
from hypothesis import strategies as st
from workbench_compute import ComputeEstimator

from workbench.core import Accelerator, Cluster, MLAConfig, ModelArchitecture, MoEConfig, Scenario
from workbench.core.dtypes import WeightFormat, weight_bits
from workbench.core.resolved import ResolvedScenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine

ENGINE = Engine([ComputeEstimator()])

# NVIDIA A100 80GB SXM datasheet: 312 TFLOPS dense BF16/FP16, 156 TF32, 19.5 FP32, 624 TOPS INT8, 2,039 GB/s.
A100 = Accelerator(
    id="a100-test",
    name="A100 80GB SXM",
    vendor="nvidia",
    category="datacenter",
    memory_gib=80,
    memory_type="HBM2e",
    memory_bandwidth_gbps=2039,
    dense_tflops={"bf16": 312, "fp16": 312, "tf32": 156, "fp32": 19.5, "int8": 624},
    form_factor="SXM",
    launch_year=2020,
)
MIXTRAL = ModelArchitecture(
    name="Mixtral-8x7B",
    family="mixtral",
    num_layers=32,
    hidden_size=4096,
    num_attention_heads=32,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=14336,
    vocab_size=32000,
    moe=MoEConfig(num_experts=8, experts_per_token=2, expert_intermediate_size=14336),
)
DEEPSEEK = ModelArchitecture(
    name="DeepSeek-V3",
    family="deepseek",
    num_layers=61,
    hidden_size=7168,
    num_attention_heads=128,
    num_kv_heads=128,
    head_dim=192,
    intermediate_size=18432,
    vocab_size=129280,
    moe=MoEConfig(
        num_experts=256,
        experts_per_token=8,
        expert_intermediate_size=2048,
        num_shared_experts=1,
        router_bias=True,
        dense_layers=(0, 1, 2),
    ),
    mla=MLAConfig(
        q_lora_rank=1536, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128
    ),
)
# Matmul weights of Llama-3.1-8B (all but the input embedding): 32 layers x 218,103,808 + LM head 525,336,576.
LLAMA_MATMUL_WEIGHTS = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 4096 * 128256


def run(arch: ModelArchitecture = LLAMA_8B, gpu: Accelerator = GPU, **fields: object) -> Estimate:
    scenario = Scenario(model=arch.name, gpu=gpu.id, **fields)
    est = ENGINE.run(
        ResolvedScenario(scenario, arch, Cluster(accelerator=gpu, node=NODE, num_gpus=scenario.num_gpus))
    )
    assert not est.failures, est.failures
    return est


def test_h100_ridge_point_and_headline_decode_is_memory_bound() -> None:
    """H100 SXM: 989.4 dense BF16 TFLOPS / 3,350 GB/s = 295.3 FLOP/B. Decoding one sequence of a
    16-bit model does ~2 FLOPs per weight while reading 2 bytes per weight: intensity ~ 1."""
    est = run(batch_size=1, seq_len=2048)
    assert est.get("roofline.ridge_point") == pytest.approx(295.3, abs=0.05)
    assert est.get("roofline.peak_tflops") == 989.4 and est.get("roofline.bandwidth_gbps") == 3350
    assert est.get("roofline.phase") == "decode"
    ai = est.get("roofline.decode.arithmetic_intensity")
    assert 0.95 < ai < 1.1
    assert est.get("roofline.decode.bound") == "memory" == est.get("roofline.bound")
    assert est.get("roofline.arithmetic_intensity") == ai
    assert est.get("roofline.attainable_tflops") == pytest.approx(ai * 3350 / 1000)
    # one step reads every matmul weight once (2 B each) plus the KV cache
    weights = 2 * LLAMA_MATMUL_WEIGHTS
    kv = 2 * 8 * 128 * 2 * 32 * (2048 + 128)  # K and V, 8 heads x 128, 2 B, 32 layers, context 2048 + 256/2
    assert est.get("roofline.decode.bytes") == pytest.approx(weights + kv, rel=0.002)  # + activations


def test_prefill_of_2048_tokens_is_compute_bound() -> None:
    est = run(batch_size=1, seq_len=2048)
    assert est.get("roofline.prefill.bound") == "compute"
    assert est.get("roofline.prefill.arithmetic_intensity") > 295.3
    assert est.get("roofline.prefill.attainable_tflops") == 989.4
    assert est.get("roofline.prefill.flops") == est.get("flops.prefill")


def test_decode_intensity_grows_with_batch_until_compute_bound() -> None:
    one = run(batch_size=1).get("roofline.decode.arithmetic_intensity")
    sixty_four = run(batch_size=64, seq_len=512, gen_len=0).get("roofline.decode.arithmetic_intensity")
    assert sixty_four > 40 * one
    assert run(batch_size=1024, seq_len=64, gen_len=0).get("roofline.decode.bound") == "compute"


def test_tensor_parallel_is_per_gpu() -> None:
    """Llama-8B splits evenly over TP 8 (one KV head per GPU); over TP 16 the KV cache is replicated."""
    one = run(batch_size=8, seq_len=4096)
    tp8 = run(batch_size=8, seq_len=4096, num_gpus=8, parallel={"tp": 8})
    assert tp8.get("roofline.decode.flops") == pytest.approx(one.get("roofline.decode.flops") / 8)
    assert tp8.get("flops.decode_step") == one.get("flops.decode_step")  # flops.* stay whole-model
    ratio = tp8.get("roofline.decode.arithmetic_intensity") / one.get("roofline.decode.arithmetic_intensity")
    assert ratio == pytest.approx(1.0, rel=0.02)  # same intensity, 1/8 of the work
    tp16 = run(batch_size=8, seq_len=4096, num_gpus=16, parallel={"tp": 16})
    kv8 = tp8.get("roofline.decode.bytes") - 2 * LLAMA_MATMUL_WEIGHTS / 8
    kv16 = tp16.get("roofline.decode.bytes") - 2 * LLAMA_MATMUL_WEIGHTS / 16
    kv_per_gpu = 8 * (4096 + 128) * 2 * 128 * 2 * 32  # b x ctx x (K, V) x one 128-dim head x 2 B x 32 layers
    assert kv8 == pytest.approx(kv_per_gpu, rel=0.1) and kv16 == pytest.approx(kv_per_gpu, rel=0.1)
    assert kv16 > 0.95 * kv8  # replicated KV heads: the per-GPU cache does not halve from TP 8 to 16
    pp = run(batch_size=8, seq_len=4096, num_gpus=4, parallel={"pp": 4})
    assert pp.get("roofline.decode.bytes") == pytest.approx(one.get("roofline.decode.bytes") / 4)


def test_compute_dtype_follows_weights_and_dtype() -> None:
    fp8 = run(dtype="fp8")
    assert fp8.get("roofline.compute_dtype") == "fp8" and fp8.get("roofline.peak_tflops") == 1978.9
    assert fp8.get("roofline.ridge_point") == pytest.approx(1978.9e12 / 3350e9)
    upcast = run(dtype="fp8", weights="bf16")  # fp8 activations meet 16-bit weights: upcast
    assert upcast.get("roofline.compute_dtype") == "bf16"
    int4 = run(weights="int4", seq_len=1, gen_len=0)  # weight-only int4: dequantized, multiplied in bf16
    assert int4.get("roofline.compute_dtype") == "bf16" and int4.get("roofline.peak_tflops") == 989.4
    bf16 = run(seq_len=1, gen_len=0)
    ratio = int4.get("roofline.decode.bytes") / bf16.get("roofline.decode.bytes")
    assert ratio == pytest.approx(weight_bits(WeightFormat.INT4) / 16, rel=0.01)  # int4 + fp16 scales
    assert int4.get("roofline.decode.arithmetic_intensity") > 3 * bf16.get(
        "roofline.decode.arithmetic_intensity"
    )


def test_fp8_on_a100_runs_at_the_16_bit_rate_and_warns() -> None:
    est = run(gpu=A100, dtype="fp8")
    assert est.get("roofline.compute_dtype") == "bf16" and est.get("roofline.peak_tflops") == 312
    assert est.get("roofline.ridge_point") == pytest.approx(312e12 / 2039e9)
    warning = {w.code: w for w in est.warnings}["dtype-not-native"]
    assert "fp8" in warning.message and "16-bit bf16 rate" in warning.message and "312" in warning.message
    assert warning.severity == "warning" and warning.fix
    assert "dtype-not-native" not in {w.code for w in run(gpu=A100).warnings}


def test_moe_decode_reads_only_the_experts_it_routes_to() -> None:
    """Batch 1: 2 of 8 experts per layer; large batches touch (almost) all of them."""
    expert = 3 * 4096 * 14336
    dense_part = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 8) + 4096 * 32000
    one = run(MIXTRAL, batch_size=1, seq_len=1, gen_len=0)
    kv_and_act = one.get("roofline.decode.bytes") - 2 * (dense_part + 32 * 2 * expert)
    assert 0 < kv_and_act < 1e7  # one token's activations (~9 MB) and a one-token KV cache
    many = run(MIXTRAL, batch_size=256, seq_len=1, gen_len=0)
    weights = 2 * (dense_part + 32 * 8 * expert * (1 - 0.75**256))
    assert many.get("roofline.decode.bytes") == pytest.approx(weights + 256 * kv_and_act, rel=1e-3)
    assert any(w.code == "moe-active-compute" for w in one.warnings)


def test_mla_decode_reads_the_latent_cache() -> None:
    b, s = 1, 8192
    est = run(DEEPSEEK, batch_size=b, seq_len=s, gen_len=0)
    latent = 61 * (512 + 64) * s * 2  # kv_lora_rank + rope dims, 2 B, 61 layers
    weights = est.get("roofline.decode.bytes") - latent
    assert 0 < weights < 40e9 * 2  # active weights (~37B at 2 B) dominate; the latent cache is ~0.6 GB
    naive = run(DEEPSEEK, batch_size=b, seq_len=s, gen_len=0, assumptions={"compute.mla_absorbed_decode": 0})
    assert naive.get("roofline.decode.bytes") > est.get("roofline.decode.bytes")


def test_training_roofline_is_the_step_gemms() -> None:
    b, s = 1, 4096
    est = run(workload="pretrain", batch_size=b, seq_len=s, recompute="full")
    assert est.get("roofline.phase") == "training" and est.get("roofline.bound") == "compute"
    gemm_forward = est.get("flops.forward") - 2 * 32 * 32 * 256 * s * s
    assert est.get("roofline.training.flops") == pytest.approx(4 * gemm_forward)  # fwd, 2 x bwd, recompute
    lora = run(workload="finetune", method="lora", batch_size=b, seq_len=s)
    assert lora.get("roofline.training.arithmetic_intensity") == pytest.approx(
        est.get("roofline.training.arithmetic_intensity")
    )  # same GEMMs, fewer of them
    small = run(workload="pretrain", batch_size=1, seq_len=16)
    assert small.get("roofline.training.bound") == "memory"


def test_eager_attention_moves_the_score_matrix() -> None:
    flash = run(seq_len=8192)
    eager = run(seq_len=8192, attention="eager")
    extra = 4 * 32 * 8192 * 8192 * 2 * 32  # write and read S and P: heads x s x s x 2 B, 32 layers
    assert eager.get("roofline.prefill.bytes") - flash.get("roofline.prefill.bytes") == pytest.approx(extra)


@settings(max_examples=50, deadline=None)
@given(
    batch=st.integers(1, 256),
    seq=st.integers(1, 16384),
    tp=st.sampled_from([1, 2, 4, 8]),
    dtype=st.sampled_from(["bf16", "fp16", "fp8", "fp32"]),
    arch=st.sampled_from([LLAMA_8B, MIXTRAL, DEEPSEEK]),
)
def test_roofline_invariants(batch: int, seq: int, tp: int, dtype: str, arch: ModelArchitecture) -> None:
    est = run(arch, batch_size=batch, seq_len=seq, num_gpus=tp, parallel={"tp": tp}, dtype=dtype)
    peak, bw, ridge = (est.get(f"roofline.{k}") for k in ("peak_tflops", "bandwidth_gbps", "ridge_point"))
    assert ridge == pytest.approx(peak * 1e12 / (bw * 1e9))
    for phase in ("prefill", "decode"):
        ai = est.get(f"roofline.{phase}.arithmetic_intensity")
        assert ai == pytest.approx(est.get(f"roofline.{phase}.flops") / est.get(f"roofline.{phase}.bytes"))
        assert est.get(f"roofline.{phase}.attainable_tflops") == pytest.approx(min(peak, ai * bw / 1000))
        assert est.get(f"roofline.{phase}.bound") == ("compute" if ai >= ridge else "memory")
        assert est.get(f"roofline.{phase}.bytes") > 0
