"""Compute guard-rails: Tensor Core alignment, non-native dtypes, MoE active compute."""

from __future__ import annotations

from engine_fixtures import GPU, LLAMA_8B, NODE
from workbench_compute import ComputeEstimator
from workbench_compute.guards import alignment_multiple

from workbench.core import Cluster, ModelArchitecture, MoEConfig, Scenario
from workbench.core.dtypes import DType
from workbench.core.model import NormKind, PositionEmbedding
from workbench.core.resolved import ResolvedScenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine

ENGINE = Engine([ComputeEstimator()])

GPT2 = ModelArchitecture(
    name="gpt2",
    family="gpt2",
    num_layers=12,
    hidden_size=768,
    num_attention_heads=12,
    num_kv_heads=12,
    head_dim=64,
    intermediate_size=3072,
    gated_mlp=False,
    activation="gelu_new",
    vocab_size=50257,
    tie_word_embeddings=True,
    norm_kind=NormKind.LAYERNORM,
    norm_bias=True,
    attention_bias=True,
    attention_out_bias=True,
    mlp_bias=True,
    position_embedding=PositionEmbedding.LEARNED,
    max_position_embeddings=1024,
)


def run(arch: ModelArchitecture = LLAMA_8B, **fields: object) -> Estimate:
    scenario = Scenario(model=arch.name, gpu=GPU.id, **fields)
    est = ENGINE.run(
        ResolvedScenario(scenario, arch, Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus))
    )
    assert not est.failures, est.failures
    return est


def codes(est: Estimate) -> dict[str, object]:
    return {w.code: w for w in est.warnings}


def test_alignment_multiple_is_16_bytes() -> None:
    """NVIDIA Matrix Multiplication Background guide, "Tensor Core Requirements": multiples of 16 bytes."""
    assert alignment_multiple(DType.BF16) == 8
    assert alignment_multiple(DType.FP16) == 8
    assert alignment_multiple(DType.FP8) == 16
    assert alignment_multiple(DType.FP32) == 4


def test_gpt2_vocab_is_flagged_with_a_padding_suggestion() -> None:
    """50,257 is odd; nanoGPT pads it to 50,304 (64 x 786) for exactly this reason."""
    warning = codes(run(GPT2))["tensor-core-alignment"]
    assert "vocab_size 50257" in warning.message and warning.severity == "warning"
    assert "50,304" in warning.fix
    tp2 = codes(run(GPT2, num_gpus=2, parallel={"tp": 2}))["tensor-core-alignment"]
    assert "per TP shard" in tp2.message and "50,304" in tp2.fix  # 50,304 = 128 x 393 still suits TP 2


def test_aligned_model_is_quiet_until_a_shard_breaks_alignment() -> None:
    assert "tensor-core-alignment" not in codes(run())
    assert "tensor-core-alignment" not in codes(run(num_gpus=8, parallel={"tp": 8}, dtype="fp8"))
    odd = codes(run(num_gpus=3, parallel={"tp": 3}))["tensor-core-alignment"]
    assert "intermediate_size per TP shard" in odd.message  # 14336 / 3 is not even an integer


def test_fp8_needs_16_element_alignment() -> None:
    arch = LLAMA_8B.model_copy(update={"intermediate_size": 14344})  # multiple of 8, not of 16
    assert "tensor-core-alignment" not in codes(run(arch))
    assert "intermediate_size 14344" in codes(run(arch, dtype="fp8"))["tensor-core-alignment"].message


def test_moe_info_only_for_moe_models() -> None:
    moe = LLAMA_8B.model_copy(
        update={"moe": MoEConfig(num_experts=8, experts_per_token=2, expert_intermediate_size=14336)}
    )
    warning = codes(run(moe))["moe-active-compute"]
    assert warning.severity == "info" and "2 of 8 experts" in warning.message
    assert "moe-active-compute" not in codes(run())


def test_bf16_without_native_support_suggests_fp16() -> None:
    """V100: FP16 Tensor Cores (125 TFLOPS) but no BF16; bf16 matmuls fall back to the FP32 rate."""
    v100 = GPU.model_copy(
        update={"id": "v100", "name": "Tesla V100", "dense_tflops": {"fp32": 15.7, "fp16": 125.0}}
    )
    scenario = Scenario(model=LLAMA_8B.name, gpu="v100")
    est = ENGINE.run(ResolvedScenario(scenario, LLAMA_8B, Cluster(accelerator=v100, node=NODE, num_gpus=1)))
    assert est.get("roofline.peak_tflops") == 15.7 and est.get("roofline.compute_dtype") == "fp32"
    warning = codes(est)["dtype-not-native"]
    assert "fp32 rate" in warning.message and warning.fix.startswith("compute in fp16 (125 TFLOPS")
    fp16_scenario = Scenario(model=LLAMA_8B.name, gpu="v100", dtype="fp16")
    fp16 = ENGINE.run(
        ResolvedScenario(fp16_scenario, LLAMA_8B, Cluster(accelerator=v100, node=NODE, num_gpus=1))
    )
    assert "dtype-not-native" not in codes(fp16) and fp16.get("roofline.peak_tflops") == 125.0
