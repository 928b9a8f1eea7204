"""Where each byte lives under TP / PP / DP / EP, ZeRO and offload: one GPU rank per pipeline stage.

A layout (tp, pp, ep, dp) splits the model's blocks into ``pp`` stages (the first ``layers % pp``
stages take one block more). One rank of stage ``i`` holds:

* its blocks' parameters split over TP (see :mod:`workbench_memory.shapes` for what splits and
  what replicates); routed experts split over ``max(EP, TP)`` ranks (EP ranks hold whole experts,
  TP slices them further when TP > EP, as Megatron-LM's expert tensor parallelism); with uneven
  division the most-loaded rank holds ``ceil(experts / EP)`` experts;
* on the first stage the word embedding (vocab-parallel over TP), position/type embeddings and
  other towers; on the last stage the final norm and the LM head (vocab-parallel), plus a copy of
  a tied embedding when PP > 1 (Megatron-LM keeps one on the last stage and all-reduces its
  gradient with the first);
* gradients and optimizer states of its trainable parameters; ZeRO-1 shards optimizer states over
  DP, ZeRO-2 also gradients, ZeRO-3 (FSDP) also the weights, which are all-gathered
  ``memory.zero3_live_layers`` blocks at a time; expert states shard over the expert-data-parallel
  group, ``tp x dp / max(ep, tp)`` ranks; optimizer offload moves optimizer states to the host;
  parameter offload (ZeRO-3 only) keeps only the gathered blocks on the GPU;
* activations of its in-flight micro-batches (1F1B: stage i holds ``pp - i``; interleaved
  multiplies by ``1 + (pp - 1) / (pp x v)``, Korthikanti et al. 2022 Sec. 4.2.3; GPipe holds all),
  plus the step's short-lived peak, held once (loss buffers, or one block's backward);
* for inference, the KV cache of its attention layers for the batch, and the recurrent state of
  its state-space / linear-attention layers (fixed per sequence, heads split over TP);
* overhead: CUDA context, NCCL buffers per parallel group, allocator fragmentation.

Every ZeRO-sharded amount is kept as a coefficient of ``1 / dp``, so a stage's memory is
``fixed + coef / dp`` and the fewest DP ranks that fit solve in closed form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from itertools import chain
from math import ceil, inf
from typing import Any

import numpy as np

from workbench.core.model import ModelArchitecture
from workbench.core.scenario import FinetuneMethod, Offload, Optimizer, PipelineSchedule, Scenario
from workbench.core.units import GiB
from workbench_memory import shared_blocks
from workbench_memory.kv_cache import KvTokens, kv_tokens, sequence_elements
from workbench_memory.optimizer import TrainingBytes, training_bytes
from workbench_memory.shapes import ALL_LINEAR, ModelConstants, model_constants
from workbench_memory.weights import WeightBytes, weight_bytes

ActivationFn = Callable[..., Any]


#: A per-point amount: a Python number shared by every point of a group, or a numpy array with one
#: entry per point (a point group's batch, lengths and everything that follows from them).
PerPoint = Any


def pick(value: PerPoint, i: int) -> Any:
    """Point ``i`` of a per-point amount, as the Python number the scalar arithmetic gave."""
    return value[i].item() if isinstance(value, np.ndarray) else value


def as_float(value: PerPoint) -> PerPoint:
    """``float(value)``, element-wise for an array (object arrays hold exact Python ints)."""
    return value.astype(np.float64) if isinstance(value, np.ndarray) else float(value)


@dataclass(slots=True)
class Plan:
    """What a layout evaluation reads, taken from the scenario and assumptions once per point group.

    ``batch``, ``activation_seq``, ``tokens`` and ``micro_batches`` hold one entry per point (numpy
    arrays); :meth:`at` gives one point's plan in Python numbers (formulas, the layout search).
    """

    model: ModelArchitecture
    scenario: Scenario
    c: ModelConstants
    training: bool
    lora: bool
    w: WeightBytes
    t: TrainingBytes
    zero: int
    offload_optimizer: bool
    offload_params: bool
    live_layers: float
    kv_bytes: float
    kv_decompressed: bool
    tokens: KvTokens
    batch: PerPoint
    cuda_context: float
    nccl: float
    fragmentation: float
    activation_seq: PerPoint
    activation_fn: ActivationFn | None
    #: Micro-batches per optimizer step when the scenario fixes a global batch (None: fill the pipeline).
    micro_batches: PerPoint | None = None
    schedule: PipelineSchedule = PipelineSchedule.ONE_F_ONE_B
    virtual_stages: int = 1
    #: Bytes a stage charges per byte of KV cache and recurrent state. 1 for what is reported; the
    #: layout search under a free-memory rule (TensorRT-LLM: the cache gets a fraction f of what is
    #: free after everything else) charges 1/f, so "fits the whole GPU" is exactly that rule.
    cache_charge: float = 1.0
    _activations: dict[tuple[int, bool, bool], tuple[PerPoint, PerPoint, PerPoint]] = field(
        default_factory=dict
    )

    def at(self, i: int) -> Plan:
        """Point ``i`` alone, in Python numbers (its own activation answers)."""
        t = self.tokens
        return replace(
            self,
            tokens=KvTokens(pick(t.full, i), pick(t.sliding, i), pick(t.cross, i), t.block),
            batch=pick(self.batch, i),
            activation_seq=pick(self.activation_seq, i),
            micro_batches=None if self.micro_batches is None else pick(self.micro_batches, i),
            _activations={},
        )

    def activation_breakdown(self, tp: int, layers: int, first: bool, last: bool) -> Any:
        """The activation model's answer for one micro-batch on a stage (None without one)."""
        if self.activation_fn is None:
            return None
        return self.activation_fn(
            self.model,
            self.scenario,
            micro_batch=self.batch,
            seq_len=self.activation_seq,
            tp=tp,
            sequence_parallel=self.scenario.parallel.sequence_parallel,
            layers=layers,
            first_stage=first,
            last_stage=last,
        )

    def activations(self, tp: int, layers: int, first: bool, last: bool) -> tuple[float, float]:
        """(bytes kept per in-flight micro-batch, bytes held once) on a stage of ``layers`` blocks.

        Training, as :meth:`ActivationBreakdown.peak` combines them: each micro-batch in flight
        keeps ``per_layer x layers + embedding + head``; the step's short-lived peak on top
        (loss buffers, or one block's backward, the recomputed block included) is ``transient``,
        held once. Inference keeps nothing between passes: ``total`` (one block's working set,
        logits) is held once. Both are affine in ``layers``, so one call per (tp, first, last)
        serves every stage size.
        """
        key = (tp, first, last)
        hit = self._activations.get(key)
        if hit is None:
            b = self.activation_breakdown(tp, layers, first, last)
            if b is None:
                hit = (0.0, 0.0, 0.0)
            elif self.training:
                hit = (as_float(b.per_layer), as_float(b.embedding + b.head), as_float(b.transient))
            else:
                hit = (0.0, 0.0, as_float(b.total))
            self._activations[key] = hit
        per_layer, ends, once = hit
        return per_layer * layers + ends, once

    def per_layer_activations(self, tp: int) -> float:
        """Bytes one block keeps per micro-batch at this TP degree (training; 0 for inference)."""
        for key in ((tp, True, True), (tp, True, False), (tp, False, False), (tp, False, True)):
            hit = self._activations.get(key)
            if hit is not None:
                return hit[0]
        self.activations(tp, 1, True, True)
        return self._activations[(tp, True, True)][0]

    def inflight(self, stage: int, pp: int) -> PerPoint:
        """Micro-batches whose activations stage ``stage`` keeps at its peak."""
        if not self.training or pp == 1:
            return 1.0
        # Without a global batch, assume enough micro-batches to fill the pipeline.
        micro = pp if self.micro_batches is None else self.micro_batches
        if self.schedule is PipelineSchedule.GPIPE:
            return as_float(micro)
        if isinstance(micro, np.ndarray):
            held = np.minimum(pp - stage, micro).astype(np.float64)
        else:
            held = float(min(pp - stage, micro))
        if self.schedule is PipelineSchedule.INTERLEAVED:
            held *= 1 + (pp - 1) / (pp * self.virtual_stages)
        return held


