"""FLOPs of recurrent token mixers (Mamba-1/2, Gated DeltaNet, KDA, short conv) beyond their projections.

The projections are weight matmuls like any other (:mod:`workbench_compute.shapes`). What is
left is the mixer's own kernel, counted as transformers' CPU torch path executes it and
``torch.utils.flop_counter`` counts it (2 FLOPs per multiply-accumulate of every matrix product,
element-wise work not counted):

* the depthwise causal convolution over the conv channels: ``2 x channels x kernel`` per output
  position, over ``tokens + kernel - 1`` positions (``padding = kernel - 1``, then sliced);
* **Mamba-2**, ``mamba2_chunk_scan`` (the SSD "minimal" algorithm, Dao & Gu 2024, Listing 1) on
  ``c = ceil(tokens / chunk)`` chunks of ``Q``: per head ``C B^T`` and ``M x`` within each chunk
  (``2 c Q^2 (n + p)``), the chunk states ``B^T x`` and their read-out ``C h`` (``4 c Q p n``),
  and the inter-chunk recurrence over ``c + 1`` states (``2 (c + 1)^2 p n``);
* **Gated DeltaNet**, ``torch_chunk_gated_delta_rule`` on chunks of 64: per value head and chunk
  ``k_beta K^T`` and ``Q K^T`` (``4 Q^2 d_k``), the intra-chunk output (``2 Q^2 d_v``) and three
  products with the ``d_k x d_v`` state (``6 Q d_k d_v``). Its two triangular solves are not
  matrix products and the counter does not count them (about ``Q^2 (d_k + d_v)`` per head and
  chunk, some 10% of the scan, well under 1% of a real layer).
* **Kimi Delta Attention**, ``chunk_kimi_delta_attention``: the same chunked rule with
  per-channel decays, which turn the intra-chunk ``K^T`` products into element-wise work; see
  :func:`_kda_scan`.
* **Mamba-1**, the sequential loop of ``mamba_selective_scan``: one read-out product per position,
  see :func:`_mamba1_scan`. LFM2's short convolution: the convolution only (its gates are
  element-wise).

Backward: every product 2x (gradients of both operands), the convolution 2x (input and weight
gradients). The autograd of Gated DeltaNet's triangular solves adds one product per solve
(``grad_A = -grad_B X^T``: ``2 Q^2 (d_k + d_v)`` per head and chunk; KDA solves element-wise). In
both delta rules the zero initial state of a training sequence takes no gradient and the final
state is not used, which saves ``4 x 2 Q d_k d_v`` per head and sequence.

A decode step runs the recurrence on one token: the convolution on the cached window
(``2 x channels x kernel``) and the state update and read-out, ``4 x heads x p x n`` for Mamba-2
(decay-and-add, read-out) and ``6 x heads x d_k x d_v`` for Gated DeltaNet (read, write, read-out).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.core.model import RecurrentKind, RecurrentMixer

Tokens = Any  #: an int, or an int64 array with one entry per point of a group
Flops = Any  #: a float, or a float64 array like the tokens given


@dataclass(frozen=True, slots=True)
class RecurrentGroup:
    """``layers`` recurrent mixers of one shape."""

    layers: int
    mixer: RecurrentMixer


def _conv(m: RecurrentMixer, tokens: Tokens) -> Flops:
    if not m.conv_kernel:
        return 0.0
    return 2.0 * m.conv_channels * m.conv_kernel * (tokens + m.conv_kernel - 1)


def _chunks(m: RecurrentMixer, tokens: Tokens) -> tuple[Flops, int]:
    q = m.chunk_size or 1
    if isinstance(tokens, np.ndarray):
        return (-(-tokens.astype(np.int64) // q)).astype(np.float64), q
    return float(-(-int(tokens) // q)), q


def _positive(tokens: Tokens, flops: Flops) -> Flops:
    """``flops`` where ``tokens > 0``, 0.0 elsewhere (a scalar's early return, per point)."""
    if isinstance(tokens, np.ndarray):
        return np.where(tokens > 0, flops, 0.0)
    return flops if tokens > 0 else 0.0


def scan_flops(m: RecurrentMixer, tokens: Tokens) -> Flops:
    """Forward FLOPs of one mixer's kernel over one sequence of ``tokens`` (projections excluded).

    ``tokens``: a number, or an int64 array (one entry per point of a group)."""
    if not isinstance(tokens, np.ndarray) and tokens <= 0:
        return 0.0
    c, q = _chunks(m, tokens)
    h, p, n = m.heads, m.head_dim, m.state_size
    if m.kind is RecurrentKind.MAMBA2:
        scan = 2.0 * c * q * q * h * (n + p) + 4.0 * c * q * h * p * n + 2.0 * h * (c + 1) ** 2 * p * n
    elif m.kind is RecurrentKind.GATED_DELTANET:
        scan = c * h * (4.0 * q * q * n + 2.0 * q * q * p + 6.0 * q * n * p)
    elif m.kind is RecurrentKind.KDA:
        scan = _kda_scan(m, c, q)
    elif m.kind is RecurrentKind.MAMBA:
        scan = _mamba1_scan(m, tokens)
    else:
        # A short convolution's gating is element-wise: its projections and convolution are all.
        scan = 0.0
    return _positive(tokens, _conv(m, tokens) + scan)


def _mamba1_scan(m: RecurrentMixer, tokens: Tokens) -> Flops:
    """Mamba-1's sequential selective scan (``mamba_selective_scan``'s recurrent loop): the
    discretisation and the state update are element-wise; each position reads its output out of
    the ``inner x state`` state with one matrix product, ``2 x inner x state``."""
    return 2.0 * tokens * m.heads * m.head_dim * m.state_size


def _kda_scan(m: RecurrentMixer, c: Flops, q: int) -> Flops:
    """``chunk_kimi_delta_attention``: its per-channel decays make ``k_beta K^T`` and ``Q K^T``
    inside a chunk element-wise products and reductions (not counted), and the UT system is
    solved row by row element-wise; the matrix products are ``attn @ v_beta`` and
    ``attn @ k_cumdecay`` (``2 Q^2 (d_k + d_v)``), the intra-chunk output (``2 Q^2 d_v``) and the
    three products with the state (``6 Q d_k d_v``), per head and chunk."""
    h, dk, dv = m.heads, m.state_size, m.head_dim
    return c * h * (2.0 * q * q * (dk + dv) + 2.0 * q * q * dv + 6.0 * q * dk * dv)


def scan_backward_flops(m: RecurrentMixer, tokens: Tokens) -> Flops:
    """Backward FLOPs of one mixer's kernel (see the module docstring); ``tokens`` as for
    :func:`scan_flops`."""
    extra: Flops = 0.0
    if m.kind in (RecurrentKind.GATED_DELTANET, RecurrentKind.KDA) and (
        isinstance(tokens, np.ndarray) or tokens > 0
    ):
        c, q = _chunks(m, tokens)
        if m.kind is RecurrentKind.GATED_DELTANET:  # KDA's UT system has no solve to differentiate
            extra = 2.0 * c * m.heads * q * q * (m.state_size + m.head_dim)
        # The first chunk reads a zero state that needs no gradient (its two reads of the state
        # cost 1x), and the state the last chunk writes is discarded (its product costs 0x).
        extra -= 4.0 * m.heads * 2.0 * q * m.state_size * m.head_dim
        extra = _positive(tokens, extra)
    return 2.0 * scan_flops(m, tokens) + extra


def step_flops(m: RecurrentMixer) -> float:
    """FLOPs of one decode step of one mixer for one sequence (projections excluded)."""
    conv = 2.0 * m.conv_channels * m.conv_kernel
    state = m.heads * m.head_dim * m.state_size
    if m.kind is RecurrentKind.MAMBA2:
        return conv + 4.0 * state
    if m.kind in (RecurrentKind.GATED_DELTANET, RecurrentKind.KDA):
        return conv + 6.0 * state
    return conv + 2.0 * state
