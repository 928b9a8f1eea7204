"""Collective communication: volumes and times of TP, DP, PP and EP traffic (alpha-beta model).

Time of a collective over ``n`` ranks moving a buffer of ``S`` bytes per rank (NCCL's
definitions, nccl-tests doc/PERFORMANCE.md)::

    all-reduce      ring: 2(n-1) steps, 2(n-1)/n x S per rank   tree: 2 log2(n) steps, same bytes
    reduce-scatter  ring: (n-1) steps,  (n-1)/n x S             (all-gather: the same)
    all-to-all      (n-1) steps,        (n-1)/n x S
    send/recv       1 step,             S

    t = steps x alpha + bytes / (link bandwidth x comm.bandwidth_efficiency)

taking the cheaper of ring and tree. The link is the node's intra-node link when the whole group
fits in one node, else the inter-node network (per-GPU NIC bandwidth). Ranks are laid out as in
Megatron-LM: TP innermost (stride 1), then DP (stride TP), then PP (stride TP x DP); expert
parallel groups are drawn from the data-parallel ranks (stride TP) when training and sit inside
the tensor-parallel neighbourhood (stride 1) when serving.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from workbench.core.hardware import NodeShape
from workbench_performance.arrays import maximum, where
from workbench_performance.efficiency import Efficiency


@dataclass(frozen=True, slots=True)
class Link:
    """The link a communication group uses: per-GPU bandwidth, one direction."""

    gbps: float
    intra: bool
    name: str

    def describe(self) -> str:
        return f"{'intra-node' if self.intra else 'inter-node'} {self.name}, {self.gbps:g} GB/s per GPU"


def group_link(node: NodeShape, size: int, stride: int) -> Link:
    """Intra-node link if ``size`` ranks spaced ``stride`` apart fit in one node, else the network."""
    if size * stride <= node.gpus_per_node:
        return Link(node.intra_node_gbps, True, node.intra_node)
    return Link(node.inter_node_gbps, False, node.inter_node)


def _alpha(link: Link, eff: Efficiency) -> float:
    return eff.alpha_intra_s if link.intra else eff.alpha_inter_s


def _bw(link: Link, eff: Efficiency) -> float:
    return link.gbps * 1e9 * eff.link


def _nothing(nbytes) -> bool:  # noqa: ANN001 - a number, or an array over a point group
    """Whether no byte moves: a number that is not positive, or an array with no positive entry.
    (An array with some is costed entry by entry, and :func:`_if_sent` zeroes the others.)"""
    if isinstance(nbytes, np.ndarray):
        return not (nbytes > 0).any()
    return nbytes <= 0


def _if_sent(nbytes, seconds):  # noqa: ANN001, ANN202
    """``seconds`` where some bytes move, 0 where none do."""
    return where(nbytes > 0, seconds, 0.0) if isinstance(nbytes, np.ndarray) else seconds


def all_reduce_s(nbytes: float, n: int, link: Link, eff: Efficiency) -> float:
    """All-reduce of ``nbytes`` per rank over ``n`` ranks (best of ring and tree)."""
    if n <= 1 or _nothing(nbytes):
        return 0.0
    beta = 2.0 * (n - 1) / n * nbytes / _bw(link, eff)
    steps = min(2 * (n - 1), 2 * math.ceil(math.log2(n)))
    return _if_sent(nbytes, steps * _alpha(link, eff) + beta)


def reduce_scatter_s(nbytes: float, n: int, link: Link, eff: Efficiency) -> float:
    """Reduce-scatter (or all-gather) of a buffer of ``nbytes`` over ``n`` ranks."""
    if n <= 1 or _nothing(nbytes):
        return 0.0
    beta = (n - 1) / n * nbytes / _bw(link, eff)
    steps = min(n - 1, math.ceil(math.log2(n)))
    return _if_sent(nbytes, steps * _alpha(link, eff) + beta)


def all_to_all_s(nbytes: float, n: int, link: Link, eff: Efficiency) -> float:
    """All-to-all where each rank holds ``nbytes`` and keeps 1/n of it."""
    if n <= 1 or _nothing(nbytes):
        return 0.0
    return _if_sent(nbytes, (n - 1) * _alpha(link, eff) + (n - 1) / n * nbytes / _bw(link, eff))


def hierarchical_all_to_all_s(
    nbytes: float, n: int, local: int, link: Link, intra: Link | None, eff: Efficiency
) -> float:
    """All-to-all over ``n`` ranks of which ``local`` share a node: the (local-1)/n of the buffer
    bound for node peers moves over the intra-node link while the (n-local)/n bound elsewhere
    crosses the network, concurrently (NCCL and DeepEP send both at once)."""
    if n <= 1 or _nothing(nbytes):
        return 0.0
    if link.intra or intra is None or local <= 1:
        return all_to_all_s(nbytes, n, link, eff)
    inter = (n - local) / n * nbytes / _bw(link, eff)
    near = (local - 1) / n * nbytes / _bw(intra, eff)
    return _if_sent(nbytes, (n - local) * _alpha(link, eff) + maximum(inter, near))


def p2p_s(nbytes: float, link: Link, eff: Efficiency) -> float:
    """One send/receive of ``nbytes``."""
    if _nothing(nbytes):
        return 0.0
    return _if_sent(nbytes, _alpha(link, eff) + nbytes / _bw(link, eff))


def ring_all_reduce_volume(nbytes: float, n: int) -> float:
    """Bytes each rank sends in an all-reduce of ``nbytes``: 2(n-1)/n x S."""
    return 2.0 * (n - 1) / n * nbytes if n > 1 else 0.0


@dataclass(frozen=True, slots=True)
class CommLayout:
    """What the communication of one scenario depends on; built once per estimate."""

    tp: int
    pp: int
    dp: int
    ep: int
    hidden: int
    act_bytes: float
    #: TP collectives (all-reduce, or reduce-scatter + all-gather with SP) one token meets per forward
    tp_collectives: int
    moe_layers: int
    top_k: int
    sequence_parallel: bool
    tp_link: Link
    pp_link: Link
    dp_link: Link
    ep_link: Link
    #: EP ranks that share a node (self included): their share of an all-to-all stays on the
    #: intra-node link while the rest crosses the network at the same time
    ep_local: int = 1
    intra_link: Link | None = None
    #: a pipeline send carries 1/pp_split of the activation (Megatron-LM's scatter/gather
    #: optimization: each TP rank sends its slice, the receiver all-gathers it over NVLink)
    pp_split: int = 1


# Not frozen: built several times per estimate on the hot path (a frozen dataclass costs 4x to
# build); nothing writes to one after it is built.
@dataclass(slots=True)
class PassComm:
    """Communication of one forward pass over ``tokens`` tokens (per micro-batch), on its critical path."""

    tp_s: float
    tp_bytes: float  # sent per GPU
    ep_s: float
    ep_bytes: float
    pp_s: float
    pp_bytes: float

    @property
    def total_s(self) -> float:
        return self.tp_s + self.ep_s + self.pp_s


def forward_comm(layout: CommLayout, tokens: float, eff: Efficiency) -> PassComm:
    """TP, EP and PP traffic of one forward pass of ``tokens`` tokens through every pipeline stage.

    TP: ``tp_collectives`` all-reduces of ``tokens x hidden`` activations (with sequence
    parallelism a reduce-scatter and an all-gather each: the same bytes, the same ring steps).
    EP: per MoE layer, dispatch and combine all-to-alls of ``tokens x top_k x hidden``, node
    peers over the intra-node link while the rest crosses the network.
    PP: ``pp - 1`` point-to-point sends of the activations between stages (training: 1/TP of
    them per rank, Megatron-LM's scatter/gather).
    """
    return PassComm(*_forward_parts(layout, tokens, eff))


def _forward_parts(layout: CommLayout, tokens: float, eff: Efficiency) -> tuple[float, ...]:
    """:class:`PassComm`'s fields, in order (see :func:`forward_comm`)."""
    msg = tokens * layout.hidden * layout.act_bytes
    tp = layout.tp
    tp_s = tp_bytes = 0.0
    if tp > 1:
        if layout.sequence_parallel:
            one = 2.0 * reduce_scatter_s(msg, tp, layout.tp_link, eff)
        else:
            one = all_reduce_s(msg, tp, layout.tp_link, eff)
        tp_s = layout.tp_collectives * one
        tp_bytes = layout.tp_collectives * ring_all_reduce_volume(msg, tp) / layout.pp
    ep_s = ep_bytes = 0.0
    if layout.ep > 1 and layout.moe_layers:
        routed = msg * layout.top_k
        ep_s = layout.moe_layers * 2.0 * hierarchical_all_to_all_s(
            routed, layout.ep, layout.ep_local, layout.ep_link, layout.intra_link, eff
        )
        ep_bytes = layout.moe_layers * 2.0 * (layout.ep - 1) / layout.ep * routed / layout.pp
    pp_s = pp_bytes = 0.0
    if layout.pp > 1:
        pp_bytes = msg / layout.pp_split
        pp_s = (layout.pp - 1) * p2p_s(pp_bytes, layout.pp_link, eff)
    return tp_s, tp_bytes, ep_s, ep_bytes, pp_s, pp_bytes


def forward_comm_s(layout: CommLayout, tokens: float, eff: Efficiency) -> float:
    """``forward_comm(layout, tokens, eff).total_s``: the serving model asks for it several times
    per estimate, mostly for layouts with no communication at all (TP, PP and EP of 1)."""
    if layout.tp <= 1 and layout.pp <= 1 and (layout.ep <= 1 or not layout.moe_layers):
        return 0.0
    tp_s, _, ep_s, _, pp_s, _ = _forward_parts(layout, tokens, eff)
    return tp_s + ep_s + pp_s  # PassComm.total_s


def gradient_sync(
    layout: CommLayout, grad_bytes: float, zero_stage: int, eff: Efficiency
) -> tuple[float, float]:
    """(seconds, bytes sent per GPU) of the data-parallel gradient exchange of one optimizer step.

    ZeRO stage 0: all-reduce of the gradients. Stages 1-2: reduce-scatter of gradients plus
    all-gather of the updated parameters, the same volume. Stage 3 also all-gathers the
    parameters for the forward and again for the backward: 1.5x the data-parallel volume
    (Rajbhandari et al. 2020, ZeRO, sec. 7.2.2: 3 Psi instead of 2 Psi).
    """
    dp = layout.dp
    if dp <= 1 or grad_bytes <= 0:
        return 0.0, 0.0
    base = all_reduce_s(grad_bytes, dp, layout.dp_link, eff)
    volume = ring_all_reduce_volume(grad_bytes, dp)
    if zero_stage >= 3:
        return 1.5 * base, 1.5 * volume
    return base, volume
