"""The array path equals the single-estimate path exactly, point by point.

Random point groups (seeded, so a failure reproduces) across models of every kind the engine
models differently (dense, GQA, MLA, MoE, sliding window, encoder-decoder, encoder-only, hybrid
state-space, shared blocks, vision-language with images), accelerators, workloads, precisions and
layouts; in each group random batch sizes, prompt and generation lengths, from 1 to the far end
of the input limits. For every point, every key's value (type included), unit, label, rendered
formula, assumptions and note, every warning and every failure of ``Engine.run_points`` equal those
of ``Engine.run`` on that point alone; a run for a sweep's keys gives the same values too.
"""

from __future__ import annotations

import functools
import random
from typing import Any

import numpy as np
import pytest

from workbench.api import make_scenario, resolve
from workbench.core.limits import MAX_BATCH, MAX_TOKENS
from workbench.core.resolved import ResolvedScenario
from workbench.engine.pipeline import Engine
from workbench.engine.points import POINT_FIELDS, Varies
from workbench.engine.points_estimate import SplitEstimate

MODELS = (
    "llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b", "gpt2", "t5-base",
    "bert-base-uncased", "gemma-2-9b", "gpt-oss-20b", "nemotron-h-56b", "jamba-1.5-mini", "qwen3-next-80b-a3b",
    "qwen3-vl-8b", "kimi-linear-48b-a3b", "bamba-9b",
)  # fmt: skip
GPUS = ("h100-sxm", "a100-80gb-sxm", "l40s", "mi300x", "tpu-v5e", "m4-max", "b200", "rtx-4090")
BASES: tuple[dict[str, Any], ...] = (
    {},
    {"dtype": "fp8", "kv_dtype": "fp8", "parallel": {"tp": 4}},
    {"weights": "int4", "attention": "eager"},
    {"parallel": {"tp": 2, "pp": 2}},
    {"serving": {"chunked_prefill": True, "paged_kv": False}},
    {"images_per_request": 2},
    {"workload": "finetune", "method": "lora", "recompute": "full"},
    {"workload": "finetune", "method": "qlora", "attention": "sdpa"},
    {"workload": "finetune", "method": "full", "parallel": {"dp": 4, "zero_stage": 3}},
    {"workload": "pretrain", "recompute": "selective", "parallel": {"tp": 2, "pp": 4, "dp": 2, "zero_stage": 1}},
    {"workload": "pretrain", "attention": "eager", "parallel": {"pp": 2, "dp": 2, "sequence_parallel": False}},
    {"workload": "pretrain", "dtype": "fp8", "parallel": {"tp": 4, "dp": 4, "ep": 4, "zero_stage": 2}},
    # every serving policy of the speed model, which runs a point group as arrays
    {"serving": {"disaggregated": True}, "parallel": {"tp": 2, "dp": 2}},
    {"serving": {"speculative_draft_params": 1e9, "speculative_tokens": 3}},
    {"serving": {"batching": "static"}, "parallel": {"pp": 2}},
    {"serving": {"arrival_rate": 4.0, "requests": 200, "slo_ttft_s": 0.5}},
    # serving engines: TensorRT-LLM's free-memory rule over pipeline stages, defaults beside a knob set
    {"serving": {"engine": "tensorrt-llm"}, "parallel": {"pp": 2}},
    {"serving": {"engine": "vllm", "kv_block_size": 32}},
    {"serving": {"engine": "sglang", "arrival_rate": 2.0, "requests": 100}},
    {"parallel": {"tp": 2, "ep": 2, "dp": 1}, "dtype": "fp8"},
    # every feature of the training step model, which runs a point group as arrays: gradient
    # accumulation (a global batch large enough for MAX_BATCH, so that the largest micro-batches
    # underfill the pipeline and the rest do not), the interleaved schedule, offloads with a time to
    # train, the --mfu override with expert parallelism, and TP across nodes (communication-bound
    # at small micro-batches only)
    {"workload": "pretrain", "global_batch_size": 2**21,
     "parallel": {"pp": 4, "pipeline_schedule": "interleaved", "virtual_stages": 2}},
    {"workload": "finetune", "method": "full", "train_tokens": 1e9,
     "parallel": {"dp": 2, "zero_stage": 3, "offload_optimizer": "cpu", "offload_params": "nvme"}},
    {"workload": "pretrain", "mfu": 0.35, "global_batch_size": 2**22, "train_tokens": 2e12,
     "parallel": {"tp": 2, "dp": 4, "ep": 2, "zero_stage": 1}},
    {"workload": "pretrain", "recompute": "full", "parallel": {"tp": 16}},
)  # fmt: skip
GROUPS = 160
POINTS_PER_GROUP = 16


