"""Deterministic stand-ins for the estimator plugins, for GUI tests.

They produce the documented result keys with simple formulas, so the GUI tests check the window's
plumbing (what is shown equals what was estimated) independently of the real plugins, which have
their own tests.
"""

from __future__ import annotations

from workbench.core.units import GiB
from workbench.engine.estimator import EstimateContext, EstimatorInfo
from workbench.engine.quantity import Outputs, Warning, q

COMPONENTS = ("weights", "gradients", "optimizer_states", "activations", "kv_cache", "recurrent_state", "overhead")
MEMORY_KEYS = tuple(f"memory.{rank}.{c}" for rank in ("per_gpu", "average_gpu") for c in (*COMPONENTS, "total")) + (
    "memory.gpu_capacity", "memory.usable_capacity", "memory.fits", "memory.min_gpus", "memory.headroom",
)
ROOFLINE_KEYS = tuple(f"roofline.{phase}.{k}" for phase in ("prefill", "decode", "training")
                      for k in ("arithmetic_intensity", "attainable_tflops", "bound")) + (
    "roofline.ridge_point", "roofline.peak_tflops", "roofline.bandwidth_gbps",
)
PERF_KEYS = ("performance.tokens_per_s", "performance.step_time_s")


class FakeMemory:
    """Memory stack from simple formulas of the scenario: enough to see every edit move the bars."""

    info = EstimatorInfo(id="fake.memory", title="Fake memory", version="1", produces=MEMORY_KEYS)

    def estimate(self, ctx: EstimateContext) -> Outputs:
        s = ctx.scenario
        shards = s.parallel.tp * s.parallel.pp
        weights = ctx.params.total * 2.0 / shards
        training = s.is_training
        parts = {
            "weights": weights,
            "gradients": weights if training else 0.0,
            "optimizer_states": 4 * weights if training else 0.0,
            "activations": s.batch_size * s.seq_len * ctx.model.hidden_size * 2.0 * 4 / shards,
            "kv_cache": 0.0 if training else s.batch_size * (s.seq_len + s.gen_len) * 131072.0 / shards,
            "recurrent_state": 0.0,  # the fake models are attention-only
            "overhead": 1.0 * GiB,
        }
        values = {}
        for rank, scale in (("per_gpu", 1.0), ("average_gpu", 0.9)):
            total = 0.0
            for name, value in parts.items():
                value *= scale
                total += value
                values[f"memory.{rank}.{name}"] = q(value, "B", f"{name} ({rank})",
                                                    lambda v=value, n=name: f"{n} = {v:.0f} B (fake formula)")
            values[f"memory.{rank}.total"] = q(total, "B", f"total ({rank})", lambda t=total: f"sum = {t:.0f} B")
        capacity = ctx.gpu.memory_bytes
        usable = capacity * 0.9
        total = values["memory.per_gpu.total"].value
        values["memory.gpu_capacity"] = q(capacity, "B", "GPU capacity")
        values["memory.usable_capacity"] = q(usable, "B", "Usable capacity", lambda: f"{capacity:.0f} B x 0.9")
        values["memory.fits"] = q(total <= usable, "", "Fits")
        values["memory.min_gpus"] = q(max(1, int(-(-total // usable))), "GPUs", "GPUs needed")
        values["memory.headroom"] = q(usable - total, "B", "Headroom")
        warnings = [] if total <= usable else [Warning("out-of-memory", "does not fit", "error", "use more GPUs")]
        return Outputs(values, warnings)


class FakeRoofline:
    info = EstimatorInfo(id="fake.roofline", title="Fake roofline", version="1", produces=ROOFLINE_KEYS)

    def estimate(self, ctx: EstimateContext) -> Outputs:
        gpu = ctx.gpu
        peak = gpu.peak_tflops(ctx.scenario.dtype) or max(gpu.dense_tflops.values())
        bw = gpu.memory_bandwidth_gbps
        values = {
            "roofline.ridge_point": q(peak * 1000 / bw, "FLOP/B", "Ridge point"),
            "roofline.peak_tflops": q(peak, "TFLOPS", "Peak"),
            "roofline.bandwidth_gbps": q(bw, "GB/s", "Bandwidth"),
        }
        phases = {"training": 400.0 * ctx.scenario.batch_size} if ctx.scenario.is_training else {
            "prefill": 50.0 * ctx.scenario.seq_len, "decode": 2.0 * ctx.scenario.batch_size}
        for phase in ("prefill", "decode", "training"):
            ai = phases.get(phase)
            attainable = None if ai is None else min(peak, ai * bw / 1000)
            bound = None if ai is None else ("memory" if ai * bw / 1000 < peak else "compute")
            values[f"roofline.{phase}.arithmetic_intensity"] = q(ai, "FLOP/B", f"{phase} intensity")
            values[f"roofline.{phase}.attainable_tflops"] = q(attainable, "TFLOPS", f"{phase} attainable")
            values[f"roofline.{phase}.bound"] = q(bound, "", f"{phase} bound")
        return Outputs(values)


class FakePerformance:
    info = EstimatorInfo(id="fake.performance", title="Fake performance", version="1", produces=PERF_KEYS,
                         needs=("memory.per_gpu.total",))

    def estimate(self, ctx: EstimateContext) -> Outputs:
        s = ctx.scenario
        return Outputs({
            "performance.tokens_per_s": q(1000.0 * s.batch_size / (1 + s.batch_size / 64), "tokens/s", "Tokens/s"),
            "performance.step_time_s": q(0.5 * s.batch_size, "s", "Step time"),
        })


class Raising:
    info = EstimatorInfo(id="fake.raising", title="Always raises", version="1", produces=("cost.usd_per_hour",))

    def estimate(self, ctx: EstimateContext) -> Outputs:
        raise RuntimeError("price table exploded")
