"""KV cache and weights of OPT-13B against the vLLM paper.

Source: Kwon et al., "Efficient Memory Management for Large Language Model Serving with
PagedAttention", SOSP 2023, Sec. 3: "the KV cache of a single token demands 800 KB of space,
calculated as 2 (key and value vectors) x 5120 (hidden state size) x 40 (number of layers) x 2
(bytes per FP16)"; "OPT can generate sequences up to 2048 tokens, [so] the memory required to store
the KV cache of one request can be as much as 1.6 GB"; Fig. 1: a 13B model on a 40 GB A100 spends
26 GB (65%) on parameters.

OPT-13B is written out from its Hugging Face config (facebook/opt-13b): 40 layers, hidden 5120, 40
heads of 128, FFN 20480 (ReLU), vocab 50272, learned positions for 2048 tokens, LayerNorm with bias,
biases everywhere, tied embeddings.
"""

from __future__ import annotations

from engine_fixtures import NODE
from workbench_memory.kv_cache import KvCacheEstimator
from workbench_memory.stack import MemoryStackEstimator

from workbench.core import (
    Accelerator,
    Cluster,
    ModelArchitecture,
    NormKind,
    PositionEmbedding,
    Scenario,
)
from workbench.core.resolved import ResolvedScenario
from workbench.core.units import GB, KiB, MiB
from workbench.engine.pipeline import Engine

OPT_13B = ModelArchitecture(
    name="OPT-13B",
    family="opt",
    hf_model_type="opt",
    num_layers=40,
    hidden_size=5120,
    num_attention_heads=40,
    num_kv_heads=40,
    head_dim=128,
    intermediate_size=20480,
    gated_mlp=False,
    activation="relu",
    vocab_size=50272,
    tie_word_embeddings=True,
    norm_kind=NormKind.LAYERNORM,
    norm_bias=True,
    attention_bias=True,
    attention_out_bias=True,
    mlp_bias=True,
    position_embedding=PositionEmbedding.LEARNED,
    max_position_embeddings=2048,
)
A100_40GB = Accelerator(
    id="a100-40gb",
    name="A100 40GB",
    vendor="nvidia",
    category="datacenter",
    memory_gib=40,
    memory_type="HBM2",
    memory_bandwidth_gbps=1555,
    dense_tflops={"fp16": 312.0},
    form_factor="SXM",
    launch_year=2020,
)
ENGINE = Engine([KvCacheEstimator(), MemoryStackEstimator()])


def run(**fields: object):  # type: ignore[no-untyped-def]
    scenario = Scenario(model="opt-13b", gpu="a100-40gb", dtype="fp16", **fields)
    est = ENGINE.run(
        ResolvedScenario(scenario, OPT_13B, Cluster(accelerator=A100_40GB, node=NODE, num_gpus=1))
    )
    assert not est.failures, est.failures
    return est


def test_kv_cache_per_token_is_800_kb() -> None:
    est = run()
    assert est.get("kv_cache.bytes_per_token") == 2 * 5120 * 40 * 2 == 819_200 == 800 * KiB


def test_one_2048_token_request_needs_1_6_gb_of_kv_cache() -> None:
    # The paper's "1.6 GB" is 800 KB x 2048 = 1600 MiB.
    est = run(batch_size=1, seq_len=1024, gen_len=1024)
    assert est.get("kv_cache.bytes") == 800 * KiB * 2048 == 1600 * MiB


def test_parameters_take_26_gb_of_a_40_gb_a100() -> None:
    est = run()
    weights = est.get("memory.per_gpu.weights")
    assert abs(weights / GB - 26) / 26 < 0.02  # 12.85B x 2 B = 25.7 GB
    assert abs(weights / (40 * GB) - 0.65) < 0.01
