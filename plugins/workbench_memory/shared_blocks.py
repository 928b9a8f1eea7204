"""Shared attention + MLP blocks (Zamba2) in the memory stack: weights, and activations.

**Weights.** A shared block is stored once (transformers ties the blocks' weights across the
layers that run them; ``count_parameters`` keeps one copy of each). In the per-block prefix sums of
:mod:`workbench_memory.shapes` the block's weights sit on the *first* layer that runs it; every
other layer that runs it holds only its own adapters and output projection. Under pipeline
parallelism every stage that runs a block needs its weights, so a stage whose layers apply a
block first used on an earlier stage holds a copy too (:func:`stage_copies`, added by
``workbench_memory.sharding.build_stage``): a stage holds each block it runs exactly once. Tensor
parallelism splits the shared weights as any attention + MLP (q/o and the MLP column/row
parallel, k/v by KV heads); the per-layer adapters and projections are small and counted as
``split`` too. Gradients and optimizer states follow the weights: one copy per stage holding
them (the copies' gradients are summed across stages, as for a tied embedding and head).

**KV cache and recurrent state**: every layer that runs a shared block caches its own K/V (the
attention runs with that layer's index; transformers' cache keeps one K/V per such layer), of
``num_kv_heads x head_dim`` with ``head_dim = input_width / heads``; every layer, hybrid or not,
keeps its Mamba-2 conv and SSM state. ``BlockShape.full_kv`` and ``state`` say so per layer.

**Activations** (``Zamba2HybridLayer`` in transformers' modeling_zamba2.py, listed with
``saved_tensors_hooks``; ``tests/validation/test_zamba2_vs_torch.py`` holds the sums). On top of
what an attention + dense FFN + recurrent-mixer block keeps (two hidden-width norms, the
attention's and the FFN's inputs, the attention core, the FFN's inner tensors), a layer running a
shared block keeps, per token: a third norm, over the joined input (``input_width`` = 2 x hidden;
the other two, before the MLP and before the Mamba mixer, are the block's hidden-width ones),
q/k/v's input at that width (``input_width`` instead of hidden), the rank-``r`` outputs of its own q/k/v adapters (the up
projection keeps them) and of its gate/up adapter, and its output projection's input (hidden).
Under full recompute (transformers checkpoints the hybrid layer and, nested in it, its Mamba
layer) each such layer also holds the block's output the Mamba layer's checkpoint binds in
(hidden), and the model holds the original embeddings every shared block joins (hidden, once).
"""

from __future__ import annotations

from collections.abc import Callable

from workbench.core.model import ModelArchitecture
from workbench.core.params import shared_block_parameters


def block_firsts(arch: ModelArchitecture) -> dict[int, int]:
    """First layer of each distinct shared block, keyed by that layer (block ``j`` is run by the
    ``j``-th, ``j + count``-th, ... layer that runs a shared block)."""
    sb = arch.shared_blocks
    if sb is None:
        return {}
    return {layer: j for j, layer in enumerate(sb.layers[: sb.distinct])}


def stage_copies(arch: ModelArchitecture, a: int, b: int) -> int:
    """Shared blocks layers ``a..b-1`` run whose weights the prefix sums place before ``a``: the
    copies a pipeline stage over those layers holds on top of its own layers' sums."""
    sb = arch.shared_blocks
    if sb is None or a == 0:
        return 0
    used = {j % sb.count for j, layer in enumerate(sb.layers) if a <= layer < b}
    return sum(1 for j in used if sb.layers[j] < a)


def layer_bytes(arch: ModelArchitecture, dt: float, norm: Callable[[float], float], frozen: bool) -> float:
    """Per-token bytes a layer running a shared block keeps beyond an attention + FFN + mixer block
    (see the module docstring). ``norm(width)`` is the bytes one norm over ``width`` keeps. Under
    LoRA (frozen base weights) the inputs of the adapters' up projections and of the output
    projection are left out, as a frozen linear keeps none (all-linear LoRA adapters on those
    linears would keep them again: not modelled)."""
    sb = arch.shared_blocks
    assert sb is not None
    h, w, r = arch.hidden_size, sb.input_width, sb.adapter_rank
    kept = norm(w) + dt * (w - h)
    if not frozen:
        kept += dt * r * ((3 if sb.attention_adapters else 0) + 1)
        kept += dt * h if sb.layer_projection else 0.0
    return kept


