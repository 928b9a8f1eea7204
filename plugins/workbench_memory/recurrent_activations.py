"""Activation bytes a recurrent mixer keeps for backward, as transformers' CPU torch path saves them.

Listed tensor by tensor with ``saved_tensors_hooks`` (``tests/validation/test_hybrid_families.py``
holds the sums). ``b`` sequences of ``T`` tokens (``N = b T``), padded to ``c = ceil(T / Q)``
chunks of ``Q`` (``NL = b c Q``), ``dt`` the compute dtype's bytes. The chunked kernels compute in
fp32 whatever the model dtype, so most of what they keep is fp32; an ``.float()`` of an fp32
tensor is the tensor itself, so fp32 models keep a few tensors fewer than 16-bit ones.

* **Mamba-2** (``Mamba2Mixer.forward`` + ``mamba2_chunk_scan``), ``I`` inner width, ``C`` conv
  channels, ``H`` heads of ``p`` dims, ``n`` state, ``G`` groups, ``K`` kernel: the in-projection
  output (``N (I + C + H) dt``; the conv reads a view of it), the conv output before its causal
  slice (``b C (T + K - 1) dt``), dt after its bias, softplus and clamp, the fp32 copy of x (fp32
  models: the conv's activation output, which x, B and C are views of), and in the scan the padded
  x, x times dt and two contiguous copies of it for the einsums, the exp of the segment sums, C B^T
  and its masked product (``3 b c H Q^2`` in fp32), the per-head copies of B and C (five of
  ``NL H n``), the decays, the chunk states and their recurrence (``b H (c + 1) p n`` twice), then
  the gated RMSNorm in fp32 (the gate's upcast, its SiLU, the padded scan output, their product,
  rsqrt per group, the normalised tensor) and the out-projection's input.
* **Gated DeltaNet** (``Qwen3NextGatedDeltaNet`` + ``torch_chunk_gated_delta_rule``; Qwen3.5's
  separate projections save the same tensors): see :func:`gated_deltanet_bytes`; Mamba-1 (Jamba):
  :func:`mamba1_bytes`; LFM2's short convolution: :func:`short_conv_bytes`; Kimi Delta
  Attention: :func:`kda_bytes` (``tests/validation/test_linear_hybrids_vs_torch.py``).

Tensor parallelism splits all of it by heads (vLLM and Megatron-LM shard the mixers by heads).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.model import RecurrentKind, RecurrentMixer

#: ``batch`` and ``tokens`` below are ints or numpy arrays (one entry per point of a group): the
#: arithmetic is the same, element-wise.
Ints = Any


def _float(value: Ints) -> Any:
    """``float(value)``, element-wise for an array."""
    return value.astype(np.float64) if isinstance(value, np.ndarray) else float(value)


def _one_chunk_more(chunks: Ints, several: float, one: float) -> Any:
    """``several`` where there is more than one chunk, else ``one`` (element-wise for arrays)."""
    if isinstance(chunks, np.ndarray):
        return np.where(chunks > 1, several, one)
    return several if chunks > 1 else one


def _chunks(m: RecurrentMixer, tokens: int) -> tuple[int, int]:
    q = m.chunk_size or 1
    return -(-tokens // q), q


def mamba2_bytes(m: RecurrentMixer, batch: int, tokens: int, dt: float) -> float:
    """Bytes one Mamba-2 mixer keeps for backward for ``batch`` sequences of ``tokens``."""
    c, q = _chunks(m, tokens)
    h, p, n, g, k = m.heads, m.head_dim, m.state_size, m.groups, m.conv_kernel
    inner, conv = h * p, m.conv_channels
    fp32 = dt == 4.0
    N, NL = _float(batch * tokens), _float(batch * c * q)
    kept = N * (inner + conv + h) * dt + batch * conv * (tokens + k - 1) * dt
    # dt + bias, softplus; clamp or two fp32 copies
    kept = kept + (N * h * (2.0 * dt + (4.0 if fp32 else 8.0)))
    kept = kept + (N * (conv if fp32 else inner) * 4.0)  # the conv's activation output, or x's fp32 copy
    scan = 4.0 * NL * inner + 5.0 * NL * h * n + 2.0 * NL * h
    scan = scan + (3.0 * batch * c * h * q * q + batch * h * (c + 1) ** 2)
    scan = scan + (batch * h * p * n * (2.0 * c + 1.0) + 2.0 * h)
    kept = kept + (4.0 * scan + 2.0 * q * q + 2.0 * (c + 1) ** 2)  # fp32, and the bool causal masks
    if not m.gated_norm:
        return kept + _silu_gate_bytes(m, batch, tokens, dt)
    gate_upcast = 0.0 if fp32 else N * inner * 4.0
    kept = kept + (gate_upcast + 4.0 * (3.0 * N * inner + NL * inner + N * g) + N * inner * dt)
    return kept


def _silu_gate_bytes(m: RecurrentMixer, batch: int, tokens: int, dt: float) -> float:
    """A Mamba-2 output gated without a norm (Falcon-H1 with ``mamba_rms_norm`` off:
    ``scan_output * silu(gate)``, then ``out_proj(... .to(dtype))``): the product keeps the padded
    fp32 scan output it reads a view of and SiLU's ``dt`` output; out_proj keeps its ``dt`` input."""
    c, q = _chunks(m, tokens)
    inner = m.heads * m.head_dim
    return 4.0 * batch * c * q * inner + 2.0 * batch * tokens * inner * dt


