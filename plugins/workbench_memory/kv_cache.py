"""KV cache: bytes per token and for the scenario's batch, as serving engines allocate it.

Per token and layer the cache holds:

* MHA / GQA / MQA: K and V for each KV head, ``2 x kv_heads x head_dim`` elements;
* MLA (DeepSeek-V2/V3): the compressed latent and the shared rotary key,
  ``kv_lora_rank + qk_rope_head_dim`` elements, as vLLM, SGLang and transformers >= 5 cache it;
  with ``memory.kv_mla_decompressed`` the expanded per-head K (``qk_nope + qk_rope``) and V
  (``v_head_dim``) that earlier transformers cached;
* DeepSeek-V3.2 adds its indexer's key, ``index_head_dim`` elements, in every attention layer.

A sequence caches ``seq_len + gen_len`` tokens; sliding-window layers keep at most ``window``
(vLLM frees blocks that leave the window; transformers keeps ``window - 1``); an encoder-decoder
model caches ``gen_len`` decoder tokens of self-attention plus ``seq_len`` encoder tokens of
cross-attention in each decoder block; encoders cache nothing. With paged KV (PagedAttention,
Kwon et al. 2023) each sequence's tokens round up to whole blocks of ``kv_block_size``.
Training keeps no KV cache.

Blocks without attention (Mamba-2, Gated DeltaNet, ... in hybrid models) cache no keys or values:
each keeps a **recurrent state** per sequence whose size does not depend on the context, the
last ``conv_kernel`` columns of its causal convolution's input and the SSM / delta-rule state, as
transformers' ``LinearAttentionLayer`` holds them after a prefill (conv window in the model's
dtype, here the KV dtype; the state in fp32 when the family computes it so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.core.model import ModelArchitecture
from workbench.core.scenario import Scenario
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.points import PointOutputs, PointsContext, at, col, int_product
from workbench_memory import assumptions as A
from workbench_memory.shapes import ModelConstants, model_constants


Tokens = Any  #: an int, or an int64 array with one entry per point of a group


@dataclass(frozen=True, slots=True)
class KvTokens:
    """Tokens one sequence caches in each kind of layer (block-rounded when paged), per point."""

    full: Tokens
    sliding: Tokens
    cross: Tokens
    block: int  # 0: not paged


def _round_up(tokens: Tokens, block: int) -> Tokens:
    return -(-tokens // block) * block if block else tokens


def kv_tokens(c: ModelConstants, scenario: Scenario, seq_len: Tokens = None, gen_len: Tokens = None) -> KvTokens:
    """Cached tokens for ``seq_len`` prompt and ``gen_len`` generated tokens (arrays over a point
    group, or the scenario's own values when not given)."""
    serving = scenario.serving
    seq = scenario.seq_len if seq_len is None else seq_len
    gen = scenario.gen_len if gen_len is None else gen_len
    block = serving.kv_block_size if serving.paged_kv else 0
    if c.encoder_decoder:
        self_tokens, cross = gen, seq
    else:
        self_tokens, cross = seq + gen, 0
    if not c.window:
        sliding = self_tokens
    elif isinstance(self_tokens, np.ndarray):
        sliding = np.minimum(self_tokens, c.window)
    else:
        sliding = min(self_tokens, c.window)
    return KvTokens(_round_up(self_tokens, block), _round_up(sliding, block), _round_up(cross, block), block)


def sequence_elements(c: ModelConstants, tokens: KvTokens, a: int, b: int) -> Tokens:
    """Layer-tokens one sequence caches in layers a..b (multiply by elements per token-layer)."""
    return (
        (c.full_kv[b] - c.full_kv[a]) * tokens.full
        + (c.sw_kv[b] - c.sw_kv[a]) * tokens.sliding
        + (c.cross_kv[b] - c.cross_kv[a]) * tokens.cross
    )


class KvCacheEstimator:
    """``kv_cache.bytes_per_token`` and ``kv_cache.bytes`` for the whole model (all GPUs)."""

    info = EstimatorInfo(
        id="memory.kv-cache",
        title="KV cache",
        version="1.0.0",
        produces=(
            "kv_cache.bytes_per_token",
            "kv_cache.bytes",
            "recurrent_state.bytes_per_sequence",
            "recurrent_state.bytes",
        ),
        assumptions=(A.KV_MLA_DECOMPRESSED,),
        description="Bytes of cached keys and values per token and for the batch, by attention kind; "
        "the fixed recurrent state of state-space / linear-attention blocks per sequence.",
    )

    def estimate_points(self, ctx: PointsContext) -> PointOutputs:
        scenario = ctx.scenario
        c = model_constants(ctx.model)
        decompressed = c.mla and ctx.assumptions[A.KV_MLA_DECOMPRESSED.id] >= 0.5
        dtype = scenario.kv_cache_dtype
        elems = c.kv_elems_decompressed if decompressed else c.kv_elems
        layers = c.layers
        self_layers = c.full_kv[layers] + c.sw_kv[layers]
        cross_layers = c.cross_kv[layers]
        per_token = self_layers * elems * dtype.bytes
        used = (A.KV_MLA_DECOMPRESSED.id,) if c.mla else ()
        model = ctx.model
        out = {
            "kv_cache.bytes_per_token": col(
                per_token,
                "B",
                "KV cache per token",
                lambda _: (
                    f"{self_layers} layers x {_describe_elements(model, decompressed)} x {dtype.value} "
                    f"{dtype.bytes:g} B = {per_token:,.0f} B"
                    + (" (cross-attention KV comes on top, per encoder token)" if cross_layers else "")
                ),
                used,
            )
        }
        state_layers = c.state[layers]
        state_seq = state_layers * c.state_bytes_per_rank(1, dtype.bytes)
        out["recurrent_state.bytes_per_sequence"] = col(
            state_seq,
            "B",
            "Recurrent state per sequence",
            lambda _: _state_formula(model, state_layers, dtype.bytes, state_seq),
        )
        if scenario.is_training:
            out["kv_cache.bytes"] = col(0.0, "B", "KV cache", lambda _: "training keeps no KV cache", used)
            out["recurrent_state.bytes"] = col(
                0.0, "B", "Recurrent state", lambda _: "training keeps no recurrent state between passes"
            )
            return PointOutputs(out)
        points = ctx.points
        # A one-point group (a single estimate) runs the same arithmetic on Python ints.
        seq, gen, batch = (points[f] if ctx.n > 1 else int(points[f][0]) for f in ("seq_len", "gen_len", "batch_size"))
        tokens = kv_tokens(c, scenario, seq, gen)
        layer_tokens = sequence_elements(c, tokens, 0, layers)
        # the element count exactly (as Python's ints), then bytes in float, as the scalar sum was
        total = int_product(batch, layer_tokens, elems) * dtype.bytes
        if isinstance(total, np.ndarray) and total.dtype == object:
            total = total.astype(np.float64)

        def formula(i: int) -> str:
            parts = []
            if c.full_kv[layers]:
                parts.append(f"{c.full_kv[layers]} layers x {at(tokens.full, i)} tokens")
            if c.sw_kv[layers]:
                parts.append(
                    f"{c.sw_kv[layers]} sliding-window layers x {at(tokens.sliding, i)} tokens (window {c.window})"
                )
            if cross_layers:
                parts.append(f"{cross_layers} cross-attention layers x {at(tokens.cross, i)} encoder tokens")
            paged = f", rounded up to blocks of {tokens.block}" if tokens.block else ""
            body = " + ".join(parts) or "no cached layers"
            what = _describe_elements(model, decompressed)
            return f"{at(batch, i)} sequences x ({body}){paged} x {what} x {dtype.bytes:g} B = {at(total, i):,.0f} B"

        out["kv_cache.bytes"] = col(total, "B", "KV cache", formula, used)
        state_total = batch * state_seq
        out["recurrent_state.bytes"] = col(
            state_total,
            "B",
            "Recurrent state",
            lambda i: f"{at(batch, i)} sequences x {state_seq:,.0f} B = {at(state_total, i):,.0f} B",
        )
        return PointOutputs(out)


def _state_formula(model: ModelArchitecture, layers: int, kv_bytes: float, value: float) -> str:
    rec = model.recurrent
    if not layers or rec is None:
        return "no recurrent layers: 0 B"
    ssm = 4.0 if rec.ssm_state_fp32 else kv_bytes
    return (
        f"{layers} recurrent layers x (conv window {rec.conv_state_elements:,} x {kv_bytes:g} B "
        f"+ state {rec.ssm_state_elements:,} x {ssm:g} B"
        f"{' (fp32)' if rec.ssm_state_fp32 else ''}) = {value:,.0f} B"
    )


def _describe_elements(model: ModelArchitecture, decompressed: bool) -> str:
    mla = model.mla
    # DeepSeek-V3.2's indexer caches one key of index_head_dim per token and layer on top.
    index = f" + indexer key {model.indexer.head_dim}" if model.indexer is not None else ""
    if mla is None:
        base = f"2 (K, V) x {model.num_kv_heads} KV heads x {model.head_dim} dims"
        return f"({base}{index})" if index else base
    if decompressed:
        heads = model.num_attention_heads
        return f"({heads} heads x (K {mla.qk_head_dim} + V {mla.v_head_dim}) dims (decompressed){index})"
    return f"(latent {mla.kv_lora_rank} + rope key {mla.qk_rope_head_dim}{index}) dims"
