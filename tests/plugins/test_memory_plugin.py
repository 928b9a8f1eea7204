"""The memory plugin loads through the plugin host and honours the documented result contract."""

from __future__ import annotations

import workbench_memory
from engine_fixtures import resolved
from workbench_memory.stack import PARTS

from workbench.engine.pipeline import Engine
from workbench.engine.quantity import Quantity
from workbench.pluginhost.host import PluginHost

CONTRACT = (
    "parameters.total",
    "parameters.active",
    *(f"memory.{rank}.{k}" for rank in ("per_gpu", "average_gpu") for k in (*PARTS, "total")),
    "memory.gpu_capacity",
    "memory.usable_capacity",
    "memory.fits",
    "memory.min_gpus",
    "memory.headroom",
    "kv_cache.bytes_per_token",
    "kv_cache.bytes",
    "kv_cache.max_concurrency",
)


def memory_engine() -> Engine:
    host = PluginHost(first_party=("workbench_memory",), entry_point_group=None)
    status = host.statuses["workbench_memory"]
    assert status.status == "loaded", status.error
    assert status.version == workbench_memory.__version__
    assert status.registered == {"estimators": 4}
    engine = Engine(host.registry.estimators)
    assert not engine.rejected
    return engine


def test_plugin_registers_estimators_that_produce_the_contract() -> None:
    engine = memory_engine()
    for fields in ({}, {"workload": "finetune", "num_gpus": 8, "parallel": {"dp": 8, "zero_stage": 3}}):
        est = engine.run(resolved(**fields))
        assert not est.failures, est.failures
        assert set(CONTRACT) <= set(est.values)
        doc = est.to_json()
        assert doc["memory"]["per_gpu"]["total"] == est.get("memory.per_gpu.total")
        assert isinstance(doc["memory"]["fits"], bool) and isinstance(doc["memory"]["min_gpus"], int)


def test_every_number_has_a_unit_a_lazy_formula_and_sourced_assumptions() -> None:
    engine = memory_engine()
    est = engine.run(resolved(workload="pretrain", num_gpus=4, parallel={"pp": 2, "dp": 2, "zero_stage": 3}))
    for key in CONTRACT:
        quantity = est.values[key]
        assert isinstance(quantity, Quantity)
        assert callable(quantity._formula), f"{key}: formula built eagerly"
        assert quantity.formula and quantity.label, key
        if isinstance(quantity.value, float):
            assert quantity.unit == "B", key
    assert "ZeRO-3" in est.values["memory.per_gpu.weights"].formula
    assert "in flight (1f1b)" in est.values["memory.per_gpu.activations"].formula
    rows = est.assumptions_used()
    used = {row["id"] for row in rows}
    assert {"memory.cuda_context_gib", "memory.fragmentation", "memory.zero3_live_layers"} <= used
    for row in rows:
        assert len(row["source"]) > 40, row["id"]
    for assumption in engine.assumptions.values():
        assert assumption.source and assumption.title, assumption.id


def test_overriding_an_assumption_changes_the_overhead() -> None:
    engine = memory_engine()
    base = engine.run(resolved()).get("memory.per_gpu.overhead")
    off = engine.run(resolved(assumptions={"memory.cuda_context_gib": 0.0})).get("memory.per_gpu.overhead")
    assert base - off == 0.5 * 2**30
    assert not [
        w
        for w in engine.run(resolved(assumptions={"memory.act_dropout": 0.1})).warnings
        if w.code == "unknown-assumption"
    ]
