"""Serving model: decode is memory-bound, prefill compute-bound; batching, chunked prefill,
disaggregation and speculative decoding behave as their papers say; the output contract holds.

Inputs come from the textbook stand-in of test_perf_support (no memory/compute plugin needed).
"""

from __future__ import annotations


import pytest
from engine_fixtures import GPU, resolved
from hypothesis import given, settings
from hypothesis import strategies as st
from test_perf_support import engine_with
from workbench_performance import accepted_per_step, curve_for
from workbench_performance.efficiency import ASSUMPTIONS, efficiencies
from workbench_performance.inference import decode_kernels, prefill_kernels
from workbench_performance.inputs import inference_inputs
from workbench_performance.keys import PERFORMANCE

ENGINE = engine_with()
DEFAULTS = {a.id: a.default for a in ASSUMPTIONS}
BW = GPU.memory_bandwidth_gbps * 1e9
PEAK = GPU.dense_tflops["bf16"] * 1e12  # type: ignore[index]


def run(**fields):  # type: ignore[no-untyped-def]
    est = ENGINE.run(resolved(**fields))
    assert not est.failures, est.failures
    return est


def kernels_of(est, batch: int = 1):  # type: ignore[no-untyped-def]
    """The per-operator kernel times of one decode step of ``est`` at ``batch``."""
    inp = inference_inputs(est)
    central, _, _ = efficiencies(est.assumptions, training=False, mfu=est.resolved.scenario.mfu)
    return inp, decode_kernels(inp, central, batch)


def test_decode_at_batch_one_reads_the_weights_once() -> None:
    """Batch-1 decode: the weight and KV-cache bytes the roofline counts, at the profile's achieved
    bandwidth, plus one latency per kernel and the per-step overhead."""
    est = run(batch_size=1, seq_len=1024, gen_len=256)
    inp, k = kernels_of(est)
    prof = inp.profile
    central, _, _ = efficiencies(est.assumptions, training=False)
    # every kernel of a batch-1 step streams memory; the bytes are those of the roofline (the
    # per-operator model reads its activations from shapes, within a fraction of a percent)
    assert k.compute_s == 0.0
    achieved = BW * prof.bandwidth_efficiency * central.bandwidth  # stream benchmark x sustained share
    assert k.memory_s == pytest.approx(est.get("roofline.decode.bytes") / achieved, rel=0.01)
    assert est.get("performance.decode_step_s") == pytest.approx(k.memory_s + k.latency_s + 0.001, rel=1e-9)
    assert est.get("performance.bound") == "memory bandwidth"


def test_prefill_is_compute_bound_and_scales_with_kernel_efficiency() -> None:
    base = run(batch_size=1, seq_len=4096, gen_len=16)
    half_scale = DEFAULTS["perf.kernel_efficiency_scale"] / 2
    slower = run(batch_size=1, seq_len=4096, gen_len=16, assumptions={"perf.kernel_efficiency_scale": half_scale})
    inp = inference_inputs(base)
    central, _, _ = efficiencies(base.assumptions, training=False)
    k = prefill_kernels(inp, central, 1)
    assert k.compute_s > 10 * k.memory_s  # a 4,096-token prompt is compute-bound
    half, _, _ = efficiencies(slower.assumptions, training=False)
    assert prefill_kernels(inp, half, 1).compute_s == pytest.approx(2 * k.compute_s, rel=1e-9)
    # the GEMM FLOPs of the prompt run at the profile's large-GEMM efficiency (4,096 rows fill
    # every tile; the thin-matrix factors of a 4,096-wide model cost a few percent at most)
    ideal = k.gemm_flops / (PEAK * inp.profile.gemm_efficiency_for("bf16") * central.matmul)
    assert ideal < k.gemm_s < 1.3 * ideal
    assert slower.get("performance.prefill_s") > 1.8 * (base.get("performance.prefill_s") - 0.001)


def test_mfu_flag_replaces_the_kernel_efficiency_for_inference() -> None:
    a = run(batch_size=1, seq_len=4096, gen_len=16, mfu=0.4)
    b = run(batch_size=1, seq_len=4096, gen_len=16, mfu=0.4, assumptions={"perf.kernel_efficiency_scale": 0.5})
    c = run(batch_size=1, seq_len=4096, gen_len=16, mfu=0.2)
    assert a.get("performance.prefill_s") == pytest.approx(b.get("performance.prefill_s"))
    assert c.get("performance.prefill_s") > 1.8 * a.get("performance.prefill_s")


