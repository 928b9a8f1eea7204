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

from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.core.dtypes import DType, WeightFormat, weight_bits
from workbench.core.hardware import Accelerator
from workbench.core.model import ModelArchitecture
from workbench.core.scenario import AttentionKernel, FinetuneMethod, Recompute, Scenario, Workload
from workbench.core.vision import RequestImages, request_images
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.points import Column, PointOutputs, PointsContext, PointWarning, at, col
from workbench.engine.quantity import Warning
from workbench_compute import flops as F
from workbench_compute import guards
from workbench_compute.assumptions import ASSUMPTIONS, CAUSAL, DECODE_CONTEXT, MLA_LATENT
from workbench_compute.explain import g, pass_formula
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
#: Keys read off the forward pass, and the training step's FLOP keys.
_FORWARD_KEYS = ("flops.forward", "flops.per_token_forward")
_TRAINING_KEYS = ("flops.backward", "flops.recompute", "flops.training_step")
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
        fmt = WeightFormat(sc.weight_format)  # an unvalidated model_copy may hold the string
        found = _FORMATS[key] = (fmt, weight_bits(fmt, sc.quant_group_size))
    return found


# Guard-rail warnings recur with the same inputs in group after group (one GPU and dtype, one MoE
# model): each is built once and shared (warnings are frozen; they concern every point).
_WARNINGS: dict[tuple[object, ...], tuple[object, PointWarning]] = {}


def _dtype_warning(wanted: DType, used: DType, rate: float, gpu: Accelerator) -> PointWarning:
    key = ("dtype", id(gpu), wanted, used, rate)
    hit = _WARNINGS.get(key)
    if hit is None or hit[0] is not gpu:
        found = guards.dtype_warning(wanted, used, rate, gpu)
        assert found is not None  # wanted is not used
        hit = _remember(key, gpu, found)
    return hit[1]


def _moe_warning(shape: ModelShape, arch: ModelArchitecture, active: int, total: int) -> PointWarning:
    moe = arch.moe
    assert moe is not None
    key = ("moe", id(shape), active, total)
    hit = _WARNINGS.get(key)
    if hit is None or hit[0] is not shape:
        hit = _remember(key, shape, guards.moe_warning(active, total, moe.experts_per_token, moe.num_experts))
    return hit[1]


def _remember(key: tuple[object, ...], owner: object, warning: Warning) -> tuple[object, PointWarning]:
    if len(_WARNINGS) > 1024:
        _WARNINGS.clear()
    found = _WARNINGS[key] = (owner, _every_point(warning))
    return found


def _every_point(warning: Warning) -> PointWarning:
    return PointWarning(warning.code, warning.message, warning.severity, warning.fix)


def _not_applicable(label: str, unit: str, why: str) -> Column:
    """A result that does not apply, with the reason, for every point. Built per group: a column
    keeps the array it is read as, so one instance is never shared between groups of other sizes."""
    return col(None, unit, label, why, note=why)


def _phase_not_applicable(phase: str, why: str) -> dict[str, Column]:
    """A phase's five roofline keys when the phase does not happen."""
    label = phase.capitalize()
    return {
        f"roofline.{phase}.{key}": _not_applicable(f"{label}: {key}", unit, why)
        for key, unit in zip(_PHASE_KEYS, _PHASE_UNITS)
    }


#: The training FLOP keys of an inference scenario.
_NO_TRAINING_FLOPS = (
    ("flops.backward", "Backward pass"),
    ("flops.recompute", "Activation recompute"),
    ("flops.training_step", "Training step (one micro-batch)"),
)


def _shared(values: Any) -> Any:
    """A column's values: an array over the points, or one Python number every point shares."""
    return values.item() if isinstance(values, np.generic) else values


