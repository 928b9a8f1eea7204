"""Formulas with the values substituted, rendered only when someone reads them (GUI, report, --explain).

They take one point of a group: a pass as :meth:`~workbench_compute.flops.Pass.at` gives it, in Python
numbers, so the text is the single estimate's.
"""

from __future__ import annotations

from workbench_compute.flops import Pass
from workbench_compute.shapes import ModelShape


def g(x: float) -> str:
    """Four significant digits: 1.074e+13."""
    return f"{x:.4g}"


def gemm_formula(shape: ModelShape, tokens: dict[str, float]) -> str:
    parts = [
        f"2 x {count:,.0f} {stream} tokens x {shape.coef[stream] / 2:,.0f} weights"
        for stream, count in tokens.items()
        if count and shape.coef[stream]
    ]
    return " + ".join(parts) or "0"


def attention_formula(batch: int, p: Pass, latent: bool = False, decode: bool = False) -> str:
    parts = []
    for group, _q, kv, pairs in p.attention_terms:
        d_qk, d_v = (group.d_qk_latent, group.d_v_latent) if latent else (group.d_qk, group.d_v)
        parts.append(
            f"2 x {batch} x {group.heads} heads x ({d_qk}+{d_v}) x {pairs:,.0f} pairs x {group.layers} layers"
        )
        if decode and group.expand and not latent:
            parts.append(
                f"kv_b re-expansion 2 x {batch} x {kv - 1:,.0f} cached x {group.expand:,} weights x "
                f"{group.layers} layers"
            )
    return " + ".join(parts) or "0"


def pass_formula(shape: ModelShape, batch: int, p: Pass, latent: bool = False, decode: bool = False) -> str:
    text = (
        f"matmuls {gemm_formula(shape, p.tokens)} = {g(p.gemm)}; attention QK^T + PV "
        f"{attention_formula(batch, p, latent, decode)} = {g(p.attention)}"
    )
    if p.lora:
        text += f"; LoRA adapters {g(p.lora)}"
    if p.recurrent:
        layers = sum(group.layers for group in shape.recurrent)
        what = "recurrence on one token" if decode else "convolution + chunked scan"
        text += f"; recurrent mixers ({layers} layers, {what}) {g(p.recurrent)}"
    return f"{text}; total {g(p.total)} FLOP"