def test_bandwidth_assumption_override_halves_decode_speed() -> None:
    base = run(batch_size=1, seq_len=512, gen_len=64)
    half_scale = DEFAULTS["perf.bandwidth_efficiency_scale"] / 2
    half = run(batch_size=1, seq_len=512, gen_len=64, assumptions={"perf.bandwidth_efficiency_scale": half_scale})
    _, k_base = kernels_of(base)
    _, k_half = kernels_of(half)
    assert k_half.memory_s == pytest.approx(2 * k_base.memory_s, rel=1e-9)
    assert k_half.latency_s == k_base.latency_s
    assert half.get("performance.decode_step_s") == pytest.approx(
        base.get("performance.decode_step_s") + k_base.memory_s, rel=1e-9
    )
    assert any(
        row["id"] == "perf.bandwidth_efficiency_scale" and row["overridden"]
        for row in half.assumptions_used()
    )


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 400), st.integers(1, 400))
def test_more_concurrency_never_lowers_throughput_nor_speeds_up_tokens(b1: int, b2: int) -> None:
    small, large = sorted((b1, b2))
    pts = {p.batch: p for p in curve_for(run(batch_size=8, seq_len=1024, gen_len=256), [small, large])}
    assert pts[large].tokens_per_s >= pts[small].tokens_per_s * (1 - 1e-9)
    assert pts[large].tpot_s >= pts[small].tpot_s * (1 - 1e-9)


def test_ranges_bracket_the_central_estimate() -> None:
    est = run(batch_size=32, seq_len=2048, gen_len=256)
    g = est.get
    assert (
        g("performance.tokens_per_s_low") < g("performance.tokens_per_s") < g("performance.tokens_per_s_high")
    )
    assert g("performance.ttft_s_low") < g("performance.ttft_s") < g("performance.ttft_s_high")
    assert g("performance.tpot_s_low") < g("performance.tpot_s") < g("performance.tpot_s_high")


def test_continuous_batching_charges_prompt_stalls_to_tpot() -> None:
    """Each finished request is replaced; its prefill stalls decoding: b/G x prefill per token."""
    est = run(batch_size=16, seq_len=2048, gen_len=128)
    stall = 16 / 128 * est.get("performance.prefill_s")
    assert est.get("performance.tpot_s") == pytest.approx(est.get("performance.decode_step_s") + stall)
    assert est.get("performance.prefill_time_fraction") == pytest.approx(
        stall / est.get("performance.tpot_s")
    )
    assert est.get("performance.tokens_per_s") == pytest.approx(16 / est.get("performance.tpot_s"))


def test_chunked_prefill_fills_memory_bound_steps() -> None:
    """Prompt chunks ride along with memory-bound decode steps: more throughput than stalling."""
    plain = run(batch_size=32, seq_len=1024, gen_len=256)
    chunked = run(batch_size=32, seq_len=1024, gen_len=256, serving={"chunked_prefill": True})
    assert chunked.get("performance.tokens_per_s") > plain.get("performance.tokens_per_s")
    assert chunked.get("performance.tpot_s") >= chunked.get("performance.decode_step_s")


def test_static_batching_prefills_the_whole_batch_first() -> None:
    static = run(batch_size=16, seq_len=1024, gen_len=128, serving={"continuous_batching": False})
    dynamic = run(batch_size=16, seq_len=1024, gen_len=128)
    assert static.get("performance.ttft_s") > 8 * dynamic.get("performance.prefill_s")
    assert static.get("performance.tpot_s") == pytest.approx(static.get("performance.decode_step_s"))


def test_disaggregated_decode_has_no_prompt_stalls_but_pays_for_a_prefill_pool() -> None:
    est = run(batch_size=32, seq_len=2048, gen_len=256, serving={"disaggregated": True})
    assert est.get("performance.tpot_s") == pytest.approx(est.get("performance.decode_step_s"))
    pool = est.get("performance.disagg_prefill_gpus")
    assert pool >= 1
    assert est.get("performance.gpus") == 1 + pool
    assert est.get("performance.tokens_per_s_per_gpu") == pytest.approx(
        est.get("performance.tokens_per_s") / (1 + pool)
    )
    assert est.get("performance.ttft_s") > est.get("performance.prefill_s")  # plus the KV transfer


def test_expected_accepted_tokens_follow_leviathan_et_al() -> None:
    """E[tokens per step] = (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023, eq. 1)."""
    assert accepted_per_step(4, 0.7) == pytest.approx((1 - 0.7**5) / 0.3)
    assert accepted_per_step(4, 1.0) == 5
    assert accepted_per_step(3, 1e-9) == pytest.approx(1.0)


