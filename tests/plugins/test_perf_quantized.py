"""Weight-only quantized matmuls at few rows (operators/quantized.py): a batch-1 decode reads the
packed weights at the achieved bandwidth, so fewer bits per weight means less time per token;
GGUF weights run llama.cpp's GEMV up to 8 rows, other formats a 16-row tensor-core tile."""

from __future__ import annotations

import numpy as np
import pytest
from engine_fixtures import GPU, LLAMA_8B, NODE
from workbench_compute.estimator import ComputeEstimator
from workbench_memory.kv_cache import KvCacheEstimator
from workbench_memory.stack import MemoryStackEstimator
from workbench_performance.efficiency import efficiencies
from workbench_performance.estimator import CommunicationEstimator, PerformanceEstimator
from workbench_performance.inference import decode_kernels
from workbench_performance.inputs import inference_inputs
from workbench_performance.operators.cost import pass_kernels
from workbench_performance.operators.quantized import GEMV_FLOPS_PER_WEIGHT_ROW

from workbench.core import Cluster, Scenario
from workbench.core.resolved import ResolvedScenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine

#: an RTX 4090's datasheet figures (NVIDIA Ada whitepaper): a GPU whose 16-bit tensor peak is
#: low against its bandwidth, where a 64-row tile makes a 4-bit GEMV look compute-bound
CONSUMER = GPU.model_copy(update={"id": "test-consumer", "memory_gib": 24, "memory_bandwidth_gbps": 1008,
                                  "dense_tflops": {"bf16": 165.2, "fp8": 330.3, "fp32": 82.6}})

ENGINE = Engine([KvCacheEstimator(), MemoryStackEstimator(), ComputeEstimator(), CommunicationEstimator(),
                 PerformanceEstimator()])


def run(gpu=CONSUMER, **fields: object) -> Estimate:  # noqa: ANN001
    scenario = Scenario(model="m", gpu=gpu.id, seq_len=512, gen_len=128, **fields)
    est = ENGINE.run(ResolvedScenario(scenario, LLAMA_8B, Cluster(accelerator=gpu, node=NODE, num_gpus=1)))
    assert not est.failures, est.failures
    return est


def step(est: Estimate, batch: int):  # noqa: ANN201
    inp = inference_inputs(est)
    central, _, _ = efficiencies(est.assumptions, training=False)
    return inp, decode_kernels(inp, central, batch)


@pytest.mark.parametrize("weights", ["q4_k_m", "q8_0", "int4", "nf4", "mlx4"])
def test_batch_one_decode_of_quantized_weights_is_memory_bound(weights: str) -> None:
    """No GEMM of a one-row step is compute-bound: the kernel time is the bytes at the achieved
    bandwidth (the 64-row tile of a dense GEMM made 4-bit weights compute-bound before)."""
    est = run(weights=weights, batch_size=1)
    inp, k = step(est, 1)
    assert k.compute_s == 0.0
    central, _, _ = efficiencies(est.assumptions, training=False)
    achieved = inp.bandwidth * inp.profile.bandwidth_efficiency * central.bandwidth
    assert k.memory_s == pytest.approx(est.get("roofline.decode.bytes") / achieved, rel=0.02)


def test_time_per_token_follows_the_weight_bytes() -> None:
    """Q4_K_M < Q8_0 < bf16 per token, the kernel memory time in proportion to the bytes read."""
    times = {w: step(run(weights=w, batch_size=1), 1)[1].memory_s for w in ("q4_k_m", "q8_0", "bf16")}
    assert times["q4_k_m"] < times["q8_0"] < times["bf16"]
    wb = {w: inference_inputs(run(weights=w, batch_size=1)).weight_bytes for w in ("q4_k_m", "q8_0", "bf16")}
    # the weights dominate a short-context step: the time ratio is near the bytes ratio
    assert times["q4_k_m"] / times["bf16"] == pytest.approx(wb["q4_k_m"] / wb["bf16"], rel=0.05)
    assert run(weights="q4_k_m", batch_size=1).get("performance.tpot_s") < run(weights="q8_0", batch_size=1).get(
        "performance.tpot_s"
    )


def test_gguf_gemv_compute_grows_with_rows_up_to_eight() -> None:
    """llama.cpp's GEMV unpacks every weight once per row: 8 rows of GGUF weights cost the
    constant's FLOPs per weight and row on the vector cores (on an H100-like GPU, whose bandwidth
    is high against its FP32 rate); int4 (a tensor-core kernel) stays memory-bound at 8 rows."""
    est = run(GPU, weights="q4_0", batch_size=8)
    inp, k8 = step(est, 8)
    _, k1 = step(est, 1)
    assert inp.gemv_rows == 8 and k8.compute_s > 0 and k1.compute_s == 0
    weights = float((inp.ops.n * inp.ops.k * inp.ops.count).sum())
    # every GEMM of the 8-row step is compute-bound (the head included)
    assert k8.compute_s == pytest.approx(8 * weights * GEMV_FLOPS_PER_WEIGHT_ROW / inp.vector_flops, rel=0.02)
    int4 = run(GPU, weights="int4", batch_size=8)
    assert inference_inputs(int4).gemv_rows == 0
    assert step(int4, 8)[1].compute_s == 0.0


def test_large_row_counts_and_dense_weights_are_unchanged() -> None:
    """From 64 rows the 16-row tile and the 64-row tile are both full: a quantized prefill costs
    what it did; bf16 weights never take the quantized path."""
    est = run(weights="int4", batch_size=1)
    inp = inference_inputs(est)
    central, _, _ = efficiencies(est.assumptions, training=False)
    common = dict(dtype=inp.compute_dtype, peak_flops=inp.peak_flops, bandwidth=inp.bandwidth, ep=1,
                  act_bytes=inp.act_bytes, weight_bytes=inp.weight_bytes, expert_weight_bytes=0.0,
                  attention_flops=0.0, attention_bytes=0.0, context=512.0, gemm_scale=central.matmul,
                  bandwidth_scale=central.bandwidth)
    for rows in (64.0, 512.0, np.array([64.0, 4096.0])):
        dense = pass_kernels(inp.ops, inp.profile, tokens=rows, prompts=rows, **common)
        quant = pass_kernels(inp.ops, inp.profile, tokens=rows, prompts=rows, vector_flops=inp.vector_flops,
                             gemv_rows=8.0, **common)
        np.testing.assert_allclose(quant.gemm_s, dense.gemm_s, rtol=1e-12)
    bf16 = dict(common, weight_bytes=2.0)
    one = pass_kernels(inp.ops, inp.profile, tokens=4.0, prompts=4.0, **bf16)
    same = pass_kernels(inp.ops, inp.profile, tokens=4.0, prompts=4.0, vector_flops=inp.vector_flops, gemv_rows=8.0,
                        **bf16)
    assert same.gemm_s == one.gemm_s
