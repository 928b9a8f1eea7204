"""Published llama.cpp decode speeds of GGUF models against the per-operator model.

Every record of ``tests/data/llamacpp_speed/measurements.yaml`` is one llama-bench figure: a
forward pass of ``rows`` token rows of one sequence at an average context (tg128: 1 row,
contexts 0-127; pp512 at micro-batch N: N rows, contexts 0-511). The prediction is the time of
that pass from the kernels of :func:`workbench_performance.inference.kernels` (weights, KV cache
of the one sequence, launch latencies) plus the default per-step overhead, with every assumption
at its default; tokens/s = rows / time.

Run ``python tests/validation/llamacpp_speed_cases.py`` to print the table of errors.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml
from workbench.catalog.resolve import resolve_scenario
from workbench.core import Scenario
from workbench.engine.pipeline import Engine
from workbench.pluginhost.host import PluginHost
from workbench_performance.efficiency import efficiencies
from workbench_performance.inference import kernels
from workbench_performance.inputs import inference_inputs

DATA = Path(__file__).resolve().parents[1] / "data" / "llamacpp_speed" / "measurements.yaml"


@dataclass(frozen=True)
class Case:
    ident: str
    split: str
    hardware: str
    weights: str
    rows: int
    measured: float  # tokens/s
    predicted: float

    @property
    def error(self) -> float:
        """Signed relative error of the predicted tokens/s."""
        return self.predicted / self.measured - 1.0


@lru_cache(maxsize=1)
def load() -> dict:
    return yaml.safe_load(DATA.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _engine() -> Engine:
    host = PluginHost(
        first_party=("workbench_memory", "workbench_compute", "workbench_performance", "workbench_cost"),
        entry_point_group=None,
    )
    return Engine(host.registry.estimators)


def predict(rec: dict) -> float:
    """Predicted tokens/s of one record."""
    sc = Scenario(model=rec["model"], gpu=rec["hardware"], weights=rec["weights"], batch_size=1,
                  seq_len=max(int(rec["context"]), 1), gen_len=1)
    est = _engine().run(resolve_scenario(sc))
    if est.failures:
        raise RuntimeError(f"{rec['id']}: " + "; ".join(f.message for f in est.failures))
    inp = inference_inputs(est)
    central, _, _ = efficiencies(est.assumptions, training=False)
    rows = float(rec["rows"])
    k = kernels(inp, central, tokens=rows, head_rows=rows, attention_flops=rows * inp.decode_attention_flops,
                attention_bytes=inp.decode_kv_bytes, context=float(rec["context"]))
    step = k.memory_s + k.compute_s + k.latency_s + central.step_overhead_s
    return rows / step


@lru_cache(maxsize=1)
def cases() -> tuple[Case, ...]:
    data = load()
    split = {s["id"]: s["split"] for s in data["sources"]}
    return tuple(
        Case(r["id"], split[r["source_id"]], r["hardware"], r["weights"], int(r["rows"]), float(r["tokens_per_s"]),
             predict(r))
        for r in data["records"]
    )


def median_abs_error(split: str) -> float:
    return statistics.median(abs(c.error) for c in cases() if c.split == split)


def main() -> None:
    print(f"{'record':28} {'split':8} {'measured':>9} {'predicted':>9} {'error':>7}")
    for c in cases():
        print(f"{c.ident:28} {c.split:8} {c.measured:9.1f} {c.predicted:9.1f} {c.error:+7.1%}")
    for split in ("fit", "heldout"):
        print(f"median abs error, {split}: {median_abs_error(split):.1%}")


if __name__ == "__main__":
    sys.exit(main())
