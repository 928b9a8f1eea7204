"""A scenario with a llama.cpp GGUF preset: weight memory, KV cache and bytes read per token.

The weights a preset stores are summed tensor by tensor (workbench.core.gguf, checked against
llama.cpp's tables and llama-bench's published sizes in tests/core/test_gguf_quant.py); here the
estimators must carry that sum through unchanged. KV-cache blocks: block_q8_0 is 34 bytes per 32
values, block_q4_0 18 bytes per 32 (ggml-org/llama.cpp@01243c587feceaa5d6a6c2305535ef2f549c48b8:
ggml/src/ggml-common.h).
"""

from __future__ import annotations

import pytest
from engine_fixtures import GPU, LLAMA_8B, NODE
from workbench_compute.estimator import ComputeEstimator
from workbench_memory.kv_cache import KvCacheEstimator
from workbench_memory.stack import MemoryStackEstimator
from workbench_performance.inputs import inference_inputs

from workbench.core import Cluster, ModelArchitecture, Scenario
from workbench.core.gguf import preset_bytes
from workbench.core.resolved import ResolvedScenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine
from workbench.pluginhost import default_engine

ENGINE = Engine([KvCacheEstimator(), MemoryStackEstimator(), ComputeEstimator()])


def run(model: ModelArchitecture = LLAMA_8B, engine: Engine = ENGINE, **fields: object) -> Estimate:
    scenario = Scenario(model="m", gpu="test-gpu", **fields)
    est = engine.run(
        ResolvedScenario(scenario, model, Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus))
    )
    assert not est.failures, est.failures
    return est


@pytest.mark.parametrize("preset", ["q4_k_m", "q8_0", "q3_k_m", "iq4_xs", "q2_k"])
def test_weights_are_the_tensor_by_tensor_sum(preset: str) -> None:
    got = run(weights=preset).get("memory.per_gpu.weights")
    assert got == pytest.approx(preset_bytes(LLAMA_8B, preset).total, rel=1e-12)


def test_pipeline_stages_share_the_model() -> None:
    total = preset_bytes(LLAMA_8B, "q4_k_m").total
    est = run(weights="q4_k_m", num_gpus=2, parallel={"pp": 2})
    # Embedding on stage 1, head on stage 2, blocks at their average: the stages add up to the model.
    assert 2 * est.get("memory.average_gpu.weights") == pytest.approx(total, rel=1e-9)
    assert est.get("memory.per_gpu.weights") > total / 2


def test_gguf_weights_refuse_training() -> None:
    with pytest.raises(ValueError, match="llama.cpp inference format"):
        Scenario(model="m", gpu="test-gpu", weights="q4_k_m", workload="finetune")


@pytest.mark.parametrize(("kv", "per_value"), [("q8_0", 34 / 32), ("q4_0", 18 / 32), ("fp16", 2.0)])
def test_quantized_kv_cache_bytes(kv: str, per_value: float) -> None:
    est = run(weights="q4_k_m", kv_dtype=kv)
    values_per_token = LLAMA_8B.num_layers * 2 * LLAMA_8B.num_kv_heads * LLAMA_8B.head_dim
    assert est.get("kv_cache.bytes_per_token") == pytest.approx(values_per_token * per_value, rel=1e-12)


def test_decode_reads_the_real_bytes() -> None:
    pb = preset_bytes(LLAMA_8B, "q4_k_m")
    engine = default_engine()
    q4 = run(engine=engine, weights="q4_k_m")
    q8 = run(engine=engine, weights="q8_0")
    assert inference_inputs(q4).weight_bytes == pytest.approx(pb.dense_matmul(), rel=1e-12)
    # Blocks and head per matmul weight: between Q4_K (0.5625 B) and Q6_K (0.8203 B).
    assert 0.5625 < pb.dense_matmul() < 0.8203
    # The decode step reads the weights: q8_0 reads more, by the difference of the tensors' bytes.
    d4, d8 = q4.get("roofline.decode.bytes"), q8.get("roofline.decode.bytes")
    q8_dense = preset_bytes(LLAMA_8B, "q8_0")
    matmul = pb.params["linear"] + pb.params["head"]
    assert d8 - d4 == pytest.approx(matmul * (q8_dense.dense_matmul() - pb.dense_matmul()), rel=1e-6)


@pytest.mark.parametrize(("fmt", "bits"), [("mlx4", 4.5), ("mlx8", 8.5)])
def test_mlx_quantizes_embedding_and_head_too(fmt: str, bits: float) -> None:
    """mlx.nn.quantize quantizes every Linear and Embedding, only the norms stay 16-bit
    (ml-explore/mlx@29a620cab2a8a9e68d540be27a5bdb05fc62003d:python/mlx/nn/layers/quantized.py)."""
    from workbench.core.params import count_parameters

    total = count_parameters(LLAMA_8B).total
    norms = (2 * LLAMA_8B.num_layers + 1) * LLAMA_8B.hidden_size
    got = run(weights=fmt).get("memory.per_gpu.weights")
    assert got == pytest.approx((total - norms) * bits / 8 + norms * 2, rel=1e-12)
