"""Point groups reproduce what the scalar engine computed before the array protocol, limits included.

``tests/engine/test_point_groups.py`` checks a group against single estimates of the *same* code;
a mistake that both paths share (an int64 overflow near the input limits, a wrong branch on one
point's value) passes it. This test pins the array path to a reference written by the scalar
engine as it was before any estimator became an array one (commit 4164c57), on random groups that
reach the far corners of the inputs (a million sequences, 16 M-token prompts, no generation) as
often as everyday values. Each point stores every key's value (type included) and a hash of its
unit, label, formula, assumptions and note (a short hash per key: the reference stays small),
every warning (code, severity, hash of the text) and every failure. The test runs the same points as point groups and compares.

Regenerate only on purpose, when a change of numbers is intended and reviewed, from the code whose
numbers are the reference: ``.venv/bin/python tests/engine/test_points_vs_scalar_reference.py --write``.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "engine_points_reference.json"
MODELS = (
    "llama-3.1-8b", "llama-3.1-405b", "mixtral-8x7b", "deepseek-v3", "gpt2", "t5-base", "bert-base-uncased",
    "gemma-2-9b", "gpt-oss-120b", "nemotron-h-56b", "jamba-1.5-mini", "qwen3-next-80b-a3b", "qwen3-vl-8b",
)  # fmt: skip
GPUS = ("h100-sxm", "mi300x", "l4", "tpu-v5e", "b200")
BASES: tuple[dict[str, Any], ...] = (
    {},
    {"dtype": "fp8", "kv_dtype": "fp8", "parallel": {"tp": 8}},
    {"weights": "int4", "attention": "eager", "serving": {"paged_kv": False}},
    {"parallel": {"tp": 2, "pp": 4}},
    {"images_per_request": 3},
    {"workload": "finetune", "method": "qlora", "recompute": "full"},
    {"workload": "finetune", "method": "full", "attention": "eager", "parallel": {"dp": 8, "zero_stage": 3}},
    {"workload": "pretrain", "recompute": "selective", "parallel": {"tp": 4, "pp": 2, "dp": 4, "zero_stage": 1}},
    {"workload": "pretrain", "dtype": "fp8", "parallel": {"tp": 2, "dp": 8, "ep": 8, "zero_stage": 2}},
)
GROUPS = 40
POINTS = 8
BATCHES = (1, 2, 5, 64, 1024, 65_536, 1_048_576)
LENGTHS = (1, 3, 128, 4096, 65_536, 1_048_576, 16_777_216)
GENERATED = (0, 1, 256, 16_777_216)


def _groups() -> list[tuple[dict[str, Any], dict[str, list[int]]]]:
    rng = random.Random(4164)
    groups = []
    for _ in range(GROUPS):
        fields = {"model": rng.choice(MODELS), "gpu": rng.choice(GPUS), **rng.choice(BASES)}
        par = fields.get("parallel", {})
        fields["num_gpus"] = par.get("tp", 1) * par.get("pp", 1) * par.get("dp", 1)
        points = {
            "batch_size": [rng.choice(BATCHES) for _ in range(POINTS)],
            "seq_len": [rng.choice(LENGTHS) for _ in range(POINTS)],
            "gen_len": [rng.choice(GENERATED) for _ in range(POINTS)],
        }
        groups.append((fields, points))
    # The far corner itself, where integer products pass 2^63: every field at its limit at once.
    top = {"batch_size": [1_048_576, 1_048_576, 1], "seq_len": [16_777_216, 1, 16_777_216],
           "gen_len": [16_777_216, 16_777_216, 0]}  # fmt: skip
    for fields in ({"model": "llama-3.1-405b", "gpu": "b200", "num_gpus": 1},
                   {"model": "llama-3.1-405b", "gpu": "h100-sxm", "workload": "pretrain", "num_gpus": 1}):
        groups.append((fields, {k: v * (POINTS // 3) + v[: POINTS % 3] for k, v in top.items()}))
    return groups


def _hash(*parts: object) -> str:
    return hashlib.sha256("\u241f".join(map(str, parts)).encode()).hexdigest()[:10]


def _record(est: Any) -> dict[str, Any]:
    """Keys in order, a hash per key of its value (type and repr: exact) and its explanation."""
    keys = sorted(est.values)
    return {
        "keys": keys,
        "hashes": [
            _hash(type(q.value).__name__, repr(q.value), q.unit, q.label, q.formula, tuple(q.assumptions), q.note)
            for q in (est.values[k] for k in keys)
        ],
        "warnings": [[w.code, w.severity, _hash(w.message, w.fix)] for w in est.warnings],
        "failures": [[f.estimator, f.message] for f in est.failures],
    }


def _engine() -> Any:
    from workbench.engine.pipeline import Engine
    from workbench.pluginhost import PluginHost

    # The plugins whose numbers the reference holds: later first-party plugins (the cluster plugin,
    # a scalar estimator with no array path to pin) add keys the scalar engine of 4164c57 never had.
    first_party = ("workbench_memory", "workbench_compute", "workbench_performance", "workbench_cost")
    return Engine(PluginHost(first_party=first_party, entry_point_group=None).registry.estimators)


def write() -> None:
    """The reference, from single estimates of the code that runs this (see the docstring)."""
    from workbench.api import make_scenario, resolve

    engine = _engine()
    out = []
    for fields, points in _groups():
        resolved = resolve(make_scenario(**fields))
        records = []
        for i in range(POINTS):
            scenario = resolved.scenario.model_copy(update={k: v[i] for k, v in points.items()})
            records.append(_record(engine.run(resolved.with_scenario(scenario))))
        keys = records[0]["keys"]
        if all(r["keys"] == keys for r in records):  # the usual case: the key list once per group
            for r in records:
                del r["keys"]
        out.append({"fields": fields, "points": points, "keys": keys, "records": records})
    REFERENCE.write_text(json.dumps(out, separators=(",", ":")) + "\n")


@pytest.fixture(scope="module")
def reference() -> list[dict[str, Any]]:
    return json.loads(REFERENCE.read_text())


@pytest.fixture(scope="module")
def engine() -> Any:
    return _engine()


@pytest.mark.parametrize("g", range(GROUPS + 2))
def test_a_group_reproduces_the_scalar_engine(reference: list[dict[str, Any]], engine: Any, g: int) -> None:
    from workbench.api import make_scenario, resolve

    fields, points = _groups()[g]
    stored = reference[g]
    assert stored["fields"] == fields and stored["points"] == points, "the groups changed: regenerate on purpose"
    group = engine.run_points(resolve(make_scenario(**fields)), points)
    for i in range(POINTS):
        estimate = group.estimate(i)
        got, want = _record(estimate), stored["records"][i]
        where = f"{fields} " + ", ".join(f"{k}={v[i]}" for k, v in points.items())
        assert got["keys"] == want.get("keys", stored["keys"]), where
        for key, mine, theirs in zip(got["keys"], got["hashes"], want["hashes"]):
            assert mine == theirs, f"{where}: {key} = {estimate.get(key)!r} or its explanation differs from the reference"
        assert got["warnings"] == want["warnings"], where
        assert got["failures"] == want["failures"], where


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: test_points_vs_scalar_reference.py --write   (overwrites the reference)")
    write()