def make_plan(
    model: ModelArchitecture,
    scenario: Scenario,
    values: Callable[[str], float],
    activation_fn: ActivationFn | None,
    points: Mapping[str, np.ndarray],
) -> Plan:
    """``values(id)`` reads an assumption (the engine's AssumptionSet records what was read);
    ``points`` holds the group's batch sizes and lengths (int64 arrays, one entry per point, or
    the Python ints of a group of one)."""
    c = model_constants(model)
    training = scenario.is_training
    par = scenario.parallel
    seq = points["seq_len"]
    if not training and scenario.serving.chunked_prefill:
        chunk = scenario.serving.prefill_chunk_tokens
        seq = np.minimum(seq, chunk) if isinstance(seq, np.ndarray) else min(seq, chunk)
    batch = points["batch_size"]
    return Plan(
        model=model,
        scenario=scenario,
        c=c,
        training=training,
        lora=training and scenario.method is not FinetuneMethod.FULL,
        w=weight_bytes(
            scenario,
            lambda: values("memory.quant_keeps_16bit"),
            model.moe.expert_weight_format if model.moe is not None else None,
            model,
        ),
        t=training_bytes(
            scenario,
            values("memory.adafactor_momentum_bytes")
            if training and scenario.optimizer is Optimizer.ADAFACTOR
            else 0.0,
        ),
        zero=par.zero_stage if training else 0,
        offload_optimizer=training and par.offload_optimizer is not Offload.NONE,
        offload_params=training and par.zero_stage == 3 and par.offload_params is not Offload.NONE,
        live_layers=values("memory.zero3_live_layers") if training and par.zero_stage == 3 else 0.0,
        kv_bytes=scenario.kv_cache_dtype.bytes,
        kv_decompressed=c.mla and values("memory.kv_mla_decompressed") >= 0.5,
        tokens=kv_tokens(c, scenario, points["seq_len"], points["gen_len"]),
        batch=batch,
        cuda_context=values("memory.cuda_context_gib") * GiB,
        nccl=values("memory.nccl_gib_per_group") * GiB,
        fragmentation=values("memory.fragmentation"),
        activation_seq=seq,
        activation_fn=activation_fn,
        # Read once here: the layout search asks for in-flight micro-batches per stage and layout.
        # (Scenario.grad_accumulation_steps, per point)
        micro_batches=scenario.global_batch_size // (batch * par.dp) if scenario.global_batch_size else None,
        schedule=par.pipeline_schedule,
        virtual_stages=par.virtual_stages,
    )


