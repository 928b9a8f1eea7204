"""The compute estimator: FLOPs per pass, roofline per phase, and compute guard-rails.

Result keys (the documented JSON contract; FLOP counts are whole-model, roofline figures are per
GPU of one model replica):

``flops.forward``, ``flops.per_token_forward``, ``flops.prefill``, ``flops.decode_step``,
``flops.backward``, ``flops.recompute``, ``flops.training_step``; ``roofline.<phase>.{flops,
bytes, arithmetic_intensity, attainable_tflops, bound}`` for phase ``prefill``, ``decode`` and
``training``; ``roofline.{phase, arithmetic_intensity, attainable_tflops, bound}`` for the
scenario's main phase (decode for inference, prefill for encoder-only inference, the training
step for training); ``roofline.{ridge_point, peak_tflops, bandwidth_gbps, compute_dtype}``.

Quantities that do not apply are present with value ``None`` and a note saying why: the
training keys for an inference scenario (there is no training step to count), the decode keys
for a model that does not generate (encoder-only, vision).
"""

from __future__ import annotations

from workbench.core.dtypes import DType, weight_bits
from workbench.core.model import ModelArchitecture
from workbench.core.scenario import AttentionKernel, FinetuneMethod, Recompute, Workload
from workbench.engine.estimator import EstimateContext, EstimatorInfo
from workbench.engine.quantity import Outputs, Quantity, Warning, q
from workbench_compute import flops as F
from workbench_compute import guards
from workbench_compute.assumptions import ASSUMPTIONS, CAUSAL, DECODE_CONTEXT, MLA_LATENT
from workbench_compute.explain import g, not_applicable, pass_formula
from workbench_compute.roofline import (
    PhaseRoofline,
    compute_dtype,
    peak_tflops,
    phase_roofline,
    training_roofline,
)
from workbench_compute.shapes import LORA_ALL_LINEAR, LORA_ATTENTION, ModelShape, model_shape

VERSION = "1.0.0"

_PHASES = ("prefill", "decode", "training")
_PHASE_KEYS = ("flops", "bytes", "arithmetic_intensity", "attainable_tflops", "bound")
PRODUCES: tuple[str, ...] = (
    "flops.forward",
    "flops.per_token_forward",
    "flops.prefill",
    "flops.decode_step",
    "flops.backward",
    "flops.recompute",
    "flops.training_step",
    *(f"roofline.{phase}.{key}" for phase in _PHASES for key in _PHASE_KEYS),
    "roofline.phase",
    "roofline.arithmetic_intensity",
    "roofline.attainable_tflops",
    "roofline.bound",
    "roofline.ridge_point",
    "roofline.peak_tflops",
    "roofline.bandwidth_gbps",
    "roofline.compute_dtype",
)


