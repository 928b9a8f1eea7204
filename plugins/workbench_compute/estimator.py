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

from collections.abc import Callable, Mapping

from workbench.core.dtypes import DType, WeightFormat, weight_bits
from workbench.core.hardware import Accelerator
from workbench.core.model import ModelArchitecture
from workbench.core.scenario import AttentionKernel, FinetuneMethod, Recompute, Scenario, Workload
from workbench.core.vision import RequestImages, request_images
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


# Keys and labels per phase, built once rather than formatted in every estimate.
_PHASE_KEYS_OF = {phase: tuple(f"roofline.{phase}.{key}" for key in _PHASE_KEYS) for phase in _PHASES}
_PHASE_LABELS = {
    phase: (
        f"{phase.capitalize()}: FLOPs per GPU",
        f"{phase.capitalize()}: bytes per GPU",
        f"{phase.capitalize()}: arithmetic intensity",
        f"{phase.capitalize()}: attainable TFLOPS",
        f"{phase.capitalize()}: bound by",
    )
    for phase in _PHASES
}
_PHASE_UNITS = ("FLOP", "B", "FLOP/B", "TFLOPS", "")
#: The phase-less keys that repeat the main phase's figures, with their key and label there.
_MAIN_KEYS = ("roofline.arithmetic_intensity", "roofline.attainable_tflops", "roofline.bound")
_MAIN_ALIASES = {
    phase: tuple(
        (f"roofline.{phase}.{key}", label.split(": ", 1)[-1])
        for key, label in zip(_PHASE_KEYS[2:], _PHASE_LABELS[phase][2:])
    )
    for phase in _PHASES
}
_MAIN_NOTES = {phase: f"{phase} phase" for phase in _PHASES}
_RECOMPUTE_TEXT = {
    "full": "every block's forward again (output head excluded)",
    "selective": "the attention products QK^T and PV again",
    "none": "nothing",
}


_FORMATS: dict[tuple[object, ...], tuple[WeightFormat, float]] = {}


def _weight_format(sc: Scenario) -> tuple[WeightFormat, float]:
    """(weight format, bits per weight with scales), cached by the few enum values that decide
    them: ``Scenario.weight_format`` and ``weight_bits`` cost microseconds per call."""
    key = (sc.weights, sc.method, sc.dtype, sc.quant_group_size)
    found = _FORMATS.get(key)
    if found is None:
        if len(_FORMATS) > 1024:
            _FORMATS.clear()
        fmt = sc.weight_format
        found = _FORMATS[key] = (fmt, weight_bits(fmt, sc.quant_group_size))
    return found


# Guard-rail warnings recur with the same inputs in estimate after estimate (one GPU and dtype,
# one MoE model): each is built once and shared (warnings are frozen).
_WARNINGS: dict[tuple[object, ...], tuple[object, Warning]] = {}


def _dtype_warning(wanted: DType, used: DType, rate: float, gpu: Accelerator) -> Warning:
    key = ("dtype", id(gpu), wanted, used, rate)
    hit = _WARNINGS.get(key)
    if hit is None or hit[0] is not gpu:
        found = guards.dtype_warning(wanted, used, rate, gpu)
        assert found is not None  # wanted is not used
        hit = _remember(key, gpu, found)
    return hit[1]


def _moe_warning(shape: ModelShape, arch: ModelArchitecture, active: int, total: int) -> Warning:
    moe = arch.moe
    assert moe is not None
    key = ("moe", id(shape), active, total)
    hit = _WARNINGS.get(key)
    if hit is None or hit[0] is not shape:
        hit = _remember(key, shape, guards.moe_warning(active, total, moe.experts_per_token, moe.num_experts))
    return hit[1]


def _remember(key: tuple[object, ...], owner: object, warning: Warning) -> tuple[object, Warning]:
    if len(_WARNINGS) > 1024:
        _WARNINGS.clear()
    found = _WARNINGS[key] = (owner, warning)
    return found


_NOT_APPLICABLE: dict[tuple[str, str], dict[str, Quantity]] = {}