@functools.lru_cache(maxsize=1)
def _engine() -> Engine:
    from workbench.pluginhost import PluginHost

    return Engine(PluginHost(entry_point_group=None).registry.estimators)


def _length(rng: random.Random, training: bool) -> int:
    """Mostly everyday lengths, sometimes the limits' far end."""
    if rng.random() < 0.08:
        return rng.choice((MAX_TOKENS, MAX_TOKENS // 3, 1))
    return rng.choice((1, 7, 128, 512, 1000, 2048, 4096, 8191, 32768, 131072)) if not training else rng.choice(
        (16, 128, 1024, 2048, 4096, 8192, 16384)
    )


def _groups() -> list[tuple[dict[str, Any], dict[str, list[int]]]]:
    rng = random.Random(20261124)
    groups = []
    for _ in range(GROUPS):
        fields = {"model": rng.choice(MODELS), "gpu": rng.choice(GPUS), **rng.choice(BASES)}
        par = fields.get("parallel", {})
        fields["num_gpus"] = par.get("tp", 1) * par.get("pp", 1) * par.get("dp", 1)
        training = fields.get("workload", "inference") != "inference"
        points: dict[str, list[int]] = {"batch_size": [], "seq_len": [], "gen_len": []}
        for _ in range(POINTS_PER_GROUP):
            big = rng.random() < 0.05
            points["batch_size"].append(MAX_BATCH if big else rng.choice((1, 2, 3, 8, 16, 64, 256)))
            points["seq_len"].append(_length(rng, training))
            points["gen_len"].append(rng.choice((0, 1, 64, 256, 4096)))
        groups.append((fields, points))
    return groups


def _point(resolved: ResolvedScenario, points: dict[str, list[int]], i: int) -> ResolvedScenario:
    scenario = resolved.scenario.model_copy(update={k: v[i] for k, v in points.items()})
    return ResolvedScenario(scenario, resolved.model, resolved.cluster)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and (a == b or (isinstance(a, float) and a != a and b != b))


def _describe(est: Any) -> dict[str, Any]:
    return {
        "keys": {
            k: (q.value, q.unit, q.label, q.formula, tuple(q.assumptions), q.note) for k, q in est.values.items()
        },
        "warnings": [(w.code, w.message, w.severity, w.fix) for w in est.warnings],
        "failures": [(f.estimator, f.message) for f in est.failures],
    }


@pytest.mark.parametrize("g", range(GROUPS))
def test_every_point_of_a_group_equals_its_single_estimate(g: int) -> None:
    fields, points = _groups()[g]
    resolved = resolve(make_scenario(**fields))
    engine = _engine()
    group = engine.run_points(resolved, points)
    assert len(group) == POINTS_PER_GROUP
    # a group whose array run failed is re-run point by point: equal, but not the array path
    assert not isinstance(group, SplitEstimate), f"{fields}: the group's array run failed: {group.failures}"
    for i in range(POINTS_PER_GROUP):
        alone = engine.run(_point(resolved, points, i))
        got, want = _describe(group.estimate(i)), _describe(alone)
        where = f"{fields} point {i}: " + ", ".join(f"{k}={v[i]}" for k, v in points.items())
        assert got["keys"].keys() == want["keys"].keys(), where
        for key, (value, *rest) in want["keys"].items():
            other, *other_rest = got["keys"][key]
            assert _same(other, value), f"{where}: {key} = {other!r}, alone {value!r}"
            assert other_rest == rest, f"{where}: the explanation of {key} differs"
        assert got["warnings"] == want["warnings"], where
        assert got["failures"] == want["failures"], where
        assert group.estimate(i).resolved.scenario == alone.resolved.scenario


SWEEP_KEYS = (
    "memory.per_gpu.total", "memory.fits", "kv_cache.bytes", "flops.forward", "roofline.bound",
    "performance.ttft_s", "performance.tpot_s", "cost.usd_per_million_tokens", "memory.min_gpus",
)  # fmt: skip


@pytest.mark.parametrize("g", range(0, GROUPS, 6))
def test_a_run_for_a_few_keys_gives_their_values(g: int) -> None:
    fields, points = _groups()[g]
    resolved = resolve(make_scenario(**fields))
    engine = _engine()
    rows = engine.run_points(resolved, points, SWEEP_KEYS).table(SWEEP_KEYS)
    for i, row in enumerate(rows):
        alone = engine.run(_point(resolved, points, i))
        for key, value in zip(SWEEP_KEYS, row):
            assert _same(value, alone.get(key)), f"{fields} point {i}: {key} = {value!r}, alone {alone.get(key)!r}"


def test_the_shared_scenario_refuses_a_point_field() -> None:
    """An array estimator that reads ``ctx.scenario.batch_size`` fails loudly, never uses one
    point's value for all."""
    placeholder = Varies("batch_size")
    with pytest.raises(TypeError, match="varies per point"):
        _ = placeholder * 2
    with pytest.raises(TypeError, match="varies per point"):
        int(placeholder)
    with pytest.raises(TypeError, match="varies per point"):
        _ = placeholder == 4
    assert set(POINT_FIELDS) == {"batch_size", "seq_len", "gen_len"}


def test_point_fields_are_checked() -> None:
    resolved = resolve(make_scenario(model="llama-3.1-8b", gpu="h100-sxm"))
    engine = _engine()
    with pytest.raises(ValueError, match="not a point field"):
        engine.run_points(resolved, {"num_gpus": [1, 2]})
    with pytest.raises(ValueError, match="one length"):
        engine.run_points(resolved, {"batch_size": [1, 2], "seq_len": [5]})
    one = engine.run_points(resolved, {"batch_size": np.array([4])})
    assert one.estimate(0).resolved.scenario.batch_size == 4


# --- groups that draw assumption values (a sensitivity swing, a Monte Carlo sample) ---------------

#: Assumptions the serving speed model takes as arrays, and others read by estimators that do not
#: (memory, cost): drawing one of those runs the group point by point.
SERVING_DRAWN = (
    "perf.kernel_efficiency_scale", "perf.bandwidth_efficiency_scale", "perf.step_overhead_s",
    "moe.load_imbalance", "comm.bandwidth_efficiency", "comm.latency_intra_node_s", "comm.latency_inter_node_s",
    "cost.idle_power_fraction", "cost.host_power_fraction",
)  # fmt: skip
NOT_ARRAYS = ("memory.fragmentation", "compute.decode_context_fraction")
DRAW_GROUPS = 24


def _draws(g: int) -> tuple[dict[str, Any], dict[str, list[int]], dict[str, list[float]], bool]:
    rng = random.Random(20261125 + g)
    serving = [b for b in BASES if "workload" not in b]
    fields = {"model": rng.choice(MODELS), "gpu": rng.choice(GPUS), **rng.choice(serving)}
    par = fields.get("parallel", {})
    fields["num_gpus"] = par.get("tp", 1) * par.get("pp", 1) * par.get("dp", 1)
    if g % 6 == 5:  # training reads them point by point
        fields = {**fields, "workload": "pretrain", "serving": {}}
    points = {"batch_size": [rng.choice((1, 4, 32, 128)) for _ in range(POINTS_PER_GROUP)]}
    ids = rng.sample(SERVING_DRAWN, rng.randint(1, 3))
    if g % 4 == 3:
        ids.append(rng.choice(NOT_ARRAYS))
    engine = _engine()
    draws = {}
    for ident in ids:
        a = engine.assumptions[ident]
        low, high = max(a.minimum, a.default * 0.5), min(a.maximum, a.default * 1.5 if a.default else 1e-4)
        draws[ident] = [rng.uniform(low, high) for _ in range(POINTS_PER_GROUP)]
    arrays = g % 6 != 5 and g % 4 != 3
    return fields, points, draws, arrays


@pytest.mark.parametrize("g", range(DRAW_GROUPS))
def test_a_group_of_drawn_assumptions_equals_single_estimates_with_those_overrides(g: int) -> None:
    fields, points, draws, arrays = _draws(g)
    resolved = resolve(make_scenario(**fields))
    engine = _engine()
    group = engine.run_points(resolved, points, None, draws)
    # arrays when every estimator that reads a drawn value takes arrays; point by point otherwise
    assert isinstance(group, SplitEstimate) is not arrays, f"{fields} {sorted(draws)}"
    for i in range(POINTS_PER_GROUP):
        overrides = {ident: values[i] for ident, values in draws.items()}
        scenario = resolved.scenario.model_copy(
            update={"batch_size": points["batch_size"][i], "assumptions": {**resolved.scenario.assumptions, **overrides}}
        )
        alone = engine.run(ResolvedScenario(scenario, resolved.model, resolved.cluster))
        got, want = _describe(group.estimate(i)), _describe(alone)
        where = f"{fields} point {i}: {overrides}"
        assert got["keys"].keys() == want["keys"].keys(), where
        for key, (value, *rest) in want["keys"].items():
            other, *other_rest = got["keys"][key]
            assert _same(other, value), f"{where}: {key} = {other!r}, alone {value!r}"
            assert other_rest == rest, f"{where}: the explanation of {key} differs"
        assert got["warnings"] == want["warnings"], where
        assert group.estimate(i).resolved.scenario == alone.resolved.scenario
        assert group.estimate(i).assumptions_used() == alone.assumptions_used(), where


def test_drawn_assumptions_are_checked() -> None:
    resolved = resolve(make_scenario(model="llama-3.1-8b", gpu="h100-sxm"))
    engine = _engine()
    with pytest.raises(ValueError, match="not used by any estimator"):
        engine.run_points(resolved, None, None, {"perf.no_such_thing": [1.0, 2.0]})
    with pytest.raises(ValueError, match="perf.kernel_efficiency_scale: 99 is outside its allowed range"):
        engine.run_points(resolved, None, None, {"perf.kernel_efficiency_scale": [0.5, 99.0]})
    with pytest.raises(ValueError, match="perf.kernel_efficiency_scale: nan is not a finite number"):
        engine.run_points(resolved, None, None, {"perf.kernel_efficiency_scale": [0.5, float("nan")]})
    with pytest.raises(ValueError, match="perf.kernel_efficiency_scale: -inf is not a finite number"):
        engine.run_points(resolved, None, None, {"perf.kernel_efficiency_scale": [float("-inf"), 0.5]})
    with pytest.raises(ValueError, match="one length"):
        engine.run_points(resolved, {"batch_size": [1, 2, 3]}, None, {"perf.kernel_efficiency_scale": [0.5, 0.6]})
    one = engine.run_points(resolved, None, None, {"perf.kernel_efficiency_scale": [0.5]})
    assert one.estimate(0).resolved.scenario.assumptions == {"perf.kernel_efficiency_scale": 0.5}


@pytest.mark.parametrize("extra", [{"mfu": 0.4}, {"train_tokens": 1e9}], ids=["mfu", "train-tokens"])
def test_a_training_point_that_fails_alone_fails_alone_in_its_group(extra: dict[str, Any]) -> None:
    """A micro-batch x DP above the global batch leaves a point no micro-batch: its single estimate
    divides by zero. Over a group that division raises too (not an inf or a NaN in one column),
    so the engine estimates the group point by point and only that point fails, as alone."""
    resolved = resolve(make_scenario(model="llama-3.1-8b", gpu="h100-sxm", workload="pretrain",
                                     global_batch_size=8, **extra))  # fmt: skip
    points = {"batch_size": [1, 16, 2], "seq_len": [128, 1024, 4096]}
    engine = _engine()
    group = engine.run_points(resolved, points)
    assert isinstance(group, SplitEstimate)
    for i in range(3):
        alone = engine.run(_point(resolved, points, i))
        assert _describe(group.estimate(i)) == _describe(alone)
        assert bool(alone.failures) is (i == 1), alone.failures
