"""Activation memory of one micro-batch: what PyTorch keeps alive for backward, tensor by tensor.

The default accounting is what eager PyTorch + Hugging Face transformers 5 save, found by listing
every tensor ``torch.autograd.graph.saved_tensors_hooks`` sees (unique storages, weights left out);
``tests/validation/test_activations_vs_torch.py`` holds the sums to within 5%. Per token of one
block, ``dt`` being the compute dtype's bytes (2 for bf16), ``h`` hidden, ``a``/``kv`` query/KV
heads, ``d`` head dim, ``i`` FFN inner size, ``s`` sequence length:

* RMSNorm (Llama style) keeps its fp32 upcast input, the fp32 ``rsqrt`` and the normalised tensor
  cast back: ``4h + 4 + dt*h``; Gemma's ``(1 + w)`` norm stays fp32: ``8h + 4``; ``nn.LayerNorm``
  keeps its input and the fp32 mean/rstd: ``dt*h + 8``. The output of the norm in front of the
  attention and of the FFN is kept by the linear layers that read it: ``2*dt*h``.
* Attention, ``sdpa``/``flash``: q, k, v, the output (which is also ``o_proj``'s input) and the fp32
  logsumexp: ``dt*d*(2a + 2kv) + 4a``. PyTorch's CPU flash kernel keeps these (measured); the CUDA
  ones (FlashAttention-2, cuDNN, memory-efficient) save the same tensors by their autograd
  definitions (read, not measured: no GPU in the validation suite); transformers passes ``enable_gqa``
  when there is no padding mask, so K/V stay at ``kv`` heads. Two layouts cost more: a fused qkv
  projection (Phi-3, GPT-NeoX, Falcon) stays whole while v is a view of it (``+dt*d*(a + kv)`` once
  RoPE has made q and k anew), and a q rebuilt by ``torch.cat`` (partial RoPE: Phi-3, GPT-NeoX)
  makes the kernel's output ``(b, a, s, d)``-contiguous, so ``o_proj`` keeps a copy (``+dt*a*d``).
* Attention, ``eager``: q and the ``repeat_kv`` copies of k and v (``a`` heads each), the
  contiguous copy of the output ``o_proj`` keeps, and per head and key position the fp32 softmax
  plus its cast back to ``dt`` (``softmax(..., dtype=float32).to(dtype)``): ``4*dt*a*d +
  a*s*(4 + dt)``. GPT-2, GPT-J and Falcon soft-max in the compute dtype (``a*s*dt``). With dropout
  the cast is not kept; the mask and the dropped probabilities are.
* Gated FFN (SwiGLU): gate output (the activation's input), up output, activation output and their
  product (``down_proj``'s input): ``4*dt*i``. Activations transformers writes as Python arithmetic
  keep more: ``gelu_new`` keeps 4 tensors of size ``i`` (input, tanh, ``0.5x``, ``1 + tanh``), so
  GPT-2's FFN keeps ``5*dt*i``.
* MoE (transformers' default ``grouped_mm`` experts): the router's fp32 softmax and top-k
  (``4E + 12k + 4``; DeepSeek's router also keeps an fp32 copy of its input), and per routed token
  the gathered input, the gate/up output, the activation output, the product, the expert output
  the routing weight multiplies, that weight and three int64 index vectors:
  ``k*(dt*(2h + 4*i_e) + 28)``; shared experts as a dense FFN.
* Head: the final norm, the LM head's input, the fp32 ``log_softmax`` that ``cross_entropy`` keeps
  of the ``logits.float()`` upcast in transformers' ``ForCausalLMLoss`` (``4V``), the int64 labels.
* Embedding: the int64 token ids the embedding's backward keeps, learned position ids, and the
  RoPE cos/sin tables (``2*s*d*dt``, shared by every block, independent of the batch).

Hybrid models (``layer_mixers`` / ``ffn_free_layers``): each kind of block (attention or recurrent
mixer or none, dense / MoE / no FFN) is costed for what it holds, ``per_layer`` is their mean and
the block full recompute rebuilds is the largest kind; a recurrent mixer's own tensors (Mamba-2,
Gated DeltaNet) are counted per sequence by :mod:`workbench_memory.recurrent_activations`. Qwen3-Next
norms are fp32 ``(1 + w)`` norms like Gemma's; its gated attention output keeps the sigmoid, the
output's copy and their product; Mamba-2's residual stream stays fp32, so its final norm keeps
fp32 tensors. Layers running a shared attention + MLP block (Zamba2) keep more, listed in
:mod:`workbench_memory.shared_blocks`. Not modelled for recurrent mixers: the inference working set (only their
projections' tensors count there) and fp32 Gated DeltaNet, whose chunked rule keeps a few more
contiguous copies than in 16-bit (about 10% more of the mixer's own bytes).

``memory.act_megatron_kernels = 1`` switches to Megatron-LM's fused-kernel accounting, the one of
Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", Sec. 4):
norms keep only their 16-bit input, the fused softmax its 16-bit output, fused bias-GeLU / SwiGLU
only their input, dropout masks one byte. A GPT-3-like block with dropout then gives their
``sbh(34 + 5as/h)`` exactly; :func:`korthikanti_per_layer` states their Table 2 directly.

Tensor parallelism follows Megatron-LM: what lies between the column- and row-parallel linears
(q/k/v/out, scores, FFN and expert inner activations, vocab-parallel logits) is divided by ``tp``
(K/V heads never below one per rank); norms, block inputs, dropout masks and the router are
replicated unless sequence parallelism splits them along the sequence too (Megatron keeps the
sequence-sharded input of each linear and all-gathers it again in backward, Sec. 4.2.2).

Recomputation: ``selective`` drops the attention core (scores/softmax/dropout; nothing for
flash/sdpa, which never keep it); ``full`` (transformers' non-reentrant gradient checkpointing)
keeps each block's input, plus, under eager attention, the ``(b, 1, s, s)`` additive mask every
block is called with; :attr:`ActivationBreakdown.workspace` adds, once, the block whose activations
backward rebuilds (the larger kind where dense and MoE blocks mix).

The peak of a training step (:meth:`ActivationBreakdown.peak`, profiler-checked) adds to the kept
activations the larger of two short-lived sets: the loss's (``cross_entropy``'s fp32 gradient and
``log_softmax``'s fp32 input gradient, 8 bytes per logit, next to the kept log-softmax), and one
block's backward (its FFN's gradient buffers, ``dt*2*(i + h)``, or eager attention's fp32 and
``dt`` score gradients, by which time the FFN's kept tensors are freed), less the head's kept
tensors freed by then.

Inference keeps nothing across blocks: ``per_layer`` is 0 and ``workspace`` is the largest set of
tensors alive at once inside one block's forward: the residual stream and norm output plus the
bigger of the attention phase (q, k, v, output; eager adds the ``dt`` scores and their fp32
softmax) and the FFN phase (gate/activation, up, product). ``head`` holds the logits of the last
position of each sequence only, in ``dt`` and in fp32, as vLLM and transformers' ``generate``
(``logits_to_keep=1``) compute them; ``memory.act_logits_all_positions = 1`` makes it every position
(a plain transformers forward). The KV cache is not an activation: it is counted elsewhere.

Assumed and not modelled: no padding mask (packed or equal-length sequences); training with
``use_cache=False`` (gradient checkpointing forces it; with transformers' default ``use_cache=True``
in a plain loop, the returned cache also holds K/V copies until the output is dropped); a layer
mix of MoE and dense blocks is averaged over the model for ``per_layer``; sliding windows do not shrink eager scores
(transformers masks a full ``s x s``); an encoder-decoder's decoder blocks are counted like
encoder blocks (no cross-attention terms); activations in ``dt`` even for fp8 compute.

Everything is plain arithmetic on validated fields, so 10,000-point sweeps stay cheap; the
formula text is built only when read. ``micro_batch`` and ``seq_len`` may be numpy arrays (one entry
per point of a group): the same arithmetic then runs element-wise, with the same operations in the
same order, so each entry equals the answer for that point alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

import numpy as np

from workbench.core.model import Head, ModelArchitecture, NormKind, PositionEmbedding
from workbench.core.scenario import AttentionKernel, FinetuneMethod, Recompute, Scenario
from workbench.core.units import format_bytes
from workbench_memory import shared_blocks
from workbench_memory.recurrent_activations import mixer_bytes

__all__ = [
    "ASSUMPTIONS",
    "ActivationAssumption",
    "ActivationBreakdown",
    "activation_memory",
    "korthikanti_per_layer",
]


@dataclass(frozen=True, slots=True)
class ActivationAssumption:
    """A switchable default of this module; the fields are those of ``workbench.engine.Assumption``."""

    id: str
    title: str
    default: float
    unit: str
    source: str
    description: str = ""
    minimum: float | None = None
    maximum: float | None = None


DROPOUT = "memory.act_dropout"
MASK_BYTES = "memory.act_dropout_mask_bytes"
MEGATRON = "memory.act_megatron_kernels"
ALL_LOGITS = "memory.act_logits_all_positions"

#: The assumptions :func:`activation_memory` reads from ``Scenario.assumptions``.
ASSUMPTIONS: tuple[ActivationAssumption, ...] = (
    ActivationAssumption(
        id=DROPOUT,
        title="Dropout probability in training (overrides the model's)",
        default=0.0,
        unit="probability",
        source="Llama, Mistral, Qwen, Gemma and DeepSeek configs ship attention_dropout = 0.0 and no "
        "hidden dropout; GPT-2's config uses 0.1 (attn_pdrop, resid_pdrop, embd_pdrop)",
        description="Left unset, each dropout site uses the probability the model's config declares "
        "(attention probabilities, residual branches, embeddings: GPT-2 0.1 each, most recent models 0). "
        "Set, every site uses this value: above 0 each keeps its mask (the attention also its dropped "
        "probabilities) for backward.",
        minimum=0.0,
        maximum=0.99,
    ),
    ActivationAssumption(
        id=MASK_BYTES,
        title="Bytes per element of a kept dropout mask",
        default=1.0,
        unit="bytes",
        source="CUDA native_dropout keeps a bool mask (1 byte; Korthikanti et al. 2022, Sec. 4.1); "
        "PyTorch's CPU dropout multiplies by a noise tensor of the input's dtype",
        description="1 on GPUs; the compute dtype's size when dropout runs on a CPU.",
        minimum=0.125,
        maximum=4.0,
    ),
    ActivationAssumption(
        id=MEGATRON,
        title="Megatron-LM fused kernels (Korthikanti et al. accounting)",
        default=0.0,
        unit="switch",
        source="Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer "
        "Models', Sec. 4.1 and Table 2",
        description="0: what eager PyTorch + transformers keep (fp32 norm and softmax upcasts, unfused "
        "activations). 1: fused LayerNorm/softmax/bias-GeLU/SwiGLU kernels that keep only 16-bit "
        "inputs or outputs, as Megatron-LM and Transformer Engine do.",
        minimum=0,
        maximum=1,
    ),
    ActivationAssumption(
        id=ALL_LOGITS,
        title="Inference computes logits for every prompt position",
        default=0.0,
        unit="switch",
        source="vLLM's LogitsProcessor and transformers' generate() (logits_to_keep=1) compute logits "
        "for the last position only; a plain transformers forward computes all of them",
        description="0: the last position of each sequence. 1: every position (batch x seq x vocab).",
        minimum=0,
        maximum=1,
    ),
)

#: Tensors of size i an activation function keeps besides its output, where transformers writes it
#: as Python arithmetic (transformers/activations.py); fused torch functions keep their input (1).
_ACT_SAVES = {
    "gelu_new": 4,  # pow's input, tanh's output, 0.5*x, 1 + tanh
    "gelu_accurate": 4,
    "gelu_python_tanh": 4,
    "gelu_fast": 7,
    "gelu_python": 3,  # 0.5*x, x/sqrt(2) (erf's input), 1 + erf
    "quick_gelu": 2,  # x, sigmoid(1.702 x)
    "relu2": 1,
    # These keep their output, which the next op keeps anyway.
    "relu": 0,
    "tanh": 0,
    "sigmoid": 0,
}
_COMPUTE_DTYPE_SOFTMAX = ("gpt2", "gptj", "falcon", "gpt_oss")  # eager softmax without the fp32 upcast
#: One fused qkv projection whose output q, k and v are views of (transformers' modeling files).
_FUSED_QKV = (
    "gpt2",
    "gpt_bigcode",
    "gpt_neox",
    "falcon",
    "phi3",
    "bloom",
    "mpt",
    "dbrx",
    "persimmon",
    "codegen",
)
#: RoPE on part of the head dims, rebuilt with torch.cat: q comes out (b, heads, s, d)-contiguous.
_CAT_ROPE = (
    "phi3",
    "phi",
    "gpt_neox",
    "persimmon",
    "stablelm",
    "glm4_moe",
    "minimax_m2",
    "bamba",  # BambaConfig fixes partial_rotary_factor at 0.5
)
#: Router logits on an fp32 copy of the hidden state.
_FP32_ROUTER = (
    "deepseek",
    "glm4_moe",
    "ernie4_5_moe",
    "kimi_linear",
    "nemotron_h",  # NemotronHTopkRouter: F.linear of the fp32 hidden state
)
#: The residual stream stays fp32 between blocks (Mamba-2's residual_in_fp32, True by default).
_FP32_RESIDUAL = ("mamba2",)
#: RMSNorms that multiply by their weight in fp32 (Gemma's, Qwen3-Next's and Qwen3.5's ``1 + w``,
#: OLMo 2's ``w * x`` before the cast back), so the fp32 normalised tensor is kept: ``8h + 4``.
_FP32_WEIGHT_NORM = (
    "gemma",
    "qwen3_next",
    "olmo2",
    "gpt_oss",
    "qwen3_5",
    "nemotron_h",  # NemotronHRMSNorm: weight x normalised in fp32, then the cast back
)
#: Parallel attention + Mamba-2 blocks whose two branches each read the normed input times their
#: own µP multiplier (Falcon-H1: attention_in_multiplier, ssm_in_multiplier): two kept copies.
_SCALED_PARALLEL_INPUTS = ("hybrid_falcon_h1",)
_LSE = 4.0  # fp32 logsumexp per query row and head (flash / sdpa)
_NORM_STATS = 8.0  # LayerNorm's fp32 mean and rstd per row (CUDA)
_INDEX = 8.0  # an int64 index per token


@dataclass(frozen=True, slots=True)
class ActivationBreakdown:
    """Activation bytes of one micro-batch on one GPU, by where they live.

    ``total == per_layer * layers + embedding + head + workspace``; ``workspace`` is 0 except:

    * full recompute: the one block whose activations backward rebuilds, held once (not once per
      micro-batch in flight);
    * inference: the working set of the one block being run (``per_layer`` is then 0).

    ``kept`` is what each micro-batch in flight holds between its forward and its backward.
    ``transient`` is not in ``total``: what the step's peak adds on top of the kept activations
    (loss buffers, or one block's backward); :meth:`peak` combines the parts.
    """

    per_layer: float  # bytes one transformer block keeps for backward, ONE micro-batch, this GPU
    layers: int  # blocks on this pipeline stage
    embedding: float  # bytes the embedding output etc. keeps (first stage)
    head: float  # final norm + logits + loss buffers (last stage)
    total: float  # per_layer * layers + embedding + head (+ workspace)
    workspace: float = 0.0
    transient: float = 0.0
    _text: tuple[object, ...] = field(default=(), repr=False, compare=False)

    @property
    def formula(self) -> str:
        """Human-readable formula with the values substituted (built on read)."""
        return _render(self)

    @property
    def kept(self) -> float:
        """Bytes one micro-batch holds from its forward to its backward."""
        return self.per_layer * self.layers + self.embedding + self.head

    def peak(self, in_flight: int = 1) -> float:
        """Peak activation bytes of a step with ``in_flight`` micro-batches between forward and backward.

        Inference keeps nothing between passes: its peak is ``total``.
        """
        if self._text and self._text[0] == "infer":
            return self.total
        return in_flight * self.kept + self.transient


@dataclass(frozen=True, slots=True)
class _Block:
    """Per-token bytes of one block at tp=1, by how tensor parallelism divides them."""

    rep: float  # kept, replicated over TP ranks (norms, block and linear inputs, masks, router)
    split: float  # kept, divided by tp (heads, FFN inner size)
    kvh: float  # kept per KV head: a rank has max(kv/tp, 1) heads
    score: float  # kept per head and key position (eager scores), divided by tp
    ffn_rep: float  # the FFN side's share of rep (freed before the attention's backward)
    ffn_split: float  # the FFN side's share of split
    big_rep: float  # the largest block (dense or MoE) less the average one, replicated part
    big_split: float  # the same, split part
    grad_rep: float  # backward: FFN gradient buffers, replicated part
    grad_split: float  # backward: FFN gradient buffers, divided by tp
    grad_score: float  # backward: eager score gradients per head and key position
    peak_rep: float  # inference: residual stream and norm output
    peak_attn: float  # inference: q/k/v/output alive at once, divided by tp
    peak_score: float  # inference: eager scores + softmax per head and key position
    peak_ffn: float  # inference: FFN tensors alive at once, divided by tp


#: Model types named like an older family whose blocks they do not share (the family checks below
#: match by prefix): Falcon-H1 has Llama-style attention (separate q/k/v, fp32 softmax), not Falcon's.
_NOT_LIKE_NAMESAKE = {"falcon_h1": "hybrid_falcon_h1"}


def _family(model: ModelArchitecture) -> str:
    family = (model.hf_model_type or model.family).replace("-", "_")
    return _NOT_LIKE_NAMESAKE.get(family, family)


def _norm(
    kind: NormKind, gemma: bool, width: float, rows: float, dt: float, megatron: bool, frozen: bool = False
) -> float:
    """Bytes one norm over ``width`` keeps, per token (``rows`` norm rows per token).

    A frozen RMSNorm weight (LoRA) needs no gradient, so ``weight * x`` does not keep ``x``.
    """
    if megatron:
        return dt * width
    if kind is NormKind.LAYERNORM:
        return dt * width + _NORM_STATS * rows
    if frozen:
        return 4.0 * width + 4.0 * rows
    if gemma:
        return 8.0 * width + 4.0 * rows
    return (4.0 + dt) * width + 4.0 * rows


def _ffn_factor(act: str, gated: bool, megatron: bool) -> float:
    """Kept tensors of size ``i`` in one FFN (gated: gate, up, activation output, product)."""
    if megatron:
        return 3.0 if gated else 2.0  # fused SwiGLU / bias-GeLU keep their input; fc2 its input
    saves = _ACT_SAVES.get(act, 1)
    return saves + 3.0 if gated else saves + 1.0


def _moe_layer_count(model: ModelArchitecture) -> int:
    """How many blocks are MoE blocks, as :meth:`ModelArchitecture.is_moe_layer` decides, in O(1)."""
    moe = model.moe
    assert moe is not None
    step = moe.moe_layer_interval
    return model.num_layers // step - sum(1 for i in set(moe.dense_layers) if (i + 1) % step == 0)


def _attention(
    model: ModelArchitecture,
    kernel: AttentionKernel,
    family: str,
    gemma: bool,
    dt: float,
    megatron: bool,
    frozen: bool,
) -> tuple[float, float, float, float]:
    """(replicated, split, per-KV-head, inference working set) bytes per token of the attention."""
    a = model.num_attention_heads
    d = model.head_dim
    rep = split = kvh = 0.0
    mla = model.mla
    if mla is not None:
        qk, vd = mla.qk_head_dim, mla.v_head_dim
        for rank in (mla.q_lora_rank, mla.kv_lora_rank):
            if rank is not None:  # the latent's norm, and the up-projection's input
                rep += _norm(NormKind.RMSNORM, gemma, rank, 1.0, dt, megatron, frozen) + dt * rank
        if kernel is AttentionKernel.EAGER:
            split += dt * a * (2 * qk + 2 * vd)  # q, k, the copy of v, o_proj's input
        elif kernel is AttentionKernel.SDPA:
            # Memory-efficient kernel: v is a view of kv_b_proj's output (k_nope + v per head).
            split += dt * a * (2 * qk + mla.qk_nope_head_dim + 2 * vd) + _LSE * a
        else:
            # transformers pads v to the q/k width for FlashAttention-2 and slices the output after.
            split += dt * a * (4 * qk + vd) + _LSE * a
        return rep, split, kvh, dt * a * (2 * qk + 2 * vd)
    if model.qk_norm:
        # Per-head norms keep one rsqrt per head; full-width ones (OLMo 2, OLMoE) one per token.
        full = model.qk_norm_full_width
        split += _norm(NormKind.RMSNORM, gemma, a * d, 1.0 if full else a, dt, megatron, frozen)
        kvh += _norm(NormKind.RMSNORM, gemma, d, 1.0 / model.num_kv_heads if full else 1.0, dt, megatron, frozen)
    if kernel is AttentionKernel.EAGER:
        split += 4.0 * dt * a * d  # q, the repeat_kv copies of k and v, o_proj's input
    else:
        split += 2.0 * dt * a * d + _LSE * a  # q and the output (= o_proj's input), lse
        kvh += 2.0 * dt * d  # k and v at their own head count
        rope = model.position_embedding is PositionEmbedding.ROPE and not megatron
        if rope and family.startswith(_FUSED_QKV):
            # v is a view of the fused qkv output, which stays whole; RoPE made q and k anew.
            split += dt * a * d
            kvh += dt * d
        # (Phi-3.5-MoE, "phimoe", rotates whole heads: no cat.)
        if rope and family.startswith(_CAT_ROPE) and not family.startswith("phimoe"):
            # The kernel's output takes q's (b, heads, s, d) layout, so o_proj keeps a copy.
            split += dt * a * d
    if model.attention_output_gate:
        # output x sigmoid(gate) (Qwen3-Next): the sigmoid's output, the output's contiguous copy
        # the product keeps, and the product (o_proj's input)
        split += (2.0 if kernel is AttentionKernel.EAGER else 3.0) * dt * a * d
    return rep, split, kvh, dt * d * (2 * a + 2 * model.num_kv_heads)


def attention_kernel(model: ModelArchitecture, asked: AttentionKernel) -> AttentionKernel:
    """The kernel that runs: SDPA cannot soft-cap scores, so transformers' Gemma 2 offers no SDPA
    (modeling_gemma2.py, ``_supports_sdpa = False``) and runs eager attention instead."""
    if asked is AttentionKernel.SDPA and model.attention_logit_softcap:
        return AttentionKernel.EAGER
    return asked


def _mask_kinds(model: ModelArchitecture) -> int:
    """Distinct attention masks a forward builds: 2 when sliding-window and full layers mix."""
    window = model.sliding_window
    if window is None or window.layers is None:
        return 1
    attention = [i for i in range(model.num_layers) if model.has_attention(i)]
    return 2 if 0 < len(window.layers) < len(attention) else 1


@dataclass(frozen=True, slots=True)
class Dropout:
    """Which dropout sites keep a mask in training."""

    attention: bool  # on the attention probabilities (eager attention keeps the mask)
    hidden: bool  # on each sub-block's output before the residual add
    embedding: bool  # on the embeddings


_NO_DROPOUT = Dropout(False, False, False)


def _dropout(model: ModelArchitecture, given: Mapping[str, float]) -> Dropout:
    """The probabilities the config declares, unless the user set ``memory.act_dropout`` (every site)."""
    if DROPOUT in given:
        on = given[DROPOUT] > 0.0
        return Dropout(on, on, on)
    return Dropout(model.attention_dropout > 0.0, model.hidden_dropout > 0.0, model.embedding_dropout > 0.0)


def _latent_moe(model: ModelArchitecture, dt: float, frozen: bool) -> tuple[float, float]:
    """(width the routed experts read and write, bytes per token the latent projections add).

    Nemotron-3's latent MoE projects each token to ``latent_size`` before the experts and back after
    (``fc1_latent_proj`` / ``fc2_latent_proj``): the experts gather and return latent-wide rows, and
    the up-projection keeps its input, the experts' summed latent output (not when frozen: LoRA)."""
    moe = model.moe
    if moe is None or not moe.latent_size:
        return float(model.hidden_size), 0.0
    return float(moe.latent_size), 0.0 if frozen else dt * moe.latent_size


def _block(
    model: ModelArchitecture,
    scenario: Scenario,
    dt: float,
    megatron: bool,
    dropout: Dropout,
    mask: float,
    block_kind: tuple[bool, bool, str] | None = None,
) -> _Block:
    """Per-token bytes of an average block, or, with ``block_kind`` = (attention, any token mixer, FFN:
    "dense" / "moe" / "none"), of one kind of block of a hybrid model (its recurrent mixer's own
    tensors are added per sequence, :mod:`workbench_memory.recurrent_activations`)."""
    h = model.hidden_size
    a = model.num_attention_heads
    family = _family(model)
    gemma = family.startswith(_FP32_WEIGHT_NORM)
    kernel = attention_kernel(model, scenario.attention)
    frozen = scenario.is_training and scenario.method is not FinetuneMethod.FULL
    frozen_ffn = frozen and scenario.lora_targets == "attention"

    # Norms' internals, and the attention's input that q/k/v keep.
    norm = _norm(model.norm_kind, gemma, h, 1.0, dt, megatron, frozen)
    ffn_norms = model.norms_per_layer // 2
    has_attention, has_mixer, ffn_kind = block_kind if block_kind is not None else (True, True, "")
    if block_kind is not None and (ffn_kind == "none" or not has_mixer):
        # a block of one part: its norms sit on that part
        ffn_norms = 0 if ffn_kind == "none" else model.single_part_norms
        mixer_norms = model.single_part_norms if ffn_kind == "none" else 0
    else:
        mixer_norms = model.norms_per_layer - ffn_norms
    if has_attention:
        rep, split, kvh, peak_attn = _attention(model, kernel, family, gemma, dt, megatron, frozen)
    else:
        rep = split = kvh = peak_attn = 0.0
    rep += mixer_norms * norm + (dt * h if has_mixer else 0.0)
    if has_attention and model.shared_blocks is not None:
        # Zamba2: the shared block's wider input, its adapters and the layer's projection.
        rep += shared_blocks.layer_bytes(
            model, dt, lambda width: _norm(model.norm_kind, gemma, width, 1.0, dt, megatron, frozen), frozen
        )
    if has_attention and family.startswith(_SCALED_PARALLEL_INPUTS):
        rep += dt * h  # the mixer's own scaled copy of the normed input, next to attention's
    score = peak_score = grad_score = 0.0
    if kernel is AttentionKernel.EAGER and has_attention:
        softmax = dt if megatron or family.startswith(_COMPUTE_DTYPE_SOFTMAX) else 4.0
        if dropout.attention:
            score = softmax + mask + dt  # softmax output, mask, dropped probabilities
        else:
            score = softmax + (dt if softmax != dt else 0.0)  # + the cast that probs @ v keeps
        if model.attention_sinks:
            # gpt-oss: the sink column joins the softmax (s + 1 columns), and the max subtracted
            # before it keeps its int64 indices, one per head and query.
            split += (dt + _INDEX) * a
        peak_score = dt + softmax  # forward: scores and their softmax
        grad_score = dt + softmax  # backward: gradients of the probabilities and of the scores
        if model.attention_logit_softcap:
            # cap x tanh(score / cap): tanh keeps its output; the forward holds it next to the scores.
            score += dt
            peak_score += dt
    elif has_attention:
        peak_attn += _LSE * a
    if dropout.hidden and has_mixer:
        rep += mask * h  # attention residual dropout

    # Feed-forward: the post-attention norms, the input the up/gate (and router) keep, inner sizes.
    shared_input = model.parallel_attention_mlp and model.norms_per_layer <= 1
    ffn_rep = ffn_norms * norm + (0.0 if shared_input or frozen_ffn else dt * h)
    factor = _ffn_factor(model.activation, model.gated_mlp, megatron)
    if frozen_ffn:
        factor -= 1.0  # a frozen down_proj does not keep its input
    inner = 3.0 if model.gated_mlp else 2.0  # inference: gate/act, up, product (fc1 out, act out)
    i = model.intermediate_size
    if dropout.hidden:
        ffn_rep += mask * h  # FFN residual dropout
    # Dense FFN, then an MoE FFN if there is one: kept (replicated, split), backward gradient
    # buffers (replicated, split) and the inference working set.
    kinds = [(0.0, dt * factor * i, 2.0 * dt * h, 2.0 * dt * i, inner * dt * i)]
    moe = model.moe
    frac = 0.0
    if moe is not None:
        frac = _moe_layer_count(model) / model.num_layers if block_kind is None else float(ffn_kind == "moe")
        k = moe.experts_per_token
        ei, si = moe.expert_intermediate_size, moe.shared_intermediate
        router = 4.0 * moe.num_experts + 12.0 * k + 4.0
        if family.startswith(_FP32_ROUTER):
            router += 4.0 * h + moe.num_experts
        shared_gate = dt * (h + 1.0) if moe.shared_expert_gate else 0.0
        # Per routed token: the gathered input (only a trainable expert keeps it), the expert output
        # the routing weight multiplies, that fp32 weight and three int64 index vectors.
        weight = 4.0
        expert_factor = dt * factor * k * ei
        if family.startswith("gpt_oss"):
            # GptOssTopKRouter: top-k of the logits (int64 indices), softmax of those k in dt. Its
            # experts' clamped SwiGLU keeps gate_up whole (2i) and five tensors of size i (clamped
            # gate, sigmoid, their product, up + 1, and the gated product down_proj reads).
            router, weight = (_INDEX + dt) * k, dt
            expert_factor = dt * (7.0 - (1.0 if frozen_ffn else 0.0)) * k * ei
        width, latent = _latent_moe(model, dt, frozen_ffn)
        routed = (dt * width if frozen_ffn else 2.0 * dt * width) + weight + 3.0 * _INDEX
        kinds.append(
            (
                router + k * routed + shared_gate + latent,
                expert_factor + dt * factor * si,
                2.0 * dt * (k * width + (h if si else 0.0)),
                2.0 * dt * (k * ei + si),
                dt * (k * (2.0 * width + (inner + 1.0) * ei) + inner * si),
            )
        )
    if ffn_kind == "none":
        ffn_rep = 0.0
        kinds = [(0.0, 0.0, 0.0, 0.0, 0.0)]
        frac = 0.0
    dense = kinds[0]
    sparse = kinds[-1]
    # Blocks differ when some are dense and some MoE: keep the average, and the largest block for
    # what exists once (the recomputed block, backward buffers, the inference working set).
    mean_rep = ffn_rep + frac * sparse[0] + (1.0 - frac) * dense[0]
    mean_split = frac * sparse[1] + (1.0 - frac) * dense[1]
    present = [kind for kind, share in ((dense, 1.0 - frac), (sparse, frac)) if share > 0.0]
    big = max(present, key=lambda kind: kind[0] + kind[1])
    return _Block(
        rep + mean_rep,
        split + mean_split,
        kvh,
        score,
        mean_rep,
        mean_split,
        big[0] - (mean_rep - ffn_rep),
        big[1] - mean_split,
        big[2],
        big[3],
        grad_score,
        2.0 * dt * h,
        peak_attn,
        peak_score,
        max(kind[4] for kind in present),
    )


#: :func:`_block` per model object and the inputs it reads; the model is held next to its
#: blocks so that its id is never reused while the entry lives (as workbench_memory.shapes does).
_BLOCKS: dict[tuple[object, ...], tuple[ModelArchitecture, _Block]] = {}
_BLOCKS_SIZE = 512


def _cached_block(
    model: ModelArchitecture, scenario: Scenario, dt: float, megatron: bool, dropout: Dropout, mask: float
) -> _Block:
    """:func:`_block`, computed once per distinct input: sweeps and the memory plugin's layout
    search ask for the same block thousands of times with only the batch, length or TP changed."""
    key = (
        id(model), scenario.attention, scenario.workload, scenario.method, scenario.lora_targets, dt, megatron,
        dropout, mask,
    )  # fmt: skip
    hit = _BLOCKS.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    blk = _block(model, scenario, dt, megatron, dropout, mask)
    if len(_BLOCKS) >= _BLOCKS_SIZE:
        _BLOCKS.clear()
    _BLOCKS[key] = (model, blk)
    return blk


@dataclass(frozen=True, slots=True)
class _Kind:
    """One kind of block of a hybrid model: how many, its per-token bytes, its recurrent mixer."""

    count: int
    blk: _Block
    recurrent: bool


def _hybrid_kinds(
    model: ModelArchitecture, scenario: Scenario, dt: float, megatron: bool, dropout: Dropout, mask: float
) -> tuple[tuple[_Kind, ...], _Block]:
    """The kinds of block of a hybrid model (one walk over the layers, cached with the blocks), and
    an envelope block (field by field the largest) for what exists once: backward buffers and the
    inference working set."""
    key = ("hybrid", id(model), scenario.attention, scenario.workload, scenario.method,
           scenario.lora_targets, dt, megatron, dropout, mask)  # fmt: skip
    hit = _BLOCKS.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]  # type: ignore[return-value]
    counts: dict[tuple[bool, bool, str], list[int]] = {}
    for index in range(model.num_layers):
        mixer = model.mixer(index).value != "none"
        ffn = "moe" if model.is_moe_layer(index) else "dense" if model.has_ffn(index) else "none"
        kind = (model.has_attention(index), mixer, ffn)
        counts.setdefault(kind, [0, model.has_recurrent(index)])[0] += 1
    kinds = tuple(
        _Kind(n, _block(model, scenario, dt, megatron, dropout, mask, kind), bool(rec))
        for kind, (n, rec) in counts.items()
    )
    envelope = _Block(*(max(getattr(k.blk, f) for k in kinds) for f in _Block.__slots__))
    if len(_BLOCKS) >= _BLOCKS_SIZE:
        _BLOCKS.clear()
    _BLOCKS[key] = (model, (kinds, envelope))  # type: ignore[assignment]
    return kinds, envelope


