"""Speed work must not change a single number: a fixed grid reproduces a stored reference exactly.

The reference (``tests/data/engine_reference.json``) was written by the code as it was before the
engine and the first-party plugins were tuned for speed. For ~300 scenarios (8 models, 6
accelerators, inference / LoRA / QLoRA / full fine-tuning / pre-training, TP/PP/DP/EP, ZeRO,
recompute, attention kernels, quantization, serving options) it holds every result key's value,
a short hash of each key's unit, label, formula, assumptions and note, every warning (code,
severity, hash of its text), every estimator failure and the assumptions read. Two sweeps (an
inference and a training one, both with the CLI's default keys) are stored row by row.

Regenerate only on purpose, when a change of numbers is intended and reviewed:
``.venv/bin/python tests/engine/test_speedup_equivalence.py --write``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "engine_reference.json"
MISSING = "\u0000missing"  # a key this scenario did not produce

MODELS = (
    "llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3",
    "qwen3-30b-a3b", "gpt2", "t5-base", "bert-base-uncased",
)
GPUS = ("h100-sxm", "a100-80gb-sxm", "l40s", "mi300x", "tpu-v5e", "m4-max")

#: Scenario variants (fields besides model and gpu); num_gpus defaults to TP x PP x DP.
VARIANTS: tuple[dict[str, Any], ...] = (
    {},
    {"batch_size": 32, "seq_len": 8192, "parallel": {"tp": 2}},
    {"dtype": "fp8", "kv_dtype": "fp8", "batch_size": 64, "parallel": {"tp": 4}},
    {"weights": "int4", "batch_size": 8, "gen_len": 1024},
    {"attention": "eager", "batch_size": 4, "seq_len": 1024},
    {"batch_size": 16, "parallel": {"tp": 2, "pp": 2}},
    {"serving": {"chunked_prefill": True, "gpu_memory_utilization": 0.8, "speculative_draft_params": 1e9},
     "batch_size": 128, "seq_len": 512, "parallel": {"tp": 8}},
    {"dtype": "fp32", "seq_len": 256, "gen_len": 64, "num_gpus": 3, "serving": {"paged_kv": False}},
    {"workload": "finetune", "method": "lora", "batch_size": 4, "seq_len": 2048},
    {"workload": "finetune", "method": "qlora", "batch_size": 2, "seq_len": 4096, "recompute": "full"},
    {"workload": "finetune", "method": "lora", "lora_targets": "attention", "lora_rank": 64, "mfu": 0.4,
     "attention": "sdpa", "batch_size": 8, "seq_len": 1024},
    {"workload": "finetune", "method": "full", "batch_size": 1, "recompute": "selective",
     "parallel": {"dp": 8, "zero_stage": 3}},
    {"workload": "finetune", "method": "full", "optimizer": "adamw-8bit", "batch_size": 2,
     "parallel": {"tp": 2, "dp": 4, "zero_stage": 2}},
    {"workload": "pretrain", "batch_size": 2, "seq_len": 4096, "global_batch_size": 512, "recompute": "full",
     "parallel": {"tp": 2, "pp": 4, "dp": 8, "zero_stage": 1, "pipeline_schedule": "interleaved",
                  "virtual_stages": 2}},
    {"workload": "pretrain", "batch_size": 1, "attention": "sdpa", "train_tokens": 1e12,
     "parallel": {"tp": 8, "dp": 8, "zero_stage": 3, "sequence_parallel": True, "offload_optimizer": "cpu"}},
    {"workload": "pretrain", "batch_size": 4, "global_batch_size": 256, "attention": "eager",
     "assumptions": {"memory.act_dropout": 0.1},
     "parallel": {"pp": 8, "dp": 2, "pipeline_schedule": "gpipe"}},
    {"workload": "pretrain", "batch_size": 2, "seq_len": 8192, "dtype": "fp8", "optimizer": "adafactor",
     "train_tokens": 2e11, "pricing": {"cloud_usd_per_gpu_hour": 2.5, "purchase_usd_per_gpu": 30000},
     "parallel": {"tp": 4, "dp": 16, "ep": 8, "zero_stage": 2}},
    {"workload": "pretrain", "batch_size": 8, "seq_len": 1024, "optimizer": "sgd-momentum",
     "master_weights": False, "dtype": "fp16", "num_gpus": 16,
     "parallel": {"pp": 2, "dp": 4, "offload_params": "cpu", "zero_stage": 3}},
)


def _scenarios() -> list[dict[str, Any]]:
    """Every variant for every model, each on two accelerators in turn, plus each model x GPU plain."""
    grid: list[dict[str, Any]] = []
    for m, model in enumerate(MODELS):
        for gpu in GPUS:
            grid.append({"model": model, "gpu": gpu})
        for v, variant in enumerate(VARIANTS):
            for k in range(2):
                gpu = GPUS[(m + v + 3 * k) % len(GPUS)]
                fields = json.loads(json.dumps(variant))
                par = fields.get("parallel", {})
                fields.setdefault("num_gpus", par.get("tp", 1) * par.get("pp", 1) * par.get("dp", 1))
                grid.append({"model": model, "gpu": gpu, **fields})
    return grid


def _hash(*parts: object) -> str:
    return hashlib.sha256("\u241f".join(map(str, parts)).encode()).hexdigest()[:10]


def _plain(value: Any) -> Any:
    """A value as JSON keeps it exactly (floats round-trip through repr); NaN as a string."""
    if isinstance(value, float) and math.isnan(value):
        return "\u0000nan"
    return value


def _record(est: Any, keys: list[str]) -> dict[str, Any]:
    values = est.values
    return {
        "values": [_plain(values[k].value) if k in values else MISSING for k in keys],
        "formulas": [
            _hash(q.unit, q.label, q.formula, q.assumptions, q.note) if (q := values.get(k)) else MISSING
            for k in keys
        ],
        "extra_keys": sorted(set(values) - set(keys)),
        "warnings": [[w.code, w.severity, _hash(w.message, w.fix)] for w in est.warnings],
        "failures": [[f.estimator, f.message] for f in est.failures],
        "assumptions_used": sorted(est.assumptions.used),
    }


@functools.lru_cache(maxsize=1)
def _engine() -> Any:
    """The first-party estimators only: a third-party plugin installed next to the workbench (the
    example price list, say) must not change what this test compares. Only those whose numbers
    the reference holds: a later first-party plugin (the cluster plugin) adds keys it never had."""
    from workbench.engine.pipeline import Engine
    from workbench.pluginhost import PluginHost

    first_party = ("workbench_memory", "workbench_compute", "workbench_performance", "workbench_cost")
    return Engine(PluginHost(first_party=first_party, entry_point_group=None).registry.estimators)


def _estimate(fields: dict[str, Any]) -> Any:
    from workbench.api import make_scenario, resolve

    return _engine().run(resolve(make_scenario(**fields)))


INFERENCE_SWEEP = {
    "base": {"model": "llama-3.1-8b", "gpu": "h100-sxm"},
    "vary": ["batch=1..512", "seq-len=128,4096,65536", "gpu=h100-sxm,l40s,mi300x,l4", "dtype=bf16,fp8",
             "tp=1,2,16"],
}
TRAINING_SWEEP = {
    "base": {"model": "llama-3.1-8b", "gpu": "h100-sxm", "workload": "pretrain", "num_gpus": 64,
             "parallel": {"dp": 64, "zero_stage": 3}},
    "vary": ["batch=1..64", "seq-len=512,4096,32768", "recompute=none,full", "tp=1,8", "pp=1,4",
             "gpus=64,48"],
}


def _sweep(spec: dict[str, Any], workers: int) -> list[list[Any]]:
    from workbench.api import make_scenario
    from workbench.catalog.resolve import resolve_scenario
    from workbench.cli.main import _DEFAULT_SWEEP_KEYS
    from workbench.engine.sweep import parse_axis, sweep_rows

    base = make_scenario(**spec["base"])
    axes = [parse_axis(v, base) for v in spec["vary"]]
    keys = list(_DEFAULT_SWEEP_KEYS)
    rows = sweep_rows(base, axes, resolve_scenario, _engine(), keys, workers=workers)
    return [
        [
            *(_plain(getattr(v, "value", v)) for v in r.settings.values()),
            *(_plain(r.values[k]) for k in keys),
            r.error,
        ]
        for r in rows
    ]


def compute(order: int = 1) -> dict[str, Any]:
    """The whole reference document; ``order=-1`` runs the scenarios backwards (cache-order check)."""
    grid = _scenarios()
    estimates = {i: _estimate(grid[i]) for i in list(range(len(grid)))[::order]}
    keys = sorted({k for est in estimates.values() for k in est.values})
    return {
        "keys": keys,
        "scenarios": [{"fields": grid[i], **_record(estimates[i], keys)} for i in range(len(grid))],
        "sweeps": {
            "inference": _sweep(INFERENCE_SWEEP, workers=1),
            "training": _sweep(TRAINING_SWEEP, workers=1),
        },
    }


def _same(a: Any, b: Any) -> bool:
    """Exact equality that also tells 1 from 1.0 from True."""
    return type(a) is type(b) and a == b


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    return json.loads(REFERENCE.read_text())


@pytest.mark.parametrize("order", [1, -1], ids=["forward", "backward"])
def test_every_scenario_reproduces_the_reference(reference: dict[str, Any], order: int) -> None:
    now = compute(order)
    assert now["keys"] == reference["keys"]
    assert len(now["scenarios"]) == len(reference["scenarios"])
    keys = reference["keys"]
    for i, (got, want) in enumerate(zip(now["scenarios"], reference["scenarios"])):
        where = f"scenario {i} {want['fields']}"
        assert got["fields"] == want["fields"], where
        for k, g, w in zip(keys, got["values"], want["values"]):
            assert _same(g, w), f"{where}: {k} = {g!r}, reference {w!r}"
        for k, g, w in zip(keys, got["formulas"], want["formulas"]):
            assert g == w, f"{where}: the formula/unit/label/assumptions of {k} changed"
        for part in ("extra_keys", "warnings", "failures", "assumptions_used"):
            assert got[part] == want[part], f"{where}: {part}"
    for name, rows in reference["sweeps"].items():
        got_rows = now["sweeps"][name]
        assert len(got_rows) == len(rows), name
        for r, (g, w) in enumerate(zip(got_rows, rows)):
            same = len(g) == len(w) and all(_same(x, y) for x, y in zip(g, w))
            assert same, f"{name} sweep row {r}: {g} != {w}"


def test_a_run_for_a_few_keys_gives_the_full_estimates_values() -> None:
    """Estimators may skip work for keys nobody asked for (sweeps): asking for any one key, or
    for the sweep's columns, must give exactly the value a full estimate gives, and every other
    key such a run does produce must be right too."""
    from workbench.api import make_scenario, resolve
    from workbench.cli.main import _DEFAULT_SWEEP_KEYS

    engine = _engine()
    for fields in _scenarios()[::9]:
        resolved = resolve(make_scenario(**fields))
        full = engine.run(resolved)
        for wanted in [(key,) for key in full.values] + [tuple(_DEFAULT_SWEEP_KEYS)]:
            part = engine.run(resolved, wanted)
            assert not part.failures, part.failures
            assert set(wanted) <= set(part.values), f"{fields} {wanted}"
            for key in part.values:
                got, want = part.values[key], full.values[key]
                assert _same(_plain(got.value), _plain(want.value)), f"{fields} {wanted}: {key}"
                assert (got.formula, got.unit, got.label, got.assumptions, got.note) == (
                    want.formula, want.unit, want.label, want.assumptions, want.note
                ), f"{fields} {wanted}: {key}"


@pytest.mark.parametrize("spec", [INFERENCE_SWEEP, TRAINING_SWEEP], ids=["inference", "training"])
def test_parallel_sweep_matches_the_serial_reference(
    reference: dict[str, Any], spec: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.engine import sweep

    monkeypatch.setattr(sweep, "PARALLEL_THRESHOLD", 1)
    monkeypatch.setattr(sweep, "BLOCK_POINTS", 50)  # several blocks, each spread over the workers
    rows = _sweep(spec, workers=2)
    want = reference["sweeps"]["inference" if spec is INFERENCE_SWEEP else "training"]
    assert len(rows) == len(want)
    for r, (g, w) in enumerate(zip(rows, want)):
        assert len(g) == len(w) and all(_same(x, y) for x, y in zip(g, w)), f"row {r}: {g} != {w}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: test_speedup_equivalence.py --write   (overwrites the reference)")
    REFERENCE.write_text(json.dumps(compute(), separators=(",", ":")) + "\n")
    print(f"wrote {REFERENCE} ({REFERENCE.stat().st_size / 1e6:.2f} MB)")