@dataclass(slots=True)
class Stage:
    """One rank of one pipeline stage. Sharded amounts are ``coef / dp``.

    What depends on the batch or the lengths (activations, KV cache, recurrent state) holds one
    entry per point of the group; :meth:`at` gives one point's stage in Python numbers.
    """

    index: int
    first: int  # first block index
    layers: int
    is_first: bool
    is_last: bool
    linear: float  # dense linear-layer parameters on the rank
    plain: float  # embedding / head / norm parameters on the rank
    experts: float  # routed-expert parameters on the rank
    adapters: float  # LoRA adapter parameters on the rank
    trainable: float
    weights_fixed: float
    weights_coef: float
    grads_fixed: float
    grads_coef: float
    opt_fixed: float
    opt_coef: float
    micro_activations: PerPoint  # kept per in-flight micro-batch
    once_activations: PerPoint  # the step's transient peak (training) or the forward workspace (inference)
    inflight: PerPoint
    kv: PerPoint
    kv_per_sequence: PerPoint
    state: PerPoint  # recurrent state of the batch (inference)
    state_per_sequence: float
    comm: float  # CUDA context + NCCL groups other than DP
    dp_comm: float  # the DP group's NCCL buffers (training, dp > 1)
    #: micro_activations x inflight + once_activations (kept as a field: the layout search reads it often)
    activations: PerPoint = field(init=False)

    def __post_init__(self) -> None:
        self.activations = self.micro_activations * self.inflight + self.once_activations

    def at(self, i: int) -> Stage:
        """Point ``i`` alone, in Python numbers."""
        return Stage(**{f.name: pick(getattr(self, f.name), i) for f in _STAGE_FIELDS})

    def weights(self, dp: int) -> float:
        return self.weights_fixed + self.weights_coef / dp

    def grads(self, dp: int) -> float:
        return self.grads_fixed + self.grads_coef / dp

    def optimizer(self, dp: int) -> float:
        return self.opt_fixed + self.opt_coef / dp

    def overhead(self, dp: int, fragmentation: float) -> float:
        return self.comm + (self.dp_comm if dp > 1 else 0.0) + fragmentation * self.activations

    def fixed(self, fragmentation: float) -> float:
        """Bytes that do not shrink with DP (DP group buffers included)."""
        return (
            self.weights_fixed
            + self.grads_fixed
            + self.opt_fixed
            + self.activations
            + self.kv
            + self.state
            + self.comm
            + self.dp_comm
            + fragmentation * self.activations
        )

    @property
    def coef(self) -> float:
        return self.weights_coef + self.grads_coef + self.opt_coef

    def total(self, dp: PerPoint, fragmentation: float) -> PerPoint:
        # weights(dp) + grads(dp) + optimizer(dp) + activations + kv + state + overhead(dp), written out
        # (same terms, same order) because the layout search calls it for every stage it tries.
        activations = self.activations
        return (
            (self.weights_fixed + self.weights_coef / dp)
            + (self.grads_fixed + self.grads_coef / dp)
            + (self.opt_fixed + self.opt_coef / dp)
            + activations
            + self.kv
            + self.state
            + (self.comm + self._dp_group(dp) + fragmentation * activations)
        )

    def _dp_group(self, dp: PerPoint) -> PerPoint:
        """The DP group's buffers at ``dp`` ranks (the layout search tries a DP degree per point)."""
        if isinstance(dp, np.ndarray):
            return np.where(dp > 1, self.dp_comm, 0.0)
        return self.dp_comm if dp > 1 else 0.0


