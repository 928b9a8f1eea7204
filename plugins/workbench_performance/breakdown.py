"""The per-operator breakdown of a step, for charts and reports: which kernels, how long, what bounds each.

    from workbench_performance import kernels_for
    for phase in kernels_for(estimate):
        phase.title, phase.profile, [(k.name, k.seconds, k.bound) for k in phase.kernels]

Serving scenarios give the decode step at the scenario's concurrency and the prefill of one
prompt; training scenarios the forward pass of one micro-batch (backward: twice its GEMMs).
Times are per pipeline stage, kernels only: communication and per-step overhead are the
performance keys' (``communication.*``, ``performance.decode_step_s``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench_performance.efficiency import efficiencies
from workbench_performance.inference import decode_kernels, prefill_kernels
from workbench_performance.inputs import Source, inference_inputs, training_inputs
from workbench_performance.operators.cost import PassKernels
from workbench_performance.training import forward_kernels


@dataclass(frozen=True, slots=True)
class Kernel:
    name: str  # kernel group: attention.qkv, mlp.up, moe.experts.up, attention, ...
    seconds: float  # all kernels of the group in one pass of one stage
    bound: str  # compute, memory or latency


@dataclass(frozen=True, slots=True)
class Phase:
    title: str
    profile: str  # the kernel profile's title
    generic: bool  # no kernel data for this accelerator: the generic profile was used
    kernels: tuple[Kernel, ...]

    @property
    def total_s(self) -> float:
        return sum(k.seconds for k in self.kernels)


def _phase(title: str, k: PassKernels, profile: Any) -> Phase:
    rows = tuple(Kernel(name, float(t), bound) for name, t, bound in k.rows or ())
    return Phase(title, profile.title, bool(profile.generic), rows)


def kernels_for(estimate: Any) -> tuple[Phase, ...]:
    """The kernel breakdown of an estimate (or an estimator context); () when it has no speed model
    (a scenario whose FLOPs the compute plugin could not count)."""
    src = Source.of(estimate)
    sc = src.scenario
    if sc.is_training:
        if src.number("flops.forward") is None:
            return ()
        inp = training_inputs(src)
        central, _, _ = efficiencies(src.assumptions, training=True)
        return (_phase(f"forward of one micro-batch ({inp.tokens_mb:,.0f} tokens)", forward_kernels(inp, central, breakdown=True), inp.profile),)
    if src.number("roofline.prefill.flops") is None:
        return ()
    inp = inference_inputs(src)
    central, _, _ = efficiencies(src.assumptions, training=False, mfu=sc.mfu)
    phases = []
    if inp.generates and inp.gen_len:
        phases.append(_phase(f"decode step, {inp.batch} sequence{'' if inp.batch == 1 else 's'}", decode_kernels(inp, central, inp.batch, breakdown=True), inp.profile))
    phases.append(_phase(f"prefill of one {inp.seq_len:,}-token prompt", prefill_kernels(inp, central, 1, breakdown=True), inp.profile))
    return tuple(phases)