def test_speculative_decoding_speeds_up_memory_bound_decode() -> None:
    plain = run(batch_size=1, seq_len=512, gen_len=256)
    spec = run(
        batch_size=1,
        seq_len=512,
        gen_len=256,
        serving={"speculative_draft_params": 5e8, "speculative_tokens": 4, "speculative_acceptance": 0.8},
    )
    assert spec.get("performance.speculative_tokens_per_step") == pytest.approx(accepted_per_step(4, 0.8))
    assert spec.get("performance.tpot_s") < 0.6 * plain.get("performance.tpot_s")
    useless = run(
        batch_size=1,
        seq_len=512,
        gen_len=256,
        serving={"speculative_draft_params": 5e8, "speculative_tokens": 4, "speculative_acceptance": 0.05},
    )
    assert useless.get("performance.tpot_s") > plain.get("performance.tpot_s")


def test_tensor_parallel_splits_weight_reads_and_adds_all_reduces() -> None:
    one = run(batch_size=1, seq_len=512, gen_len=64)
    two = run(batch_size=1, seq_len=512, gen_len=64, num_gpus=2, parallel={"tp": 2})
    comm = two.get("communication.tp.time_s")
    assert comm > 0 and "intra-node" in two.get("communication.tp.link")
    _, k_one = kernels_of(one)
    _, k_two = kernels_of(two)
    # each GPU streams half the weights; it launches as many kernels as before
    assert k_two.memory_s == pytest.approx(k_one.memory_s / 2, rel=0.02)
    assert k_two.latency_s == pytest.approx(k_one.latency_s)
    assert two.get("performance.decode_step_s") == pytest.approx(
        k_two.memory_s + k_two.compute_s + k_two.latency_s + comm + 0.001, rel=1e-9
    )


def test_pipeline_parallel_does_not_shorten_a_token() -> None:
    one = run(batch_size=1, seq_len=512, gen_len=64)
    two = run(batch_size=1, seq_len=512, gen_len=64, num_gpus=2, parallel={"pp": 2})
    assert two.get("performance.decode_step_s") >= one.get("performance.decode_step_s")


def test_too_many_sequences_for_the_kv_cache_warn() -> None:
    est = run(batch_size=128, seq_len=512, gen_len=64)  # the stand-in holds 64
    codes = [w.code for w in est.warnings]
    assert "batch-exceeds-kv-cache" in codes


def test_prefill_only_models_report_input_throughput_and_no_tpot() -> None:
    est = run(batch_size=8, seq_len=512, gen_len=0)
    assert est.get("performance.tpot_s") is None
    assert est.get("performance.tokens_per_s") == pytest.approx(est.get("performance.input_tokens_per_s"))


def test_contract_keys_are_present_and_training_ones_are_null() -> None:
    est = run(batch_size=4)
    for key, (_unit, applies, _what) in PERFORMANCE.items():
        assert key in est, key
        if applies == "training":
            assert est.get(key) is None, key
            assert est.values[key].note
    for key in (
        "performance.ttft_s",
        "performance.tpot_s",
        "performance.tokens_per_s",
        "performance.mfu",
        "performance.bound",
    ):
        assert est.get(key) is not None
    assert est.to_json()["performance"]["tpot_s"] == est.get("performance.tpot_s")


def test_formulas_substitute_values() -> None:
    est = run(batch_size=4, seq_len=256, gen_len=32)
    assert "decode step" in est.values["performance.tpot_s"].formula
    assert "prefill" in est.values["performance.ttft_s"].formula
    assert "perf.bandwidth_efficiency_scale" in est.values["performance.tpot_s"].assumptions
    # the per-operator breakdown: which kernels, how long, what bounds each
    formula = est.values["performance.tpot_s"].formula
    for kernel in ("attention.qkv", "mlp.up", "mlp.down", "lm_head", "attention "):
        assert kernel in formula, formula
    assert "(memory)" in formula


def test_curve_matches_the_estimate_and_marks_what_does_not_fit() -> None:
    est = run(batch_size=32, seq_len=1024, gen_len=256)
    points = curve_for(est, [1, 32, 64, 65, 1000])
    at = {p.batch: p for p in points}
    assert at[32].tokens_per_s == pytest.approx(est.get("performance.tokens_per_s"))
    assert at[32].ttft_s == pytest.approx(est.get("performance.ttft_s"))
    assert [p.fits for p in points] == [True, True, True, False, False]


def test_ten_thousand_curve_points() -> None:
    est = run(batch_size=32, seq_len=1024, gen_len=256)
    points = curve_for(est, range(1, 10_001))
    assert len(points) == 10_000
