"""Simulated serving percentiles (performance.sim.*) against the closed-form serving model and queueing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.api import estimate
from workbench_performance.keys import SIMULATED

BASE = dict(model="llama-3.1-8b", gpu="h100-sxm", batch_size=32)


def sim(**serving: object) -> object:
    return estimate(**BASE, serving=serving)


def test_a_scenario_without_load_or_targets_is_not_simulated() -> None:
    est = estimate(**BASE)
    for key in SIMULATED:
        assert est.get(key) is None
        assert "--arrival-rate" in est.values[key].note


def test_ttft_tail_grows_with_the_arrival_rate() -> None:
    p99 = [sim(arrival_rate=rate, requests=600).get("performance.sim.ttft_p99_s") for rate in (1, 3, 5, 6, 7, 8)]
    assert p99 == sorted(p99)
    assert p99[-1] > 10 * p99[0]  # past capacity (about 7.9 requests/s here) the queue builds up


def test_percentiles_are_ordered_and_rates_hold_at_light_load() -> None:
    est = sim(arrival_rate=2.0, slo_ttft_s=10.0)
    for metric in ("ttft", "tpot", "e2e"):
        values = [est.get(f"performance.sim.{metric}_p{q}_s") for q in (50, 90, 99)]
        assert 0 < values[0] <= values[1] <= values[2]
    # Below capacity every arrival is served: completions per second match the offered load.
    assert est.get("performance.sim.requests_per_s") == pytest.approx(2.0, rel=0.1)
    assert est.get("performance.sim.goodput_fraction") == 1.0
    formula = est.values["performance.sim.ttft_p99_s"].formula
    assert formula.startswith("simulated: 1,000 requests") and "Poisson" in formula and "seed 0" in formula


def test_goodput_counts_only_requests_within_the_targets() -> None:
    loose = sim(arrival_rate=7.0, slo_ttft_s=100.0)
    tight = sim(arrival_rate=7.0, slo_ttft_s=loose.get("performance.sim.ttft_p50_s"))
    assert loose.get("performance.sim.goodput_fraction") == 1.0
    assert tight.get("performance.sim.goodput_fraction") == pytest.approx(0.5, abs=0.05)
    assert tight.get("performance.sim.goodput_requests_per_s") == pytest.approx(
        tight.get("performance.sim.requests_per_s") * tight.get("performance.sim.goodput_fraction")
    )


@pytest.mark.parametrize("batching", ["continuous", "static"])
@pytest.mark.parametrize("batch", [1, 8, 32])
def test_offline_throughput_matches_the_closed_form_steady_state(tmp_path: Path, batching: str, batch: int) -> None:
    """MLPerf Offline: every request there at t = 0, the engine full all along."""
    trace = tmp_path / "offline.jsonl"
    line = json.dumps({"prompt_tokens": 2048, "output_tokens": 256, "arrival_s": 0.0})
    trace.write_text((line + "\n") * 400)
    est = estimate(**{**BASE, "batch_size": batch}, serving={"batching": batching, "trace": str(trace)})
    closed_form = est.get("performance.tokens_per_s")
    assert est.get("performance.sim.output_tokens_per_s") == pytest.approx(closed_form, rel=0.05)


def test_a_request_alone_takes_the_closed_form_latencies() -> None:
    """At a trickle every request runs alone: TTFT is one prefill, TPOT one batch-1 decode step."""
    est = estimate(**{**BASE, "batch_size": 1}, serving={"arrival_rate": 0.01, "requests": 50})
    assert est.get("performance.sim.ttft_p50_s") == pytest.approx(est.get("performance.prefill_s"), rel=0.01)
    assert est.get("performance.sim.tpot_p50_s") == pytest.approx(est.get("performance.tpot_s"), rel=0.05)


def test_replicas_share_the_load_and_add_their_throughput() -> None:
    one = estimate(**BASE, serving={"arrival_rate": 4.0})
    two = estimate(**{**BASE, "num_gpus": 2, "parallel": {"dp": 2}}, serving={"arrival_rate": 8.0})
    assert two.get("performance.sim.requests_per_s") == pytest.approx(2 * one.get("performance.sim.requests_per_s"), rel=0.1)
    assert two.get("performance.sim.ttft_p50_s") == pytest.approx(one.get("performance.sim.ttft_p50_s"), rel=0.2)


def test_what_the_simulator_does_not_model_is_said() -> None:
    est = estimate(**BASE, serving={"arrival_rate": 4.0, "disaggregated": True})
    assert est.get("performance.sim.ttft_p99_s") is None
    assert "disaggregated" in est.values["performance.sim.ttft_p99_s"].note
    full = estimate(**{**BASE, "batch_size": 256}, serving={"arrival_rate": 4.0})  # no KV room for one request
    assert "no room for one request" in full.values["performance.sim.ttft_p99_s"].note


def test_a_run_for_other_keys_skips_the_simulation_and_one_for_a_key_reads_as_the_full_estimate() -> None:
    from workbench.api import engine, make_scenario, resolve

    loaded = resolve(make_scenario(**BASE, serving={"arrival_rate": 4.0}))
    assert "performance.sim.ttft_p99_s" not in engine().run(loaded, wanted=("performance.ttft_s",)).values
    key = "performance.sim.ttft_p99_s"
    assert engine().run(loaded, wanted=(key,)).get(key) == engine().run(loaded).get(key) > 0
    bare = resolve(make_scenario(**BASE))
    assert engine().run(bare, wanted=(key,)).values[key].note == engine().run(bare).values[key].note


def test_one_token_requests_have_no_tpot_and_raise_no_numpy_warning() -> None:
    """Requests of one output token have no time per output token: the TPOT keys are empty with
    the reason, and numpy's all-NaN warnings never reach the user (the CLI prints warnings)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = estimate(model="llama-3.1-8b", gpu="h100-sxm", gen_len=1, serving={"arrival_rate": 1.0})
    assert est.get("performance.sim.tpot_p50_s") is None and est.get("performance.sim.tpot_mean_s") is None
    assert est.get("performance.sim.ttft_p50_s") > 0
