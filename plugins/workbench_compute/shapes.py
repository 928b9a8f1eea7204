"""The matrix products a model executes, reduced once per model to a few coefficients.

Every FLOP and byte figure of this plugin is a sum over two kinds of work:

* **weight matmuls** (:class:`Gemm`): a token row times a weight matrix ``k x n``; 2 FLOPs per
  multiply-accumulate, so ``2 x tokens x k x n``. Biases, norms, activations, softmax and rotary
  are element-wise and not counted (the convention of ``torch.utils.flop_counter``, which
  counts ``mm``/``addmm``/``bmm`` only and ignores the bias add of ``addmm``).
* **attention products** (:class:`AttentionGroup`): ``Q K^T`` and ``P V`` per head, weightless,
  ``2 x heads x (d_qk + d_v)`` FLOPs per (query, key) pair.

Tokens reach a matmul through one of a few *streams* (``STREAMS``): the main stack, the decoder
stack of an encoder-decoder model, the encoder states read by cross-attention, the output head,
the pooler (first token only) and the patch embedding of a vision model. Routed experts see
``experts_per_token`` (token, expert) pairs per token (``fanout``). Grouping the matmuls by
stream lets the hot path compute ``sum(tokens[stream] x coefficient[stream])``: a handful of
multiplications, whatever the model.

Hybrid models: attention projections and products only in blocks with attention, FFN matmuls
only in blocks with a feed-forward part; a recurrent mixer's projections are weight matmuls
(in-projections column-, out-projection row-parallel, adapted by ``all-linear`` LoRA) and its
kernel (convolution, chunked scan) is costed per sequence by :mod:`workbench_compute.recurrent`.
A gated attention output (Qwen3-Next) doubles ``q_proj``. Shared attention + MLP blocks (Zamba2)
run in full at every layer that applies them, with that layer's adapters and projection
(:mod:`workbench_compute.shared_blocks`).

Building a :class:`ModelShape` walks the layers once; :func:`model_shape` caches it per model
object so sweeps over batch, sequence or GPU pay for it once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.core.model import Head, ModelArchitecture, ModelKind
from workbench_compute.recurrent import RecurrentGroup

#: Token streams, see the module docstring.
MAIN, DEC, CROSS, HEAD, POOLER, PATCH = "main", "dec", "cross", "head", "pooler", "patch"
STREAMS = (MAIN, DEC, CROSS, HEAD, POOLER, PATCH)

#: How tensor parallelism shards a matrix (Megatron-LM layout).
COL, ROW, KV, REPLICATED = "col", "row", "kv", "replicated"

#: LoRA target sets (``Scenario.lora_targets``) a matmul belongs to.
LORA_NONE, LORA_ALL_LINEAR, LORA_ATTENTION = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Gemm:
    """One weight matrix ``k x n`` present in ``layers`` blocks, fed by ``stream``."""

    name: str
    k: int
    n: int
    layers: int
    stream: str
    split: str
    fanout: float = 1.0  # (token, expert) pairs per token for routed experts
    lora: int = LORA_NONE  # 2: adapted under "attention" and "all-linear"; 1: under "all-linear"
    expert: bool = False  # a routed expert matrix (one of num_experts copies)
    kv_heads: int = 0  # for KV projections: heads, so a TP shard holds at least one
    no_grad: bool = False  # runs under torch.no_grad (DeepSeek-V3.2's indexer): no backward


@dataclass(frozen=True, slots=True)
class AttentionGroup:
    """Attention layers that share shape and mask: ``layers`` of them."""

    layers: int
    heads: int
    d_qk: int
    d_v: int
    causal: bool
    window: int | None
    query_stream: str  # MAIN or DEC
    cross: bool = False  # keys come from the encoder
    # decode-time shape when MLA runs in latent space (weight absorption); equal to d_qk/d_v otherwise
    d_qk_latent: int = 0
    d_v_latent: int = 0
    # K/V elements per token and layer, whole model: per-head K and V as attention reads them, and
    # what the cache holds (the same, or MLA's compressed latent, replicated over TP)
    kv_elems: int = 0
    kv_elems_latent: int = 0
    kv_heads: int = 0  # heads TP splits the per-head K/V over
    #: MLA: weights of kv_b_proj, which re-expands each cached latent when decode does not absorb it
    expand: int = 0
    no_grad: bool = False  # DeepSeek-V3.2's indexer scores: computed under torch.no_grad


@dataclass(slots=True)
class ModelShape:
    """Per-model constants for the FLOP and roofline formulas."""

    gemms: tuple[Gemm, ...]
    attention: tuple[AttentionGroup, ...]
    #: ``2 x sum(fanout x k x n x layers)`` per stream: FLOPs per token of that stream.
    coef: dict[str, float]
    #: The part of ``coef`` inside transformer blocks (recomputed by full checkpointing).
    block_coef: dict[str, float]
    #: ``2 x sum(fanout x (k + n) x layers)`` per stream and LoRA target set: adapter FLOPs / (token x rank).
    lora_coef: dict[int, dict[str, float]]
    tokens_per_sample: int | None  # fixed by the input (vision); None: the scenario's seq_len
    patch_tokens: int  # patches per sample that go through the patch embedding
    is_decoder: bool  # can generate tokens (decoder-only or encoder-decoder)
    is_seq2seq: bool
    head_on_all_positions: bool  # masked-LM: every position in prefill too
    moe_top_k: int
    moe_experts: int
    dims: dict[str, int]  # named widths for alignment checks
    recurrent: tuple[RecurrentGroup, ...] = ()  # recurrent mixers (kernel FLOPs per sequence)
    #: The part of ``coef`` that runs without gradient (DeepSeek-V3.2's indexer projections).
    no_grad_coef: dict[str, float] = field(default_factory=dict)
    per_gpu_cache: dict[tuple[int, int], Any] = field(default_factory=dict)  # (TP, EP) -> roofline.PerGpu
    #: (TP, dtype) -> the Tensor Core alignment PointWarning, or None
    alignment_cache: dict[tuple[int, Any], Any] = field(default_factory=dict)


def _attention_gemms(arch: ModelArchitecture, layers: int, stream: str, kv_stream: str) -> list[Gemm]:
    h, heads = arch.hidden_size, arch.num_attention_heads
    mla = arch.mla
    if mla is not None:
        out: list[Gemm] = []
        if mla.q_lora_rank is not None:
            out.append(Gemm("q_a_proj", h, mla.q_lora_rank, layers, stream, REPLICATED, lora=LORA_ATTENTION))
            out.append(
                Gemm(
                    "q_b_proj",
                    mla.q_lora_rank,
                    heads * mla.qk_head_dim,
                    layers,
                    stream,
                    COL,
                    lora=LORA_ATTENTION,
                )
            )
        else:
            out.append(Gemm("q_proj", h, heads * mla.qk_head_dim, layers, stream, COL, lora=LORA_ATTENTION))
        out.append(
            Gemm(
                "kv_a_proj",
                h,
                mla.kv_lora_rank + mla.qk_rope_head_dim,
                layers,
                kv_stream,
                REPLICATED,
                lora=LORA_ATTENTION,
            )
        )
        out.append(
            Gemm(
                "kv_b_proj",
                mla.kv_lora_rank,
                heads * (mla.qk_nope_head_dim + mla.v_head_dim),
                layers,
                kv_stream,
                COL,
                lora=LORA_ATTENTION,
            )
        )
        out.append(Gemm("o_proj", heads * mla.v_head_dim, h, layers, stream, ROW, lora=LORA_ATTENTION))
        ix = arch.indexer
        if ix is not None and mla.q_lora_rank is not None:
            # DeepSeek-V3.2's indexer (transformers' DeepseekV32Indexer.forward, under torch.no_grad):
            # queries from the query latent, one shared key and per-head weights from the hidden state.
            out += [
                Gemm("indexer.wq_b", mla.q_lora_rank, ix.heads * ix.head_dim, layers, stream, REPLICATED, no_grad=True),
                Gemm("indexer.wk", h, ix.head_dim, layers, stream, REPLICATED, no_grad=True),
                Gemm("indexer.weights_proj", h, ix.heads, layers, stream, REPLICATED, no_grad=True),
            ]
        return out
    q_width, kv_width = heads * arch.head_dim, arch.num_kv_heads * arch.head_dim
    q_out = 2 * q_width if arch.attention_output_gate else q_width
    return [
        Gemm("q_proj", h, q_out, layers, stream, COL, lora=LORA_ATTENTION),
        Gemm("k_proj", h, kv_width, layers, kv_stream, KV, lora=LORA_ATTENTION, kv_heads=arch.num_kv_heads),
        Gemm("v_proj", h, kv_width, layers, kv_stream, KV, lora=LORA_ATTENTION, kv_heads=arch.num_kv_heads),
        Gemm("o_proj", q_width, h, layers, stream, ROW, lora=LORA_ATTENTION),
    ]


def _ffn_gemms(
    arch: ModelArchitecture,
    name: str,
    inner: int,
    layers: int,
    stream: str,
    fanout: float = 1.0,
    expert: bool = False,
    width: int | None = None,
) -> list[Gemm]:
    h = width or arch.hidden_size
    # LoRA "all-linear" adapts nn.Linear modules (PEFT); transformers 5 keeps routed experts as 3-D
    # parameters, not Linear modules, so they get no adapters (as the memory plugin counts them).
    lora = LORA_NONE if expert else LORA_ALL_LINEAR
    up = (
        [Gemm(f"{name}.gate_proj", h, inner, layers, stream, COL, fanout, lora, expert)]
        if arch.gated_mlp
        else []
    )
    up.append(Gemm(f"{name}.up_proj", h, inner, layers, stream, COL, fanout, lora, expert))
    up.append(Gemm(f"{name}.down_proj", inner, h, layers, stream, ROW, fanout, lora, expert))
    return up


def _latent_moe_gemms(arch: ModelArchitecture, moe_layers: int, stream: str) -> list[Gemm]:
    """Nemotron-3's latent MoE: every token is projected hidden -> latent before the routed experts
    (which then work at the latent width) and latent -> hidden after (``fc1_latent_proj`` /
    ``fc2_latent_proj``, nn.Linear: adapted by "all-linear" LoRA). Kept whole on every TP rank,
    like the router (ReplicatedLinear in vLLM's and SGLang's nemotron_h)."""
    latent = arch.moe.latent_size if arch.moe is not None else None
    if not latent:
        return []
    h = arch.hidden_size
    return [
        Gemm("moe.fc1_latent_proj", h, latent, moe_layers, stream, REPLICATED, lora=LORA_ALL_LINEAR),
        Gemm("moe.fc2_latent_proj", latent, h, moe_layers, stream, REPLICATED, lora=LORA_ALL_LINEAR),
    ]


def _block_gemms(arch: ModelArchitecture, moe_layers: int, dense_layers: int, stream: str) -> list[Gemm]:
    gemms: list[Gemm] = []
    if dense_layers:
        gemms += _ffn_gemms(arch, "mlp", arch.intermediate_size, dense_layers, stream)
    moe = arch.moe
    if moe is not None and moe_layers:
        h = arch.hidden_size
        gemms.append(Gemm("router", h, moe.num_experts, moe_layers, stream, REPLICATED))
        gemms += _ffn_gemms(
            arch,
            "experts",
            moe.expert_intermediate_size,
            moe_layers,
            stream,
            fanout=moe.experts_per_token,
            expert=True,
            width=moe.latent_size,
        )
        gemms += _latent_moe_gemms(arch, moe_layers, stream)
        if moe.shared_intermediate:
            gemms += _ffn_gemms(arch, "shared_experts", moe.shared_intermediate, moe_layers, stream)
        if moe.shared_expert_gate:
            gemms.append(Gemm("shared_expert_gate", h, 1, moe_layers, stream, REPLICATED))
    return gemms


def _attention_groups(
    arch: ModelArchitecture, indices: range, query_stream: str, causal: bool, cross: bool = False
) -> list[AttentionGroup]:
    heads, mla = arch.num_attention_heads, arch.mla
    if mla is not None:
        d_qk, d_v = mla.qk_head_dim, mla.v_head_dim
        latent_qk, latent_v = mla.kv_lora_rank + mla.qk_rope_head_dim, mla.kv_lora_rank
        kv_elems, kv_latent, kv_heads = heads * (d_qk + d_v), mla.kv_lora_rank + mla.qk_rope_head_dim, heads
        expand = mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim)
    else:
        d_qk = d_v = latent_qk = latent_v = arch.head_dim
        kv_elems = kv_latent = 2 * arch.num_kv_heads * arch.head_dim
        kv_heads = arch.num_kv_heads
        expand = 0
    by_window: dict[int | None, int] = {}
    for index in indices:
        if not arch.has_attention(index):
            continue
        window = (
            arch.sliding_window.window
            if (arch.sliding_window and arch.uses_sliding_window(index) and not cross)
            else None
        )
        by_window[window] = by_window.get(window, 0) + 1
    groups = [
        AttentionGroup(
            count,
            heads,
            d_qk,
            d_v,
            causal,
            window,
            query_stream,
            cross,
            latent_qk,
            latent_v,
            kv_elems,
            kv_latent,
            kv_heads,
            expand,
        )
        for window, count in by_window.items()
    ]
    ix = arch.indexer
    if ix is not None and not cross and len(indices):
        # The indexer scores every (query, cached key) pair: q.k per head (index_head_dim), then the
        # per-head weights sum the heads (one more multiply-add per head): 2 x heads x (dim + 1).
        # Its keys are cached, single-head. The main attention stays dense, as transformers' eager
        # and SDPA paths run it (a sparse kernel would read only index_topk keys per query).
        dim = ix.head_dim
        groups.append(
            AttentionGroup(
                len(indices), ix.heads, dim, 1, causal, None, query_stream, False, dim, 1, dim, dim, 1, 0, True
            )
        )
    return groups


def build_shape(arch: ModelArchitecture) -> ModelShape:
    """Walk the architecture once and reduce it to the coefficients of the FLOP formulas."""
    h = arch.hidden_size
    seq2seq = arch.kind is ModelKind.ENCODER_DECODER
    main_range = range(arch.num_layers)
    moe_main = sum(1 for i in main_range if arch.is_moe_layer(i))
    ffn_main = sum(1 for i in main_range if arch.has_ffn(i))
    attn_main = sum(1 for i in main_range if arch.has_attention(i))
    if arch.shared_blocks is not None:
        # Zamba2: every attention is a shared block's, run in full at each layer that applies it.
        from workbench_compute.shared_blocks import shared_block_gemms

        gemms = shared_block_gemms(arch, attn_main, MAIN)
    else:
        gemms = _attention_gemms(arch, attn_main, MAIN, MAIN) if attn_main else []
    recurrent: tuple[RecurrentGroup, ...] = ()
    rec, rec_layers = arch.recurrent, arch.recurrent_layers
    if rec is not None and rec_layers:
        last = len(rec.projections) - 1
        gemms += [
            Gemm(f"mixer.proj{j}", k, n, rec_layers, MAIN, ROW if j == last else COL, lora=LORA_ALL_LINEAR)
            for j, (k, n) in enumerate(rec.projections)
        ]
        recurrent = (RecurrentGroup(rec_layers, rec),)
    shared_ffn = len(arch.shared_blocks.layers) if arch.shared_blocks is not None else 0  # counted above
    gemms += _block_gemms(arch, moe_main, ffn_main - moe_main - shared_ffn, MAIN)
    attention = _attention_groups(arch, main_range, MAIN, causal=arch.kind is ModelKind.DECODER)
    if seq2seq:
        dec_range = range(arch.num_layers, arch.total_layers)
        n_dec = len(dec_range)
        moe_dec = sum(1 for i in dec_range if arch.is_moe_layer(i))
        gemms += _attention_gemms(arch, n_dec, DEC, DEC)
        gemms += [  # cross-attention: queries from the decoder, keys and values from the encoder states
            Gemm(f"cross.{g.name}", g.k, g.n, g.layers, g.stream, g.split, lora=g.lora, kv_heads=g.kv_heads)
            for g in _attention_gemms(arch, n_dec, DEC, CROSS)
        ]
        gemms += _block_gemms(arch, moe_dec, n_dec - moe_dec, DEC)
        attention += _attention_groups(arch, dec_range, DEC, causal=True)
        attention += _attention_groups(arch, dec_range, DEC, causal=False, cross=True)

    head_on_all = arch.head is Head.MASKED_LM or arch.kind is ModelKind.ENCODER
    if arch.head is Head.MASKED_LM:
        gemms.append(Gemm("mlm_transform", h, h, 1, HEAD, REPLICATED))
    if arch.head is not Head.BASE and arch.vision is None:
        gemms.append(Gemm("lm_head", h, arch.vocab_size, 1, HEAD, COL))
    if arch.pooler:
        gemms.append(Gemm("pooler", h, h, 1, POOLER, REPLICATED))
    vision = arch.vision
    if vision is not None:
        gemms.append(
            Gemm("patch_embedding", vision.num_channels * vision.patch_size**2, h, 1, PATCH, REPLICATED)
        )

    coef = dict.fromkeys(STREAMS, 0.0)
    block_coef = dict.fromkeys(STREAMS, 0.0)
    lora_coef = {t: dict.fromkeys(STREAMS, 0.0) for t in (LORA_ALL_LINEAR, LORA_ATTENTION)}
    no_grad_coef = dict.fromkeys(STREAMS, 0.0)
    for g in gemms:
        flops = 2.0 * g.fanout * g.k * g.n * g.layers
        coef[g.stream] += flops
        if g.no_grad:
            no_grad_coef[g.stream] += flops
        if g.stream in (MAIN, DEC, CROSS):
            block_coef[g.stream] += flops
        for targets, per_stream in lora_coef.items():
            if g.lora >= targets:
                per_stream[g.stream] += 2.0 * g.fanout * (g.k + g.n) * g.layers

    moe = arch.moe
    dims = {"hidden_size": h, "vocab_size": arch.vocab_size if arch.vision is None else 0}
    if moe_main < ffn_main or (moe is None and ffn_main):
        dims["intermediate_size"] = arch.intermediate_size
    if moe is not None:
        dims["expert_intermediate_size"] = moe.expert_intermediate_size
        if moe.shared_intermediate:
            dims["shared_expert_intermediate_size"] = moe.shared_intermediate
    if arch.mla is not None:
        mla = arch.mla
        dims.update(
            qk_nope_head_dim=mla.qk_nope_head_dim,
            qk_rope_head_dim=mla.qk_rope_head_dim,
            v_head_dim=mla.v_head_dim,
            kv_lora_rank=mla.kv_lora_rank,
        )
        if mla.q_lora_rank is not None:
            dims["q_lora_rank"] = mla.q_lora_rank
    else:
        dims["head_dim"] = arch.head_dim
    tokens = None
    patches = 0
    if vision is not None:
        patches = vision.num_patches
        tokens = patches + (1 if vision.cls_token else 0)
    return ModelShape(
        gemms=tuple(gemms),
        attention=tuple(attention),
        coef=coef,
        block_coef=block_coef,
        no_grad_coef=no_grad_coef,
        lora_coef=lora_coef,
        tokens_per_sample=tokens,
        patch_tokens=patches,
        is_decoder=arch.kind is not ModelKind.ENCODER and vision is None,
        is_seq2seq=seq2seq,
        head_on_all_positions=head_on_all,
        moe_top_k=moe.experts_per_token if moe else 0,
        moe_experts=moe.num_experts if moe else 0,
        dims={k: v for k, v in dims.items() if v},
        recurrent=recurrent,
    )


_CACHE: dict[int, tuple[ModelArchitecture, ModelShape]] = {}
_CACHE_LIMIT = 256


def model_shape(arch: ModelArchitecture) -> ModelShape:
    """:func:`build_shape`, cached per model object (models are immutable)."""
    hit = _CACHE.get(id(arch))
    if hit is not None and hit[0] is arch:
        return hit[1]
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    shape = build_shape(arch)
    _CACHE[id(arch)] = (arch, shape)
    return shape
