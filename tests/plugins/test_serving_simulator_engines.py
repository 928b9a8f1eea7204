"""The simulator's two engines agree to the bit: plain Python per configuration (which keeps
decode-only passes in aggregate form and leaps over them) and numpy over all configurations."""

from __future__ import annotations

import numpy as np

from workbench_performance.simulator import Policy, StepModel, arrivals
from workbench_performance.simulator.inputs import Prepared, one, prepare
from workbench_performance.simulator.loop import run, run_arrays
from workbench_performance.simulator.single import run_one

FIELDS = ("arrival_s", "first_token_s", "finish_s", "max_gap_s", "preemptions", "iterations", "time_in_system_s")


def random_case(seed: int) -> Prepared:
    """A random workload and policy: any batching, load shape, KV size (often tight), chunk, cache hit."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 150))
    prompt = arrivals.lengths(rng, n, rng.uniform(1, 600), rng.uniform(0, 2), high=2000)
    output = arrivals.lengths(rng, n, rng.uniform(1, 200), rng.uniform(0, 2), high=600)
    kind = seed % 4
    if kind == 0:
        load = arrivals.poisson(rng, rng.uniform(0.5, 60), prompt, output)
    elif kind == 1:
        load = arrivals.offline(prompt, output)
    elif kind == 2:
        load = arrivals.closed_loop(int(rng.integers(1, 40)), prompt, output)
    else:
        load = arrivals.gamma(rng, rng.uniform(0.5, 60), rng.uniform(0.3, 4), prompt, output)
    block = int(rng.choice([1, 4, 16, 32]))
    peak = int((-(-(prompt + output - 1) // block)).max())
    max_batch = int(rng.integers(1, 80))
    policy = Policy(
        ("static", "continuous", "chunked")[seed // 4 % 3],
        max_batch=max_batch,
        token_budget=int(rng.integers(max_batch, 5000)),
        prefill_chunk=None if rng.random() < 0.5 else int(rng.integers(1, 1000)),
        block_size=block,
        kv_blocks=None if rng.random() < 0.2 else int(peak * rng.uniform(1, 4)),
        prefix_hit=0.0 if rng.random() < 0.6 else float(rng.uniform(0, 0.9)),
    )
    step = StepModel(
        rng.uniform(1e-3, 1e-2), rng.uniform(0, 1e-4), rng.uniform(0, 5e-4), rng.uniform(0, 3e-8), rng.uniform(0, 1e-9)
    )
    return prepare(step, policy, load)


def assert_same(x, y, label) -> None:  # noqa: ANN001
    for f in FIELDS:
        assert np.array_equal(getattr(x, f), getattr(y, f), equal_nan=True), (label, f)


def test_plain_python_and_array_engines_agree_on_random_workloads() -> None:
    preempting = 0
    for seed in range(48):
        p = random_case(seed)
        arrays = run_arrays(p)
        assert_same(run_one(p), arrays, seed)
        preempting += int(arrays.preemptions.sum() > 0)
    assert preempting >= 8  # the comparison covers preemption and recomputation


def test_many_configurations_one_by_one_equal_the_array_engine() -> None:
    rng = np.random.default_rng(5)
    c, n = 6, 200
    prompt = arrivals.lengths(rng, n, 400, 1.0, high=3000)
    output = arrivals.lengths(rng, n, 100, 1.0, high=500)
    load = arrivals.poisson(rng, np.linspace(2, 40, c), prompt, output)
    policy = Policy(
        batching=["static", "continuous", "chunked"] * 2,
        max_batch=[8, 32, 64, 16, 48, 128],
        token_budget=[4096, 2048, 512, 1024, 8192, 4096],
        kv_blocks=[300, 250, 400, 5000, 260, 350],
        prefix_hit=[0.0, 0.2, 0.0, 0.5, 0.0, 0.1],
    )
    step = StepModel(overhead_s=5e-3, prefill_token_s=5e-5, decode_seq_s=2e-4, context_token_s=1e-8)
    p = prepare(step, policy, load)
    together = run_arrays(p)
    assert together.preemptions.sum() > 0
    assert_same(run(p), together, "run")
    for i in range(c):
        assert_same(run_one(one(p, i)), run_arrays(one(p, i)), i)