#: An int, or an int64 (or, near the input limits, object) array with one entry per point.
Ints = Any
#: A float, or a float64 array with one entry per point.
Floats = Any


def _maximum(a: Floats, b: Floats) -> Floats:
    """``max(a, b)``, element-wise when either is an array."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.maximum(a, b)
    return max(a, b)


def _exact(micro_batch: Ints, seq_len: Ints) -> tuple[Ints, Ints]:
    """The point arrays in a dtype whose integer products stay exact, as Python's ints are.

    The largest integer products here are a batch times a squared length (the eager mask, a
    recurrent mixer's chunk matrices) or times a length and a few model widths; int64 holds them
    except at the far corner of the input limits, where the arrays become Python ints (object
    arrays: slower, still exact)."""
    batch = int(np.max(np.abs(micro_batch))) if np.size(micro_batch) else 1
    length = (int(np.max(np.abs(seq_len))) if np.size(seq_len) else 1) + 1024
    if batch * length * length * 2**16 < 2**62 and batch * length * 2**40 < 2**62:
        return micro_batch, seq_len
    as_ints = lambda v: v.astype(object) if isinstance(v, np.ndarray) else v  # noqa: E731
    return as_ints(micro_batch), as_ints(seq_len)


def activation_memory(
    model: ModelArchitecture,
    scenario: Scenario,
    *,
    micro_batch: Ints,
    seq_len: Ints,
    tp: int,
    sequence_parallel: bool,
    layers: int,
    first_stage: bool,
    last_stage: bool,
) -> ActivationBreakdown:
    """Activation bytes one GPU holds for one micro-batch of ``micro_batch`` x ``seq_len`` tokens.

    Training: what is kept for backward (under full recompute, plus the one block rebuilt in
    backward). Inference: the forward's peak working set. See the module docstring.

    Answers are kept per distinct input (the result is frozen, so it is shared): the memory
    plugin's layout search asks about several TP degrees per estimate, and a sweep asks the same
    questions again for every GPU and precision it varies. Arrays of points are not kept (a group
    asks once per stage kind; only the per-model block sizes are shared, by :func:`_cached_block`).
    """
    if isinstance(micro_batch, np.ndarray) or isinstance(seq_len, np.ndarray):
        micro_batch, seq_len = _exact(micro_batch, seq_len)
        return _activation_memory(
            model, scenario, micro_batch=micro_batch, seq_len=seq_len, tp=tp,
            sequence_parallel=sequence_parallel, layers=layers, first_stage=first_stage, last_stage=last_stage,
        )  # fmt: skip
    given = scenario.assumptions
    key = (
        id(model), scenario.dtype, scenario.workload, scenario.method, scenario.lora_targets,
        scenario.attention, scenario.recompute, given.get(MEGATRON), given.get(DROPOUT),
        given.get(MASK_BYTES), given.get(ALL_LOGITS),
        micro_batch, seq_len, tp, sequence_parallel, layers, first_stage, last_stage,
    )  # fmt: skip
    hit = _RESULTS.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    result = _activation_memory(
        model, scenario, micro_batch=micro_batch, seq_len=seq_len, tp=tp, sequence_parallel=sequence_parallel,
        layers=layers, first_stage=first_stage, last_stage=last_stage,
    )  # fmt: skip
    if len(_RESULTS) >= _RESULTS_SIZE:
        _RESULTS.clear()
    _RESULTS[key] = (model, result)
    return result


#: :func:`activation_memory` answers by input; the model object is held so its id stays unique.
_RESULTS: dict[tuple[object, ...], tuple[ModelArchitecture, ActivationBreakdown]] = {}
_RESULTS_SIZE = 4096


def _activation_memory(
    model: ModelArchitecture,
    scenario: Scenario,
    *,
    micro_batch: Ints,
    seq_len: Ints,
    tp: int,
    sequence_parallel: bool,
    layers: int,
    first_stage: bool,
    last_stage: bool,
) -> ActivationBreakdown:
    dt = scenario.dtype.bytes
    given = scenario.assumptions
    megatron = given.get(MEGATRON, 0.0) >= 0.5
    training = scenario.is_training
    dropout = _dropout(model, given) if training else _NO_DROPOUT
    mask = given.get(MASK_BYTES, 1.0)
    blk = _cached_block(model, scenario, dt, megatron, dropout, mask)

    t = float(tp)
    sp = t if sequence_parallel else 1.0
    tokens = _float(micro_batch * seq_len)
    heads_s = model.num_attention_heads * seq_len / t  # score elements per token on this rank
    vocab = model.vocab_size / t if model.head is not Head.BASE else 0.0
    h = model.hidden_size

    if not training:
        attn = blk.peak_attn + blk.peak_score * model.num_attention_heads * seq_len
        workspace = tokens * (blk.peak_rep / sp + _maximum(attn, blk.peak_ffn) / t)
        embedding = tokens * _INDEX if first_stage else 0.0
        head = 0.0
        if last_stage:
            rows = tokens if given.get(ALL_LOGITS, 0.0) >= 0.5 else _float(micro_batch)
            head = rows * vocab * (dt + 4.0)
        return ActivationBreakdown(
            0.0,
            layers,
            embedding,
            head,
            embedding + head + workspace,
            workspace,
            0.0,
            ("infer", micro_batch, seq_len, tp, sequence_parallel, blk, dt, None),
        )

    kv_rank = max(model.num_kv_heads / t, 1.0)
    if model.is_hybrid:
        # Blocks differ in kind: the mean block for what every block keeps, the largest for the
        # one rebuilt under full recompute; recurrent mixers keep their own tensors per sequence.
        kinds, blk = _hybrid_kinds(model, scenario, dt, megatron, dropout, mask)
        mixer = mixer_bytes(model.recurrent, micro_batch, seq_len, dt) / t if model.recurrent else 0.0
        sizes = [
            (
                k.count,
                tokens * (k.blk.rep / sp + k.blk.split / t + k.blk.kvh * kv_rank + k.blk.score * heads_s)
                + (mixer if k.recurrent else 0.0),
                tokens * k.blk.score * heads_s,
            )
            for k in kinds
        ]
        n = float(model.num_layers)
        block = sum(c * size for c, size, _ in sizes) / n
        scores = sum(c * sc for c, _, sc in sizes) / n
        largest = reduce(_maximum, (size for _, size, _ in sizes))
    else:
        scores = tokens * blk.score * heads_s
        block = tokens * (blk.rep / sp + blk.split / t + blk.kvh * kv_rank) + scores
        largest = block + tokens * (blk.big_rep / sp + blk.big_split / t)
    recompute = scenario.recompute
    eager_mask = 0.0
    workspace = 0.0
    family = _family(model)
    fp32_residual = family.startswith(_FP32_RESIDUAL) and not megatron
    if recompute is Recompute.FULL:
        per_layer = tokens * dt * h / sp  # each block's input (sequence-sharded under SP)
        if fp32_residual:
            # blocks after the first read the fp32 residual stream (the first, the embedding's output)
            per_layer = tokens * 4.0 * h / sp
            if first_stage:
                eager_mask = eager_mask - (tokens * (4.0 - dt) * h / sp)
        workspace = largest
        if model.shared_blocks is not None and not megatron:
            # Zamba2: what the checkpoints of the shared-block layers bind in (shared_blocks module).
            each, once = shared_blocks.recompute_bytes(model, dt)
            per_layer = per_layer + (tokens * each / sp * len(model.shared_blocks.layers) / model.num_layers)
            eager_mask = eager_mask + (tokens * once / sp)
        has_attention = not model.is_hybrid or model.attention_layers > 0
        if attention_kernel(model, scenario.attention) is AttentionKernel.EAGER and not megatron and has_attention:
            # The (b, 1, s, s) additive causal mask each checkpointed block is called with; models
            # that mix sliding-window and full layers build one of each (transformers'
            # create_sliding_window_causal_mask next to create_causal_mask), both bound in.
            eager_mask = eager_mask + (micro_batch * seq_len * seq_len * dt * _mask_kinds(model))
    elif recompute is Recompute.SELECTIVE:
        per_layer = block - scores
    else:
        per_layer = block

    frozen = scenario.method is not FinetuneMethod.FULL
    embedding = eager_mask
    if first_stage:
        if not megatron and not frozen:  # a trainable embedding keeps the token ids
            embedding = embedding + (tokens * _INDEX)
            if model.position_embedding is PositionEmbedding.LEARNED:
                embedding = embedding + (seq_len * _INDEX)
        if dropout.embedding:
            embedding = embedding + (tokens * mask * h / sp)
    if model.position_embedding is PositionEmbedding.ROPE and not megatron:
        rope = model.mla.qk_rope_head_dim if model.mla is not None else model.head_dim
        embedding = embedding + (2.0 * seq_len * rope * dt)

    head = loss = 0.0
    if last_stage:
        norm = 0.0
        if model.final_norm:
            norm = _norm(model.norm_kind, family.startswith(_FP32_WEIGHT_NORM), h, 1.0, dt, megatron, frozen)
            if fp32_residual:
                norm = norm + ((4.0 - dt) * h)  # the fp32 residual stream's norm casts back to fp32
        head_in = 0.0 if frozen else dt * h  # a frozen LM head does not keep its input
        labels = _INDEX if vocab and not megatron else 0.0
        head = tokens * ((norm + head_in) / sp + 4.0 * vocab + labels)
        if model.final_logit_softcap:
            head = head + (tokens * vocab * dt)  # tanh's output, kept for backward
        if megatron:
            loss = tokens * vocab * (dt + 4.0)  # the dt logits and their fp32 copy
        else:
            # Backward: the fp32 gradient cross_entropy hands to log_softmax and the one it returns
            # (8 bytes per logit); forward: the dt logits and their fp32 upcast (6 in bf16).
            loss = tokens * vocab * max(8.0, dt + (4.0 if dt != 4.0 else 0.0))

    # One block's backward: the FFN's gradient buffers, or, later, eager attention's score
    # gradients once the FFN's kept tensors are freed (and the attention core itself when
    # selective recompute rebuilds it); the head's kept tensors are freed by then.
    ffn_grads = tokens * (blk.grad_rep / sp + blk.grad_split / t)
    attn_grads = tokens * blk.grad_score * heads_s
    if recompute is Recompute.SELECTIVE:
        attn_grads = attn_grads + (scores)
    freed = tokens * ((blk.ffn_rep + blk.big_rep) / sp + (blk.ffn_split + blk.big_split) / t)
    if isinstance(attn_grads, np.ndarray):
        attn_grads = np.where(attn_grads != 0.0, attn_grads - freed, attn_grads)
    elif attn_grads:
        attn_grads = attn_grads - (freed)
    backward = _maximum(ffn_grads, attn_grads) + workspace - head
    total = per_layer * layers + embedding + head + workspace
    return ActivationBreakdown(
        per_layer,
        layers,
        embedding,
        head,
        total,
        workspace,
        _maximum(_maximum(loss, backward), 0.0),
        ("train", micro_batch, seq_len, tp, sequence_parallel, blk, dt, recompute),
    )


def _float(value: Ints) -> Floats:
    """``float(value)``, element-wise for an array."""
    return value.astype(np.float64) if isinstance(value, np.ndarray) else float(value)


def korthikanti_per_layer(
    s: int, b: int, h: int, a: int, t: int = 1, *, sequence_parallel: bool = False, recompute: str = "none"
) -> float:
    """Activation bytes per transformer layer from Korthikanti et al. 2022, Table 2.

    Their assumptions: GPT block (MHA, 4h GeLU FFN, LayerNorm, dropout), 16-bit activations,
    1-byte dropout masks, Megatron-LM kernels. ``recompute``: "none", "selective" or "full".
    """
    sbh = float(s * b * h)
    attn = 5.0 * a * s / h
    if recompute == "full":
        return sbh * 2.0
    if recompute == "selective":
        attn = 0.0
    elif recompute != "none":
        raise ValueError(f"recompute must be 'none', 'selective' or 'full', not {recompute!r}")
    if sequence_parallel:
        return sbh * (34.0 + attn) / t
    return sbh * (10.0 + (24.0 + attn) / t)


def _render(b: ActivationBreakdown) -> str:
    if not b._text:
        return f"total = {format_bytes(b.total)}"
    mode, mb, s, tp, sp, blk, dt, recompute = b._text
    assert isinstance(blk, _Block)
    tokens = f"{mb} x {s} tokens"
    shard = f"/{tp}" if sp and tp > 1 else ""
    per_tok = (
        f"({blk.rep:.0f} B{shard} + {blk.split:.0f} B/{tp}"
        + (f" + {blk.kvh:.0f} B x KV heads per rank" if blk.kvh else "")
        + (f" + {blk.score:g} B x heads x {s}/{tp}" if blk.score else "")
        + ")"
    )
    if mode == "infer":
        return (
            f"block working set = {tokens} x max(attention, FFN) = {format_bytes(b.workspace)}; "
            f"logits = {format_bytes(b.head)}; token ids = {format_bytes(b.embedding)}; "
            f"total = {format_bytes(b.total)} ({dt:g} B activations)"
        )
    if recompute is Recompute.FULL:
        layer = (
            f"per layer = {tokens} x {dt:g} B x hidden{shard} (block input) = {format_bytes(b.per_layer)}; "
            f"recomputed block = {tokens} x {per_tok} = {format_bytes(b.workspace)}"
        )
    else:
        note = " - attention core (selective recompute)" if recompute is Recompute.SELECTIVE else ""
        layer = f"per layer = {tokens} x {per_tok}{note} = {format_bytes(b.per_layer)}"
    return (
        f"{layer}; total = {format_bytes(b.per_layer)} x {b.layers} layers + embedding "
        f"{format_bytes(b.embedding)} + head {format_bytes(b.head)}"
        + (f" + recomputed block {format_bytes(b.workspace)}" if b.workspace else "")
        + f" = {format_bytes(b.total)}; step peak adds {format_bytes(b.transient)}"
    )