class ComputeEstimator:
    """FLOPs, arithmetic intensity, roofline and compute guard-rails over a point group.

    What depends only on the model, precision and layout (the model's shape, per-GPU coefficients,
    peak rate, ridge point, guard-rails) is worked out once per group; FLOPs and bytes are numpy
    arrays over the group's batch sizes, prompt and generation lengths.
    """

    info = EstimatorInfo(
        id="compute",
        title="Compute: FLOPs and roofline",
        version=VERSION,
        produces=PRODUCES,
        assumptions=ASSUMPTIONS,
        description="FLOPs of forward, backward, recompute, prefill and decode; per-GPU roofline per phase; "
        "dtype and Tensor Core alignment guard-rails.",
    )

    def estimate_points(self, ctx: PointsContext) -> PointOutputs:
        sc, arch, gpu = ctx.scenario, ctx.model, ctx.cluster.accelerator
        shape = model_shape(arch)
        a = ctx.assumptions
        discount = a[CAUSAL]
        b, s, gen = ctx.points["batch_size"], ctx.points["seq_len"], ctx.points["gen_len"]
        if ctx.n == 1:
            # A group of one point (a single estimate): the same formulas over Python numbers, the
            # order of operations unchanged, without numpy's per-call cost on one-entry arrays.
            b, s, gen = int(b[0]), int(s[0]), int(gen[0])
        training = sc.workload is not Workload.INFERENCE
        frozen = sc.workload is Workload.FINETUNE and sc.method is not FinetuneMethod.FULL
        targets = (LORA_ATTENTION if sc.lora_targets == "attention" else LORA_ALL_LINEAR) if frozen else 0
        values: dict[str, Column] = {}
        warnings: list[PointWarning] = []
        # A run for a few keys (a sweep) computes only those (and what they are computed from).
        want = _always if ctx.wanted is None else ctx.wanted.__contains__
        main = "training" if training else ("decode" if shape.is_decoder else "prefill")
        alias = any(map(want, _MAIN_KEYS))

        def phase_wanted(phase: str) -> bool:
            return alias and phase == main or any(map(want, _PHASE_KEYS_OF[phase]))

        used = (CAUSAL,)
        fwd: F.Pass | None = None
        if (
            any(map(want, _FORWARD_KEYS))
            or training
            and (any(map(want, _TRAINING_KEYS)) or phase_wanted("training"))
        ):
            fwd = F.full_pass(shape, b, s, discount, lora_targets=targets, lora_rank=sc.lora_rank)
        pre: F.Pass | None = None
        if want("flops.prefill") or phase_wanted("prefill"):
            pre = F.full_pass(shape, b, s, discount, head_all=False)
        if want("flops.forward"):
            assert fwd is not None
            forward = fwd
            values["flops.forward"] = col(
                fwd.total,
                "FLOP",
                "Forward pass",
                lambda i: pass_formula(shape, at(b, i), forward.at(i)),
                used,
            )
        if want("flops.per_token_forward"):
            assert fwd is not None
            values["flops.per_token_forward"] = self._per_token(shape, b, s, fwd, used)
        images = request_images(arch, sc)
        if want("flops.prefill"):
            assert pre is not None
            # The engine has already put the images' tokens into seq_len; their encoder runs once per image.
            encoder = b * images.encoder_flops if images is not None else 0.0
            prompt = pre
            values["flops.prefill"] = col(
                pre.total + encoder,
                "FLOP",
                "Prefill (prompt) pass",
                lambda i: (
                    pass_formula(shape, at(b, i), prompt.at(i))
                    + " (output head on the last position only)"
                    + (_encoder_formula(arch, at(b, i), images) if images is not None else "")
                ),
                used,
            )

        # --- decode -------------------------------------------------------------------------------
        latent = False
        dec: F.Pass | None = None
        if shape.is_decoder:
            fraction = a[DECODE_CONTEXT]
            if arch.mla is not None:
                latent = a[MLA_LATENT] >= 0.5
            if want("flops.decode_step") or phase_wanted("decode"):
                dec = F.decode_step(shape, b, s, gen, fraction, latent)
            dec_used = (DECODE_CONTEXT, MLA_LATENT) if arch.mla is not None else (DECODE_CONTEXT,)
            if want("flops.decode_step"):
                assert dec is not None
                step = dec

                def decode_formula(i: int) -> str:
                    bi, si, gi = at(b, i), at(s, i), at(gen, i)
                    return (
                        f"batch {bi}, context {si} + {fraction:g} x {gi} = "
                        f"{F.decode_contexts(shape, si, gi, fraction)[0]:g}: "
                        + pass_formula(shape, bi, step.at(i), latent, decode=True)
                    )

                values["flops.decode_step"] = col(
                    dec.total, "FLOP", "One decode step", decode_formula, dec_used
                )
        else:
            if want("flops.decode_step"):
                values["flops.decode_step"] = _not_applicable(
                    "One decode step", "FLOP", f"{arch.name} does not generate tokens"
                )

        # --- training -----------------------------------------------------------------------------
        if training:
            if any(map(want, _TRAINING_KEYS)):
                assert fwd is not None
                self._training(
                    values, want, F.training_flops(fwd, frozen, sc.recompute.value), frozen, sc, used
                )
        else:
            for key, label in _NO_TRAINING_FLOPS:
                values[key] = _not_applicable(label, "FLOP", "inference scenario: no training step")

        # --- roofline -----------------------------------------------------------------------------
        weight_format, w_bits = _weight_format(sc)
        wanted = compute_dtype(sc.dtype, weight_format, training=sc.is_training)
        peak, rate_dtype = peak_tflops(gpu, wanted)
        bw = gpu.memory_bandwidth_gbps
        ridge = peak * 1000.0 / bw
        par = sc.parallel
        tp, pp, ep = par.tp, par.pp, par.ep
        act_bytes, kv_bytes = sc.dtype.bytes, sc.kv_cache_dtype.bytes
        # Routed experts the checkpoint stores in a format of their own (gpt-oss: MXFP4) are read
        # at that format when the scenario serves the checkpoint's weights.
        own = sc.expert_format(arch.moe.expert_weight_format if arch.moe is not None else None)
        w_bytes, e_bytes = w_bits / 8, (weight_bits(own) / 8 if own is not None else 0.0)
        if weight_format.is_gguf:
            # A GGUF preset reads the model's real bytes: its tensors' types, averaged per matmul
            # weight (imported here: only GGUF scenarios pay for loading its tables).
            from workbench.core.gguf import preset_bytes

            layout = preset_bytes(arch, weight_format.value)
            w_bytes, e_bytes = layout.dense_matmul(), layout.per_param("expert")
        eager = sc.attention is AttentionKernel.EAGER
        prefill = None
        if pre is not None and phase_wanted("prefill"):
            prefill = phase_roofline(
                shape, pre, b, tp=tp, pp=pp, ep=ep, decode=False, eager=eager, latent=False,
                weight_bytes=w_bytes, act_bytes=act_bytes, kv_bytes=kv_bytes, expert_bytes=e_bytes,
            )  # fmt: skip
            if images is not None:  # the vision encoder's work, split over the GPUs like the prompt's
                prefill = PhaseRoofline(
                    prefill.flops + b * images.encoder_flops / (tp * pp),
                    prefill.weight_bytes, prefill.activation_bytes, prefill.attention_bytes,
                )  # fmt: skip
        decode = None
        if dec is not None and phase_wanted("decode"):
            decode = phase_roofline(
                shape, dec, b, tp=tp, pp=pp, ep=ep, decode=True, eager=eager, latent=latent,
                weight_bytes=w_bytes, act_bytes=act_bytes, kv_bytes=kv_bytes, expert_bytes=e_bytes,
            )  # fmt: skip
        train_roof = None
        if training and phase_wanted("training"):
            assert fwd is not None
            passes = (2.0 if frozen else 3.0) + (1.0 if sc.recompute is Recompute.FULL else 0.0)
            train_roof = training_roofline(
                shape, fwd, tp=tp, pp=pp, ep=ep, passes=passes, act_bytes=act_bytes
            )

        def note(phase: str, i: int) -> str:  # rendered only inside a formula someone reads
            bi = at(b, i)
            where = f"per GPU: TP {tp}, PP {pp}" + (f", EP {ep}" if ep > 1 else "")
            experts = f" (routed experts {own.value}, {e_bytes:g} B)" if own is not None else ""
            if phase == "prefill":
                text = (
                    f"{bi} x {at(s, i)} prompt tokens; weights {w_bytes:g} B each{experts}, "
                    f"activations {act_bytes:g} B"
                )
                if images is not None:
                    text += f"; with the vision encoder over {bi} x {images.images} image(s)"
            elif phase == "decode":
                text = (
                    f"{bi} new tokens; weights {w_bytes:g} B each{experts}, "
                    f"KV cache {kv_bytes:g} B per element"
                )
            else:
                text = (
                    f"weight GEMMs of one micro-batch step, {bi} x {at(s, i)} tokens, "
                    f"operands {act_bytes:g} B"
                )
            return f"{text}; {where}"

        sources: tuple[Column, ...] = ()
        for phase, roof, happens in (
            ("prefill", prefill, True),
            ("decode", decode, shape.is_decoder),
            ("training", train_roof, training),
        ):  # fmt: skip
            if not happens:
                why = (
                    "inference scenario: no training step"
                    if phase == "training"
                    else ("the model does not generate tokens")
                )
                values.update(_phase_not_applicable(phase, why))
            elif roof is not None:
                made = self._phase(values, phase, roof, peak, bw, ridge, note, want, alias and phase == main)
                sources = made or sources
        if want("roofline.phase"):
            values["roofline.phase"] = col(main, "", "Main phase", lambda _: f"{main} ({sc.workload.value})")
        # The main phase's figures again under phase-less keys (the main phase always has a roofline).
        for key, (_, label), src in zip(_MAIN_KEYS, _MAIN_ALIASES[main], sources):
            if want(key):
                values[key] = col(
                    src.values, src.unit, label, src.formula, src.assumptions, _MAIN_NOTES[main]
                )
        if want("roofline.ridge_point"):
            values["roofline.ridge_point"] = col(
                ridge,
                "FLOP/B",
                "Ridge point",
                lambda _: f"{peak:g} TFLOPS / {bw:g} GB/s = {ridge:.1f} FLOP/B",
            )
        if want("roofline.peak_tflops"):
            values["roofline.peak_tflops"] = col(
                peak,
                "TFLOPS",
                "Dense peak",
                lambda _: f"{gpu.name} dense {rate_dtype.value}: {peak:g} TFLOPS",
            )
        if want("roofline.bandwidth_gbps"):
            values["roofline.bandwidth_gbps"] = col(
                bw, "GB/s", "Memory bandwidth", lambda _: f"{gpu.name}: {bw:g} GB/s"
            )
        if want("roofline.compute_dtype"):
            values["roofline.compute_dtype"] = col(
                rate_dtype.value,
                "",
                "Compute dtype",
                lambda _: (
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
        return PointOutputs(values, warnings)

    @staticmethod
    def _per_token(shape: ModelShape, b: F.Ints, s: F.Ints, fwd: F.Pass, used: tuple[str, ...]) -> Column:
        tokens = b * (shape.tokens_per_sample or s)

        def formula(i: int) -> str:
            p, n = fwd.at(i), at(tokens, i)
            return (
                f"{g(p.total)} / {n:,} tokens = 2 x {p.gemm / n / 2:,.0f} matmul weights per "
                f"token + attention {g(p.attention / n)}" + (f" + adapters {g(p.lora / n)}" if p.lora else "")
            )

        return col(fwd.total / tokens, "FLOP/token", "Forward FLOPs per token", formula, used)

    @staticmethod
    def _training(
        values: dict[str, Column],
        want: Callable[[str], bool],
        train: F.TrainingFlops,
        frozen: bool,
        sc: Scenario,
        used: tuple[str, ...],
    ) -> None:
        kind = (
            "frozen base matrices 1x (input gradient), adapters and attention 2x"
            if frozen
            else "2 x every matmul and attention product"
        )
        recompute = sc.recompute.value
        if want("flops.backward"):
            values["flops.backward"] = col(
                _shared(train.backward), "FLOP", "Backward pass",
                lambda i: f"{kind}: {g(at(train.backward, i))} FLOP", used,
            )  # fmt: skip
        if want("flops.recompute"):
            values["flops.recompute"] = col(
                _shared(train.recompute),
                "FLOP",
                "Activation recompute",
                lambda i: (
                    f"recompute {recompute}: {_RECOMPUTE_TEXT[recompute]} = "
                    f"{g(at(train.recompute, i))} FLOP"
                ),
                used,
            )
        if want("flops.training_step"):
            step = train.step
            values["flops.training_step"] = col(
                _shared(step),
                "FLOP",
                "Training step (one micro-batch)",
                lambda i: (
                    f"forward {g(at(train.forward, i))} + backward {g(at(train.backward, i))} + "
                    f"recompute {g(at(train.recompute, i))} = {g(at(step, i))} FLOP"
                ),
                used,
            )

    @staticmethod
    def _phase(
        values: dict[str, Column],
        phase: str,
        roof: PhaseRoofline,
        peak: float,
        bw: float,
        ridge: float,
        note: Callable[[str, int], str],
        want: Callable[[str], bool],
        alias: bool,
    ) -> tuple[Column, ...]:
        """A phase's roofline keys. The main phase returns its (intensity, attainable, bound)
        columns, which the phase-less keys repeat (built even when only those are wanted)."""
        k_flops, k_bytes, k_ai, k_attainable, k_bound = _PHASE_KEYS_OF[phase]
        l_flops, l_bytes, l_ai, l_attainable, l_bound = _PHASE_LABELS[phase]
        ai = roof.intensity
        at = F.at
        if want(k_flops):
            values[k_flops] = col(
                _shared(roof.flops),
                "FLOP",
                l_flops,
                lambda i: f"{g(at(roof.flops, i))} FLOP ({note(phase, i)})",
            )
        if want(k_bytes):
            values[k_bytes] = col(
                _shared(roof.bytes),
                "B",
                l_bytes,
                lambda i: (
                    f"weights {g(at(roof.weight_bytes, i))} + "
                    f"activations {g(at(roof.activation_bytes, i))} + "
                    f"attention / KV cache {g(at(roof.attention_bytes, i))} = {g(at(roof.bytes, i))} B "
                    f"({note(phase, i)})"
                ),
            )
        made: list[Column] = []
        if alias or want(k_ai):
            made.append(
                col(
                    _shared(ai), "FLOP/B", l_ai,
                    lambda i: f"{g(at(roof.flops, i))} FLOP / {g(at(roof.bytes, i))} B = {at(ai, i):.2f}",
                )
            )  # fmt: skip
            if want(k_ai):
                values[k_ai] = made[-1]
        if alias or want(k_attainable):
            attainable = roof.attainable_tflops(peak, bw)
            made.append(
                col(
                    _shared(attainable),
                    "TFLOPS",
                    l_attainable,
                    lambda i: (
                        f"min({peak:g} TFLOPS, {at(ai, i):.2f} FLOP/B x {bw:g} GB/s) = "
                        f"{at(attainable, i):.1f} TFLOPS"
                    ),
                )
            )
            if want(k_attainable):
                values[k_attainable] = made[-1]
        if alias or want(k_bound):
            compute = ai >= ridge
            bound = (
                np.where(compute, "compute", "memory")
                if isinstance(compute, np.ndarray)
                else ("compute" if compute else "memory")
            )
            made.append(
                col(
                    bound,
                    "",
                    l_bound,
                    lambda i: (
                        f"intensity {at(ai, i):.2f} {'>=' if at(bound, i) == 'compute' else '<'} "
                        f"ridge {ridge:.1f} FLOP/B: {at(bound, i)}"
                    ),
                )
            )
            if want(k_bound):
                values[k_bound] = made[-1]
        return tuple(made) if alias else ()

    @staticmethod
    def _alignment(shape: ModelShape, arch: ModelArchitecture, tp: int, dtype: DType) -> PointWarning | None:
        key = (tp, dtype)
        if key not in shape.alignment_cache:
            if arch.mla is not None:
                heads = kv_heads = arch.num_attention_heads
                head_dim = arch.mla.qk_head_dim
            else:
                heads, kv_heads, head_dim = arch.num_attention_heads, arch.num_kv_heads, arch.head_dim
            found = guards.alignment_warning(shape, heads, kv_heads, head_dim, tp, dtype)
            shape.alignment_cache[key] = _every_point(found) if found is not None else None
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
