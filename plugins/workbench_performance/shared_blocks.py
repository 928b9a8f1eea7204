"""Shared attention + MLP blocks (Zamba2) in the time model.

**Weights read per decode step: the shared weights once per application.** A shared block is
stored once, but every layer that applies it multiplies its matrices again; between two
applications the Mamba layers in between stream their own weights, so (at real sizes, tens to
hundreds of MiB per block against tens of MiB of L2) the block's weights are read from HBM again
each time it runs. So a step reads, per layer running a shared block: the shared attention (q, k
and v from ``input_width`` features), its own adapters and output projection (small, kept whole
on every tensor-parallel rank, as the compute plugin's ``workbench_compute.shared_blocks``
counts them), and the shared MLP (counted with the other dense FFNs). This is what the compute
roofline multiplies, so per-step bytes still split exactly into weights and the rest.

**Tensor-parallel collectives**: the shared block's attention and MLP each end in an all-reduce
before the Mamba mixer's own (three per such layer, where a block holding only a mixer has one).

**LoRA** (PEFT ``all-linear`` / ``attention``): see :func:`lora_io`.
"""

from __future__ import annotations

from workbench.core.model import ModelArchitecture


def attention_elements(arch: ModelArchitecture, tp: int) -> float:
    """Matrix elements one GPU reads each time a layer applies its shared attention: the shared
    q/k/v/o (q/o split over TP, k/v never below one KV head) and the layer's own adapters and
    projection (replicated)."""
    sb = arch.shared_blocks
    assert sb is not None
    h, w = arch.hidden_size, sb.input_width
    q, kv = arch.num_attention_heads * arch.head_dim, arch.num_kv_heads * arch.head_dim
    shared = (w * q + q * h) / tp + 2.0 * w * kv / min(tp, arch.num_kv_heads)
    return shared + own_elements(arch)


def own_elements(arch: ModelArchitecture) -> float:
    """Elements of one layer's own adapters (q/k/v, gate/up) and output projection."""
    sb = arch.shared_blocks
    assert sb is not None
    h, w, r = arch.hidden_size, sb.input_width, sb.adapter_rank
    gate_up = (2 if arch.gated_mlp else 1) * arch.intermediate_size
    own = r * (h + gate_up) if r else 0.0
    if r and sb.attention_adapters:
        own += 3 * 2 * w * r  # q/k/v adapters: input_width -> rank -> input_width
    return own + (h * h if sb.layer_projection else 0.0)


def extra_collectives(arch: ModelArchitecture) -> int:
    """All-reduces per token beyond one per block part: the shared attention's (the block counts its
    token mixer and FFN once each; a layer running a shared block has a mixer, attention and FFN)."""
    sb = arch.shared_blocks
    return len(sb.layers) if sb is not None else 0


def lora_io(arch: ModelArchitecture, attention_only: bool) -> int:
    """``sum(in + out)`` of the matrices PEFT adapts in the shared-block parts (an adapter of rank r
    adds ``r x`` that). transformers 5 builds a tied instance of the block at each layer that runs
    it, and PEFT wraps instances: each such layer gets adapters on q/k/v/o (``attention``) and, with
    ``all-linear``, on the MLP, its projection and every adapter slot of its instance (one per layer
    sharing that block), as workbench_memory.shared_blocks.lora_matrices lists them."""
    sb = arch.shared_blocks
    assert sb is not None
    h, w, i, r = arch.hidden_size, sb.input_width, arch.intermediate_size, sb.adapter_rank
    q, kv = arch.num_attention_heads * arch.head_dim, arch.num_kv_heads * arch.head_dim
    attention = (w + q) + 2 * (w + kv) + (q + h)
    positions = len(sb.layers)
    if attention_only:
        return positions * attention
    gate_up = (2 if arch.gated_mlp else 1) * i
    slot = (6 * (w + r) if r and sb.attention_adapters else 0) + ((h + r) + (r + gate_up) if r else 0)
    # layers sharing a block each hold all of its slots: sum over blocks of (layers of it)^2
    slots = sum(sum(1 for j in range(positions) if j % sb.count == b) ** 2 for b in range(sb.distinct))
    per_layer = attention + (h + gate_up) + (i + h) + (2 * h if sb.layer_projection else 0)
    return positions * per_layer + slots * slot
