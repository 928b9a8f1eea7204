"""The engine on hybrid and recurrent models (Mamba-2, Qwen3-Next): what each block holds is what
is sized, split and costed (no torch needed; tests/validation/test_hybrid_families.py holds the
same numbers to transformers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from engine_fixtures import GPU, NODE
from workbench_compute.roofline import per_gpu
from workbench_compute.shapes import model_shape
from workbench_memory.kv_cache import KvCacheEstimator
from workbench_memory.parameters import ParametersEstimator
from workbench_memory.shapes import model_constants
from workbench_memory.stack import MemoryStackEstimator
from workbench_performance.model_constants import lora_parameters, tp_collectives, weight_elements

from workbench.catalog.hf_config import import_hf_config
from workbench.core import Cluster, ModelArchitecture, Scenario
from workbench.core.resolved import ResolvedScenario
from workbench.engine.pipeline import Engine

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
MAMBA2 = import_hf_config(
    {"model_type": "mamba2", "hidden_size": 1024, "num_heads": 32, "head_dim": 64, "n_groups": 1,
     "state_size": 128, "num_hidden_layers": 24, "vocab_size": 50288, "expand": 2},
    name="mamba2-synthetic",
).architecture  # fmt: skip
QWEN_NEXT = import_hf_config(
    json.loads((CONFIGS / "qwen3-next-80b-a3b-instruct" / "config.json").read_text()),
    name="Qwen3-Next-80B-A3B",
).architecture


def run(arch: ModelArchitecture, **fields: object):
    scenario = Scenario(model=arch.name, gpu=GPU.id, **fields)
    cluster = Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus)
    est = Engine([ParametersEstimator(), KvCacheEstimator(), MemoryStackEstimator()]).run(
        ResolvedScenario(scenario, arch, cluster)
    )
    assert not est.failures, est.failures
    return est


def test_mamba2_keeps_state_not_kv() -> None:
    est = run(MAMBA2, batch_size=4, seq_len=4096, gen_len=0)
    rec = MAMBA2.recurrent
    assert rec is not None
    per_layer = rec.conv_state_elements * 2 + rec.ssm_state_elements * 4  # bf16 conv window, fp32 state
    assert est.get("kv_cache.bytes") == 0
    assert est.get("memory.per_gpu.kv_cache") == 0
    assert est.get("recurrent_state.bytes_per_sequence") == 24 * per_layer
    assert est.get("memory.per_gpu.recurrent_state") == 4 * 24 * per_layer


def test_state_does_not_grow_with_context_but_kv_does() -> None:
    short, long = (run(QWEN_NEXT, batch_size=2, seq_len=s, gen_len=0, serving={"paged_kv": False})
                   for s in (1024, 8192))  # fmt: skip
    assert short.get("recurrent_state.bytes") == long.get("recurrent_state.bytes") > 0
    # 12 of 48 blocks have attention: 2 (K, V) x 2 KV heads x 256 dims x 2 B each
    assert short.get("kv_cache.bytes_per_token") == 12 * 2 * 2 * 256 * 2
    assert long.get("kv_cache.bytes") == 8 * short.get("kv_cache.bytes")


def test_state_splits_over_tensor_parallel_heads() -> None:
    one = run(MAMBA2, batch_size=4, seq_len=1024, gen_len=0)
    two = run(MAMBA2, batch_size=4, seq_len=1024, gen_len=0, num_gpus=2, parallel={"tp": 2})
    assert two.get("memory.per_gpu.recurrent_state") == one.get("memory.per_gpu.recurrent_state") / 2


def test_max_concurrency_counts_the_state_of_each_sequence() -> None:
    est = run(MAMBA2, batch_size=1, seq_len=1024, gen_len=0)
    free = est.get("memory.usable_capacity") - sum(
        est.get(f"memory.per_gpu.{k}") for k in ("weights", "activations", "overhead")
    )
    assert est.get("kv_cache.max_concurrency") == int(free // est.get("recurrent_state.bytes_per_sequence"))


def test_training_keeps_no_state() -> None:
    est = run(MAMBA2, workload="pretrain", batch_size=1, seq_len=1024)
    assert est.get("memory.per_gpu.recurrent_state") == 0
    assert est.get("recurrent_state.bytes") == 0


def test_memory_constants_split_blocks_by_what_they_hold() -> None:
    c = model_constants(QWEN_NEXT)
    assert c.full_kv[c.layers] == 12 and c.state[c.layers] == 36
    m = model_constants(MAMBA2)
    rec = MAMBA2.recurrent
    assert rec is not None
    assert m.split[m.layers] == 24 * rec.projection_parameters  # no attention, no FFN
    assert m.kv[m.layers] == 0
    assert m.lora_io_all[m.layers] == 24 * sum(i + o for i, o in rec.projections)
    assert m.lora_n_all[m.layers] == 24 * 2 and m.lora_n_attn[m.layers] == 0


@pytest.mark.parametrize("arch", [MAMBA2, QWEN_NEXT], ids=["mamba2", "qwen3-next"])
@pytest.mark.parametrize("tp", [1, 4])
def test_decode_weights_agree_with_the_compute_roofline(arch: ModelArchitecture, tp: int) -> None:
    """The time model's weights per decode step are the matrices the compute plugin multiplies."""
    w = weight_elements(arch, tp, 1)
    gpu = per_gpu(model_shape(arch), tp, 1)
    assert w.dense == pytest.approx(sum(gpu.weights.values()), rel=1e-12)
    assert w.experts == pytest.approx(sum(gpu.expert_weights.values()), rel=1e-12)


def test_collectives_and_adapters_follow_the_blocks() -> None:
    assert tp_collectives(MAMBA2) == 24  # one per mixer-only block
    assert tp_collectives(QWEN_NEXT) == 2 * 48
    rec = MAMBA2.recurrent
    assert rec is not None
    assert lora_parameters(MAMBA2, 8, attention_only=False) == 8 * 24 * sum(i + o for i, o in rec.projections)
    assert lora_parameters(MAMBA2, 8, attention_only=True) == 0


def test_decode_step_reads_and_writes_the_state() -> None:
    """Each sequence's decode step reads and writes back its whole recurrent state (memory traffic
    the roofline counts), whatever the context."""
    from workbench_compute import ComputeEstimator

    def decode_bytes(batch: int) -> float:
        scenario = Scenario(model=MAMBA2.name, gpu=GPU.id, batch_size=batch, seq_len=512, gen_len=64)
        cluster = Cluster(accelerator=GPU, node=NODE, num_gpus=1)
        est = Engine([ComputeEstimator()]).run(ResolvedScenario(scenario, MAMBA2, cluster))
        return est.get("roofline.decode.bytes")

    state = run(MAMBA2, batch_size=1, seq_len=512).get("recurrent_state.bytes_per_sequence")
    assert decode_bytes(8) - decode_bytes(4) > 4 * 2 * state
