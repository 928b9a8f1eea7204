"""The cluster estimator over a point group gives each point exactly what its single estimate gives:
values (type included), formulas, notes, assumptions and warnings."""

from __future__ import annotations

import pytest
from workbench_cluster.keys import CLUSTER

from workbench.api import make_scenario, resolve
from workbench.pluginhost import default_engine

CASES = [
    dict(model="llama-3.1-70b", gpu="h100-sxm", workload="pretrain", num_gpus=64, train_tokens=1e12,
         parallel={"tp": 8, "dp": 8, "zero_stage": 1}),
    # raw text on slow storage: storage sets the step at some batches and not at others
    dict(model="llama-3.1-8b", gpu="h100-sxm", workload="pretrain", num_gpus=8, train_tokens=1e11,
         parallel={"dp": 8}, cluster={"dataset_format": "text", "storage_gbps": 0.0003, "async_checkpoint": True,
                                      "spot": True}),
    # no run length: the run keys have no value, the rest do
    dict(model="llama-3.1-8b", gpu="a100-80gb-sxm", workload="finetune", method="lora", num_gpus=2,
         parallel={"dp": 2}),
    dict(model="llama-3.1-70b", gpu="h100-sxm", num_gpus=4, parallel={"tp": 4}, cluster={"storage": "s3-standard"}),
]  # fmt: skip
POINTS = {"batch_size": [1, 4, 32, 256], "seq_len": [512, 4096, 2048, 8192]}


@pytest.mark.parametrize("fields", CASES, ids=lambda f: f"{f['model']}-{f.get('workload', 'inference')}")
def test_a_group_equals_its_single_estimates(fields: dict) -> None:
    engine = default_engine()
    resolved = resolve(make_scenario(**fields))
    group = engine.run_points(resolved, POINTS)
    codes = set()
    for i in range(len(POINTS["batch_size"])):
        one = resolved.scenario.model_copy(update={k: v[i] for k, v in POINTS.items()})
        single = engine.run(resolved.with_scenario(one))
        grouped = group.estimate(i)
        assert not single.failures and not grouped.failures
        for key in CLUSTER:
            a, b = grouped.values[key], single.values[key]
            assert (type(a.value), a.value) == (type(b.value), b.value), (i, key)
            assert (a.formula, a.unit, a.label, tuple(a.assumptions), a.note) == (
                b.formula, b.unit, b.label, tuple(b.assumptions), b.note), (i, key)  # fmt: skip
        mine = [w for w in single.warnings if w.code in ("storage-bound", "low-goodput", "no-progress",
                                                         "slow-cold-start")]  # fmt: skip
        assert [w for w in grouped.warnings if w.code in {w.code for w in mine} | {"storage-bound"}] == mine
        codes |= {w.code for w in mine}
    if fields.get("cluster", {}).get("storage_gbps"):
        assert "storage-bound" in codes


def test_drawn_cluster_assumptions_run_in_one_group() -> None:
    """A Monte Carlo sample that draws this plugin's assumptions (compare's confidence draws do)
    stays one group; each point reads its own draw, as its single estimate with that override does."""
    engine = default_engine()
    resolved = resolve(make_scenario(**CASES[0]))
    draws = {"cluster.restart_s": [300.0, 900.0, 1800.0], "cluster.failures_per_gpu_hour": [1e-5, 2e-5, 1e-4]}
    assert engine.takes_assumption_arrays(resolved.scenario, draws)
    group = engine.run_points(resolved, None, None, draws)
    for i in range(3):
        overrides = {k: v[i] for k, v in draws.items()}
        single = engine.run(resolved.with_scenario(resolved.scenario.model_copy(update={"assumptions": overrides})))
        for key in CLUSTER:
            a, b = group.estimate(i).values[key], single.values[key]
            assert (a.value, a.formula) == (b.value, b.formula), (i, key)