def _phase_not_applicable(phase: str, why: str) -> Mapping[str, Quantity]:
    """A phase's five roofline keys when the phase does not happen: built once per reason and
    shared by every such estimate (read-only quantities; callers copy the entries, never the dict)."""
    block = _NOT_APPLICABLE.get((phase, why))
    if block is None:
        label = phase.capitalize()
        block = _NOT_APPLICABLE[phase, why] = {
            f"roofline.{phase}.{key}": not_applicable(f"{label}: {key}", unit, why)
            for key, unit in zip(_PHASE_KEYS, _PHASE_UNITS)
        }
    return block


#: The training FLOP keys of an inference scenario (shared, read-only; copied into each estimate).
_NO_TRAINING_FLOPS: Mapping[str, Quantity] = {
    key: not_applicable(label, "FLOP", "inference scenario: no training step")
    for key, label in (
        ("flops.backward", "Backward pass"),
        ("flops.recompute", "Activation recompute"),
        ("flops.training_step", "Training step (one micro-batch)"),
    )
}


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
        # A run for a few keys (a sweep) builds only those (and what they are computed from).
        want = _always if ctx.wanted is None else ctx.wanted.__contains__

        fwd = F.full_pass(shape, b, s, discount, lora_targets=targets, lora_rank=sc.lora_rank)
        pre = F.full_pass(shape, b, s, discount, head_all=False)
        tokens = b * (shape.tokens_per_sample or s)
        used = (CAUSAL,)
        if want("flops.forward"):
            values["flops.forward"] = q(
                fwd.total, "FLOP", "Forward pass", lambda: pass_formula(shape, b, fwd), used
            )
        if want("flops.per_token_forward"):
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
        if want("flops.prefill"):
            # The engine has already put the images' tokens into seq_len; their encoder runs once per image.
            images = request_images(arch, sc)
            encoder = b * images.encoder_flops if images is not None else 0.0
            values["flops.prefill"] = q(
                pre.total + encoder,
                "FLOP",
                "Prefill (prompt) pass",
                lambda: pass_formula(shape, b, pre) + " (output head on the last position only)"
                + (_encoder_formula(arch, b, images) if images is not None else ""),
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
            dec_used = (DECODE_CONTEXT, MLA_LATENT) if arch.mla is not None else (DECODE_CONTEXT,)
            if want("flops.decode_step"):
                values["flops.decode_step"] = q(
                    dec.total,
                    "FLOP",
                    "One decode step",
                    lambda: (
                        f"batch {b}, context {s} + {fraction:g} x {sc.gen_len} = "
                        f"{F.decode_contexts(shape, s, sc.gen_len, fraction)[0]:g}: "
                        + pass_formula(shape, b, dec, latent, decode=True)
                    ),
                    dec_used,
                )
        else:
            if want("flops.decode_step"):
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
            if want("flops.backward"):
                values["flops.backward"] = q(
                    train.backward, "FLOP", "Backward pass", lambda: f"{kind}: {g(train.backward)} FLOP", used
                )
            if want("flops.recompute"):
                values["flops.recompute"] = q(
                    train.recompute,
                    "FLOP",
                    "Activation recompute",
                    lambda: (
                        f"recompute {sc.recompute.value}: {_RECOMPUTE_TEXT[sc.recompute.value]} = "
                        f"{g(train.recompute)} FLOP"
                    ),
                    used,
                )
            if want("flops.training_step"):
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
            values.update(_NO_TRAINING_FLOPS)

        # --- roofline -----------------------------------------------------------------------------
        weight_format, w_bits = _weight_format(sc)
        wanted = compute_dtype(sc.dtype, weight_format)
        peak, rate_dtype = peak_tflops(gpu, wanted)
        bw = gpu.memory_bandwidth_gbps
        ridge = peak * 1000.0 / bw
        par = sc.parallel
        tp, pp, ep = par.tp, par.pp, par.ep
        act_bytes, kv_bytes = sc.dtype.bytes, sc.kv_cache_dtype.bytes
        w_bytes = w_bits / 8
        # Routed experts the checkpoint stores in a format of their own (gpt-oss: MXFP4) are read
        # at that format when the scenario serves the checkpoint's weights.
        own = sc.expert_format(arch.moe.expert_weight_format if arch.moe is not None else None)
        e_bytes = weight_bits(own) / 8 if own is not None else 0.0
        eager = sc.attention is AttentionKernel.EAGER
        prefill = phase_roofline(
            shape, pre, b, tp=tp, pp=pp, ep=ep, decode=False, eager=eager, latent=False,
            weight_bytes=w_bytes, act_bytes=act_bytes, kv_bytes=kv_bytes, expert_bytes=e_bytes,
        )
        images = request_images(arch, sc)
        if images is not None:  # the vision encoder's work, split over the GPUs like the prompt's
            prefill = PhaseRoofline(
                prefill.flops + b * images.encoder_flops / (tp * pp),
                prefill.weight_bytes, prefill.activation_bytes, prefill.attention_bytes,
            )
        decode = None
        if dec is not None:
            decode = phase_roofline(
                shape, dec, b, tp=tp, pp=pp, ep=ep, decode=True, eager=eager, latent=latent,
                weight_bytes=w_bytes, act_bytes=act_bytes, kv_bytes=kv_bytes, expert_bytes=e_bytes,
            )
        train_roof = None
        if training:
            passes = (2.0 if frozen else 3.0) + (1.0 if sc.recompute is Recompute.FULL else 0.0)
            train_roof = training_roofline(shape, fwd, tp=tp, pp=pp, ep=ep, passes=passes, act_bytes=act_bytes)

        def note(phase: str) -> str:  # rendered only inside a formula someone reads
            where = f"per GPU: TP {tp}, PP {pp}" + (f", EP {ep}" if ep > 1 else "")
            experts = f" (routed experts {own.value}, {e_bytes:g} B)" if own is not None else ""
            if phase == "prefill":
                text = f"{b} x {s} prompt tokens; weights {w_bytes:g} B each{experts}, activations {act_bytes:g} B"
                if images is not None:
                    text += f"; with the vision encoder over {b} x {images.images} image(s)"
            elif phase == "decode":
                text = f"{b} new tokens; weights {w_bytes:g} B each{experts}, KV cache {kv_bytes:g} B per element"
            else:
                text = f"weight GEMMs of one micro-batch step, {b} x {s} tokens, operands {act_bytes:g} B"
            return f"{text}; {where}"

        main = "training" if training else ("decode" if dec is not None else "prefill")
        sources: tuple[Quantity, ...] = ()
        for phase, roof in (("prefill", prefill), ("decode", decode), ("training", train_roof)):
            made = self._phase(values, phase, roof, peak, bw, ridge, note, training, want, phase == main)
            sources = made or sources
        if want("roofline.phase"):
            values["roofline.phase"] = q(main, "", "Main phase", lambda: f"{main} ({sc.workload.value})")
        # The main phase's figures again under phase-less keys (the main phase always has a roofline).
        for key, (_, label), src in zip(_MAIN_KEYS, _MAIN_ALIASES[main], sources):
            if want(key):
                values[key] = q(
                    src.value, src.unit, label, lambda src=src: src.formula, src.assumptions, _MAIN_NOTES[main]
                )
        if want("roofline.ridge_point"):
            values["roofline.ridge_point"] = q(
                ridge, "FLOP/B", "Ridge point", lambda: f"{peak:g} TFLOPS / {bw:g} GB/s = {ridge:.1f} FLOP/B"
            )
        if want("roofline.peak_tflops"):
            values["roofline.peak_tflops"] = q(
                peak, "TFLOPS", "Dense peak", lambda: f"{gpu.name} dense {rate_dtype.value}: {peak:g} TFLOPS"
            )
        if want("roofline.bandwidth_gbps"):
            values["roofline.bandwidth_gbps"] = q(
                bw, "GB/s", "Memory bandwidth", lambda: f"{gpu.name}: {bw:g} GB/s"
            )
        if want("roofline.compute_dtype"):
            values["roofline.compute_dtype"] = q(
                rate_dtype.value,
                "",
                "Compute dtype",
                lambda: (
                    f"dtype {sc.dtype.value}, weights {weight_format.value} -> matmuls in {wanted.value}"
                    + ("" if wanted is rate_dtype else f", run at the {rate_dtype.value} rate")
                ),
            )

        # --- guard-rails --------------------------------------------------------------------------
        if wanted is not rate_dtype:
            warnings.append(_dtype_warning(wanted, rate_dtype, peak, gpu))
        align = self._alignment(shape, arch, par.tp, rate_dtype)
        if align is not None:
            warnings.append(align)
        if arch.moe is not None:
            warnings.append(_moe_warning(shape, arch, ctx.params.active, ctx.params.total))
        return Outputs(values, warnings)

    @staticmethod
    def _phase(
        values: dict[str, Quantity],
        phase: str,
        roof: PhaseRoofline | None,
        peak: float,
        bw: float,
        ridge: float,
        note: Callable[[str], str],
        training: bool,
        want: Callable[[str], bool],
        main: bool,
    ) -> tuple[Quantity, ...]:
        """A phase's roofline keys. The main phase returns its (intensity, attainable, bound)
        quantities, which the phase-less keys repeat (built even when only those are wanted)."""
        if roof is None:
            why = (
                "inference scenario: no training step"
                if phase == "training" and not training
                else "the model does not generate tokens"
            )
            values.update(_phase_not_applicable(phase, why))
            return ()
        k_flops, k_bytes, k_ai, k_attainable, k_bound = _PHASE_KEYS_OF[phase]
        l_flops, l_bytes, l_ai, l_attainable, l_bound = _PHASE_LABELS[phase]
        ai = roof.intensity
        attainable = roof.attainable_tflops(peak, bw)
        bound = "compute" if ai >= ridge else "memory"
        if want(k_flops):
            values[k_flops] = q(roof.flops, "FLOP", l_flops, lambda: f"{g(roof.flops)} FLOP ({note(phase)})")
        if want(k_bytes):
            values[k_bytes] = q(
                roof.bytes,
                "B",
                l_bytes,
                lambda: (
                    f"weights {g(roof.weight_bytes)} + activations {g(roof.activation_bytes)} + "
                    f"attention / KV cache {g(roof.attention_bytes)} = {g(roof.bytes)} B ({note(phase)})"
                ),
            )
        alias = main and any(map(want, _MAIN_KEYS))
        made: list[Quantity] = []
        if alias or want(k_ai):
            made.append(q(ai, "FLOP/B", l_ai, lambda: f"{g(roof.flops)} FLOP / {g(roof.bytes)} B = {ai:.2f}"))
            if want(k_ai):
                values[k_ai] = made[-1]
        if alias or want(k_attainable):
            made.append(
                q(
                    attainable,
                    "TFLOPS",
                    l_attainable,
                    lambda: f"min({peak:g} TFLOPS, {ai:.2f} FLOP/B x {bw:g} GB/s) = {attainable:.1f} TFLOPS",
                )
            )
            if want(k_attainable):
                values[k_attainable] = made[-1]
        if alias or want(k_bound):
            made.append(
                q(
                    bound,
                    "",
                    l_bound,
                    lambda: (
                        f"intensity {ai:.2f} {'>=' if bound == 'compute' else '<'} ridge {ridge:.1f} FLOP/B: "
                        f"{bound}"
                    ),
                )
            )
            if want(k_bound):
                values[k_bound] = made[-1]
        return tuple(made) if alias else ()

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


def _always(key: str) -> bool:
    return True


def _encoder_formula(arch: ModelArchitecture, batch: int, images: RequestImages) -> str:
    """The vision encoder's share of the prefill: its GEMMs and attention over each image's patches."""
    e, tower = images.encoder, arch.vision_tower
    assert tower is not None
    kind = "windowed" if tower.attention.value == "windowed" else "full"
    return (
        f" + vision encoder {batch} x {images.images} image(s) x {g(e.total)} = {g(batch * images.encoder_flops)} "
        f"(patch embedding {g(e.patch_embed)}, {tower.num_layers} blocks' GEMMs {g(e.blocks)}, {kind} attention over "
        f"{images.layout.sequence_tokens:,} tokens x {images.layout.sequences} sequence(s) {g(e.attention)}, "
        f"merger/projector {g(e.projector)} per image)"
    )
