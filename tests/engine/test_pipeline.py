"""The engine orders estimators by needs/produces and isolates failures."""

from __future__ import annotations

import pytest
from engine_fixtures import resolved

from workbench.engine.assumptions import Assumption
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.pipeline import Engine, EngineSetupError
from workbench.engine.quantity import Outputs, q

FACTOR = Assumption("test.factor", "A factor", 2.0, "x", "made up for the test")


class Const:
    def __init__(self, ident: str, produces: str, value: float, needs: tuple[str, ...] = ()) -> None:
        self.info = EstimatorInfo(id=ident, title=ident, version="1", produces=(produces,), needs=needs,
                                  assumptions=(FACTOR,))
        self.key, self.constant = produces, value

    def estimate(self, ctx):  # type: ignore[no-untyped-def]
        base = sum(ctx.number(k) for k in self.info.needs)
        value = base + self.constant * ctx.assumptions["test.factor"]
        return Outputs({self.key: q(value, "B", self.key, lambda: f"{base} + {self.constant} x factor",
                                    ("test.factor",))})


class Raising(Const):
    def estimate(self, ctx):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")


class Garbage(Const):
    def estimate(self, ctx):  # type: ignore[no-untyped-def]
        return Outputs({"not.declared": q(1)})


def test_orders_by_needs_and_substitutes_formulas() -> None:
    engine = Engine([Const("c", "c.v", 1, needs=("b.v",)), Const("b", "b.v", 1, needs=("a.v",)), Const("a", "a.v", 1)])
    assert [e.info.id for e in engine.estimators] == ["a", "b", "c"]
    est = engine.run(resolved())
    assert est.get("a.v") == 2 and est.get("b.v") == 4 and est.get("c.v") == 6
    assert est.values["c.v"].formula == "4.0 + 1 x factor"
    assert est.to_json()["assumptions"][0]["id"] == "test.factor"


def test_assumption_override_changes_the_result() -> None:
    engine = Engine([Const("a", "a.v", 1)])
    est = engine.run(resolved(assumptions={"test.factor": 5.0}))
    assert est.get("a.v") == 5
    assert est.assumptions_used()[0]["overridden"] is True


def test_a_raising_estimator_is_recorded_and_the_rest_run() -> None:
    engine = Engine([Raising("bad", "bad.v", 1), Const("good", "good.v", 1), Const("dep", "dep.v", 1, needs=("bad.v",))])
    est = engine.run(resolved())
    assert est.get("good.v") == 2
    messages = {f.estimator: f.message for f in est.failures}
    assert messages["bad"] == "RuntimeError: boom"
    assert messages["dep"] == "skipped: bad.v failed"


def test_undeclared_outputs_are_refused() -> None:
    est = Engine([Garbage("g", "g.v", 1)]).run(resolved())
    assert "undeclared result 'not.declared'" in est.failures[0].message
    assert "not.declared" not in est


def test_unmet_needs_duplicates_and_cycles_are_caught_at_setup() -> None:
    engine = Engine([Const("a", "a.v", 1, needs=("nobody.v",)), Const("b", "b.v", 1), Const("b", "x.v", 1)])
    assert {f.estimator: f.message for f in engine.rejected} == {
        "a": "needs nobody.v, which no estimator produces", "b": "another estimator has the same id"}
    with pytest.raises(EngineSetupError, match="cycle"):
        Engine([Const("a", "a.v", 1, needs=("b.v",)), Const("b", "b.v", 1, needs=("a.v",))])


def test_nested_json_contract() -> None:
    est = Engine([Const("m", "memory.per_gpu.total", 1)]).run(resolved())
    doc = est.to_json()
    assert doc["memory"]["per_gpu"]["total"] == 2
    assert doc["explain"]["memory.per_gpu.total"]["unit"] == "B"
