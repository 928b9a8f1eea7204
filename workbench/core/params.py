"""Exact parameter counts of a :class:`~workbench.core.model.ModelArchitecture`.

The counts reproduce, to the parameter, ``sum(p.numel() for p in model.parameters())`` of the
Hugging Face transformers model built from the same config (tied weights counted once); the
validation suite (``tests/validation/test_param_counts_vs_transformers.py``) holds us to that.
Conventions that a count depends on:

* ``mlp_bias`` on a mixture-of-experts model gives every routed expert its biases and the router
  a bias vector (gpt-oss); shared experts follow ``mlp_bias`` too.
* ``moe.latent_size``: routed experts are ``latent x expert_intermediate_size`` wide, and each MoE
  block adds the hidden -> latent and latent -> hidden projections (dense, used by every token).
* ``moe.router_bias`` is DeepSeek-V3's ``e_score_correction_bias``: transformers registers it as
  a persistent *buffer*, so it is stored in checkpoints but is not a parameter. It is reported in
  :attr:`ParameterCount.buffers`, outside :attr:`ParameterCount.total`; with
  ``moe.router_bias_parameter`` (ERNIE-4.5) it is a parameter and counts in the router.
* ``qk_norm`` is a weight-only norm of ``head_dim`` on queries and one on keys (Qwen3, Gemma 3).
* ``vision`` replaces the token embedding by a patch embedding (a biased convolution), a [CLS]
  token and a learned position table of ``num_patches (+1)`` rows; ``vocab_size`` is not used.
* ``encoder_decoder`` adds a decoder stack whose blocks carry a cross-attention the size of the
  self-attention and one norm more than an encoder block; each stack has its final norm, and T5's
  relative position bias table (``buckets x heads``) sits in the first block of each stack.
* ``extra_parameters`` (towers the fields do not describe) count in the total and, being dense,
  in the active count.
* ``vision_tower`` (a vision-language model's encoder and projector, counted exactly by the family
  reader) counts in ``other``, in the total and, being dense, in the active count.
* Hybrid models: a block has attention only when ``layer_mixers`` says so, a recurrent mixer
  (``recurrent``, whose exact size the family reader gives) when it says so, and no FFN when it is
  in ``ffn_free_layers``; a block with a single part carries ``single_part_norms`` norms.
* ``shared_blocks`` (Zamba2): the attention + FFN of the listed layers belong to ``count`` blocks
  stored once each (q, k and v read ``input_width`` features); each listed layer adds its own
  adapters and projection. :func:`layer_breakdown` gives what a layer computes with (the shared
  block in full); :func:`count_parameters` keeps one copy of each block.
* ``attention_sinks`` adds one logit per head, ``attention_output_gate`` doubles ``q_proj``,
  ``qk_norm_full_width`` norms span all heads, and an ``indexer`` (DeepSeek-V3.2) adds its query
  up-projection from the query latent, its key projection with a LayerNorm, and a per-head weight
  projection.

Everything here is plain integer arithmetic on already validated fields (no validation, no
allocation per layer beyond a few ints) so the engine can call it in its hot paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.core.model import Head, ModelArchitecture, ModelKind, PositionEmbedding

#: Keys of :attr:`ParameterCount.breakdown`, in display order.
BREAKDOWN_KEYS = ("embedding", "attention", "recurrent", "mlp", "experts", "norms", "lm_head", "other")


@dataclass(frozen=True, slots=True)
class ParameterCount:
    """Parameters of a model, whole and by part.

    ``total`` is what transformers' ``model.parameters()`` holds (tied weights once). ``active``
    is what one token passes through: for mixture-of-experts layers only ``experts_per_token``
    routed experts (plus router, shared experts and dense parts); embeddings included, so a dense
    model has ``active == total``. ``buffers`` are persistent non-parameter tensors a checkpoint
    also stores (DeepSeek-V3's router score correction bias).
    """

    total: int
    active: int
    breakdown: dict[str, int] = field(default_factory=dict)
    buffers: int = 0

    @property
    def stored(self) -> int:
        """Numbers a safetensors checkpoint of the model holds: parameters plus persistent buffers."""
        return self.total + self.buffers


# --- building blocks ------------------------------------------------------------------------------


def _norm(arch: ModelArchitecture, width: int) -> int:
    return width * 2 if arch.norm_bias else width


def _ffn(arch: ModelArchitecture, inner: int, width: int | None = None) -> int:
    h = width or arch.hidden_size
    if arch.gated_mlp:
        weights, biases = 3 * h * inner, 2 * inner + h
    else:
        weights, biases = 2 * h * inner, inner + h
    return weights + biases if arch.mlp_bias else weights


def attention_parameters(arch: ModelArchitecture) -> tuple[int, int]:
    """(projection parameters, norm parameters) of one self-attention block."""
    h = arch.hidden_size
    heads = arch.num_attention_heads
    out_bias = h if arch.attention_out_bias else 0
    mla = arch.mla
    if mla is not None:
        norms = mla.kv_lora_rank
        if mla.q_lora_rank is not None:
            q = h * mla.q_lora_rank + mla.q_lora_rank * heads * mla.qk_head_dim
            q += mla.q_lora_rank if arch.attention_bias else 0
            norms += mla.q_lora_rank
        else:
            q = h * heads * mla.qk_head_dim
        kv_a = mla.kv_lora_rank + mla.qk_rope_head_dim
        kv = h * kv_a + (kv_a if arch.attention_bias else 0)
        kv += mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim)
        o = heads * mla.v_head_dim * h + out_bias
        return q + kv + o, norms
    q_width = heads * arch.head_dim
    kv_width = arch.num_kv_heads * arch.head_dim
    q_out = 2 * q_width if arch.attention_output_gate else q_width
    # Shared blocks (Zamba2) read a wider input (hidden joined to the embeddings) into q, k and v.
    q_in = arch.shared_blocks.input_width if arch.shared_blocks is not None else h
    proj = q_in * (q_out + 2 * kv_width) + q_width * h + out_bias
    if arch.attention_bias:
        proj += q_out + 2 * kv_width
    if arch.attention_sinks:
        proj += heads
    if not arch.qk_norm:
        norms = 0
    elif arch.qk_norm_full_width:
        norms = _norm(arch, q_width) + _norm(arch, kv_width)
    else:
        norms = 2 * arch.head_dim
    return proj, norms


def indexer_parameters(arch: ModelArchitecture) -> int:
    """DeepSeek-V3.2 indexer of one attention block: wq_b (query latent -> heads x dim), wk (hidden ->
    dim) with a LayerNorm (weight and bias), and weights_proj (hidden -> heads)."""
    ix = arch.indexer
    if ix is None:
        return 0
    q_in = arch.mla.q_lora_rank if arch.mla is not None and arch.mla.q_lora_rank else arch.hidden_size
    h = arch.hidden_size
    return q_in * ix.heads * ix.head_dim + h * ix.head_dim + 2 * ix.head_dim + h * ix.heads


def expert_parameters(arch: ModelArchitecture) -> int:
    """Parameters of one routed expert (0 for a dense model)."""
    if arch.moe is None:
        return 0
    return _ffn(arch, arch.moe.expert_intermediate_size, arch.moe.latent_size)


def _moe_block(arch: ModelArchitecture) -> tuple[int, int]:
    """(all parameters, parameters a token does not use) of one MoE feed-forward block."""
    moe = arch.moe
    assert moe is not None
    h = arch.hidden_size
    one = expert_parameters(arch)
    router = moe.num_experts * h + (moe.num_experts if arch.mlp_bias else 0)
    if moe.router_bias and moe.router_bias_parameter:
        router += moe.num_experts  # ERNIE-4.5: the correction bias is an nn.Parameter
    shared = _ffn(arch, moe.shared_intermediate) if moe.shared_intermediate else 0
    gate = h if moe.shared_expert_gate else 0
    latent = 0
    if moe.latent_size:
        # Down- and up-projection between hidden and the experts' latent, used by every token.
        latent = 2 * h * moe.latent_size + (moe.latent_size + h if arch.mlp_bias else 0)
    total = moe.num_experts * one + router + shared + gate + latent
    return total, (moe.num_experts - moe.experts_per_token) * one


def shared_block_parameters(arch: ModelArchitecture) -> tuple[int, int, int]:
    """(attention, FFN, norm) parameters of one shared block (Zamba2), stored once per block:
    its attention, its FFN, a norm of the attention input width and one of the hidden width."""
    sb = arch.shared_blocks
    if sb is None:
        return 0, 0, 0
    proj, qk_norms = attention_parameters(arch)
    norms = qk_norms + _norm(arch, sb.input_width) + _norm(arch, arch.hidden_size)
    return proj, _ffn(arch, arch.intermediate_size), norms


def _shared_layer_own(arch: ModelArchitecture) -> tuple[int, int]:
    """(attention-side, FFN-side) parameters each shared-block layer holds for itself: its q/k/v
    adapters and output projection, and its FFN gate/up adapter."""
    sb = arch.shared_blocks
    assert sb is not None
    h, r = arch.hidden_size, sb.adapter_rank
    attention = 3 * 2 * sb.input_width * r if sb.attention_adapters else 0
    attention += h * h if sb.layer_projection else 0
    gate_up = 2 * arch.intermediate_size if arch.gated_mlp else arch.intermediate_size
    return attention, h * r + r * gate_up


def _relative_bias(arch: ModelArchitecture) -> int:
    if arch.position_embedding is not PositionEmbedding.RELATIVE_BIAS:
        return 0
    buckets = arch.encoder_decoder.relative_attention_num_buckets if arch.encoder_decoder else 32
    return buckets * arch.num_attention_heads


@dataclass(frozen=True, slots=True)
class LayerParameters:
    """One transformer block's parameters by part."""

    attention: int
    mlp: int
    experts: int
    norms: int
    inactive: int
    buffers: int
    recurrent: int = 0

    @property
    def total(self) -> int:
        return self.attention + self.recurrent + self.mlp + self.experts + self.norms

    @property
    def active(self) -> int:
        return self.total - self.inactive


def layer_breakdown(arch: ModelArchitecture, index: int) -> LayerParameters:
    """Parameters of block ``index`` (0-based over :attr:`ModelArchitecture.total_layers`).

    For encoder-decoder models the indices past ``num_layers`` are decoder blocks. The block that
    holds a stack's relative position bias table carries it in ``attention``.
    """
    if not 0 <= index < arch.total_layers:
        raise IndexError(f"layer {index} outside 0..{arch.total_layers - 1}")
    if arch.has_attention(index):
        proj, qk_norms = attention_parameters(arch)
        proj += indexer_parameters(arch)
    else:
        proj, qk_norms = 0, 0
    recurrent = arch.recurrent.parameters if arch.has_recurrent(index) and arch.recurrent else 0
    has_ffn = arch.has_ffn(index)
    parts = (arch.mixer(index).value != "none") + has_ffn
    per_block = arch.norms_per_layer if parts == 2 else arch.single_part_norms
    norms = per_block * _norm(arch, arch.hidden_size) + qk_norms
    decoder_block = index >= arch.num_layers
    if decoder_block:
        proj *= 2  # self-attention and cross-attention
        qk_norms *= 2
        norms = (arch.norms_per_layer + 1) * _norm(arch, arch.hidden_size) + qk_norms
    if index in (0, arch.num_layers):
        proj += _relative_bias(arch)
    if arch.shared_blocks is not None and index in arch.shared_blocks.layers:
        # The layer runs a shared block (counted here in full: what the layer computes with; the
        # model total counts each block once) plus its own adapters and projection, and its own
        # mixer with that mixer's norm.
        attn, ffn, shared_norms = shared_block_parameters(arch)
        own_attention, own_ffn = _shared_layer_own(arch)
        norms = arch.single_part_norms * _norm(arch, arch.hidden_size) + shared_norms
        return LayerParameters(attn + own_attention, ffn + own_ffn, 0, norms, 0, 0, recurrent)
    if arch.is_moe_layer(index):
        moe_total, inactive = _moe_block(arch)
        moe = arch.moe
        buffers = moe.num_experts if moe and moe.router_bias and not moe.router_bias_parameter else 0
        return LayerParameters(proj, 0, moe_total, norms, inactive, buffers, recurrent)
    mlp = _ffn(arch, arch.intermediate_size) if has_ffn else 0
    return LayerParameters(proj, mlp, 0, norms, 0, 0, recurrent)


def layer_parameters(arch: ModelArchitecture, index: int) -> int:
    """All parameters of block ``index``."""
    return layer_breakdown(arch, index).total


def layer_active_parameters(arch: ModelArchitecture, index: int) -> int:
    """Parameters of block ``index`` one token passes through."""
    return layer_breakdown(arch, index).active


def embedding_parameters(arch: ModelArchitecture) -> tuple[int, int]:
    """(embedding parameters, embedding norm parameters) before the first block."""
    h = arch.hidden_size
    vision = arch.vision
    if vision is not None:
        tokens = vision.num_patches + (1 if vision.cls_token else 0)
        emb = vision.num_channels * vision.patch_size**2 * h + h + tokens * h
        emb += h if vision.cls_token else 0
    else:
        emb = arch.vocab_size * h
        if arch.position_embedding is PositionEmbedding.LEARNED:
            emb += arch.max_position_embeddings * h
        emb += arch.type_vocab_size * h
    return emb, _norm(arch, h) if arch.embedding_norm else 0


def final_norm_parameters(arch: ModelArchitecture) -> int:
    if not arch.final_norm:
        return 0
    stacks = 2 if arch.kind is ModelKind.ENCODER_DECODER else 1
    return stacks * _norm(arch, arch.hidden_size)


def lm_head_parameters(arch: ModelArchitecture) -> int:
    """Output head parameters not shared with the embedding (the pooler is counted in ``other``)."""
    h, v = arch.hidden_size, arch.vocab_size
    if arch.head is Head.BASE:
        return 0
    untied = 0 if arch.tie_word_embeddings else v * h
    bias = v if arch.lm_head_bias else 0
    if arch.head is Head.MASKED_LM:
        # BertForMaskedLM: transform (dense + LayerNorm) then the decoder, whose bias always exists.
        return h * h + h + _norm(arch, h) + untied + v
    return untied + bias


def count_parameters(arch: ModelArchitecture) -> ParameterCount:
    """Exact parameter count of ``arch``, total and active, broken down by part."""
    emb, emb_norm = embedding_parameters(arch)
    attention = recurrent = mlp = experts = norms = inactive = buffers = 0
    # Blocks repeat: compute each distinct kind of block once.
    cache: dict[tuple[object, ...], LayerParameters] = {}
    for index in range(arch.total_layers):
        key = (
            index >= arch.num_layers,
            arch.is_moe_layer(index),
            index in (0, arch.num_layers),
            arch.mixer(index),
            arch.has_ffn(index),
            arch.shared_blocks is not None and index in arch.shared_blocks.layers,
        )
        layer = cache.get(key)
        if layer is None:
            layer = cache[key] = layer_breakdown(arch, index)
        attention += layer.attention
        recurrent += layer.recurrent
        mlp += layer.mlp
        experts += layer.experts
        norms += layer.norms
        inactive += layer.inactive
        buffers += layer.buffers
    if arch.shared_blocks is not None:
        # Layers share their blocks' weights: keep one copy per distinct block.
        repeats = len(arch.shared_blocks.layers) - arch.shared_blocks.distinct
        shared_attention, shared_ffn, shared_norms = shared_block_parameters(arch)
        attention -= repeats * shared_attention
        mlp -= repeats * shared_ffn
        norms -= repeats * shared_norms
    norms += emb_norm + final_norm_parameters(arch)
    lm_head = lm_head_parameters(arch)
    h = arch.hidden_size
    other = (h * h + h if arch.pooler else 0) + arch.extra_parameters
    if arch.vision_tower is not None:
        other += arch.vision_tower.total_parameters
    breakdown = {
        "embedding": emb,
        "attention": attention,
        "recurrent": recurrent,
        "mlp": mlp,
        "experts": experts,
        "norms": norms,
        "lm_head": lm_head,
        "other": other,
    }
    total = sum(breakdown.values())
    return ParameterCount(total=total, active=total - inactive, breakdown=breakdown, buffers=buffers)
