"""How the stack places bytes under TP / PP / EP / ZeRO / offload, hand-computed from the rules.

The expected numbers are derived in each test from parameter counts and the layout rules the
plugin documents (Megatron-LM tensor/pipeline/expert parallelism, ZeRO stages of Rajbhandari et al.
2020, 1F1B and interleaved in-flight micro-batches of Narayanan et al. 2021 / Korthikanti et al.
2022 Sec. 4.2.3), so a change in placement shows up as a changed byte count. Activations come from
a fake activation model with round numbers, so only this plugin's multiplication is tested here.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from engine_fixtures import GPU, LLAMA_8B, NODE
from workbench_memory import stack
from workbench_memory.guards import LayoutChecks
from workbench_memory.kv_cache import KvCacheEstimator
from workbench_memory.stack import MemoryStackEstimator

from workbench.core import (
    Cluster,
    EncoderDecoderConfig,
    Head,
    ModelArchitecture,
    ModelKind,
    MoEConfig,
    Scenario,
)
from workbench.core.params import count_parameters
from workbench.core.resolved import ResolvedScenario
from workbench.core.units import GiB
from workbench.engine.pipeline import Engine

ENGINE = Engine([KvCacheEstimator(), MemoryStackEstimator(), LayoutChecks()])
P = count_parameters(LLAMA_8B)
H, V, L = 4096, 128256, 32
NORM = 2 * H  # two RMSNorms per block
NO_OVERHEAD = {"memory.cuda_context_gib": 0.0, "memory.nccl_gib_per_group": 0.0, "memory.fragmentation": 0.0}

MIXTRAL_SMALL = ModelArchitecture(
    name="moe-8x",
    num_layers=8,
    hidden_size=1024,
    num_attention_heads=16,
    num_kv_heads=8,
    head_dim=64,
    intermediate_size=4096,
    vocab_size=32000,
    moe=MoEConfig(num_experts=8, experts_per_token=2, expert_intermediate_size=2048),
)
T5_SMALL = ModelArchitecture(
    name="t5-small-like",
    kind=ModelKind.ENCODER_DECODER,
    head=Head.SEQ2SEQ_LM,
    num_layers=6,
    hidden_size=512,
    num_attention_heads=8,
    num_kv_heads=8,
    head_dim=64,
    intermediate_size=2048,
    gated_mlp=False,
    vocab_size=32128,
    tie_word_embeddings=True,
    position_embedding="relative-bias",
    encoder_decoder=EncoderDecoderConfig(num_decoder_layers=6),
)


# Large enough that activations, not the LM head's weights, make the first stage the most loaded.
PL, EMB, HEAD = 1e9, 1e8, 1e7


@dataclass(frozen=True)
class FakeActivations:
    per_layer: float
    layers: int
    embedding: float
    head: float
    total: float
    workspace: float = 0.0
    transient: float = 0.0
    formula: str = "fake"


def fake_activation_memory(
    model,
    scenario,
    *,
    micro_batch,
    seq_len,
    tp,
    sequence_parallel,
    layers,  # type: ignore[no-untyped-def]
    first_stage,
    last_stage,
):
    per_layer = PL * micro_batch / tp
    embedding = EMB if first_stage else 0.0
    head = HEAD if last_stage else 0.0
    return FakeActivations(per_layer, layers, embedding, head, per_layer * layers + embedding + head)


def constant_activations(total: float):  # type: ignore[no-untyped-def]
    def fn(model, scenario, *, layers, **_):  # type: ignore[no-untyped-def]
        return FakeActivations(
            total / model.total_layers, layers, 0.0, 0.0, total / model.total_layers * layers
        )

    return fn


@pytest.fixture
def fake_activations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stack, "_activation_fn", fake_activation_memory)


def run(model: ModelArchitecture = LLAMA_8B, **fields: object):  # type: ignore[no-untyped-def]
    scenario = Scenario(model="m", gpu="test-gpu", **fields)
    est = ENGINE.run(
        ResolvedScenario(scenario, model, Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus))
    )
    assert not est.failures, est.failures
    return est


def codes(est) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {w.code: w.severity for w in est.warnings}


# --- tensor parallelism -----------------------------------------------------------------------


def test_tp_splits_matrices_and_vocab_but_replicates_norms() -> None:
    est = run(num_gpus=2, parallel={"tp": 2})
    blocks = P.breakdown["attention"] + P.breakdown["mlp"]
    expected = 2 * (blocks / 2 + L * NORM + H + (P.breakdown["embedding"] + P.breakdown["lm_head"]) / 2)
    assert est.get("memory.per_gpu.weights") == expected


def test_kv_heads_replicate_when_tp_exceeds_them() -> None:
    est = run(num_gpus=16, parallel={"tp": 16})
    kv_proj = 2 * H * 8 * 128  # K and V projections of one block, 8 KV heads
    q_o = 2 * H * 32 * 128
    expected = 2 * (L * (q_o / 16 + kv_proj / 8 + P.breakdown["mlp"] / L / 16 + NORM) + H + 2 * V * H / 16)
    assert est.get("memory.per_gpu.weights") == expected  # each rank keeps one whole KV head (1/8)
    # and caches one KV head per layer for each token (block-rounded 2304 tokens)
    assert est.get("memory.per_gpu.kv_cache") == 2304 * L * 2 * 1 * 128 * 2
    assert codes(est)["tp-not-dividing-heads"] == "warning"
    assert "replicated on 2 ranks" in next(
        w.message for w in est.warnings if w.code == "tp-not-dividing-heads"
    )


def test_tp_that_does_not_divide_heads_is_an_error() -> None:
    assert codes(run(num_gpus=3, parallel={"tp": 3}))["tp-not-dividing-heads"] == "error"


# --- pipeline parallelism ---------------------------------------------------------------------


def test_pp_first_stage_keeps_embedding_last_keeps_head_and_tied_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stack, "_activation_fn", constant_activations(0.0))
    tied = LLAMA_8B.model_copy(update={"tie_word_embeddings": True})
    est = run(tied, num_gpus=2, parallel={"pp": 2}, assumptions=NO_OVERHEAD)
    per_block = (P.breakdown["attention"] + P.breakdown["mlp"]) / L + NORM
    # tied: embedding on stage 1 and its copy with the final norm on stage 2; both hold 16 blocks
    assert est.get("memory.per_gpu.weights") == 2 * (16 * per_block + V * H + H)
    assert est.get("memory.average_gpu.weights") == 2 * (16 * per_block + V * H + H / 2)


def test_1f1b_first_stage_holds_pp_micro_batches(fake_activations: None) -> None:
    est = run(
        workload="pretrain", num_gpus=4, parallel={"pp": 4}, global_batch_size=8, assumptions=NO_OVERHEAD
    )
    # stage 1 of 4: 8 blocks and the embedding, 4 micro-batches in flight
    assert est.get("memory.per_gpu.activations") == 4 * (8 * PL + EMB)
    # average over stages: stage i keeps 4 - i micro-batches; the last one adds the head
    assert (
        est.get("memory.average_gpu.activations")
        == (4 * (8 * PL + EMB) + 3 * 8 * PL + 2 * 8 * PL + 8 * PL + HEAD) / 4
    )


def test_interleaved_schedule_adds_korthikanti_factor(fake_activations: None) -> None:
    est = run(
        workload="pretrain",
        num_gpus=4,
        global_batch_size=8,
        assumptions=NO_OVERHEAD,
        parallel={"pp": 4, "pipeline_schedule": "interleaved", "virtual_stages": 2},
    )
    assert est.get("memory.per_gpu.activations") == pytest.approx(4 * (8 * PL + EMB) * (1 + 3 / (4 * 2)))


def test_gpipe_keeps_every_micro_batch_and_few_micro_batches_cap_1f1b(fake_activations: None) -> None:
    gpipe = run(
        workload="pretrain",
        num_gpus=4,
        global_batch_size=6,
        assumptions=NO_OVERHEAD,
        parallel={"pp": 4, "pipeline_schedule": "gpipe"},
    )
    assert gpipe.get("memory.per_gpu.activations") == 6 * (8 * PL + EMB)
    few = run(
        workload="pretrain", num_gpus=4, global_batch_size=2, assumptions=NO_OVERHEAD, parallel={"pp": 4}
    )
    assert few.get("memory.per_gpu.activations") == 2 * (8 * PL + EMB)


def test_the_step_transient_peak_is_held_once_not_per_micro_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    def with_transient(*args, **kwargs):  # type: ignore[no-untyped-def]
        base = fake_activation_memory(*args, **kwargs)
        return FakeActivations(
            base.per_layer,
            base.layers,
            base.embedding,
            base.head,
            base.total + 5e8,
            workspace=5e8,
            transient=7e8 if kwargs["last_stage"] else 6e8,
        )

    monkeypatch.setattr(stack, "_activation_fn", with_transient)
    est = run(
        workload="pretrain", num_gpus=2, global_batch_size=4, assumptions=NO_OVERHEAD, parallel={"pp": 2}
    )
    stage1 = 2 * (16 * PL + EMB) + 6e8  # two micro-batches kept, one step peak
    stage2 = 1 * (16 * PL + HEAD) + 7e8
    assert est.get("memory.per_gpu.activations") == stage1
    assert est.get("memory.average_gpu.activations") == (stage1 + stage2) / 2


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_stage_activations_equal_the_activation_models_peak(recompute: str) -> None:
    from workbench_memory.activations import activation_memory

    est = run(
        workload="pretrain",
        num_gpus=2,
        global_batch_size=8,
        parallel={"pp": 2},
        recompute=recompute,
        assumptions=NO_OVERHEAD,
        batch_size=2,
        seq_len=1024,
    )
    scenario = Scenario(
        model="m",
        gpu="test-gpu",
        workload="pretrain",
        num_gpus=2,
        global_batch_size=8,
        parallel={"pp": 2},
        recompute=recompute,
        batch_size=2,
        seq_len=1024,
    )
    stages = [
        activation_memory(
            LLAMA_8B,
            scenario,
            micro_batch=2,
            seq_len=1024,
            tp=1,
            sequence_parallel=False,
            layers=16,
            first_stage=first,
            last_stage=not first,
        ).peak(in_flight)
        for first, in_flight in ((True, 2), (False, 1))
    ]
    assert est.get("memory.average_gpu.activations") == pytest.approx(sum(stages) / 2, rel=1e-12)
    assert est.get("memory.per_gpu.activations") in (pytest.approx(stages[0]), pytest.approx(stages[1]))


def test_uneven_pp_warns_and_the_larger_stage_sets_the_memory() -> None:
    est = run(num_gpus=3, parallel={"pp": 3})
    assert codes(est)["pp-not-dividing-layers"] == "warning"
    assert codes(run(num_gpus=64, parallel={"pp": 64}))["pp-not-dividing-layers"] == "error"


# --- expert parallelism -----------------------------------------------------------------------


def _expert_params(model: ModelArchitecture) -> int:
    moe = model.moe
    assert moe is not None
    return moe.num_experts * 3 * model.hidden_size * moe.expert_intermediate_size * model.num_layers


def test_ep_splits_routed_experts_and_the_busiest_rank_takes_the_remainder() -> None:
    count = count_parameters(MIXTRAL_SMALL)
    routed = _expert_params(MIXTRAL_SMALL)
    dense = count.total - routed
    even = run(MIXTRAL_SMALL, num_gpus=8, parallel={"dp": 8, "ep": 8})
    assert even.get("memory.per_gpu.weights") == 2 * (dense + routed / 8)
    uneven = run(MIXTRAL_SMALL, num_gpus=3, parallel={"dp": 3, "ep": 3})
    assert uneven.get("memory.per_gpu.weights") == pytest.approx(
        2 * (dense + routed * 3 / 8)
    )  # ceil(8/3) = 3
    assert uneven.get("memory.average_gpu.weights") == pytest.approx(2 * (dense + routed / 3))
    assert codes(uneven)["ep-not-dividing-experts"] == "error"
    assert codes(even)["moe-total-params"] == "info"


def test_ep_with_tp_spreads_experts_over_max_ep_tp_and_zero_shards_expert_states() -> None:
    count = count_parameters(MIXTRAL_SMALL)
    routed = _expert_params(MIXTRAL_SMALL)
    router = MIXTRAL_SMALL.num_layers * 8 * 1024  # replicated on every TP rank
    b = count.breakdown
    dense_per_rank = (b["attention"] + b["embedding"] + b["lm_head"]) / 2 + router + b["norms"]
    est = run(
        MIXTRAL_SMALL, workload="pretrain", num_gpus=8, parallel={"tp": 2, "dp": 4, "ep": 8, "zero_stage": 1}
    )
    # Each of the 8 TP x DP ranks holds one whole expert (max(ep, tp) = 8); expert states shard over
    # tp x dp / max(ep, tp) = 1 rank, dense states over DP 4.
    assert est.get("memory.per_gpu.weights") == pytest.approx(2 * (dense_per_rank + routed / 8), rel=1e-12)
    assert est.get("memory.per_gpu.optimizer_states") == pytest.approx(
        12 * (dense_per_rank / 4 + routed / 8), rel=1e-12
    )


# --- ZeRO and offload -------------------------------------------------------------------------


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_zero_stages_shard_states_over_dp(zero: int) -> None:
    est = run(
        workload="pretrain",
        num_gpus=8,
        parallel={"dp": 8, "zero_stage": zero},
        assumptions={"memory.zero3_live_layers": 0.0},
    )
    n = P.total
    assert est.get("memory.per_gpu.optimizer_states") == (12 * n / 8 if zero >= 1 else 12 * n)
    assert est.get("memory.per_gpu.gradients") == (2 * n / 8 if zero >= 2 else 2 * n)
    assert est.get("memory.per_gpu.weights") == (2 * n / 8 if zero >= 3 else 2 * n)


def test_zero3_gathers_live_layers_and_param_offload_keeps_only_them() -> None:
    n = P.total
    gathered = 2 * n * 2 / L  # two of the stage's 32 blocks (average block, embeddings included)
    est = run(workload="pretrain", num_gpus=8, parallel={"dp": 8, "zero_stage": 3})
    assert est.get("memory.per_gpu.weights") == pytest.approx(gathered + (2 * n - gathered) / 8)
    offload = run(
        workload="pretrain",
        num_gpus=8,
        parallel={"dp": 8, "zero_stage": 3, "offload_params": "cpu", "offload_optimizer": "cpu"},
    )
    assert offload.get("memory.per_gpu.weights") == pytest.approx(gathered)
    assert offload.get("memory.per_gpu.optimizer_states") == 0


def test_param_offload_without_zero3_warns() -> None:
    est = run(workload="pretrain", num_gpus=2, parallel={"dp": 2, "zero_stage": 2, "offload_params": "cpu"})
    assert codes(est)["offload-params-needs-zero3"] == "warning"
    assert est.get("memory.per_gpu.weights") == 2 * P.total


# --- KV cache, capacity, fit ------------------------------------------------------------------


def test_encoder_decoder_caches_decoder_self_attention_and_cross_attention() -> None:
    est = run(T5_SMALL, batch_size=2, seq_len=512, gen_len=64, serving={"paged_kv": False})
    per_token_layer = 2 * 8 * 64 * 2
    assert est.get("kv_cache.bytes") == 2 * 6 * (64 + 512) * per_token_layer
    assert est.get("kv_cache.bytes_per_token") == 6 * per_token_layer


def test_inference_usable_is_gpu_memory_utilization_of_capacity() -> None:
    est = run(serving={"gpu_memory_utilization": 0.5})
    assert est.get("memory.gpu_capacity") == 80 * GiB
    assert est.get("memory.usable_capacity") == 40 * GiB
    assert est.get("memory.headroom") == 40 * GiB - est.get("memory.per_gpu.total")
    assert not run(serving={"gpu_memory_utilization": 0.18}).get("memory.fits")


def test_max_concurrency_fills_what_weights_workspace_and_overhead_leave() -> None:
    est = run(batch_size=1, seq_len=1000, gen_len=24)
    left = (
        0.9 * 80 * GiB
        - est.get("memory.per_gpu.weights")
        - est.get("memory.per_gpu.activations")
        - est.get("memory.per_gpu.overhead")
    )
    per_sequence = 1024 * L * 2 * 8 * 128 * 2
    assert est.get("kv_cache.max_concurrency") == int(left // per_sequence)
    assert run(workload="pretrain").get("kv_cache.max_concurrency") is None


def test_out_of_memory_names_the_two_largest_parts_and_fixes() -> None:
    est = run(workload="finetune", seq_len=1024)
    assert est.get("memory.fits") is False
    oom = next(w for w in est.warnings if w.code == "out-of-memory")
    assert oom.severity == "error"
    assert "optimizer states" in oom.message
    assert "ZeRO-3" in oom.fix and "GPUs" in oom.fix


def test_min_gpus_is_the_fewest_dp_ranks_zero3_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    # 20 GB of activations that TP does not shrink: 16 B/param of model states need DP 3 under
    # ZeRO-3 (TP 2 without DP would still hold 60 GiB of states + activations: 82 GiB).
    monkeypatch.setattr(stack, "_activation_fn", constant_activations(20e9))
    est = run(workload="finetune", parallel={"zero_stage": 3})
    assert est.get("memory.min_gpus") == 3
    assert "TP 1 x PP 1 x DP 3" in est.values["memory.min_gpus"].formula
    assert run(workload="finetune", num_gpus=3, parallel={"dp": 3, "zero_stage": 3}).get("memory.fits")
    assert not run(workload="finetune", num_gpus=2, parallel={"dp": 2, "zero_stage": 3}).get("memory.fits")
    assert not run(workload="finetune", num_gpus=2, parallel={"tp": 2, "zero_stage": 3}).get("memory.fits")


def test_min_gpus_grows_tp_when_dp_cannot_help() -> None:
    est = run(
        weights="fp32", dtype="fp32", serving={"gpu_memory_utilization": 0.3}
    )  # 32 GB of weights, 24 usable
    assert est.get("memory.fits") is False
    assert est.get("memory.min_gpus") == 2
    assert "TP 2 x PP 1 x DP 1" in est.values["memory.min_gpus"].formula
    assert run(
        weights="fp32", dtype="fp32", num_gpus=2, parallel={"tp": 2}, serving={"gpu_memory_utilization": 0.3}
    ).get("memory.fits")


def test_min_gpus_is_none_when_nothing_fits(fake_activations: None) -> None:
    huge_kv = run(batch_size=4096, seq_len=131072, gen_len=0)
    assert huge_kv.get("memory.min_gpus") is None


def test_missing_activation_model_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stack, "activation_function", lambda: (None, "No module named 'x'"))
    est = run(workload="pretrain")
    assert est.get("memory.per_gpu.activations") == 0
    assert codes(est)["activations-unavailable"] == "error"


def test_enough_gpus_in_the_wrong_split_suggest_model_parallelism() -> None:
    """Llama 3.1 70B pre-training on 64 H100s with ZeRO-3 and DP only: each GPU holds a whole
    model's activations (64 GiB), which more DP ranks never shrink. More GPUs is the wrong fix;
    tensor parallelism is the right one, and the fix says so with a layout that fits."""
    from workbench.api import estimate

    fields = dict(model="llama-3.1-70b", gpu="h100-sxm", num_gpus=64, workload="pretrain")
    est = estimate(**fields, parallel={"dp": 64, "zero_stage": 3})
    oom = next(w for w in est.warnings if w.code == "out-of-memory")
    assert est.get("memory.min_gpus") <= 64
    assert "use at least" not in oom.fix
    assert oom.fix.startswith("more model parallelism (TP or PP): even ")
    assert estimate(**fields, parallel={"tp": 8, "dp": 8, "zero_stage": 3}).get("memory.fits")
