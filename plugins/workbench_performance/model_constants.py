"""Per-model figures the time model needs and the result keys of other plugins do not carry.

* Weight elements a GPU reads in every forward pass, split into dense matrices and the routed
  experts it holds, with the tensor-parallel layout of Megatron-LM / vLLM (column-parallel
  Q/gate/up/LM head, row-parallel O/down, K/V never below one head per GPU, MLA
  down-projections and the router replicated; experts divided over expert-parallel ranks).
  Only matrices enter (embedding lookups read one row per token): the same convention as the
  compute plugin's roofline, so that its per-step bytes split exactly into weights and the
  per-sequence rest.
  Hybrid models: attention matrices only in blocks with attention (a gated output doubles
  q_proj), the recurrent mixer's projections (split over TP) in recurrent blocks, FFN matrices
  only in blocks that have one. Shared attention + MLP blocks (Zamba2) are read at every layer
  that applies them (:mod:`workbench_performance.shared_blocks` says why).
* How many tensor-parallel collectives one token meets per forward pass: one after each part of a
  block (token mixer, MLP; one for parallel attention+MLP blocks; a mixer-only or FFN-only block
  has one), one more per decoder block for cross-attention.
* Trainable parameters of LoRA adapters, for the gradient exchange of a fine-tune.

Everything is cached per (model object, TP, EP): sweeps pay for it once.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.model import Head, ModelArchitecture, ModelKind
from workbench_performance import shared_blocks
from workbench_performance.arrays import maximum, power


@dataclass(frozen=True, slots=True)
class WeightElements:
    """Matrix weight elements on one GPU of one pipeline-less replica (divide by PP per stage)."""

    dense: float
    decode_dense: float  # what a decode step reads: all but an encoder-decoder model's encoder
    head: float  # the output head's share of ``dense`` (run on the last prompt position only in prefill)
    experts: float  # routed experts held by this GPU
    local_experts: float
    top_k: int
    num_experts: int


def _attention(arch: ModelArchitecture, tp: int) -> float:
    h, heads = arch.hidden_size, arch.num_attention_heads
    mla = arch.mla
    if mla is not None:
        q = (
            (h * mla.q_lora_rank + mla.q_lora_rank * heads * mla.qk_head_dim / tp)
            if mla.q_lora_rank
            else h * heads * mla.qk_head_dim / tp
        )
        kv = (
            h * (mla.kv_lora_rank + mla.qk_rope_head_dim)
            + mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim) / tp
        )
        return q + kv + heads * mla.v_head_dim * h / tp
    q_width, kv_width = heads * arch.head_dim, arch.num_kv_heads * arch.head_dim
    q_and_o = 3.0 if arch.attention_output_gate else 2.0
    return q_and_o * h * q_width / tp + 2.0 * h * kv_width / min(tp, arch.num_kv_heads)


def _ffn(arch: ModelArchitecture, inner: int, tp: int, width: int | None = None) -> float:
    return (3.0 if arch.gated_mlp else 2.0) * (width or arch.hidden_size) * inner / tp


def _latent_moe(arch: ModelArchitecture) -> tuple[int | None, float]:
    """(width the routed experts work at, dense latent-projection weights of one MoE block).

    Nemotron-3's latent MoE: experts of ``latent x expert_intermediate`` and, used by every token,
    hidden -> latent and latent -> hidden projections (kept whole on each TP rank like
    the router, as vLLM and SGLang do)."""
    latent = arch.moe.latent_size if arch.moe is not None else None
    return latent, 2.0 * arch.hidden_size * latent if latent else 0.0


_WEIGHTS: dict[tuple[int, int, int], tuple[ModelArchitecture, WeightElements]] = {}


def weight_elements(arch: ModelArchitecture, tp: int, ep: int) -> WeightElements:
    """Matrix weights one GPU holds at tensor-parallel ``tp`` and expert-parallel ``ep``."""
    key = (id(arch), tp, ep)
    hit = _WEIGHTS.get(key)
    if hit is not None and hit[0] is arch:
        return hit[1]
    moe = arch.moe
    # Zamba2: a shared block's weights are read at every layer that applies it (shared_blocks module).
    attention = _attention(arch, tp) if arch.shared_blocks is None else shared_blocks.attention_elements(arch, tp)
    mixer = arch.recurrent.projection_parameters / tp if arch.recurrent is not None else 0.0
    dense = experts = encoder = 0.0
    local = moe.num_experts / ep if moe else 0.0
    expert_width, latent_projections = _latent_moe(arch)
    seq2seq = arch.kind is ModelKind.ENCODER_DECODER
    for index in range(arch.total_layers):
        block = attention if arch.has_attention(index) else 0.0
        if arch.has_recurrent(index):
            block += mixer
        if index >= arch.num_layers:
            block += attention  # cross-attention of a decoder block
        if moe is not None and arch.is_moe_layer(index):
            block += arch.hidden_size * moe.num_experts + latent_projections  # router, replicated
            if moe.shared_intermediate:
                block += _ffn(arch, moe.shared_intermediate, tp)
            if moe.shared_expert_gate:
                block += arch.hidden_size  # the shared expert's gate (hidden -> 1), replicated
            experts += local * _ffn(arch, moe.expert_intermediate_size, tp, expert_width)
        elif arch.has_ffn(index):
            block += _ffn(arch, arch.intermediate_size, tp)
        dense += block
        if seq2seq and index < arch.num_layers:
            encoder += block
    head = (
        arch.hidden_size * arch.vocab_size / tp if arch.head is not Head.BASE and arch.vision is None else 0.0
    )
    dense += head
    result = WeightElements(
        dense,
        dense - encoder,
        head,
        experts,
        local,
        moe.experts_per_token if moe else 0,
        moe.num_experts if moe else 0,
    )
    if len(_WEIGHTS) > 512:
        _WEIGHTS.clear()
    _WEIGHTS[key] = (arch, result)
    return result


def matmul_elements_per_token(w: WeightElements, *, decode: bool) -> float:
    """Weight elements one token multiplies on one GPU: dense matrices and its top-k experts."""
    expert = w.top_k * w.experts / w.local_experts if w.local_experts else 0.0
    return (w.decode_dense if decode else w.dense) + expert


def touched_fraction(w: WeightElements, tokens: float, ep: int) -> float:
    """Expected share of a GPU's local experts that ``tokens`` tokens route to (uniform routing).

    Each of the ``tokens x EP`` tokens an expert-parallel group serves picks ``top_k`` of
    ``num_experts``; an expert stays untouched with probability ``(1 - top_k/E) ** (tokens x EP)``.
    """
    if not w.num_experts:
        return 0.0
    return 1.0 - power(1.0 - w.top_k / w.num_experts, maximum(tokens * ep, 0.0))


@dataclass(frozen=True, slots=True)
class BlockCounts:
    """Blocks of a hybrid model by what they hold (one walk over the layers per model)."""

    attention: int
    recurrent: int
    ffn: int
    collectives: int  # TP all-reduces per token: one per block part (a parallel block: one)


_COUNTS: dict[int, tuple[ModelArchitecture, BlockCounts]] = {}


def block_counts(arch: ModelArchitecture) -> BlockCounts:
    hit = _COUNTS.get(id(arch))
    if hit is not None and hit[0] is arch:
        return hit[1]
    attention = recurrent = ffn = collectives = 0
    for index in range(arch.total_layers):
        mixes = arch.mixer(index).value != "none"
        has_ffn = arch.has_ffn(index)
        attention += arch.has_attention(index)
        recurrent += arch.has_recurrent(index)
        ffn += has_ffn
        collectives += 1 if arch.parallel_attention_mlp and mixes and has_ffn else int(mixes) + int(has_ffn)
    collectives += shared_blocks.extra_collectives(arch)
    counts = BlockCounts(attention, recurrent, ffn, collectives)
    if len(_COUNTS) > 512:
        _COUNTS.clear()
    _COUNTS[id(arch)] = (arch, counts)
    return counts


def tp_collectives(arch: ModelArchitecture) -> int:
    """Tensor-parallel all-reduces one token meets in a forward pass through the whole model."""
    decoder = (
        arch.encoder_decoder.num_decoder_layers
        if arch.kind is ModelKind.ENCODER_DECODER and arch.encoder_decoder
        else 0
    )
    if not arch.is_hybrid:
        per_block = 1 if arch.parallel_attention_mlp else 2
        return per_block * arch.total_layers + decoder
    return block_counts(arch).collectives + decoder


def moe_layers(arch: ModelArchitecture) -> int:
    if arch.moe is None:
        return 0
    return sum(1 for index in range(arch.total_layers) if arch.is_moe_layer(index))


def lora_parameters(arch: ModelArchitecture, rank: int, attention_only: bool) -> float:
    """Adapter parameters: ``rank x (in + out)`` per adapted matrix (attention, and with all-linear
    the dense/shared MLPs and the recurrent mixers' projections)."""
    h, heads = arch.hidden_size, arch.num_attention_heads
    q_width, kv_width = heads * arch.head_dim, arch.num_kv_heads * arch.head_dim
    q_out = 2 * q_width if arch.attention_output_gate else q_width
    attention = (h + q_out) + 2 * (h + kv_width) + (q_width + h)
    mlp = 0.0 if attention_only else (3 if arch.gated_mlp else 2) * (h + arch.intermediate_size)
    if not arch.is_hybrid:
        return float(rank) * arch.total_layers * (attention + mlp)
    n = block_counts(arch)
    if arch.shared_blocks is not None:
        # Zamba2: shared modules carry one adapter each, the layers' own linears one per layer.
        total = shared_blocks.lora_io(arch, attention_only)
        mixer = sum(i + o for i, o in arch.recurrent.projections) if arch.recurrent is not None else 0
        return float(rank) * (total + (0 if attention_only else n.recurrent * mixer))
    total = n.attention * attention
    if not attention_only:
        mixer = sum(i + o for i, o in arch.recurrent.projections) if arch.recurrent is not None else 0
        total += n.recurrent * mixer + n.ffn * mlp
    return float(rank) * total


#: Bytes an optimizer step reads and writes per trained parameter (fp32 master weights and
#: states, mixed precision): AdamW reads master weight, gradient, m, v and writes weight, m, v
#: and the 16-bit copy; 8-bit Adam keeps m and v in one byte each; SGD with momentum keeps one
#: state; Adafactor's factored statistics are negligible per parameter.
OPTIMIZER_BYTES = {"adamw": 30.0, "adamw-8bit": 18.0, "sgd-momentum": 22.0, "adafactor": 14.0}
