"""The iteration-level serving simulator against closed forms, queueing laws and its own invariants."""

from __future__ import annotations

import numpy as np
import pytest

from workbench_performance.simulator import Policy, StepModel, Workload, arrivals, simulate

# Seconds: 5 ms per iteration, 50 us per prefill token, 200 us per decode sequence, 10 ns per
# context token read by a decode, 0.1 ns per causal attention pair of a prefill.
O, A, B, D, E = 5e-3, 5e-5, 2e-4, 1e-8, 1e-10
STEP = StepModel(overhead_s=O, prefill_token_s=A, decode_seq_s=B, context_token_s=D, prefill_pair_s=E)


def prefill_time(tokens: int, before: int = 0, n: int = 1) -> float:
    """One iteration prefilling n chunks of `tokens` tokens, each on `before` cached tokens."""
    pairs = n * (tokens * before + tokens * (tokens + 1) // 2)
    return O + A * (n * tokens) + E * pairs


def same(x: np.ndarray, y: np.ndarray) -> bool:
    return np.array_equal(x, y, equal_nan=True)


def test_static_batch_of_identical_requests_matches_the_closed_form() -> None:
    n, p, out = 8, 300, 40
    res = simulate(STEP, Policy("static", max_batch=n, token_budget=10**6), arrivals.offline([p] * n, [out] * n))
    ttft = prefill_time(p, n=n)
    # Decode step j (1..out-1) reads p + j context tokens per sequence; TPOT is their mean.
    tpot = O + B * n + D * n * (p + out / 2)
    assert res.ttft_s == pytest.approx(np.full((1, n), ttft), rel=1e-12)
    assert res.tpot_s == pytest.approx(np.full((1, n), tpot), rel=1e-12)
    assert res.iterations[0] == out  # one prefill, out - 1 decodes
    # A second batch waits for the first to finish entirely.
    res2 = simulate(STEP, Policy("static", max_batch=n), arrivals.offline([p] * 2 * n, [out] * 2 * n))
    assert res2.first_token_s[0, n:] == pytest.approx(res2.finish_s[0, :n].max() + ttft, rel=1e-12)


@pytest.mark.parametrize("batching, chunk", [("continuous", None), ("chunked", 256), ("static", None)])
def test_a_single_request_alone(batching: str, chunk: int | None) -> None:
    p, out, at = 1000, 50, 3.25
    res = simulate(STEP, Policy(batching, prefill_chunk=chunk), arrivals.trace([at], [p], [out]))
    if chunk:
        sizes = [256, 256, 256, 232]
        ttft = sum(prefill_time(q, before=256 * i) for i, q in enumerate(sizes))
    else:
        ttft = prefill_time(p)
    assert res.ttft_s[0, 0] == pytest.approx(ttft, rel=1e-12)
    assert res.tpot_s[0, 0] == pytest.approx(O + B + D * (p + out / 2), rel=1e-12)
    assert res.finish_s[0, 0] == pytest.approx(at + ttft + (out - 1) * res.tpot_s[0, 0], rel=1e-12)


def test_prefix_cache_hits_shorten_the_prefill_only() -> None:
    res = simulate(STEP, Policy("continuous", prefix_hit=0.75), arrivals.trace([0.0], [1000], [20]))
    # 750 tokens come from the cache; the 250 computed attend to them.
    assert res.ttft_s[0, 0] == pytest.approx(prefill_time(250, before=750), rel=1e-12)
    assert res.tpot_s[0, 0] == pytest.approx(O + B + D * (1000 + 10), rel=1e-12)


def poisson_run(rate: float, n: int, seed: int = 1, policy: Policy | None = None):
    rng = np.random.default_rng(seed)
    prompt = arrivals.lengths(rng, n, 400, 0.8, high=2000)
    output = arrivals.lengths(rng, n, 120, 0.8, high=600)
    load = arrivals.poisson(rng, rate, prompt, output)
    return simulate(STEP, policy or Policy("chunked", max_batch=64, token_budget=2048), load)


def test_littles_law_holds_on_a_long_poisson_run() -> None:
    res = poisson_run(rate=6.0, n=4000)
    s = res.summary()
    # mean_concurrency is integrated by the loop from its queue and slots; the right side comes
    # from per-request timestamps. A request lost or double counted breaks the equality.
    assert s["mean_concurrency"][0] == pytest.approx(s["requests_per_s"][0] * s["e2e_mean_s"][0], rel=1e-6)
    assert 1.0 < s["mean_concurrency"][0] < 64
    # The law in steady state, on a middle window (not an identity there): the time average of
    # requests in the system equals the arrival rate times the mean time in the system.
    arr, fin = res.arrival_s[0], res.finish_s[0]
    t0, t1 = arr[500], arr[3500]
    inside = np.clip(np.minimum(fin, t1) - np.maximum(arr, t0), 0, None).sum() / (t1 - t0)
    window = (arr >= t0) & (arr < t1)
    assert inside == pytest.approx(window.sum() / (t1 - t0) * (fin - arr)[window].mean(), rel=0.03)


def test_low_load_ttft_is_the_prefill_time_and_overload_queues() -> None:
    n, p, out = 300, 500, 64
    rng = np.random.default_rng(3)
    policy = Policy("continuous", max_batch=32, token_budget=4096)
    quiet = simulate(STEP, policy, arrivals.poisson(rng, 0.05, [p] * n, [out] * n))
    # Requests 20 s apart on average, each done in ~0.1 s: almost always alone.
    assert np.median(quiet.ttft_s) == pytest.approx(prefill_time(p), rel=1e-9)
    assert quiet.ttft_s.max() < 3 * prefill_time(p)
    # About 32 sequences per ~17 ms decode step serve ~25 requests/s: 200/s is far beyond it.
    busy = simulate(STEP, policy, arrivals.poisson(rng, 200.0, [p] * n, [out] * n)).ttft_s[0]
    # The queue grows through the run: late requests wait far longer than early ones.
    assert busy[-50:].mean() > 5 * busy[:50].mean()
    assert busy[-50:].mean() > 100 * prefill_time(p)


def test_chunked_prefill_bounds_decode_stalls() -> None:
    # Eight short requests decode while a 16k-token prompt arrives.
    short, long_p = 8, 16000
    arrival = [0.0] * short + [0.2]
    prompt = [32] * short + [long_p]
    output = [400] * short + [2]
    step = StepModel(overhead_s=O, prefill_token_s=A, decode_seq_s=B, context_token_s=D)
    whole = simulate(step, Policy("continuous", max_batch=16, token_budget=32768), arrivals.trace(arrival, prompt, output))
    chunked = simulate(step, Policy("chunked", max_batch=16, token_budget=512), arrivals.trace(arrival, prompt, output))
    # A chunk size above the budget is still cut to the budget left after the decodes.
    wide = simulate(step, Policy("chunked", max_batch=16, token_budget=512, prefill_chunk=4096),
                    arrivals.trace(arrival, prompt, output))
    # Unchunked, the decodes wait for the whole prompt's prefill iteration.
    assert whole.max_gap_s[0, :short].max() >= O + A * long_p
    # Chunked, no iteration holds more than the budget: 512 tokens, 9 sequences, their context.
    bound = O + A * 512 + B * 9 + D * 9 * (long_p + 432)
    assert chunked.max_gap_s[0, :short].max() <= bound
    assert wide.max_gap_s[0, :short].max() <= bound
    assert chunked.max_gap_s[0, :short].max() < whole.max_gap_s[0, :short].max() / 5
    assert np.percentile(chunked.tpot_s[0, :short], 99) < np.percentile(whole.tpot_s[0, :short], 99)


@pytest.mark.parametrize("batching", ["continuous", "chunked"])
def test_preemption_only_when_kv_runs_out_and_every_request_completes(batching: str) -> None:
    n, p, out, block = 40, 100, 300, 16
    load = arrivals.offline([p] * n, [out] * n)
    peak = -(-(p + out - 1) // block)
    roomy = simulate(STEP, Policy(batching, max_batch=n, block_size=block, kv_blocks=peak * n), load)
    assert roomy.preemptions.sum() == 0
    tight = simulate(STEP, Policy(batching, max_batch=n, block_size=block, kv_blocks=peak * n // 3), load)
    assert tight.preemptions.sum() > 0
    assert np.isfinite(tight.finish_s).all() and np.isfinite(tight.first_token_s).all()
    assert (tight.finish_s > tight.first_token_s).all()
    # Recomputation costs time: the same work takes longer with less KV.
    assert tight.finish_s.max() > roomy.finish_s.max()
    # The oldest request is never the victim, so it sees no preemption.
    assert tight.preemptions[0, 0] == 0
    # Admission by free blocks alone, without preemption: static reserves whole outputs.
    # A quarter of the KV holds 10 whole requests: four batches of ten.
    static = simulate(STEP, Policy("static", max_batch=n, block_size=block, kv_blocks=peak * n // 4), load)
    assert static.preemptions.sum() == 0
    _, per_batch = np.unique(static.first_token_s[0], return_counts=True)
    assert per_batch.tolist() == [10, 10, 10, 10]


def test_closed_loop_keeps_the_number_of_users_in_the_system() -> None:
    n, p, out = 30, 200, 20
    one = simulate(STEP, Policy("continuous"), arrivals.closed_loop(1, [p] * n, [out] * n))
    # One user: each request is sent when the previous one finishes, and runs alone.
    assert same(one.arrival_s[0, 1:], one.finish_s[0, :-1])
    assert one.ttft_s[0] == pytest.approx(np.full(n, prefill_time(p)), rel=1e-12)
    assert one.summary()["mean_concurrency"][0] == pytest.approx(1.0, rel=1e-9)
    # Four users: four in the system until the last three requests drain.
    n = 400
    four = simulate(STEP, Policy("continuous"), arrivals.closed_loop(4, [p] * n, [out] * n)).summary()
    assert four["mean_concurrency"][0] == pytest.approx(4.0, rel=0.05)
    assert four["mean_concurrency"][0] <= 4.0 + 1e-9


def test_offline_throughput_and_goodput() -> None:
    n, p, out = 64, 128, 32
    res = simulate(STEP, Policy("continuous", max_batch=16), arrivals.offline([p] * n, [out] * n))
    s = res.summary()
    assert s["output_tokens_per_s"][0] == pytest.approx(n * out / res.finish_s.max(), rel=1e-12)
    assert s["requests_per_s"][0] == pytest.approx(n / res.finish_s.max(), rel=1e-12)
    assert s["simulated_s"][0] == res.finish_s.max()
    assert s["goodput_fraction"][0] == 1.0
    # Half the requests wait behind the first batches: a TTFT target at the median splits them.
    target = float(np.median(res.ttft_s))
    cut = res.summary(slo_ttft_s=target)
    assert cut["goodput_fraction"][0] == pytest.approx((res.ttft_s <= target).mean())
    assert 0 < cut["goodput_fraction"][0] < 1
    assert res.summary(slo_tpot_s=1e-9)["goodput_fraction"][0] == 0.0
    assert s["ttft_p50_s"][0] <= s["ttft_p90_s"][0] <= s["ttft_p99_s"][0]


def test_configurations_together_equal_each_alone() -> None:
    rng = np.random.default_rng(11)
    c, n = 7, 300
    prompt = arrivals.lengths(rng, n, 300, 1.0, high=1500)
    output = arrivals.lengths(rng, n, 80, 1.0, high=400)
    rates = rng.uniform(2, 30, c)
    load = arrivals.poisson(rng, rates, prompt, output)
    step = StepModel(
        overhead_s=rng.uniform(2e-3, 8e-3, c),
        prefill_token_s=rng.uniform(2e-5, 8e-5, c),
        decode_seq_s=rng.uniform(1e-4, 4e-4, c),
        context_token_s=rng.uniform(0, 2e-8, c),
        prefill_pair_s=1e-10,
    )
    policy = Policy(
        batching=["static", "continuous", "chunked", "chunked", "continuous", "static", "chunked"],
        max_batch=[8, 16, 32, 64, 48, 24, 16],
        token_budget=[4096, 2048, 512, 1024, 8192, 4096, 256],
        prefill_chunk=[512, 512, 128, 1024, 512, 512, 64],
        block_size=[16, 16, 32, 16, 8, 16, 16],
        kv_blocks=[400, 300, 200, 5000, 250, 500, 150],
        prefix_hit=[0.0, 0.2, 0.0, 0.5, 0.0, 0.1, 0.3],
    )
    together = simulate(step, policy, load)
    assert together.preemptions.sum() > 0  # the comparison covers preemption too
    fields = ("arrival_s", "first_token_s", "finish_s", "max_gap_s", "preemptions", "iterations", "time_in_system_s")
    for i in range(c):
        pick = {f: (getattr(step, f) if np.ndim(getattr(step, f)) == 0 else getattr(step, f)[i:i + 1])
                for f in ("overhead_s", "prefill_token_s", "decode_seq_s", "context_token_s", "prefill_pair_s")}
        alone = simulate(
            StepModel(**pick),
            Policy(**{f: np.asarray(getattr(policy, f))[i:i + 1] for f in
                      ("batching", "max_batch", "token_budget", "prefill_chunk", "block_size", "kv_blocks", "prefix_hit")}),
            Workload(prompt, output, arrival_s=load.arrival_s[i]),
        )
        for f in fields:
            assert same(getattr(alone, f)[0], getattr(together, f)[i]), (i, f)


def test_seeded_runs_reproduce() -> None:
    a = poisson_run(rate=5.0, n=500, seed=7)
    b = poisson_run(rate=5.0, n=500, seed=7)
    c = poisson_run(rate=5.0, n=500, seed=8)
    assert same(a.finish_s, b.finish_s) and same(a.first_token_s, b.first_token_s)
    assert not same(a.finish_s, c.finish_s)


def test_gamma_arrivals_have_the_rate_and_cv_asked_for() -> None:
    rng = np.random.default_rng(5)
    load = arrivals.gamma(rng, 4.0, 2.5, np.ones(40000, dtype=int), np.ones(40000, dtype=int))
    gaps = np.diff(np.concatenate([[0.0], load.arrival_s]))
    assert gaps.mean() == pytest.approx(0.25, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(2.5, rel=0.08)
    per_config = arrivals.poisson(np.random.default_rng(1), [1.0, 4.0], [1, 1, 1], [1, 1, 1]).arrival_s
    assert per_config.shape == (2, 3) and per_config[0] == pytest.approx(4 * per_config[1])


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: arrivals.poisson(np.random.default_rng(0), -1.0, [1], [1]), "arrival rate must be > 0"),
        (lambda: arrivals.gamma(np.random.default_rng(0), 1.0, 0.0, [1], [1]), "coefficient of variation"),
        (lambda: simulate(STEP, Policy(), arrivals.offline([], [])), "at least one request"),
        (lambda: simulate(STEP, Policy(), arrivals.offline([0], [1])), "prompt_tokens must be >= 1"),
        (lambda: simulate(STEP, Policy(), arrivals.trace([2.0, 1.0], [1, 1], [1, 1])), "non-decreasing"),
        (lambda: simulate(STEP, Policy("dynamic"), arrivals.offline([1], [1])), "batching must be one of"),
        (lambda: simulate(STEP, Policy(max_batch=0), arrivals.offline([1], [1])), "max_batch must be >= 1"),
        (lambda: simulate(STEP, Policy("chunked", max_batch=64, token_budget=32), arrivals.offline([1], [1])),
         "token_budget must be >= max_batch"),
        (lambda: simulate(STEP, Policy(kv_blocks=4, block_size=16), arrivals.offline([100], [1])), "needs 7 KV blocks"),
        (lambda: simulate(StepModel(overhead_s=0.0), Policy(), arrivals.offline([1], [1])), "overhead_s must be > 0"),
        (lambda: simulate(StepModel(overhead_s=1.0, decode_seq_s=-1.0), Policy(), arrivals.offline([1], [1])),
         "decode_seq_s must be >= 0"),
        (lambda: simulate(STEP, Policy(prefix_hit=1.0), arrivals.offline([1], [1])), "prefix_hit"),
        (lambda: simulate(STEP, Policy(max_batch=[1, 2, 3]), Workload([[1], [1]], [1], arrival_s=[0.0])),
         "disagree on the number of configurations"),
        (lambda: simulate(STEP, Policy(), Workload([1], [1])), "either arrival times"),
        (lambda: simulate(STEP, Policy(), arrivals.closed_loop(0, [1], [1])), "users must be >= 1"),
        (lambda: poisson_run(1.0, 10).summary(slo_ttft_s=-1.0), "SLO targets must be > 0"),
    ],
)
def test_bad_inputs_are_refused_with_a_clear_message(make, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_token_budget_and_max_batch_bound_each_iteration() -> None:
    n, p, out = 12, 1000, 30
    res = simulate(STEP, Policy("continuous", max_batch=6, token_budget=4096), arrivals.offline([p] * n, [out] * n))
    # The first iteration prefills four whole prompts (4,000 of 4,096 tokens), the next two more.
    assert res.first_token_s[0, :4] == pytest.approx(np.full(4, prefill_time(p, n=4)), rel=1e-12)
    assert res.first_token_s[0, 4:6] == pytest.approx(np.full(2, prefill_time(p, n=4) + prefill_time(p, n=2)))
    # Never more than six requests between admission and completion.
    starts = res.first_token_s[0]
    running = ((starts[None, :] <= starts[:, None]) & (res.finish_s[0][None, :] > starts[:, None])).sum(1)
    assert running.max() == 6
    # A prompt longer than the budget still runs when it is alone.
    big = simulate(STEP, Policy("continuous", token_budget=512), arrivals.offline([3000], [5]))
    assert big.ttft_s[0, 0] == pytest.approx(prefill_time(3000), rel=1e-12)


def test_per_configuration_traces() -> None:
    # Two configurations, each with its own trace (C x R arrays).
    arrival = np.array([[0.0, 0.0, 1.0], [0.0, 2.0, 2.0]])
    prompt = np.array([[100, 200, 300], [300, 200, 100]])
    output = np.array([[10, 1, 5], [5, 1, 10]])
    res = simulate(STEP, Policy("chunked", prefill_chunk=128), arrivals.trace(arrival, prompt, output))
    for i in range(2):
        alone = simulate(STEP, Policy("chunked", prefill_chunk=128), arrivals.trace(arrival[i], prompt[i], output[i]))
        assert same(alone.finish_s[0], res.finish_s[i])
    assert np.isnan(res.tpot_s[:, 1]).all()  # one output token: no TPOT
    assert np.isfinite(res.summary()["tpot_p99_s"]).all()
