"""The kernels of one forward pass, by shape: what the per-operator time model costs.

A forward pass of a decoder is a sequence of kernels per layer: projections (GEMMs), the
attention kernel, memory-bound kernels (norms, rotary, activation, residual adds, router
softmax/top-k, token permutation) and collectives. Their *shapes* decide how fast each runs:
a GEMM with 8 token rows reads its whole weight matrix for a handful of FLOPs, an expert GEMM
sees only the tokens routed to it, an output head runs on one row per prompt in prefill.

:func:`forward_graph` lists the GEMMs of the model on one GPU (tensor-parallel widths, local
experts) as :class:`Gemm` groups -- one group per distinct (N, K) shape, ``count`` instances
per forward pass of the whole model -- plus per-layer counts of the other kernel kinds.
The groups hold exactly the weight matrices :func:`~workbench_performance.model_constants.weight_elements`
counts (a test checks it): their weights, FLOPs and bytes are the ones the compute plugin
reports; what this module adds is how they split into kernels. Parts whose kernel shapes are
not modelled one by one (shared Zamba2 blocks, cross-attention, encoders) are one ``other``
group at the hidden width, named as such in the breakdown.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.model import ModelArchitecture, ModelKind
from workbench_performance.model_constants import WeightElements, block_counts, weight_elements


@dataclass(frozen=True, slots=True)
class Gemm:
    """``count`` GEMMs per forward pass of the whole model, each ``rows x k`` times ``k x n``."""

    name: str
    n: float  # output features on this GPU
    k: float  # reduction width on this GPU
    count: float  # per forward pass, all layers (divide by PP for one stage)
    expert: bool = False  # routed expert: rows are the tokens routed to one expert
    head: bool = False  # output head: one row per prompt in prefill

    @property
    def elements(self) -> float:
        return self.n * self.k * self.count


@dataclass(frozen=True, slots=True)
class ForwardGraph:
    """The kernels of one forward pass of the whole model on one GPU (before PP)."""

    gemms: tuple[Gemm, ...]
    attention_layers: int  # layers with an attention kernel
    recurrent_layers: int  # layers with a recurrent (SSM / linear attention) scan kernel
    moe_layers: int  # layers with a router, permutation and un-permutation
    layers: int  # decoder blocks (each has norms and residual adds)
    hidden: int
    ffn_width: float  # activation width of the (dense or expert) MLP on this GPU, per token
    qk_width: float  # query + key width on this GPU (rotary)
    heads: float  # query heads on this GPU (an eager attention's score matrices)
    causal: bool  # decoder self-attention: a prompt attends its lower triangle only
    top_k: int
    num_experts: int
    local_experts: float


_GRAPHS: dict[tuple[int, int, int], tuple[ModelArchitecture, ForwardGraph]] = {}


def forward_graph(arch: ModelArchitecture, tp: int, ep: int) -> ForwardGraph:
    """The GEMM groups and kernel counts of ``arch`` at tensor-parallel ``tp``, expert-parallel ``ep``."""
    key = (id(arch), tp, ep)
    hit = _GRAPHS.get(key)
    if hit is not None and hit[0] is arch:
        return hit[1]
    graph = _build(arch, tp, ep)
    if len(_GRAPHS) > 512:
        _GRAPHS.clear()
    _GRAPHS[key] = (arch, graph)
    return graph


def _build(arch: ModelArchitecture, tp: int, ep: int) -> ForwardGraph:
    w = weight_elements(arch, tp, ep)
    h = arch.hidden_size
    counts = block_counts(arch) if arch.is_hybrid else None
    attention_layers = counts.attention if counts else arch.total_layers
    recurrent_layers = counts.recurrent if counts else 0
    moe = arch.moe
    moe_layer_count = sum(1 for i in range(arch.total_layers) if moe is not None and arch.is_moe_layer(i))
    ffn_layers = (counts.ffn if counts else arch.total_layers) - moe_layer_count
    gemms: list[Gemm] = []

    def add(name: str, n: float, k: float, count: float, **kind: bool) -> None:
        if n > 0 and k > 0 and count > 0:
            gemms.append(Gemm(name, n, k, count, **kind))

    if arch.shared_blocks is None:
        _attention_gemms(arch, tp, attention_layers, add)
    gated = 2.0 if arch.gated_mlp else 1.0
    if arch.recurrent is not None and recurrent_layers:
        for i, (fan_in, fan_out) in enumerate(arch.recurrent.projections):
            add(f"mixer.proj{i}", fan_out / tp, fan_in, recurrent_layers)
    if ffn_layers > 0 and arch.intermediate_size:
        add("mlp.up", gated * arch.intermediate_size / tp, h, ffn_layers)
        add("mlp.down", h, arch.intermediate_size / tp, ffn_layers)
    ffn_width = arch.intermediate_size / tp if ffn_layers > 0 else 0.0
    if moe is not None and moe_layer_count:
        add("moe.router", moe.num_experts, h, moe_layer_count)
        width = moe.latent_size or h
        if moe.latent_size:
            add("moe.latent_in", moe.latent_size, h, moe_layer_count)
            add("moe.latent_out", h, moe.latent_size, moe_layer_count)
        if moe.shared_intermediate:
            add("moe.shared.up", gated * moe.shared_intermediate / tp, h, moe_layer_count)
            add("moe.shared.down", h, moe.shared_intermediate / tp, moe_layer_count)
        if moe.shared_expert_gate:
            add("moe.shared.gate", 1.0, h, moe_layer_count)
        local = moe.num_experts / ep
        inner = moe.expert_intermediate_size / tp
        add("moe.experts.up", gated * inner, width, local * moe_layer_count, expert=True)
        add("moe.experts.down", width, inner, local * moe_layer_count, expert=True)
        ffn_width = max(ffn_width, inner * moe.experts_per_token)
    if w.head:
        add("lm_head", arch.vocab_size / tp, h, 1.0, head=True)
    _close_with_other(arch, w, gemms, h)
    q_width = arch.num_attention_heads * arch.head_dim / tp
    kv_width = arch.num_kv_heads * arch.head_dim / min(tp, arch.num_kv_heads)
    return ForwardGraph(
        tuple(gemms),
        attention_layers,
        recurrent_layers,
        moe_layer_count,
        arch.total_layers,
        h,
        ffn_width,
        q_width + kv_width,
        arch.num_attention_heads / tp,
        arch.kind is ModelKind.DECODER,
        moe.experts_per_token if moe else 0,
        moe.num_experts if moe else 0,
        moe.num_experts / ep if moe else 0.0,
    )


def _attention_gemms(arch: ModelArchitecture, tp: int, layers: int, add) -> None:  # noqa: ANN001
    h, heads = arch.hidden_size, arch.num_attention_heads
    mla = arch.mla
    if mla is not None:
        if mla.q_lora_rank:
            add("attention.q_down", mla.q_lora_rank, h, layers)
            add("attention.q_up", heads * mla.qk_head_dim / tp, mla.q_lora_rank, layers)
        else:
            add("attention.q", heads * mla.qk_head_dim / tp, h, layers)
        add("attention.kv_down", mla.kv_lora_rank + mla.qk_rope_head_dim, h, layers)
        add("attention.kv_up", heads * (mla.qk_nope_head_dim + mla.v_head_dim) / tp, mla.kv_lora_rank, layers)
        add("attention.out", h, heads * mla.v_head_dim / tp, layers)
        return
    q_width = heads * arch.head_dim / tp
    kv_width = arch.num_kv_heads * arch.head_dim / min(tp, arch.num_kv_heads)
    gate = 2.0 if arch.attention_output_gate else 1.0
    add("attention.qkv", gate * q_width + 2.0 * kv_width, h, layers)
    add("attention.out", h, q_width, layers)


def _close_with_other(arch: ModelArchitecture, w: WeightElements, gemms: list[Gemm], h: int) -> None:
    """Put what the groups miss of ``weight_elements`` into one ``other`` group at the hidden width,
    so that weights, FLOPs and bytes stay those of the compute plugin whatever the family."""
    dense = sum(g.elements for g in gemms if not g.expert)
    experts = sum(g.elements for g in gemms if g.expert)
    missing = w.dense - dense
    if missing > 1e-6 * max(w.dense, 1.0):
        layers = max(arch.total_layers, 1)
        gemms.append(Gemm("other", missing / (h * layers), h, float(layers)))
    elif missing < -1e-6 * max(w.dense, 1.0):
        # The groups over-count (a family whose weights weight_elements reads differently): scale
        # the dense groups down so their total is exact.
        scale = w.dense / dense
        gemms[:] = [
            Gemm(g.name, g.n * scale, g.k, g.count, g.expert, g.head) if not g.expert else g for g in gemms
        ]
    if w.experts and experts and abs(experts - w.experts) > 1e-6 * w.experts:
        scale = w.experts / experts
        gemms[:] = [Gemm(g.name, g.n * scale, g.k, g.count, g.expert, g.head) if g.expert else g for g in gemms]