def recompute_bytes(arch: ModelArchitecture, dt: float) -> tuple[float, float]:
    """(per token and shared-block layer, per token once) held under full recompute on top of each
    layer's input: the block output the nested Mamba checkpoint binds in, the original embeddings."""
    h = arch.hidden_size
    return dt * h, dt * h


# --- weights: matrices and the parts of one block -------------------------------------------------


def attention_matrices(arch: ModelArchitecture) -> list[tuple[int, int]]:
    """(in, out) of the shared attention's projections: q, k and v read ``input_width`` features."""
    sb = arch.shared_blocks
    assert sb is not None
    q, kv = arch.num_attention_heads * arch.head_dim, arch.num_kv_heads * arch.head_dim
    w, h = sb.input_width, arch.hidden_size
    return [(w, q), (w, kv), (w, kv), (q, h)]


def mlp_matrices(arch: ModelArchitecture) -> list[tuple[int, int]]:
    """(in, out) of the shared MLP: one fused gate + up projection (``gate_up_proj``), then down."""
    h, i = arch.hidden_size, arch.intermediate_size
    return [(h, (2 if arch.gated_mlp else 1) * i), (i, h)]


def adapter_matrices(arch: ModelArchitecture) -> list[tuple[int, int]]:
    """(in, out) of one layer's own adapters: q/k/v (down, up each) and gate/up (down, up)."""
    sb = arch.shared_blocks
    assert sb is not None
    h, w, r = arch.hidden_size, sb.input_width, sb.adapter_rank
    mats: list[tuple[int, int]] = []
    if r and sb.attention_adapters:
        # each maps input_width -> rank -> input_width (transformers builds them so; their outputs
        # add to q, k and v, which is why such a model has as many KV heads as heads)
        mats += [(w, r), (r, w)] * 3
    if r:
        mats += [(h, r), (r, (2 if arch.gated_mlp else 1) * arch.intermediate_size)]
    return mats


def own_matrices(arch: ModelArchitecture) -> list[tuple[int, int]]:
    """(in, out) of the ``nn.Linear`` modules each layer running a shared block holds for itself:
    its adapters and, with ``layer_projection``, its output projection."""
    sb = arch.shared_blocks
    assert sb is not None
    h = arch.hidden_size
    return adapter_matrices(arch) + ([(h, h)] if sb.layer_projection else [])


def block_of(arch: ModelArchitecture, index: int) -> int:
    """Which shared block layer ``index`` runs (-1: none)."""
    sb = arch.shared_blocks
    if sb is None or index not in sb.layers:
        return -1
    return sb.layers.index(index) % sb.count


def lora_matrices(arch: ModelArchitecture, index: int) -> list[tuple[int, int]]:
    """(in, out) of the ``nn.Linear`` modules PEFT adapts in the shared-block part of layer ``index``.

    transformers 5 builds a module instance of the shared block at every layer that runs it and ties
    their weights; PEFT wraps module instances, so each such layer gets its own adapters on the
    shared q/k/v/o and MLP, on its projection and on every adapter slot its instance holds: the
    block's instance carries the adapters of all the layers that run that block (tied), so ``n``
    layers sharing a block hold ``n`` slots each (``tests/validation/test_zamba2_vs_torch.py``
    counts the model's ``nn.Linear`` modules)."""
    sb = arch.shared_blocks
    assert sb is not None
    block = block_of(arch, index)
    sharing = sum(1 for j in range(len(sb.layers)) if j % sb.count == block)
    h = arch.hidden_size
    mats = attention_matrices(arch) + mlp_matrices(arch) + adapter_matrices(arch) * sharing
    return mats + ([(h, h)] if sb.layer_projection else [])


def kv_projection_parameters(arch: ModelArchitecture) -> int:
    """Parameters of the shared attention's k and v projections (sharded by KV heads)."""
    sb = arch.shared_blocks
    assert sb is not None
    kv = arch.num_kv_heads * arch.head_dim
    return 2 * sb.input_width * kv + (2 * kv if arch.attention_bias else 0)


def block_weights(arch: ModelArchitecture) -> tuple[int, int, int]:
    """(TP-split, KV-head-split, norm) parameters of one shared block's stored weights."""
    attention, mlp, norms = shared_block_parameters(arch)
    kv = kv_projection_parameters(arch)
    return attention - kv + mlp, kv, norms
