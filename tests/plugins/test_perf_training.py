"""Training-step model: pipeline bubble (Narayanan et al. 2021), MFU/HFU (PaLM, Chowdhery et al. 2022,
app. B), the --mfu override, time to train, and what communication costs."""

from __future__ import annotations

import pytest
from engine_fixtures import GPU, resolved
from hypothesis import given, settings
from hypothesis import strategies as st
from test_perf_support import engine_with
from workbench_performance import bubble_fraction
from workbench_performance.keys import PERFORMANCE

ENGINE = engine_with()
PEAK = GPU.dense_tflops["bf16"] * 1e12  # type: ignore[index]


def train(**fields):  # type: ignore[no-untyped-def]
    fields.setdefault("workload", "pretrain")
    est = ENGINE.run(resolved(**fields))
    assert not est.failures, est.failures
    return est


@pytest.mark.parametrize(
    ("pp", "m", "v", "expected"),
    [(1, 8, 1, 0.0), (4, 8, 1, 3 / 8), (8, 32, 1, 7 / 32), (4, 8, 2, 3 / 16), (16, 64, 4, 15 / 256)],
)
def test_bubble_is_p_minus_one_over_v_m(pp: int, m: int, v: int, expected: float) -> None:
    """1F1B: (p-1)/m; interleaved with v chunks per rank: (p-1)/(v m) (Narayanan et al. 2021, sec. 2.2)."""
    assert bubble_fraction(pp, m, v) == pytest.approx(expected)


def test_estimator_reports_the_bubble_of_its_layout() -> None:
    est = train(num_gpus=4, batch_size=1, seq_len=512, global_batch_size=8, parallel={"pp": 4})
    assert est.get("performance.microbatches") == 8
    assert est.get("performance.pipeline_bubble_fraction") == pytest.approx(3 / 8)
    inter = train(
        num_gpus=4,
        batch_size=1,
        seq_len=512,
        global_batch_size=8,
        parallel={"pp": 4, "pipeline_schedule": "interleaved", "virtual_stages": 2},
    )
    assert inter.get("performance.pipeline_bubble_fraction") == pytest.approx(3 / 16)
    assert inter.get("performance.step_time_s") < est.get("performance.step_time_s")


def test_mfu_override_fixes_the_step_time() -> None:
    """step = model FLOPs / (GPUs x peak x MFU); the reported MFU is the override."""
    est = train(num_gpus=8, batch_size=2, seq_len=1024, global_batch_size=64, parallel={"dp": 8}, mfu=0.4)
    model_flops = (
        (est.get("flops.forward") + est.get("flops.backward")) * 4 * 8
    )  # 4 micro-batches x 8 replicas
    assert est.get("performance.step_time_s") == pytest.approx(model_flops / (8 * PEAK * 0.4))
    assert est.get("performance.mfu") == pytest.approx(0.4)
    assert (
        est.get("performance.step_time_s_low")
        == est.get("performance.step_time_s_high")
        == pytest.approx(est.get("performance.step_time_s"))
    )


def test_hfu_adds_the_recomputed_forward() -> None:
    est = train(batch_size=1, seq_len=1024, recompute="full")
    fwd, bwd, rec = (est.get(f"flops.{k}") for k in ("forward", "backward", "recompute"))
    assert est.get("performance.hfu") / est.get("performance.mfu") == pytest.approx(
        (fwd + bwd + rec) / (fwd + bwd)
    )
    assert est.get("performance.recompute_overhead_fraction") == pytest.approx(rec / (fwd + bwd))
    plain = train(batch_size=1, seq_len=1024)
    assert plain.get("performance.hfu") == pytest.approx(plain.get("performance.mfu"))
    assert est.get("performance.step_time_s") > plain.get("performance.step_time_s")


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4]), st.integers(1, 4), st.sampled_from([0, 1, 3])
)
def test_mfu_never_exceeds_the_kernel_efficiency(tp: int, pp: int, mb_per_stage: int, zero: int) -> None:
    dp = 64 // (tp * pp)
    est = train(
        num_gpus=64,
        batch_size=1,
        seq_len=2048,
        global_batch_size=dp * pp * mb_per_stage,
        parallel={"tp": tp, "pp": pp, "dp": dp, "zero_stage": zero},
    )
    assert 0 < est.get("performance.mfu") <= 0.65 + 1e-9
    assert (
        est.get("performance.step_time_s_low")
        <= est.get("performance.step_time_s")
        <= est.get("performance.step_time_s_high")
    )


