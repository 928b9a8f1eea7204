"""Compare under a serving load: simulated tail columns per row, TTFT/TPOT targets judged on the
simulated p99; without a load, rows read exactly as before."""

from __future__ import annotations

import json
import math

import pytest

from workbench.api import engine, make_scenario
from workbench.catalog.resolve import resolve_scenario
from workbench.engine.compare import METRICS, SIM_METRICS, Candidate, Targets, compare, has_load

SIM_IDS = {m.id for m in SIM_METRICS}
# Long prompts prefilled in chunks between decode steps: each decode step carries a chunk, so the
# simulated TPOT sits above the closed-form mean at this load.
LOADED = dict(
    name="rag", model="llama-3.1-8b", gpu="h100-sxm", batch_size=16, seq_len=8192, gen_len=128,
    serving={"batching": "chunked", "arrival_rate": 4, "requests": 200},
)


@pytest.fixture(scope="module")
def eng():  # type: ignore[no-untyped-def]
    return engine()


@pytest.fixture(scope="module")
def loaded():  # type: ignore[no-untyped-def]
    return make_scenario(**LOADED)


def _row(eng, scenario, targets=None):  # type: ignore[no-untyped-def]
    return compare(eng, [scenario], [Candidate("h100-sxm")], resolve_scenario, targets).rows()[0]


def test_rows_with_a_load_carry_the_simulated_tail(eng, loaded) -> None:  # type: ignore[no-untyped-def]
    row = _row(eng, loaded)
    assert row.values.keys() == {m.id for m in METRICS} | SIM_IDS
    v = row.values
    assert 0 < v["sim_ttft_p50_s"] <= v["sim_ttft_p99_s"]
    assert 0 < v["sim_tpot_p50_s"] <= v["sim_tpot_p99_s"]
    # The values are the estimate's own simulated keys: read, not re-simulated.
    assert v["sim_ttft_p99_s"] == row.estimate.get("performance.sim.ttft_p99_s")
    assert v["sim_goodput_rps"] == row.estimate.get("performance.sim.goodput_requests_per_s")
    assert 0 <= v["sim_goodput_fraction"] <= 1


def test_without_a_load_the_row_is_unchanged(eng) -> None:  # type: ignore[no-untyped-def]
    plain = make_scenario(name="chat", model="llama-3.1-8b", gpu="h100-sxm", batch_size=16)
    assert not has_load(plain)
    row = _row(eng, plain, Targets(max_tpot_s=1e-4))
    assert row.values.keys() == {m.id for m in METRICS}
    assert row.failures[0].startswith("TPOT ") and "p99" not in row.failures[0]
    doc = compare(eng, [plain], [Candidate("h100-sxm")], resolve_scenario).as_dict()
    assert [m["id"] for m in doc["metrics"]] == [m.id for m in METRICS]


def test_tpot_target_met_in_closed_form_is_missed_at_p99_under_load(eng, loaded) -> None:  # type: ignore[no-untyped-def]
    free = _row(eng, loaded)
    closed, tail = free.values["tpot_s"], free.values["sim_tpot_p99_s"]
    assert closed < tail, (closed, tail)  # the case this test is about
    target = (closed + tail) / 2
    row = _row(eng, loaded, Targets(max_tpot_s=target))
    assert not row.meets_targets
    (reason,) = row.failures
    assert reason.startswith("p99 TPOT ") and "under 4 req/s exceeds" in reason, reason
    # The same target on the same scenario without its load passes on the closed-form TPOT.
    still = loaded.model_copy(update={"serving": loaded.serving.model_copy(update={"arrival_rate": None})})
    assert _row(eng, still, Targets(max_tpot_s=target)).meets_targets


def test_ttft_target_is_judged_on_the_p99_and_met_when_it_holds(eng, loaded) -> None:  # type: ignore[no-untyped-def]
    free = _row(eng, loaded)
    p99 = free.values["sim_ttft_p99_s"]
    assert free.values["ttft_s"] < p99
    assert _row(eng, loaded, Targets(max_ttft_s=p99 * 1.01)).meets_targets
    (reason,) = _row(eng, loaded, Targets(max_ttft_s=p99 * 0.99)).failures
    assert reason.startswith("p99 TTFT ") and "under 4 req/s" in reason


def test_targets_become_the_goodput_slo_unless_the_scenario_sets_one(eng, loaded) -> None:  # type: ignore[no-untyped-def]
    free = _row(eng, loaded)
    assert free.values["sim_goodput_fraction"] == 1.0  # no target: every request counts
    tight = Targets(max_ttft_s=free.values["sim_ttft_p50_s"])
    row = _row(eng, loaded, tight)
    assert 0.3 < row.values["sim_goodput_fraction"] < 0.7  # about half the requests beat the median
    own = loaded.model_copy(update={"serving": loaded.serving.model_copy(update={"slo_ttft_s": 1000.0})})
    assert _row(eng, own, tight).values["sim_goodput_fraction"] == 1.0  # the scenario's SLO wins


def test_json_of_a_loaded_comparison_holds_no_nan(eng, loaded) -> None:  # type: ignore[no-untyped-def]
    # One output token: no TPOT to simulate (the estimate's key is null), never NaN in a row.
    single = loaded.model_copy(update={"gen_len": 1, "name": "one-token"})
    result = compare(eng, [loaded, single], [Candidate("h100-sxm"), Candidate("l40s")], resolve_scenario,
                     Targets(max_tpot_s=0.05))
    text = json.dumps(result.as_dict(), allow_nan=False)  # raises on NaN or infinity
    doc = json.loads(text)
    assert {m["id"] for m in doc["metrics"]} >= SIM_IDS
    for sc in doc["scenarios"]:
        for r in sc["results"]:
            for value in r["values"].values():
                assert not (isinstance(value, float) and not math.isfinite(value))
    one = next(r for r in result.rows() if r.scenario == "one-token")
    assert one.values["sim_tpot_p99_s"] is None and one.values["sim_ttft_p99_s"] is not None


def test_one_simulation_per_candidate(eng, loaded, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import workbench_performance.serving_simulation as simulation

    runs = []
    real = simulation._run
    monkeypatch.setattr(simulation, "_run", lambda *a, **k: runs.append(1) or real(*a, **k))
    # 70B grows to 2-8 GPUs per candidate (sizing runs many layouts); 211 requests: no cached run.
    big = loaded.model_copy(update={"model": "llama-3.1-70b", "serving": loaded.serving.model_copy(update={"requests": 211})})
    candidates = [Candidate("h100-sxm"), Candidate("mi300x"), Candidate("l40s")]
    result = compare(eng, [big], candidates, resolve_scenario, Targets(max_tpot_s=0.04))
    assert all(r.values["sim_tpot_p99_s"] is not None for r in result.rows())
    assert len(runs) == len(candidates)