class ComputeEstimator:
    """FLOPs, arithmetic intensity, roofline and compute guard-rails for one scenario."""

    info = EstimatorInfo(
        id="compute",
        title="Compute: FLOPs and roofline",
        version=VERSION,
        produces=PRODUCES,
        assumptions=ASSUMPTIONS,
        description="FLOPs of forward, backward, recompute, prefill and decode; per-GPU roofline per phase; "
        "dtype and Tensor Core alignment guard-rails.",
    )

    def estimate(self, ctx: EstimateContext) -> Outputs:
        sc, arch, gpu = ctx.scenario, ctx.model, ctx.cluster.accelerator
        shape = model_shape(arch)
        a = ctx.assumptions
        discount = a[CAUSAL]
        b, s = sc.batch_size, sc.seq_len
        training = sc.workload is not Workload.INFERENCE
        frozen = sc.workload is Workload.FINETUNE and sc.method is not FinetuneMethod.FULL
        targets = (LORA_ATTENTION if sc.lora_targets == "attention" else LORA_ALL_LINEAR) if frozen else 0
        values: dict[str, Quantity] = {}
        warnings: list[Warning] = []

        fwd = F.full_pass(shape, b, s, discount, lora_targets=targets, lora_rank=sc.lora_rank)
        pre = F.full_pass(shape, b, s, discount, head_all=False)
        tokens = b * (shape.tokens_per_sample or s)
        used = (CAUSAL,)
        values["flops.forward"] = q(
            fwd.total, "FLOP", "Forward pass", lambda: pass_formula(shape, b, fwd), used
        )
        values["flops.per_token_forward"] = q(
            fwd.total / tokens,
            "FLOP/token",
            "Forward FLOPs per token",
            lambda: (
                f"{g(fwd.total)} / {tokens:,} tokens = 2 x {fwd.gemm / tokens / 2:,.0f} matmul weights per "
                f"token + attention {g(fwd.attention / tokens)}"
                + (f" + adapters {g(fwd.lora / tokens)}" if fwd.lora else "")
            ),
            used,
        )
        values["flops.prefill"] = q(
            pre.total,
            "FLOP",
            "Prefill (prompt) pass",
            lambda: pass_formula(shape, b, pre) + " (output head on the last position only)",
            used,
        )

        # --- decode -------------------------------------------------------------------------------
        latent = False
        dec: F.Pass | None = None
        if shape.is_decoder:
            fraction = a[DECODE_CONTEXT]
            if arch.mla is not None:
                latent = a[MLA_LATENT] >= 0.5
            dec = F.decode_step(shape, b, s, sc.gen_len, fraction, latent)
            ctx_len, _ = F.decode_contexts(shape, s, sc.gen_len, fraction)
            dec_used = (DECODE_CONTEXT, MLA_LATENT) if arch.mla is not None else (DECODE_CONTEXT,)
            values["flops.decode_step"] = q(
                dec.total,
                "FLOP",
                "One decode step",
                lambda: (
                    f"batch {b}, context {s} + {fraction:g} x {sc.gen_len} = {ctx_len:g}: "
                    + pass_formula(shape, b, dec, latent, decode=True)
                ),
                dec_used,
            )
        else:
            values["flops.decode_step"] = not_applicable(
                "One decode step", "FLOP", f"{arch.name} does not generate tokens"
            )

        # --- training -----------------------------------------------------------------------------
        if training:
            train = F.training_flops(fwd, frozen, sc.recompute.value)
            kind = (
                "frozen base matrices 1x (input gradient), adapters and attention 2x"
                if frozen
                else "2 x every matmul and attention product"
            )
            values["flops.backward"] = q(
                train.backward, "FLOP", "Backward pass", lambda: f"{kind}: {g(train.backward)} FLOP", used
            )
            how = {
                "full": "every block's forward again (output head excluded)",
                "selective": "the attention products QK^T and PV again",
                "none": "nothing",
            }[sc.recompute.value]
            values["flops.recompute"] = q(
                train.recompute,
                "FLOP",
                "Activation recompute",
                lambda: f"recompute {sc.recompute.value}: {how} = {g(train.recompute)} FLOP",
                used,
            )
            values["flops.training_step"] = q(
                train.step,
                "FLOP",
                "Training step (one micro-batch)",
                lambda: (
                    f"forward {g(train.forward)} + backward {g(train.backward)} + recompute "
                    f"{g(train.recompute)} = {g(train.step)} FLOP"
                ),
                used,
            )
        else:
            why = "inference scenario: no training step"
            for key, label in (
                ("flops.backward", "Backward pass"),
                ("flops.recompute", "Activation recompute"),
                ("flops.training_step", "Training step (one micro-batch)"),
            ):
                values[key] = not_applicable(label, "FLOP", why)

        # --- roofline -----------------------------------------------------------------------------
        wanted = compute_dtype(sc.dtype, sc.weight_format)
        peak, rate_dtype = peak_tflops(gpu, wanted)
        bw = gpu.memory_bandwidth_gbps
        ridge = peak * 1000.0 / bw
        par = sc.parallel
        layout = {"tp": par.tp, "pp": par.pp, "ep": par.ep}
        act_bytes, kv_bytes = sc.dtype.bytes, sc.kv_cache_dtype.bytes
        w_bytes = weight_bits(sc.weight_format, sc.quant_group_size) / 8
        widths = {"weight_bytes": w_bytes, "act_bytes": act_bytes, "kv_bytes": kv_bytes}
        eager = sc.attention is AttentionKernel.EAGER
        phases: dict[str, PhaseRoofline | None] = {
            "prefill": phase_roofline(
                shape, pre, b, decode=False, eager=eager, latent=False, **layout, **widths
            ),
            "decode": None,
            "training": None,
        }
        if dec is not None:
            phases["decode"] = phase_roofline(
                shape, dec, b, decode=True, eager=eager, latent=latent, **layout, **widths
            )
        if training:
            passes = (2.0 if frozen else 3.0) + (1.0 if sc.recompute is Recompute.FULL else 0.0)
            phases["training"] = training_roofline(shape, fwd, passes=passes, act_bytes=act_bytes, **layout)
        where = f"per GPU: TP {par.tp}, PP {par.pp}" + (f", EP {par.ep}" if par.ep > 1 else "")
        notes = {
            "prefill": f"{b} x {s} prompt tokens; weights {w_bytes:g} B each, activations {act_bytes:g} B",
            "decode": f"{b} new tokens; weights {w_bytes:g} B each, KV cache {kv_bytes:g} B per element",
            "training": f"weight GEMMs of one micro-batch step, {b} x {s} tokens, operands {act_bytes:g} B",
        }
        for phase, roof in phases.items():
            self._phase(values, phase, roof, peak, bw, ridge, f"{notes[phase]}; {where}", training)
        main = "training" if training else ("decode" if dec is not None else "prefill")
        values["roofline.phase"] = q(main, "", "Main phase", lambda: f"{main} ({sc.workload.value})")
        for key in ("arithmetic_intensity", "attainable_tflops", "bound"):
            src = values[f"roofline.{main}.{key}"]
            values[f"roofline.{key}"] = q(
                src.value,
                src.unit,
                src.label.split(": ", 1)[-1],
                lambda src=src: src.formula,
                src.assumptions,
                f"{main} phase",
            )
        values["roofline.ridge_point"] = q(
            ridge, "FLOP/B", "Ridge point", lambda: f"{peak:g} TFLOPS / {bw:g} GB/s = {ridge:.1f} FLOP/B"
        )
        values["roofline.peak_tflops"] = q(
            peak, "TFLOPS", "Dense peak", lambda: f"{gpu.name} dense {rate_dtype.value}: {peak:g} TFLOPS"
        )
        values["roofline.bandwidth_gbps"] = q(
            bw, "GB/s", "Memory bandwidth", lambda: f"{gpu.name}: {bw:g} GB/s"
        )
        values["roofline.compute_dtype"] = q(
            rate_dtype.value,
            "",
            "Compute dtype",
            lambda: (
                f"dtype {sc.dtype.value}, weights {sc.weight_format.value} -> matmuls in {wanted.value}"
                + ("" if wanted is rate_dtype else f", run at the {rate_dtype.value} rate")
            ),
        )

        # --- guard-rails --------------------------------------------------------------------------
        dtype_problem = guards.dtype_warning(wanted, rate_dtype, peak, gpu)
        if dtype_problem is not None:
            warnings.append(dtype_problem)
        align = self._alignment(shape, arch, par.tp, rate_dtype)
        if align is not None:
            warnings.append(align)
        if arch.moe is not None:
            warnings.append(
                guards.moe_warning(
                    ctx.params.active, ctx.params.total, arch.moe.experts_per_token, arch.moe.num_experts
                )
            )
        return Outputs(values, warnings)

    @staticmethod
    def _phase(
        values: dict[str, Quantity],
        phase: str,
        roof: PhaseRoofline | None,
        peak: float,
        bw: float,
        ridge: float,
        note: str,
        training: bool,
    ) -> None:
        label = phase.capitalize()
        if roof is None:
            why = (
                "inference scenario: no training step"
                if phase == "training" and not training
                else "the model does not generate tokens"
            )
            for key, unit in zip(_PHASE_KEYS, ("FLOP", "B", "FLOP/B", "TFLOPS", "")):
                values[f"roofline.{phase}.{key}"] = not_applicable(f"{label}: {key}", unit, why)
            return
        ai = roof.intensity
        attainable = roof.attainable_tflops(peak, bw)
        bound = "compute" if ai >= ridge else "memory"
        values[f"roofline.{phase}.flops"] = q(
            roof.flops, "FLOP", f"{label}: FLOPs per GPU", lambda: f"{g(roof.flops)} FLOP ({note})"
        )
        values[f"roofline.{phase}.bytes"] = q(
            roof.bytes,
            "B",
            f"{label}: bytes per GPU",
            lambda: (
                f"weights {g(roof.weight_bytes)} + activations {g(roof.activation_bytes)} + "
                f"attention / KV cache {g(roof.attention_bytes)} = {g(roof.bytes)} B ({note})"
            ),
        )
        values[f"roofline.{phase}.arithmetic_intensity"] = q(
            ai,
            "FLOP/B",
            f"{label}: arithmetic intensity",
            lambda: f"{g(roof.flops)} FLOP / {g(roof.bytes)} B = {ai:.2f}",
        )
        values[f"roofline.{phase}.attainable_tflops"] = q(
            attainable,
            "TFLOPS",
            f"{label}: attainable TFLOPS",
            lambda: f"min({peak:g} TFLOPS, {ai:.2f} FLOP/B x {bw:g} GB/s) = {attainable:.1f} TFLOPS",
        )
        values[f"roofline.{phase}.bound"] = q(
            bound,
            "",
            f"{label}: bound by",
            lambda: (
                f"intensity {ai:.2f} {'>=' if bound == 'compute' else '<'} ridge {ridge:.1f} FLOP/B: {bound}"
            ),
        )

    @staticmethod
    def _alignment(shape: ModelShape, arch: ModelArchitecture, tp: int, dtype: DType) -> Warning | None:
        key = (tp, dtype)
        if key not in shape.alignment_cache:
            if arch.mla is not None:
                heads = kv_heads = arch.num_attention_heads
                head_dim = arch.mla.qk_head_dim
            else:
                heads, kv_heads, head_dim = arch.num_attention_heads, arch.num_kv_heads, arch.head_dim
            shape.alignment_cache[key] = guards.alignment_warning(shape, heads, kv_heads, head_dim, tp, dtype)
        return shape.alignment_cache[key]