def test_time_to_train_and_days() -> None:
    est = train(
        num_gpus=8, batch_size=1, seq_len=2048, global_batch_size=64, parallel={"dp": 8}, train_tokens=1e11
    )
    seconds = 1e11 / est.get("performance.tokens_per_s")
    assert est.get("performance.train_time_s") == pytest.approx(seconds)
    assert est.get("performance.train_time_days") == pytest.approx(seconds / 86400)
    assert (
        est.get("performance.train_time_days_low")
        < est.get("performance.train_time_days")
        < est.get("performance.train_time_days_high")
    )
    assert est.get("performance.tokens_per_s") == pytest.approx(
        64 * 2048 / est.get("performance.step_time_s")
    )


def test_without_train_tokens_the_run_time_is_null_with_a_reason() -> None:
    est = train(batch_size=1, seq_len=512)
    assert est.get("performance.train_time_days") is None
    assert "--train-tokens" in est.values["performance.train_time_days"].note


def test_data_parallel_gradients_and_zero3_volume() -> None:
    """ZeRO-3 moves 1.5x the data-parallel volume of ZeRO-0/1/2 (Rajbhandari et al. 2020)."""
    kw = {"num_gpus": 8, "batch_size": 1, "seq_len": 1024, "global_batch_size": 8}
    zero0 = train(parallel={"dp": 8}, **kw)
    zero3 = train(parallel={"dp": 8, "zero_stage": 3}, **kw)
    assert zero3.get("communication.dp.bytes_per_step") == pytest.approx(
        1.5 * zero0.get("communication.dp.bytes_per_step")
    )
    # 8.03B bf16 gradients in a ring: 2 (n-1)/n x 16 GB per GPU
    assert zero0.get("communication.dp.bytes_per_step") == pytest.approx(2 * 7 / 8 * 8.03e9 * 2, rel=0.01)
    single = train(batch_size=1, seq_len=1024)
    assert single.get("communication.dp.time_s") == 0


def test_dp_overlap_hides_gradient_traffic() -> None:
    kw = {"num_gpus": 16, "batch_size": 1, "seq_len": 1024, "global_batch_size": 16, "parallel": {"dp": 16}}
    hidden = train(**kw)
    exposed = train(assumptions={"perf.dp_comm_overlap": 0.0}, **kw)
    assert exposed.get("performance.comm_exposed_s") > hidden.get("performance.comm_exposed_s")
    assert exposed.get("performance.step_time_s") > hidden.get("performance.step_time_s")


def test_underfilled_pipeline_warns() -> None:
    est = train(num_gpus=8, batch_size=1, seq_len=512, global_batch_size=2, parallel={"pp": 8, "dp": 1})
    assert "pipeline-underfilled" in [w.code for w in est.warnings]


def test_idle_gpus_warn() -> None:
    est = train(num_gpus=8, batch_size=1, seq_len=512)
    assert "idle-gpus" in [w.code for w in est.warnings]


def test_contract_keys_for_training() -> None:
    est = train(batch_size=1, seq_len=512)
    for key, (_unit, applies, _what) in PERFORMANCE.items():
        assert key in est, key
        if applies == "inference":
            assert est.get(key) is None, key
    for key in (
        "performance.step_time_s",
        "performance.mfu",
        "performance.tokens_per_s",
        "performance.bound",
    ):
        assert est.get(key) is not None
    assert est.get("performance.ttft_s") is None


def test_lora_exchanges_only_adapter_gradients() -> None:
    kw = {
        "workload": "finetune",
        "num_gpus": 4,
        "batch_size": 1,
        "seq_len": 512,
        "global_batch_size": 4,
        "parallel": {"dp": 4},
    }
    full = train(**kw)
    lora = train(method="lora", lora_rank=16, **kw)
    assert lora.get("communication.dp.bytes_per_step") < full.get("communication.dp.bytes_per_step") / 100


def test_communication_bound_step_warns_with_a_fix() -> None:
    """One 1,024-token micro-batch per GPU and a whole 8B gradient exchange over 64 GPUs each step:
    the exchange, not the math, sets the step time; more tokens per step amortize it."""
    kw = {"num_gpus": 64, "seq_len": 1024, "parallel": {"dp": 64, "zero_stage": 1}}
    thin = train(batch_size=1, **kw)
    warning = next(w for w in thin.warnings if w.code == "communication-bound")
    assert thin.get("performance.comm_exposed_s") >= 0.5 * thin.get("performance.step_time_s")
    assert "of each step" in warning.message and "--global-batch" in warning.fix
    accumulated = train(batch_size=1, global_batch_size=64 * 32, **kw)  # 32 micro-batches per exchange
    assert accumulated.get("performance.mfu") > 2 * thin.get("performance.mfu")
    assert "communication-bound" not in [w.code for w in accumulated.warnings]