def gated_deltanet_bytes(m: RecurrentMixer, batch: int, tokens: int, dt: float) -> float:
    """Bytes one Gated DeltaNet mixer keeps for backward: the concatenated q|k|v the conv reads and
    the conv output before its slice, beta, the decay's inputs, the fp32 q and k with their L2-norm
    rsqrt, then in the chunked rule (fp32, padded, ``H`` value heads, ``d_k``/``d_v`` dims): padded
    beta, v and k, the causal mask, five ``Q x Q`` matrices per chunk (decays, ``k_beta K^T``,
    ``Q K^T``, the UT system, the intra-chunk attention), six ``NL H d_k`` tensors (k_beta, scaled
    and decayed q, padded and decayed k, k_cumdecay), three ``NL H d_v`` (padded v, the UT solve's
    values, the corrected values of each chunk), four decays per position and one per chunk, and
    the state each chunk reads (``c`` of ``d_k x d_v`` per head); then the gated RMSNorm (fp32
    upcasts of the output and the gate, its SiLU, rsqrt per head, two ``dt`` products) and the
    out-projection's input."""
    c, q = _chunks(m, tokens)
    h, dk, dv, k = m.heads, m.state_size, m.head_dim, m.conv_kernel
    conv, values = m.conv_channels, h * dv
    N, NL = _float(batch * tokens), _float(batch * c * q)
    kept = N * conv * dt + batch * conv * (tokens + k - 1) * dt + N * h * dt + 2.0 * h * 4.0
    kept = kept + (2.0 * N * h * 4.0)  # the decay's input after its bias, and its softplus
    kept = kept + (2.0 * N * h * (dk + 1.0) * 4.0)  # q and k in fp32 (l2norm's input) and their rsqrt
    scan = 5.0 * batch * h * c * q * q + 6.0 * NL * h * dk
    scan = scan + (3.0 * NL * h * dv + 4.0 * NL * h + batch * h * c + c * batch * h * dk * dv)
    kept = kept + (4.0 * scan + q * q)
    kept = kept + (N * values * (12.0 + 3.0 * dt) + N * h * 4.0)
    return kept


def mamba1_bytes(m: RecurrentMixer, batch: int, tokens: int, dt: float) -> float:
    """Bytes one Mamba-1 mixer (Jamba's ``JambaMambaMixer`` and the sequential loop of
    ``mamba_selective_scan``) keeps for backward, ``I`` inner channels of ``n`` states, ``r`` the
    dt rank, ``K`` the kernel.

    The in-projection output (``2 I``, the conv and the gate read views of it), the conv output
    before its causal slice, then per position ``I`` channels: the conv's SiLU, the contiguous
    inputs of x_proj and out_proj, and four more (the gate's SiLU, the D skip, the broadcast input
    of the discretisation, the scan output) that are fp32 in fp32 models and partly ``dt`` in
    16-bit ones (the softplus input and the input's fp32 copy stay fp32). x_proj's output in fp32
    (the dt/B/C RMSNorms' inputs) with one rsqrt each, the normalised dt (twice: the dt_proj
    product reads a contiguous copy) and B and C (three times: B's fp32 copy, C's copy for the
    read-out). The discretised A and B (``N I n`` each, fp32), and in the loop every position's
    state: the fp32 state the next decay multiplies and the copy in the model dtype the read-out
    reads (in fp32 models the same tensor), plus the zero initial state. A (twice) and D's fp32
    copy per channel.
    """
    inner, n, k = m.head_dim * m.heads, m.state_size, m.conv_kernel
    # dt_proj (rank -> inner) is the third of the four projections ssm.mamba1_mixer lists; a mixer
    # described otherwise has no dt rank to keep.
    rank = m.projections[2][0] if len(m.projections) == 4 else 0
    fp32 = dt == 4.0
    N = _float(batch * tokens)
    kept = N * 2.0 * inner * dt + batch * inner * (tokens + k - 1) * dt
    kept = kept + (N * inner * (7.0 * 4.0 if fp32 else 6.0 * dt + 2.0 * 4.0))
    kept = kept + (N * (rank + 2.0 * n) * 4.0 + 3.0 * N * 4.0 + N * (3.0 * n + 2.0 * rank) * dt + N * n * 4.0)
    kept = kept + (2.0 * N * inner * n * 4.0)
    state = batch * inner * n
    kept = kept + (state * (tokens + 1) * 4.0 if fp32 else state * ((tokens - 1) * 4.0 + (tokens + 1) * dt))
    kept = kept + (2.0 * inner * n * 4.0 + (0.0 if fp32 else inner * 4.0))
    return kept


