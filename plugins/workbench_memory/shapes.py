"""Per-model constants of the memory stack, computed once per model object.

The hot path asks "how many parameters of kind X live in layers a..b" for every pipeline stage
of every layout it tries. Walking the layers each time would cost O(layers); here every kind is a
prefix sum over the blocks, so a stage's share is one subtraction.

How a block's parameters split under tensor parallelism (Megatron-LM / vLLM layouts):

* ``split``: divided evenly over TP ranks: Q and output projections, MLA up-projections, dense
  FFN, shared experts (column/row parallel; their few replicated biases are ignored).
* ``kv``: K/V projections of MHA/GQA/MQA. A rank holds ``ceil(kv_heads / tp)`` heads, so when
  ``tp > kv_heads`` the heads replicate (vLLM) instead of splitting.
* ``repl_linear``: linear layers every TP rank keeps whole: MLA down-projections (q_a, kv_a, as
  vLLM's ReplicatedLinear) and the MoE router.
* ``norms``: norm weights, replicated; never quantized. The small tensors of a recurrent mixer
  (Mamba-2 / Gated DeltaNet conv weights, dt bias, A, D, gated norm) count here too: replicated,
  kept at full precision. The recurrent mixer's projections are ``split`` (in_proj column-,
  out_proj row-parallel), like attention's.
* ``routed``: routed experts, divided over expert-parallel ranks.

Shared attention + MLP blocks (Zamba2) are held once, on the first layer that runs each (and once
more on every later pipeline stage that runs it): :mod:`workbench_memory.shared_blocks`.

LoRA and Adafactor need matrix shapes: ``lora_io``/``lora_n`` hold, per target set, the sum of
``in + out`` over the adapted matrices and how many there are (an adapter of rank r adds
``r x (in + out)`` per matrix); ``factored`` holds Adafactor's state elements for full training
(``rows + cols`` per matrix, every element of a vector).

LoRA targets follow PEFT on transformers 5 models: ``all-linear`` adapts every ``nn.Linear`` of the
blocks (attention projections, recurrent-mixer projections, dense FFN, shared experts and their
gate); blocks without attention or without FFN have none of those; routed experts are fused
3-D parameters and routers are not ``nn.Linear`` there, so they get no adapter. ``attention``
adapts the attention projections only.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from math import ceil

from workbench.core.model import Head, ModelArchitecture, ModelKind
from workbench.core.params import (
    count_parameters,
    embedding_parameters,
    expert_parameters,
    final_norm_parameters,
    layer_breakdown,
    lm_head_parameters,
    shared_block_parameters,
)
from workbench_memory import shared_blocks

#: LoRA target sets (``Scenario.lora_targets``).
ALL_LINEAR, ATTENTION = "all-linear", "attention"


@dataclass(frozen=True, slots=True)
class BlockShape:
    """One transformer block, by how its parameters shard and adapt."""

    split: int
    kv: int
    repl_linear: int
    norms: int
    routed: int
    lora_io_all: int
    lora_n_all: int
    lora_io_attn: int
    lora_n_attn: int
    factored: int
    full_kv: int  # 1: a self-attention cache that grows with every token
    sw_kv: int  # 1: a sliding-window self-attention cache
    cross_kv: int  # 1: a cross-attention cache over the encoder's tokens
    state: int  # 1: a recurrent mixer that keeps a fixed conv + SSM state per sequence

    @property
    def total(self) -> int:
        return self.split + self.kv + self.repl_linear + self.norms + self.routed


@dataclass(frozen=True, slots=True)
class ModelConstants:
    """Prefix sums over blocks (index 0..layers) and the parts outside the blocks."""

    layers: int
    total: int
    active: int
    split: tuple[int, ...]
    kv: tuple[int, ...]
    repl_linear: tuple[int, ...]
    norms: tuple[int, ...]
    routed: tuple[int, ...]
    lora_io_all: tuple[int, ...]
    lora_n_all: tuple[int, ...]
    lora_io_attn: tuple[int, ...]
    lora_n_attn: tuple[int, ...]
    factored: tuple[int, ...]
    full_kv: tuple[int, ...]
    sw_kv: tuple[int, ...]
    cross_kv: tuple[int, ...]
    state: tuple[int, ...]
    word_embedding: int  # vocab x hidden, vocab-parallel under TP
    embedding_other: int  # position / token-type / patch embeddings and the embedding norm (replicated)
    lm_head: int  # head parameters not shared with the embedding (vocab-parallel)
    tied_copy: int  # the embedding copy a last pipeline stage holds for a tied head (Megatron-LM)
    final_norm: int
    other: int  # pooler and parameters the fields do not describe (first stage)
    factored_outside: int
    num_experts: int
    kv_heads: int
    heads: int
    kv_elems: int  # cached K+V (or latent) elements per token per layer, whole model
    kv_elems_decompressed: int  # MLA: per-head K and V elements per token per layer
    mla: bool
    window: int  # sliding window (0: none)
    encoder_decoder: bool
    conv_state_elems: int  # per sequence and recurrent layer, whole model
    ssm_state_elems: int
    ssm_state_fp32: bool
    state_heads: int  # heads TP splits the recurrent state over

    def state_bytes_per_rank(self, tp: int, kv_bytes: float) -> float:
        """Recurrent-state bytes one sequence keeps per recurrent layer on one TP rank: the conv
        window in the KV dtype, the SSM state in fp32 when the family keeps it so; heads split
        over TP (vLLM shards Mamba / Gated DeltaNet heads), never below one head."""
        if not self.state_heads:
            return 0.0
        ssm = 4.0 if self.ssm_state_fp32 else kv_bytes
        whole = self.conv_state_elems * kv_bytes + self.ssm_state_elems * ssm
        return whole * ceil(self.state_heads / tp) / self.state_heads

    def kv_fraction(self, tp: int) -> float:
        """Share of the K/V projections one TP rank holds (KV heads replicate when tp > kv_heads)."""
        return ceil(self.kv_heads / tp) / self.kv_heads

    def kv_elems_per_rank(self, tp: int, decompressed: bool) -> float:
        """Cached elements per token per layer on one TP rank."""
        if self.mla:
            if decompressed:
                return self.kv_elems_decompressed * ceil(self.heads / tp) / self.heads
            return self.kv_elems  # the latent is shared by all heads: every TP rank caches all of it
        return self.kv_elems * ceil(self.kv_heads / tp) / self.kv_heads


def _attention_matrices(arch: ModelArchitecture) -> list[tuple[int, int]]:
    """(in, out) of every projection of one attention block."""
    h, heads = arch.hidden_size, arch.num_attention_heads
    mla = arch.mla
    if mla is not None:
        mats = []
        if mla.q_lora_rank is not None:
            mats += [(h, mla.q_lora_rank), (mla.q_lora_rank, heads * mla.qk_head_dim)]
        else:
            mats.append((h, heads * mla.qk_head_dim))
        mats += [
            (h, mla.kv_lora_rank + mla.qk_rope_head_dim),
            (mla.kv_lora_rank, heads * (mla.qk_nope_head_dim + mla.v_head_dim)),
            (heads * mla.v_head_dim, h),
        ]
        return mats
    q, kv = heads * arch.head_dim, arch.num_kv_heads * arch.head_dim
    return [(h, q), (h, kv), (h, kv), (q, h)]


#: Model types whose gated MLPs hold gate and up in one matrix (Granite-4.0-H's shared MLP and
#: experts: ``input_linear``, hidden -> 2 x inner, then ``output_linear``).
_FUSED_GATE_UP = ("granitemoehybrid",)


def _ffn_matrices(arch: ModelArchitecture, inner: int, width: int | None = None) -> list[tuple[int, int]]:
    h = width or arch.hidden_size
    if arch.gated_mlp and arch.hf_model_type in _FUSED_GATE_UP:
        return [(h, 2 * inner), (inner, h)]
    if arch.gated_mlp:
        return [(h, inner), (h, inner), (inner, h)]
    return [(h, inner), (inner, h)]


def _latent_moe_projections(arch: ModelArchitecture) -> list[tuple[int, int]]:
    """Nemotron-3's latent MoE: hidden -> latent before the routed experts and latent -> hidden after
    (nn.Linear modules, so all-linear LoRA adapts them), kept whole on each TP rank like the router
    (vLLM, SGLang); their biases (with ``mlp_bias``) stay with the split parameters, as other FFN
    biases do."""
    latent = arch.moe.latent_size if arch.moe is not None else None
    if not latent:
        return []
    return [(arch.hidden_size, latent), (latent, arch.hidden_size)]


def _mla_replicated(arch: ModelArchitecture) -> int:
    """MLA down-projections (q_a, kv_a with their biases) that every TP rank keeps whole."""
    mla = arch.mla
    assert mla is not None
    h, bias = arch.hidden_size, arch.attention_bias
    kv_a = mla.kv_lora_rank + mla.qk_rope_head_dim
    n = h * kv_a + (kv_a if bias else 0)
    if mla.q_lora_rank is not None:
        n += h * mla.q_lora_rank + (mla.q_lora_rank if bias else 0)
    return n


def _block(arch: ModelArchitecture, index: int) -> BlockShape:
    lb = layer_breakdown(arch, index)
    h = arch.hidden_size
    decoder_block = index >= arch.num_layers
    stacks = 2 if decoder_block else 1  # self- and cross-attention
    attention = arch.has_attention(index)
    attn = _attention_matrices(arch) * stacks if attention else []
    sb = arch.shared_blocks
    shared_layer = sb is not None and index in sb.layers
    if shared_layer:
        attn = shared_blocks.attention_matrices(arch)
    if not attention:
        repl = kv = 0
    elif shared_layer:
        repl, kv = 0, shared_blocks.kv_projection_parameters(arch)
    elif arch.mla is not None:
        repl, kv = _mla_replicated(arch) * stacks, 0
    else:
        kv_width = arch.num_kv_heads * arch.head_dim
        kv = stacks * (2 * h * kv_width + (2 * kv_width if arch.attention_bias else 0))
        repl = 0
    split = lb.attention - kv - repl + lb.mlp
    norms = lb.norms
    mixer: list[tuple[int, int]] = []
    mixer_rest = 0
    if lb.recurrent and arch.recurrent is not None:
        mixer = list(arch.recurrent.projections)
        split += arch.recurrent.projection_parameters
        mixer_rest = arch.recurrent.other_parameters
        norms += mixer_rest
    routed = 0
    ffn: list[tuple[int, int]] = []
    other_mats: list[tuple[int, int]] = []
    if arch.is_moe_layer(index):
        moe = arch.moe
        assert moe is not None
        routed = moe.num_experts * expert_parameters(arch)
        router = moe.num_experts * h + (moe.num_experts if arch.mlp_bias else 0)
        latent = _latent_moe_projections(arch)
        repl += router + sum(i * o for i, o in latent)
        split += lb.experts - routed - router - sum(i * o for i, o in latent)
        if moe.shared_intermediate:
            ffn = _ffn_matrices(arch, moe.shared_intermediate)
        ffn += latent
        other_mats = _ffn_matrices(arch, moe.expert_intermediate_size, moe.latent_size) * moe.num_experts + [
            (h, moe.num_experts)
        ]
        if moe.shared_expert_gate:
            ffn.append((h, 1))  # an nn.Linear(hidden, 1) that PEFT's all-linear adapts too
    elif arch.has_ffn(index):
        ffn = _ffn_matrices(arch, arch.intermediate_size)
    own: list[tuple[int, int]] = []
    layer_total = lb.total
    if shared_layer:
        # Zamba2: the layer's own adapters and projection; the shared block's weights only on the
        # first layer that runs it (held once, see workbench_memory.shared_blocks).
        ffn, own = shared_blocks.mlp_matrices(arch), shared_blocks.own_matrices(arch)
        if index not in shared_blocks.block_firsts(arch):
            attention_weights, mlp_weights, shared_norms = shared_block_parameters(arch)
            split -= attention_weights - kv + mlp_weights
            norms -= shared_norms
            kv, attn, ffn = 0, [], []
            layer_total -= attention_weights + mlp_weights + shared_norms
    mats = attn + mixer + ffn + own + other_mats
    matrix_elems = sum(i * o for i, o in mats)
    # vectors (and the mixer's conv weights, A, D, ...) are kept whole
    factored = sum(i + o for i, o in mats) + (layer_total - matrix_elems)
    lora_all = attn + mixer + ffn
    if shared_layer:
        lora_all = shared_blocks.lora_matrices(arch, index) + mixer
        attn = lora_all[:4]  # the "attention" targets: this layer's instance of q, k, v and o
    kind = arch.kind
    cached = kind is not ModelKind.ENCODER and (kind is ModelKind.DECODER or decoder_block)
    sliding = cached and not decoder_block and arch.uses_sliding_window(index)
    kv_cached = cached and attention
    return BlockShape(
        split=split,
        kv=kv,
        repl_linear=repl,
        norms=norms,
        routed=routed,
        lora_io_all=sum(i + o for i, o in lora_all),
        lora_n_all=len(lora_all),
        lora_io_attn=sum(i + o for i, o in attn),
        lora_n_attn=len(attn),
        factored=factored,
        full_kv=int(kv_cached and not sliding),
        sw_kv=int(sliding),
        cross_kv=int(decoder_block),
        state=int(cached and bool(lb.recurrent)),
    )


def _prefix(values: list[int]) -> tuple[int, ...]:
    return tuple(accumulate(values, initial=0))


def build_constants(arch: ModelArchitecture) -> ModelConstants:
    """Walk the blocks once (each distinct kind of block computed once)."""
    cache: dict[tuple[object, ...], BlockShape] = {}
    blocks: list[BlockShape] = []
    firsts = shared_blocks.block_firsts(arch)
    for index in range(arch.total_layers):
        key = (
            index >= arch.num_layers,
            arch.is_moe_layer(index),
            index in (0, arch.num_layers),
            arch.uses_sliding_window(index),
            arch.mixer(index),
            arch.has_ffn(index),
            # Zamba2: layers running a shared block, and whether they hold its weights
            shared_blocks.block_of(arch, index),
            index in firsts,
        )
        block = cache.get(key)
        if block is None:
            block = cache[key] = _block(arch, index)
        blocks.append(block)

    def column(name: str) -> tuple[int, ...]:
        return _prefix([getattr(b, name) for b in blocks])

    count = count_parameters(arch)
    h = arch.hidden_size
    emb, emb_norm = embedding_parameters(arch)
    word = 0 if arch.vision is not None else arch.vocab_size * h
    lm_head = lm_head_parameters(arch)
    has_head = arch.head is not Head.BASE and arch.vision is None
    tied_copy = word if (arch.tie_word_embeddings and has_head) else 0
    final_norm = final_norm_parameters(arch)
    other = count.breakdown["other"]
    factored_outside = (arch.vocab_size + h if word else 0) + (emb - word) + emb_norm + final_norm + other
    if lm_head:
        untied = 0 if arch.tie_word_embeddings else arch.vocab_size * h
        factored_outside += lm_head - untied + (arch.vocab_size + h if untied else 0)
    rec = arch.recurrent if arch.recurrent_layers else None
    mla = arch.mla
    if mla is not None:
        kv_elems = mla.kv_lora_rank + mla.qk_rope_head_dim
        decompressed = arch.num_attention_heads * (mla.qk_head_dim + mla.v_head_dim)
    else:
        kv_elems = decompressed = 2 * arch.num_kv_heads * arch.head_dim
    if arch.indexer is not None:
        # DeepSeek-V3.2: every attention layer also caches one indexer key (index_head_dim) per
        # token, next to the latent (transformers' DynamicIndexedLayer.indexer_keys); single-head,
        # so every TP rank keeps all of it, as it does the latent.
        kv_elems += arch.indexer.head_dim
        decompressed += arch.indexer.head_dim
    return ModelConstants(
        layers=arch.total_layers,
        total=count.total,
        active=count.active,
        split=column("split"),
        kv=column("kv"),
        repl_linear=column("repl_linear"),
        norms=column("norms"),
        routed=column("routed"),
        lora_io_all=column("lora_io_all"),
        lora_n_all=column("lora_n_all"),
        lora_io_attn=column("lora_io_attn"),
        lora_n_attn=column("lora_n_attn"),
        factored=column("factored"),
        full_kv=column("full_kv"),
        sw_kv=column("sw_kv"),
        cross_kv=column("cross_kv"),
        state=column("state"),
        word_embedding=word,
        embedding_other=emb - word + emb_norm,
        lm_head=lm_head,
        tied_copy=tied_copy,
        final_norm=final_norm,
        other=other,
        factored_outside=factored_outside,
        num_experts=arch.moe.num_experts if arch.moe else 0,
        kv_heads=arch.num_kv_heads,
        heads=arch.num_attention_heads,
        kv_elems=kv_elems,
        kv_elems_decompressed=decompressed,
        mla=mla is not None,
        window=arch.sliding_window.window if arch.sliding_window else 0,
        encoder_decoder=arch.kind is ModelKind.ENCODER_DECODER,
        conv_state_elems=rec.conv_state_elements if rec else 0,
        ssm_state_elems=rec.ssm_state_elements if rec else 0,
        ssm_state_fp32=rec.ssm_state_fp32 if rec else False,
        state_heads=rec.heads if rec else 0,
    )


_CACHE: dict[int, tuple[ModelArchitecture, ModelConstants]] = {}
_CACHE_SIZE = 64


def model_constants(arch: ModelArchitecture) -> ModelConstants:
    """Constants of ``arch``, cached per model object.

    The cache holds the model itself next to its constants, so an id is never reused while its
    entry lives; the oldest entry goes when the cache is full.
    """
    hit = _CACHE.get(id(arch))
    if hit is not None and hit[0] is arch:
        return hit[1]
    constants = build_constants(arch)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)), None)
    _CACHE[id(arch)] = (arch, constants)
    return constants