_STAGE_FIELDS = tuple(f for f in fields(Stage) if f.init)


def expert_share(c: ModelConstants, tp: int, ep: int, worst: bool) -> float:
    """Fraction of all routed-expert parameters one rank holds."""
    if not c.num_experts:
        return 0.0
    if worst:
        return ceil(c.num_experts / ep) / c.num_experts / max(1.0, tp / ep)
    return 1.0 / max(ep, tp)


def build_stage(p: Plan, tp: int, pp: int, ep: int, index: int, a: int, n: int, share: float) -> Stage:
    c = p.c
    b = a + n
    first, last = index == 0, index == pp - 1
    linear = (
        (c.split[b] - c.split[a]) / tp
        + (c.kv[b] - c.kv[a]) * c.kv_fraction(tp)
        + (c.repl_linear[b] - c.repl_linear[a])
    )
    plain = float(c.norms[b] - c.norms[a])
    experts = (c.routed[b] - c.routed[a]) * share
    if p.model.shared_blocks is not None:
        # Zamba2: a stage also holds the shared blocks it runs whose weights sit on an earlier stage.
        copies = shared_blocks.stage_copies(p.model, a, b)
        if copies:
            split_w, kv_w, norm_w = shared_blocks.block_weights(p.model)
            linear += copies * (split_w / tp + kv_w * c.kv_fraction(tp))
            plain += copies * norm_w
    if first:
        linear += c.other / tp
        plain += c.word_embedding / tp + c.embedding_other
    if last:
        plain += c.final_norm + c.lm_head / tp
        if pp > 1:
            plain += c.tied_copy / tp
    w, t = p.w, p.t
    # Expert states shard over tp x dp / max(ep, tp) ranks: in units of 1/dp that is this factor.
    expert_dp = max(ep, tp) / tp
    dense_w = linear * w.linear + plain * w.plain
    # GGUF: token_embd and output at the preset's own types (a tied head's copy is an embedding).
    dense_w += w.ends(
        (c.word_embedding if first else 0) / tp + (c.tied_copy if last and pp > 1 else 0) / tp,
        (c.lm_head if last else 0) / tp,
    )
    expert_w = experts * w.routed
    adapters = trainable_dense = trainable_experts = factored = 0.0
    if p.training:
        if p.lora:
            r = p.scenario.lora_rank
            if p.scenario.lora_targets == ALL_LINEAR:
                io, count = c.lora_io_all[b] - c.lora_io_all[a], c.lora_n_all[b] - c.lora_n_all[a]
            else:
                io, count = c.lora_io_attn[b] - c.lora_io_attn[a], c.lora_n_attn[b] - c.lora_n_attn[a]
            adapters = r * io / tp
            trainable_dense = adapters
            factored = (io + 2 * r * count) / tp
            dense_w += adapters * w.adapter
        else:
            trainable_dense, trainable_experts = linear + plain, experts
            factored = (c.factored[b] - c.factored[a] + (c.factored_outside if first else 0)) / tp
    trainable = trainable_dense + trainable_experts

    weights_all = dense_w + expert_w
    if p.zero == 3:
        # The live blocks are whole on every rank (their own shard included); the rest is sharded.
        live = min(p.live_layers, n) / n if n else 0.0
        weights_fixed = live * weights_all
        weights_coef = 0.0 if p.offload_params else (1.0 - live) * (dense_w + expert_w * expert_dp)
    else:
        weights_fixed, weights_coef = weights_all, 0.0

    grads_dense, grads_exp = trainable_dense * t.grad, trainable_experts * t.grad
    if p.zero >= 2:
        grads_fixed, grads_coef = 0.0, grads_dense + grads_exp * expert_dp
    else:
        grads_fixed, grads_coef = grads_dense + grads_exp, 0.0

    if p.offload_optimizer or not p.training:
        opt_fixed = opt_coef = 0.0
    else:
        opt_dense = trainable_dense * t.per_param + factored * t.factored
        opt_exp = trainable_experts * t.per_param
        if p.zero >= 1:
            opt_fixed, opt_coef = 0.0, opt_dense + opt_exp * expert_dp
        else:
            opt_fixed, opt_coef = opt_dense + opt_exp, 0.0

    micro, once = p.activations(tp, n, first, last)
    if p.training:
        kv = kv_seq = state = state_seq = 0.0
    else:
        kv_seq = (
            sequence_elements(c, p.tokens, a, b) * c.kv_elems_per_rank(tp, p.kv_decompressed) * p.kv_bytes
        )
        kv_seq = kv_seq * p.cache_charge
        kv = kv_seq * p.batch
        state_seq = (c.state[b] - c.state[a]) * c.state_bytes_per_rank(tp, p.kv_bytes) * p.cache_charge
        state = state_seq * p.batch
    groups = (tp > 1) + (pp > 1) + (ep > 1)
    return Stage(
        index=index,
        first=a,
        layers=n,
        is_first=first,
        is_last=last,
        linear=linear,
        plain=plain,
        experts=experts,
        adapters=adapters,
        trainable=trainable,
        weights_fixed=weights_fixed,
        weights_coef=weights_coef,
        grads_fixed=grads_fixed,
        grads_coef=grads_coef,
        opt_fixed=opt_fixed,
        opt_coef=opt_coef,
        micro_activations=micro,
        once_activations=once,
        inflight=p.inflight(index, pp),
        kv=kv,
        kv_per_sequence=kv_seq,
        state=state,
        state_per_sequence=state_seq,
        comm=p.cuda_context + p.nccl * groups,
        dp_comm=p.nccl if p.training else 0.0,
    )


