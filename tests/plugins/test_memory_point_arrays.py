"""The memory plugin's arithmetic over point arrays equals its arithmetic on one point's Python ints.

The activation model is called with numpy arrays of micro-batches and lengths by the stack (one
call per stage kind for a whole point group) and with Python ints by formulas and the fewest-GPUs
search: both must give the same floats, bit for bit, including at the far end of the input limits
where the arrays switch to exact Python ints. The stack picks the most-loaded pipeline stage per
point; a group whose points disagree on it must still give each point its own single estimate.
"""

from __future__ import annotations

import numpy as np
import pytest
from workbench_memory.activations import activation_memory
from workbench_memory.fit import max_concurrency
from workbench_memory.sharding import Stage

from workbench.api import make_scenario, resolve
from workbench.core.limits import MAX_BATCH, MAX_TOKENS
from workbench.engine.pipeline import Engine

FIELDS = ("per_layer", "embedding", "head", "total", "workspace", "transient")
BATCHES = [1, 3, 8, 256, 1, 64, MAX_BATCH, MAX_BATCH]
LENGTHS = [1, 4096, 77, 131072, MAX_TOKENS, 2048, 512, MAX_TOKENS]

CASES = [
    ("llama-3.1-8b", {"workload": "pretrain"}),
    ("llama-3.1-8b", {"workload": "pretrain", "attention": "eager", "recompute": "full"}),
    ("gpt2", {"workload": "pretrain", "attention": "eager", "recompute": "selective"}),
    ("gemma-2-9b", {"workload": "finetune", "method": "lora", "recompute": "full"}),
    ("deepseek-v3", {"workload": "pretrain", "dtype": "fp8"}),
    ("gpt-oss-20b", {"workload": "pretrain", "attention": "eager"}),
    ("jamba-1.5-mini", {"workload": "pretrain", "recompute": "full"}),
    ("nemotron-h-56b", {"workload": "finetune", "method": "full"}),
    ("qwen3-next-80b-a3b", {"workload": "pretrain"}),
    ("kimi-linear-48b-a3b", {"workload": "pretrain", "dtype": "fp32"}),
    ("bamba-9b", {"workload": "pretrain", "attention": "eager", "recompute": "full"}),
    ("llama-3.1-8b", {}),
    ("gemma-2-9b", {"attention": "eager", "assumptions": {"memory.act_logits_all_positions": 1.0}}),
]


def _arrays(batches: list[int], lengths: list[int]) -> tuple[np.ndarray, np.ndarray]:
    return np.array(batches, dtype=np.int64), np.array(lengths, dtype=np.int64)


@pytest.mark.parametrize(("model", "fields"), CASES)
@pytest.mark.parametrize("extremes", [False, True])
def test_activations_over_arrays_equal_each_points_own_answer(
    model: str, fields: dict[str, object], extremes: bool
) -> None:
    resolved = resolve(make_scenario(model=model, gpu="h100-sxm", **fields))
    arch, scenario = resolved.model, resolved.scenario
    n = len(BATCHES) if extremes else len(BATCHES) - 3  # without the limits: int64 arithmetic
    batches, lengths = _arrays(BATCHES[:n], LENGTHS[:n])
    for tp, sp, first, last in ((1, False, True, True), (2, True, False, True), (4, False, True, False)):
        kw = {"tp": tp, "sequence_parallel": sp, "layers": 3, "first_stage": first, "last_stage": last}
        group = activation_memory(arch, scenario, micro_batch=batches, seq_len=lengths, **kw)
        for i in range(n):
            alone = activation_memory(arch, scenario, micro_batch=BATCHES[i], seq_len=LENGTHS[i], **kw)
            for name in FIELDS:
                want = getattr(alone, name)
                got = getattr(group, name)
                got = float(got[i]) if isinstance(got, np.ndarray) else got
                assert type(want) is float, name
                assert got == want, f"{model} {fields} tp {tp} point {i}: {name} {got!r} != {want!r}"


def test_a_group_whose_points_disagree_on_the_fullest_stage_gives_each_its_own_estimate() -> None:
    # GPT-2 serving on two stages: its large vocabulary's logits make the last stage the fuller one
    # for big batches, the embeddings and blocks of the first stage for small ones.
    resolved = resolve(make_scenario(model="gpt2", gpu="h100-sxm", num_gpus=2, parallel={"pp": 2}))
    points = {"batch_size": [1, 1, 8, 64, 1, 16], "seq_len": [128, 8192, 1024, 4096, 32768, 2048]}
    engine = Engine(_estimators())
    group = engine.run_points(resolved, points)
    stages = set()
    for i in range(6):
        scenario = resolved.scenario.model_copy(update={k: v[i] for k, v in points.items()})
        alone = engine.run(resolved.__class__(scenario, resolved.model, resolved.cluster))
        mine = group.estimate(i)
        assert mine.values.keys() == alone.values.keys()
        for key, quantity in alone.values.items():
            other = mine.values[key]
            assert type(other.value) is type(quantity.value) and other.value == quantity.value, key
            assert other.formula == quantity.formula, key
        assert [(w.code, w.message, w.fix) for w in mine.warnings] == [
            (w.code, w.message, w.fix) for w in alone.warnings
        ]
        stages.add(mine.values["memory.per_gpu.total"].formula.rsplit("(", 1)[-1].split(":")[0])
    assert stages == {"stage 1 of 2", "stage 2 of 2"}