def short_conv_bytes(m: RecurrentMixer, batch: int, tokens: int, dt: float) -> float:
    """Bytes one gated short convolution (LFM2's ``Lfm2ShortConv.slow_forward``) keeps for
    backward: the in-projection output (B, C and x are views of it), the product ``B x`` the conv
    reads, the conv output before its causal slice, and the out-projection's contiguous input,
    all in the model dtype."""
    h, k = m.conv_channels, m.conv_kernel
    N = _float(batch * tokens)
    return N * 3.0 * h * dt + N * h * dt + batch * h * (tokens + k - 1) * dt + N * h * dt


def kda_bytes(m: RecurrentMixer, batch: int, tokens: int, dt: float) -> float:
    """Bytes one Kimi Delta Attention mixer (``KimiDeltaAttention`` + ``chunk_kimi_delta_attention``)
    keeps for backward, ``H`` heads of ``d`` dims (``w = H d``), ``C`` conv channels (q|k|v).

    Per-channel decays make the intra-chunk products element-wise over ``d``: the decay mask
    ``exp(g_i - g_j)`` and the ``k_beta k`` product it multiplies (``Q x Q x d`` per head and chunk
    each), and in the chunk loop the ``q k`` product of every chunk (again ``Q x Q x d``). The UT
    system is solved row by row, each row keeping a clone of the rows above it and of itself
    (``sum_{i<Q} i (i + 1) = (Q - 1) Q (Q + 1) / 3`` per head and chunk). Then the solved system and each chunk's masked
    intra-chunk attention (``Q x Q``), eight padded ``NL H d`` tensors (q, k, v, k_beta, the
    decays' exp, the two products with the solved system), per chunk five ``Q x d`` products with
    the decays and the state (two fewer in all: the first chunk's state is zero and the last
    chunk's new state is discarded; three fewer with a single chunk), the state each chunk reads,
    the last decay per chunk, padded beta and three bool masks. Before the kernel: nine fp32 tensors of ``w`` per token (q and k
    in fp32 and their L2 norms, the gate's decays and output gate), a bool mask, three norms'
    statistics, beta, the conv's input and its output before the slice, the low-rank gates'
    inner widths and the out-projection's input in the model dtype, A (twice) in fp32.
    """
    c, q = _chunks(m, tokens)
    h, d, conv, k = m.heads, m.head_dim, m.conv_channels, m.conv_kernel
    w = h * d
    N, NL, bhc = _float(batch * tokens), _float(batch * c * q), _float(batch * h * c)
    scan = 3.0 * bhc * q * q * d + bhc * (q - 1) * q * (q + 1) / 3.0 + 2.0 * bhc * q * q
    scan = scan + (8.0 * NL * h * d + (5.0 * c - _one_chunk_more(c, 2.0, 3.0)) * batch * h * q * d)
    scan = scan + (bhc * d * d + bhc * d + NL * h)
    kept = 4.0 * scan + 3.0 * q * q
    kept = kept + (9.0 * N * w * 4.0 + N * w + 3.0 * N * h * 4.0 + N * h * dt)
    kept = kept + (batch * conv * (tokens + k - 1) * dt + N * conv * dt + N * w * dt + 2.0 * N * d * dt)
    return kept + (0.0 if dt == 4.0 else d * 4.0) + 2.0 * h * 4.0  # an fp32 copy of a d-wide bias


def generic_bytes(m: RecurrentMixer, batch: int, tokens: int, dt: float) -> float:
    """Mixers whose kernels are not listed here (every kind the readers build has its own): what
    any such mixer keeps at least, per token, the input and output of each projection, the conv's
    input and output and the fp32 scan's input, output and per-head decay, in ``dt``/fp32."""
    proj = sum(i + o for i, o in m.projections)
    per_token = dt * (proj + 2.0 * m.conv_channels) + 4.0 * (2.0 * m.heads * m.head_dim + m.heads)
    return batch * tokens * per_token


def mixer_bytes(m: RecurrentMixer, batch: int, tokens: int, dt: float) -> float:
    """Bytes one recurrent mixer keeps for backward (its input's norm and the residual excluded)."""
    if m.kind is RecurrentKind.MAMBA2:
        return mamba2_bytes(m, batch, tokens, dt)
    if m.kind is RecurrentKind.KDA:
        return kda_bytes(m, batch, tokens, dt)
    if m.kind is RecurrentKind.GATED_DELTANET:
        return gated_deltanet_bytes(m, batch, tokens, dt)
    if m.kind is RecurrentKind.MAMBA:
        return mamba1_bytes(m, batch, tokens, dt)
    if m.kind is RecurrentKind.SHORT_CONV:
        return short_conv_bytes(m, batch, tokens, dt)
    return generic_bytes(m, batch, tokens, dt)