def iter_stages(p: Plan, tp: int, pp: int, ep: int, worst: bool = True) -> Iterator[Stage]:
    """Stages one by one, first to last (a search can stop at the first that cannot fit)."""
    share = expert_share(p.c, tp, ep, worst)
    base, extra = divmod(p.c.layers, pp)
    start = 0
    for i in range(pp):
        n = base + (1 if i < extra else 0)
        yield build_stage(p, tp, pp, ep, i, start, n, share)
        start += n


def first_stage_activations(p: Plan, tp: int, pp: int) -> float:
    """Activation bytes of the first stage: no DP degree shrinks them (a cheap lower bound)."""
    n = -(-p.c.layers // pp)
    micro, once = p.activations(tp, n, True, pp == 1)
    return micro * p.inflight(0, pp) + once


def build_stages(p: Plan, tp: int, pp: int, ep: int, worst: bool = True) -> list[Stage]:
    return list(iter_stages(p, tp, pp, ep, worst))


def min_dp(
    stages: Iterable[Stage], usable: float, fragmentation: float, floor: int, cap: int, n: int
) -> np.ndarray:
    """Fewest DP ranks (>= floor) at which every stage fits ``usable``, per point of the stages'
    group (0: none up to ``cap``).

    One pass; a point whose stage cannot fit at any DP degree (its unsharded part alone exceeds
    ``usable``) is settled as 0 there, and once every point is settled so the later stages are
    not even built (hopeless layouts cost one stage). A group of one point whose stages hold Python
    numbers runs the same steps on Python numbers (:class:`_One`), without numpy's per-call cost:
    the layout search calls this about ten times per single estimate.
    """
    iterator = iter(stages)
    first = next(iterator, None)
    scalar = n == 1 and first is not None and not isinstance(first.total(1, fragmentation), np.ndarray)
    ops: Any = _One if scalar else np
    need = ops.full(n, floor, dtype=np.int64)
    dead = ops.zeros(n, dtype=bool)
    seen: list[Stage] = []
    for s in chain([first], iterator) if first is not None else ():
        seen.append(s)
        counting = ops.logical_not(dead)
        if floor == 1:
            counting &= ops.logical_not(s.total(1, fragmentation) <= usable)
        room = usable - s.fixed(fragmentation)
        coef = s.coef
        hopeless = counting & ((room < 0) | ((room == 0) & (coef > 0)))
        dead |= hopeless
        if ops.all(dead):
            return np.zeros(n, dtype=np.int64)
        counting &= ops.logical_not(hopeless)
        if coef > 0:
            with np.errstate(divide="ignore", invalid="ignore"):
                # ceil(coef / room) beyond the cap settles nothing but "none": clip before the int
                ratio = ops.ceil(ops.where(counting, coef / ops.where(counting, room, 1.0), 0.0))
            shards = _as_int(ops.minimum(ratio, cap + 1.0))
        else:
            shards = 0
        need = ops.where(counting, ops.maximum(need, ops.maximum(2, shards)), need)
    found = ops.zeros(n, dtype=np.int64)
    open_ = ops.logical_not(dead)
    for candidate in (need, need + 1):  # the next one covers float rounding at the boundary
        trying = open_ & (candidate <= cap)
        open_ &= candidate <= cap  # past the cap: none (and the next candidate is larger still)
        if not ops.any(trying):
            break
        dp = ops.where(trying, candidate, 1)
        fits = trying & _every_stage(seen, dp, usable, fragmentation, n)
        found = ops.where(fits, candidate, found)
        open_ &= ops.logical_not(fits)
    return np.array([found], dtype=np.int64) if ops is _One else found


class _One:
    """The numpy calls :func:`min_dp` makes, for one point held in Python numbers (same results:
    ``math.ceil`` equals ``np.ceil`` on finite floats, the rest is elementwise)."""

    @staticmethod
    def full(n: int, value: Any, dtype: Any = None) -> Any:
        return int(value) if dtype is np.int64 else value

    @staticmethod
    def zeros(n: int, dtype: Any = None) -> Any:
        return False if dtype is bool else 0

    @staticmethod
    def logical_not(x: Any) -> bool:
        return not x

    @staticmethod
    def all(x: Any) -> bool:
        return bool(x)

    any = all

    @staticmethod
    def where(condition: Any, a: Any, b: Any) -> Any:
        return a if condition else b

    @staticmethod
    def ceil(x: float) -> float:
        return x if x == inf else float(ceil(x))  # np.ceil keeps an overflowed ratio infinite

    @staticmethod
    def minimum(a: Any, b: Any) -> Any:
        return min(a, b)

    @staticmethod
    def maximum(a: Any, b: Any) -> Any:
        return max(a, b)


def _as_int(x: Any) -> Any:
    """Whole shard counts: int64 over a point group, an int for one point."""
    return x.astype(np.int64) if isinstance(x, np.ndarray) else int(x)


def _every_stage(
    stages: list[Stage], dp: Any, usable: float, fragmentation: float, n: int
) -> Any:
    if n == 1 and not isinstance(dp, np.ndarray):
        return all(s.total(dp, fragmentation) <= usable for s in stages)
    out = np.ones(n, dtype=bool)
    for s in stages:
        out &= s.total(dp, fragmentation) <= usable
    return out
