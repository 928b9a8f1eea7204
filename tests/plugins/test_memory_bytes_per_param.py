"""Bytes per parameter of weights, gradients and optimizer states against published rules.

Sources:
* EleutherAI, "Transformer Math 101" (Anthony, Biderman, Schoelkopf, 2023), sections Inference and
  Training: inference weights take 2 bytes/param in fp16/bf16, 1 in int8, 0.5 in int4; mixed-precision
  AdamW training takes 2 (weights) + 2 (gradients) + 12 (fp32 copy, momentum, variance) = 16
  bytes/param; 8-bit AdamW 6 bytes/param of optimizer state (4 fp32 copy + 2); SGD with momentum 8
  (4 fp32 copy + 4). int4's 0.5 ignores the group scales: GPTQ/AWQ carry an fp16 scale and a 4-bit
  zero per 128 weights, 4 + 20/128 = 4.156 bits.
* QLoRA (Dettmers et al. 2023, Sec. 3): NF4 with double quantization, 4 + 8/64 + 32/(64 x 256) = 4.127
  bits per weight.
* PEFT's print_trainable_parameters for Llama-3-8B with LoRA r = 16: 41,943,040 trainable parameters
  on all linear layers, 13,631,488 on q/k/v/o (the widely reported figures; r x (in + out) per matrix).
"""

from __future__ import annotations

import pytest
from engine_fixtures import GPU, LLAMA_8B, NODE
from workbench_memory.stack import MemoryStackEstimator

from workbench.core import Cluster, ModelArchitecture, Scenario
from workbench.core.params import count_parameters
from workbench.core.resolved import ResolvedScenario
from workbench.engine.pipeline import Engine

ENGINE = Engine([MemoryStackEstimator()])
PARAMS = count_parameters(LLAMA_8B)
ALL_QUANTIZED = {"memory.quant_keeps_16bit": 0.0}


def per_gpu(model: ModelArchitecture = LLAMA_8B, **fields: object) -> dict[str, float]:
    scenario = Scenario(model="m", gpu="test-gpu", **fields)
    est = ENGINE.run(
        ResolvedScenario(scenario, model, Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus))
    )
    assert not est.failures, est.failures
    keys = ("weights", "gradients", "optimizer_states")
    return {k: est.get(f"memory.per_gpu.{k}") for k in keys}


@pytest.mark.parametrize(
    ("weights", "bytes_per_param"),
    [
        ("bf16", 2.0),
        ("fp16", 2.0),
        ("fp32", 4.0),
        ("int8", 1.0),
        ("fp8", 1.0),
        ("int4", (4 + 20 / 128) / 8),
        ("nf4", (4 + 8 / 64 + 32 / (64 * 256)) / 8),
        ("fp4", 4.25 / 8),
    ],
)
def test_inference_weight_bytes_per_param(weights: str, bytes_per_param: float) -> None:
    got = per_gpu(weights=weights, assumptions=ALL_QUANTIZED)
    assert got["weights"] / PARAMS.total == pytest.approx(bytes_per_param, rel=1e-12)
    assert got["gradients"] == got["optimizer_states"] == 0


def test_int4_is_4_156_bits_and_close_to_transformer_math_half_byte() -> None:
    bits = per_gpu(weights="int4", assumptions=ALL_QUANTIZED)["weights"] * 8 / PARAMS.total
    assert round(bits, 3) == 4.156
    assert bits / 8 == pytest.approx(0.5, rel=0.04)
    assert per_gpu(weights="int4", quant_group_size=32, assumptions=ALL_QUANTIZED)[
        "weights"
    ] * 8 / PARAMS.total == (pytest.approx(4 + 20 / 32))


def test_quantized_formats_keep_embeddings_head_and_norms_16bit_by_default() -> None:
    plain = PARAMS.breakdown["embedding"] + PARAMS.breakdown["lm_head"] + PARAMS.breakdown["norms"]
    linear = PARAMS.total - plain
    got = per_gpu(weights="int4")["weights"]
    assert got == pytest.approx(linear * (4 + 20 / 128) / 8 + plain * 2, rel=1e-12)
    assert per_gpu(weights="bf16")["weights"] == PARAMS.total * 2  # unquantized: no split


@pytest.mark.parametrize(
    ("optimizer", "dtype", "expected"),
    [
        ("adamw", "bf16", (2, 2, 12)),  # Transformer Math 101: 16 bytes/param
        ("adamw", "fp16", (2, 2, 12)),
        ("adamw", "fp32", (4, 4, 8)),  # no separate master copy
        ("adamw-8bit", "bf16", (2, 2, 6 + 2 * 4 / 2048)),  # 4 master + 2 states + block absmax
        ("sgd-momentum", "bf16", (2, 2, 8)),
    ],
)
def test_training_bytes_per_param(optimizer: str, dtype: str, expected: tuple[float, float, float]) -> None:
    got = per_gpu(workload="pretrain", optimizer=optimizer, dtype=dtype)
    ratios = tuple(got[k] / PARAMS.total for k in ("weights", "gradients", "optimizer_states"))
    assert ratios == pytest.approx(expected, rel=1e-12)


def test_mixed_precision_adamw_totals_16_bytes_per_param() -> None:
    got = per_gpu(workload="finetune")
    assert sum(got.values()) == 16 * PARAMS.total


def test_adafactor_keeps_factored_second_moments() -> None:
    # Llama-8B matrices: per block sum(in + out) = q 8192 + k 5120 + v 5120 + o 8192 + 3 x 18432;
    # vectors (two norms) kept whole; outside: embedding and untied head (128256 + 4096 each), final norm.
    per_block = 8192 + 5120 + 5120 + 8192 + 3 * 18432 + 2 * 4096
    factored = 32 * per_block + 2 * (128256 + 4096) + 4096
    got = per_gpu(workload="pretrain", optimizer="adafactor")
    assert got["optimizer_states"] == 4 * PARAMS.total + 4 * factored  # fp32 master + statistics
    with_momentum = per_gpu(
        workload="pretrain", optimizer="adafactor", assumptions={"memory.adafactor_momentum_bytes": 4.0}
    )
    assert with_momentum["optimizer_states"] - got["optimizer_states"] == 4 * PARAMS.total


@pytest.mark.parametrize(("targets", "trainable"), [("all-linear", 41_943_040), ("attention", 13_631_488)])
def test_lora_adapters_match_peft_counts_for_llama_3_8b(targets: str, trainable: int) -> None:
    got = per_gpu(workload="finetune", method="lora", lora_rank=16, lora_targets=targets)
    assert got["gradients"] == trainable * 2  # bf16 gradients of the adapters only
    assert got["optimizer_states"] == trainable * 12  # fp32 master + AdamW moments
    assert got["weights"] == PARAMS.total * 2 + trainable * 2  # frozen bf16 base + adapters


def test_qlora_stores_the_base_in_nf4_and_trains_only_adapters() -> None:
    trainable = 41_943_040
    plain = PARAMS.breakdown["embedding"] + PARAMS.breakdown["lm_head"] + PARAMS.breakdown["norms"]
    nf4 = (4 + 8 / 64 + 32 / (64 * 256)) / 8
    got = per_gpu(workload="finetune", method="qlora", lora_rank=16)
    assert got["weights"] == pytest.approx(
        (PARAMS.total - plain) * nf4 + plain * 2 + trainable * 2, rel=1e-12
    )
    assert got["gradients"] == trainable * 2
    assert got["optimizer_states"] == trainable * 12