@pytest.mark.parametrize(
    "fields",
    [
        {"model": "llama-3.1-70b"},
        {"model": "llama-3.1-8b", "workload": "pretrain", "num_gpus": 2, "parallel": {"dp": 2, "zero_stage": 3}},
    ],
)
def test_the_fewest_gpus_of_each_point_of_a_group_is_its_own_search(fields: dict[str, object]) -> None:
    resolved = resolve(make_scenario(gpu="h100-sxm", **fields))
    points = {
        "batch_size": [1, 1, 8, 64, 1, 16, 256, 1024],
        "seq_len": [128, 8192, 1024, 4096, 1048576, 32768, 2048, 131072],
    }
    engine = Engine(_estimators())
    group = engine.run_points(resolved, points)
    answers = []
    for i in range(8):
        scenario = resolved.scenario.model_copy(update={k: v[i] for k, v in points.items()})
        alone = engine.run(resolved.__class__(scenario, resolved.model, resolved.cluster))
        mine = group.estimate(i)
        for key in ("memory.min_gpus", "memory.fits", "memory.headroom"):
            assert mine.get(key) == alone.get(key) and type(mine.get(key)) is type(alone.get(key)), (i, key)
            assert mine.values[key].formula == alone.values[key].formula, (i, key)
        assert [(w.code, w.message, w.fix) for w in mine.warnings] == [
            (w.code, w.message, w.fix) for w in alone.warnings
        ]
        answers.append(alone.get("memory.min_gpus"))
    # the group mixes layouts that fit as given, searched answers of several sizes, and none
    assert None in answers and len(set(answers)) >= 3


def _stage(kv_per_sequence: object, activations: object) -> Stage:
    return Stage(
        index=0, first=0, layers=1, is_first=True, is_last=True, linear=0.0, plain=0.0, experts=0.0,
        adapters=0.0, trainable=0.0, weights_fixed=10.0, weights_coef=0.0, grads_fixed=0.0, grads_coef=0.0,
        opt_fixed=0.0, opt_coef=0.0, micro_activations=0.0, once_activations=activations, inflight=1.0,
        kv=0.0, kv_per_sequence=kv_per_sequence, state=0.0, state_per_sequence=0.0, comm=0.0, dp_comm=0.0,
    )  # fmt: skip


def test_concurrency_is_the_fullest_ranks_limit_per_point_and_none_where_nothing_is_cached() -> None:
    stages = [
        _stage(np.array([3.0, 0.0, 7.0]), np.array([0.0, 5.0, 200.0])),
        _stage(np.array([6.0, 0.0, 0.0]), 1.0),
    ]
    got = max_concurrency(stages, 100.0, 1, 0.0, 3)
    # point 0: min(90 // 3, 89 // 6) = 14; point 1: nothing cached; point 2: free space negative: 0
    assert got.tolist() == [14, None, 0]
    assert [type(v) for v in got.tolist()] == [int, type(None), int]
    assert max_concurrency([_stage(3.0, 0.0)], 100.0, 1, 0.0, 1) == 30
    assert max_concurrency([_stage(0.0, 0.0)], 100.0, 1, 0.0, 1) is None


def _estimators() -> list[object]:
    from workbench.pluginhost import PluginHost

    estimators = PluginHost(entry_point_group=None).registry.estimators
    return [e for e in estimators if e.info.id.startswith("memory")]


def test_the_two_largest_parts_over_arrays_are_those_sorting_each_point_gives() -> None:
    """The out-of-memory fix names a point's two largest parts; over a group they are picked with
    one lexsort, which must order ties (equal amounts: by name, descending) and an empty recurrent
    state (no part) exactly as sorting each point's (amount, name) pairs does."""
    import random

    from workbench_memory.guards import largest_parts
    from workbench_memory.stack import PARTS, _two_largest

    rng = random.Random(7)
    n = 400
    columns = []
    for name in PARTS:
        values = [rng.choice((0.0, 1.0, 2.0, 1e9, 3e9, rng.uniform(0, 4e9))) for _ in range(n)]
        columns.append(np.array(values) if rng.random() < 0.8 else values[0])
    points = np.arange(0, n, 3)
    got = _two_largest(tuple(columns), points)
    for j, i in enumerate(points.tolist()):
        parts = {k: (v[i].item() if isinstance(v, np.ndarray) else v) for k, v in zip(PARTS, columns)}
        parts = {k: v for k, v in parts.items() if v or k != "recurrent_state"}
        assert list(got[j]) == largest_parts(parts), (i, parts)
    exact = tuple(np.array([2**70] * n, dtype=object) if k == "weights" else c for k, c in zip(PARTS, columns))
    assert _two_largest(exact, points) is None  # exact Python ints: compared point by point
