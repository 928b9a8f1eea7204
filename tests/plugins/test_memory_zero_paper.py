"""Model-state memory per GPU against the ZeRO paper's Table 1.

Source: Rajbhandari, Rasley, Ruwase, He, "ZeRO: Memory Optimizations Toward Training Trillion
Parameter Models", SC 2020 (arXiv:1910.02054), Table 1 "Per-device memory consumption of different
optimizations in ZeRO-DP as a function of DP degree" and Figure 1 (Psi = 7.5B, K = 12, Nd = 64:
baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.88 GB). Mixed-precision Adam: 2 Psi fp16
weights + 2 Psi fp16 gradients + K Psi optimizer states (fp32 master, momentum, variance), K = 12;
the paper counts model states only (no activations, buffers or fragmentation) in decimal GB.

The table rounds to 3 significant digits and truncates a few cells (257.75 -> 257, 2218.75 ->
2218), so each cell must match within one unit of its last printed digit.
"""

from __future__ import annotations

import pytest
from engine_fixtures import GPU, NODE
from workbench_memory.stack import MemoryStackEstimator

from workbench.core import Cluster, ModelArchitecture, NormKind, PositionEmbedding, Scenario
from workbench.core.params import count_parameters
from workbench.core.resolved import ResolvedScenario
from workbench.core.units import GB
from workbench.engine.pipeline import Engine

ENGINE = Engine([MemoryStackEstimator()])


def gpt(name: str, layers: int, hidden: int, heads: int) -> ModelArchitecture:
    """A GPT-2-style model of roughly the paper's size (the test rescales to exactly Psi)."""
    return ModelArchitecture(
        name=name,
        num_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_kv_heads=heads,
        head_dim=hidden // heads,
        intermediate_size=4 * hidden,
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


MODELS = {
    7.5e9: gpt("7.5B", 36, 4096, 32),
    128e9: gpt("128B", 160, 8192, 64),
    1e12: gpt("1T", 128, 25600, 160),
}

# Table 1: DP degree -> {Psi: (P_os, P_os+g, P_os+g+p)} in GB, as printed.
TABLE_1 = {
    1: {7.5e9: ("120", "120", "120"), 128e9: ("2048", "2048", "2048"), 1e12: ("16000", "16000", "16000")},
    4: {7.5e9: ("52.5", "41.3", "30"), 128e9: ("896", "704", "512"), 1e12: ("7000", "5500", "4000")},
    16: {7.5e9: ("35.6", "21.6", "7.5"), 128e9: ("608", "368", "128"), 1e12: ("4750", "2875", "1000")},
    64: {7.5e9: ("31.4", "16.6", "1.88"), 128e9: ("536", "284", "32"), 1e12: ("4187", "2218", "250")},
    256: {7.5e9: ("30.4", "15.4", "0.47"), 128e9: ("518", "263", "8"), 1e12: ("4046", "2054", "62.5")},
    1024: {7.5e9: ("30.1", "15.1", "0.12"), 128e9: ("513", "257", "2"), 1e12: ("4011", "2013", "15.6")},
}


def model_states_gb(psi: float, dp: int, zero: int) -> float:
    """Our weights + gradients + optimizer states per GPU, rescaled from the model's count to Psi."""
    arch = MODELS[psi]
    scenario = Scenario(
        model=arch.name,
        gpu="test-gpu",
        workload="pretrain",
        dtype="fp16",
        optimizer="adamw",
        num_gpus=dp,
        parallel={"dp": dp, "zero_stage": zero},
        # The paper leaves out ZeRO-3's gathered working set; so does this comparison.
        assumptions={"memory.zero3_live_layers": 0.0},
    )
    resolved = ResolvedScenario(scenario, arch, Cluster(accelerator=GPU, node=NODE, num_gpus=dp))
    est = ENGINE.run(resolved)
    assert not est.failures, est.failures
    states = sum(est.get(f"memory.per_gpu.{k}") for k in ("weights", "gradients", "optimizer_states"))
    return states / count_parameters(arch).total * psi / GB


def _ulp(printed: str) -> float:
    decimals = len(printed.partition(".")[2])
    return 10.0**-decimals


@pytest.mark.parametrize("dp", sorted(TABLE_1))
@pytest.mark.parametrize("psi", sorted(MODELS))
def test_table_1_per_device_model_states(psi: float, dp: int) -> None:
    for zero, printed in zip((1, 2, 3), TABLE_1[dp][psi]):
        ours = model_states_gb(psi, dp, zero)
        assert abs(ours - float(printed)) <= _ulp(printed), (psi, dp, zero, ours, printed)


def test_figure_1_baseline_and_stages_for_7_5b_on_64_gpus() -> None:
    """Figure 1: Psi = 7.5B, K = 12, Nd = 64: 120 GB, 31.4 GB, 16.6 GB, 1.88 GB."""
    got = [model_states_gb(7.5e9, 64, zero) for zero in (0, 1, 2, 3)]
    assert got[0] == pytest.approx(120.0, rel=1e-12)  # (2 + 2 + 12) x 7.5B bytes, no sharding
    assert got[1:] == pytest.approx([31.40625, 16.640625, 1.875], rel=1e-12)
    assert [round(g, 2 if g < 10 else 1) for g in got] == [120.0, 31.4, 16.6, 1.88]
