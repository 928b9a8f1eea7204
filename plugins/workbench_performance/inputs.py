"""Build the batch-independent inputs of the serving and training models from an estimate.

The source is either the :class:`~workbench.engine.estimator.EstimateContext` an estimator
receives or a finished :class:`~workbench.engine.estimate.Estimate` (what the GUI and the CLI
hold), so that :func:`workbench_performance.curve_for` can redraw the throughput-latency curve
without running the engine again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.core.dtypes import WeightFormat, weight_bits
from workbench.core.hardware import Cluster
from workbench.core.model import ModelArchitecture
from workbench.core.params import ParameterCount, count_parameters
from workbench.core.scenario import AttentionKernel, FinetuneMethod, Offload, PipelineSchedule, Recompute, Scenario, Workload
from workbench.engine.assumptions import AssumptionSet
from workbench.engine.quantity import Quantity
from workbench_performance.arrays import as_float, maximum, minimum
from workbench_performance.communication import CommLayout, Link, group_link
from workbench_performance.inference import InferenceInputs
from workbench_performance.model_constants import (
    OPTIMIZER_BYTES,
    lora_parameters,
    matmul_elements_per_token,
    moe_layers,
    touched_fraction,
    tp_collectives,
    weight_elements,
)
from workbench_performance.operators.cost import GraphArrays, graph_arrays
from workbench_performance.operators.graph import forward_graph
from workbench_performance.operators.profiles import profile_for
from workbench_performance.operators.quantized import GEMV_MAX_ROWS
from workbench_performance.training import TrainingInputs

#: PCIe x16 bandwidth per direction by generation, GB/s (PCI-SIG; as in resources/catalog/nodes.yaml).
PCIE_GBPS = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}


# Not frozen: built once per estimate on the hot path (a frozen dataclass costs 4x to build);
# nothing writes to one after it is built.
@dataclass(slots=True)
class Source:
    """The parts of an estimate the builders read."""

    scenario: Scenario
    model: ModelArchitecture
    cluster: Cluster
    params: ParameterCount
    assumptions: AssumptionSet
    values: dict[str, Quantity]

    @classmethod
    def of(cls, obj: Any) -> Source:
        """From an EstimateContext (``.scenario``) or an Estimate (``.resolved``)."""
        if isinstance(obj, (Source, PointSource)):
            return obj
        resolved = getattr(obj, "resolved", None)
        if resolved is not None:
            return cls(
                resolved.scenario,
                resolved.model,
                resolved.cluster,
                count_parameters(resolved.model),
                obj.assumptions,
                obj.values,
            )
        return cls(obj.scenario, obj.model, obj.cluster, obj.params, obj.assumptions, obj.values)

    @property
    def compute_dtype(self) -> str:
        """The matmuls' dtype (the compute plugin's roofline.compute_dtype; the scenario's otherwise)."""
        quantity = self.values.get("roofline.compute_dtype")
        return str(quantity.value) if quantity is not None else self.scenario.dtype.value

    def point(self, name: str) -> int:
        """A point field (batch_size, seq_len, gen_len) of the one configuration."""
        return getattr(self.scenario, name)


    def number(self, key: str) -> float | None:
        quantity = self.values.get(key)
        if quantity is None:
            return None
        value = quantity.value
        if type(value) is float:  # the usual case, decided without the isinstance chain
            return value
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


    def numbers(self, keys: tuple[str, ...]) -> list[float | None]:
        """:meth:`number` of each key, in one call (the serving model reads a dozen per estimate)."""
        values = self.values
        out: list[float | None] = []
        for key in keys:
            quantity = values.get(key)
            value = None if quantity is None else quantity.value
            if type(value) is not float:
                number = isinstance(value, (int, float)) and not isinstance(value, bool)
                value = float(value) if number else None
            out.append(value)
        return out


# Not frozen: built once per point group on the hot path.
@dataclass(slots=True)
class PointSource:
    """What the builders read, for a point group (:class:`~workbench.engine.points.PointsContext`).

    The point fields and the earlier results are numpy arrays of one entry per point -- or, for a
    group of one point, plain Python numbers, so that a single estimate costs what the scalar
    model did. The same builders read a :class:`Source` (one estimate) through the same methods.
    """

    scenario: Scenario  # what every point shares (its point fields are placeholders)
    model: ModelArchitecture
    cluster: Cluster
    params: ParameterCount
    assumptions: AssumptionSet
    points: dict[str, Any]
    found: dict[str, Any]  # earlier results: number, None, or a float array
    compute_dtype: str
    n: int

    @classmethod
    def of(cls, ctx: Any, keys: tuple[str, ...]) -> PointSource:
        """The point fields and the results ``keys`` of a PointsContext."""
        n = ctx.n
        values = ctx.values
        found: dict[str, Any] = {}
        for key in keys:
            found[key] = _read(values[key], n) if key in values else None
        if n == 1:
            points = {name: int(v[0]) for name, v in ctx.points.items()}
        else:
            points = dict(ctx.points)
        dtype_column = values["roofline.compute_dtype"] if "roofline.compute_dtype" in values else None
        dtype = str(dtype_column.value(0)) if dtype_column is not None else ctx.scenario.dtype.value
        return cls(ctx.scenario, ctx.model, ctx.cluster, ctx.params, ctx.assumptions, points, found, dtype, n)

    def point(self, name: str) -> Any:
        return self.points[name]

    def numbers(self, keys: tuple[str, ...]) -> list[Any]:
        found = self.found
        return [found[key] for key in keys]

    def number(self, key: str) -> Any:
        return self.found[key]

    def subset(self, index: np.ndarray) -> PointSource:
        """The points at ``index`` (a group of several), as a group of their own."""
        n = len(index)

        def take(v: Any) -> Any:
            if not isinstance(v, np.ndarray):
                return v
            part = v[index]
            return part[0].item() if n == 1 else part

        points = {name: (int(v[index][0]) if n == 1 else v[index]) for name, v in self.points.items()}
        found = {key: take(v) for key, v in self.found.items()}
        return PointSource(self.scenario, self.model, self.cluster, self.params, self.assumptions, points, found,
                           self.compute_dtype, n)  # fmt: skip


def _read(column: Any, n: int) -> Any:
    """A result column as a float (one point, or the value every point shares), None, or a float
    array (an array holding None somewhere -- a result unknown at some points -- is refused:
    such a group is estimated point by point)."""
    if n == 1:
        value = column.value(0)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    values = column.values
    if values is None or isinstance(values, np.ndarray):
        array = column.array(n)
        if array.dtype == object:
            if all(v is None for v in array):
                return None
            array = array.astype(float)  # raises on a None among numbers
        return array.astype(float, copy=False)
    return float(values) if isinstance(values, (int, float)) and not isinstance(values, bool) else None


_LAYOUTS: dict[tuple[object, ...], tuple[object, CommLayout]] = {}


def comm_layout(src: Source) -> CommLayout:
    """The scenario's communication layout (cached: sweeps build it once per distinct layout)."""
    sc, arch, node = src.scenario, src.model, src.cluster.node
    par = sc.parallel
    training = sc.is_training
    key = (id(arch), id(node), par.tp, par.pp, par.dp, par.ep, par.sequence_parallel, training, sc.dtype)
    hit = _LAYOUTS.get(key)
    if hit is not None and hit[0] is arch:
        return hit[1]
    tp, pp, dp, ep = par.tp, par.pp, par.dp, par.ep
    moe = arch.moe
    layout = CommLayout(
        tp=tp,
        pp=pp,
        dp=dp,
        ep=ep,
        hidden=arch.hidden_size,
        act_bytes=max(sc.dtype.bytes, 2.0),
        tp_collectives=tp_collectives(arch),
        moe_layers=moe_layers(arch),
        top_k=moe.experts_per_token if moe else 0,
        sequence_parallel=par.sequence_parallel and training,
        tp_link=group_link(node, tp, 1),
        pp_link=group_link(node, pp, tp * dp if training else tp),
        dp_link=group_link(node, dp, tp),
        ep_link=group_link(node, ep, tp if training else 1),
        ep_local=max(min(ep, node.gpus_per_node // (tp if training else 1)), 1),
        intra_link=Link(node.intra_node_gbps, True, node.intra_node),
        pp_split=tp if training else 1,
    )
    if len(_LAYOUTS) > 1024:
        _LAYOUTS.clear()
    _LAYOUTS[key] = (arch, layout)
    return layout


_TRANSFER_LINKS: dict[int, tuple[object, Link]] = {}


def _transfer_link(node: Any) -> Link:
    """The network a disaggregated prefill hands its KV cache over, one per node shape."""
    hit = _TRANSFER_LINKS.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    link = Link(node.inter_node_gbps, False, node.inter_node)
    if len(_TRANSFER_LINKS) > 256:
        _TRANSFER_LINKS.clear()
    _TRANSFER_LINKS[id(node)] = (node, link)
    return link


def _weight_bytes(sc: Scenario, arch: ModelArchitecture) -> float:
    """Bytes per stored weight, scales included; cached by what decides it (a few enum values),
    since ``Scenario.weight_format`` and ``weight_bits`` cost microseconds per call. A GGUF preset
    reads the model's real bytes (tensor by tensor, averaged over the dense matmul weights)."""
    gguf = _gguf_preset(sc)
    if gguf is not None:
        from workbench.core.gguf import preset_bytes  # GGUF scenarios only: its tables load on first use
        return preset_bytes(arch, gguf).dense_matmul()
    key = (sc.weights, sc.method, sc.dtype, sc.quant_group_size)
    found = _WEIGHT_BYTES.get(key)
    if found is None:
        if len(_WEIGHT_BYTES) > 1024:
            _WEIGHT_BYTES.clear()
        found = _WEIGHT_BYTES[key] = weight_bits(sc.weight_format, sc.quant_group_size) / 8.0
    return found


_WEIGHT_BYTES: dict[tuple[object, ...], float] = {}


def _gguf_preset(sc: Scenario) -> str | None:
    """The scenario's GGUF preset id, or None (an unvalidated model_copy may hold a plain string)."""
    if sc.weights is None:
        return None
    fmt = WeightFormat(sc.weights)
    return fmt.value if fmt.is_gguf else None


def inference_inputs(source: Any) -> InferenceInputs:
    """Serving-model inputs of a scenario (an EstimateContext or an Estimate).

    The compute plugin's FLOPs at the scenario's batch ``B`` are split exactly into the matmul
    FLOPs the kernel graph runs (2 per weight element a token multiplies) and the attention rest,
    per sequence; the KV cache read per sequence comes from the memory plugin's bytes per token
    at the average decode context, sharded like the K/V heads.
    """
    src = Source.of(source)
    sc, arch, gpu, node = src.scenario, src.model, src.cluster.accelerator, src.cluster.node
    par = sc.parallel
    tp, pp, ep = par.tp, par.pp, par.ep
    b = src.point("batch_size")
    w = weight_elements(arch, tp, ep)
    wb = _weight_bytes(sc, arch)
    (
        peak_tflops, bandwidth_gbps, dec_flops, dec_bytes, fwd, per_token, kv_token, pre_flops,
        model_decode, model_prefill, max_concurrency,
    ) = src.numbers(INFERENCE_NUMBERS)  # fmt: skip
    peak = _or_zero(peak_tflops) * 1e12
    known_bandwidth = bandwidth_gbps is not None and (isinstance(bandwidth_gbps, np.ndarray) or bandwidth_gbps)
    bandwidth = (bandwidth_gbps if known_bandwidth else gpu.memory_bandwidth_gbps) * 1e9
    generates = dec_flops is not None and dec_bytes is not None
    s = _tokens_from(fwd, per_token, b, src.point("seq_len"))
    g = src.point("gen_len") if generates else 0
    # Routed experts the checkpoint stores in a format of their own (gpt-oss: MXFP4) are read at it.
    own = sc.expert_format(arch.moe.expert_weight_format if arch.moe is not None else None)
    ewb = weight_bits(own) / 8.0 if own is not None else 0.0
    gguf = _gguf_preset(sc)
    if gguf is not None:
        from workbench.core.gguf import preset_bytes  # GGUF scenarios only: its tables load on first use
        ewb = preset_bytes(arch, gguf).per_param("expert")
    experts = w.experts * (ewb or wb) / pp
    decode_weights = w.decode_dense * wb / pp + experts * touched_fraction(w, b, ep)

    mm_decode = 2.0 * matmul_elements_per_token(w, decode=True) / pp
    mm_prompt = 2.0 * (s * (matmul_elements_per_token(w, decode=False) - w.head) + w.head) / pp
    dec_seq_flops = _or_zero(dec_flops) / b
    dec_seq_bytes = maximum(_or_zero(dec_bytes) - decode_weights, 0.0) / b
    kv_token = _or_zero(kv_token)
    kv_split = 1 if arch.mla is not None else min(tp, arch.num_kv_heads)
    context = s + 0.5 * g
    kv_seq = minimum(kv_token * context / (kv_split * pp), dec_seq_bytes)
    pre_seq_flops = _or_zero(pre_flops) / b

    draft = sc.serving.speculative_draft_params
    active = float(src.params.active) or 1.0
    return InferenceInputs(
        peak_flops=peak,
        bandwidth=bandwidth,
        weight_bytes=wb,
        decode_kv_bytes=kv_seq,
        decode_attention_flops=maximum(dec_seq_flops - mm_decode, 0.0),
        prompt_attention_flops=maximum(pre_seq_flops - mm_prompt, 0.0),
        model_decode_flops_per_seq=_or_zero(model_decode) / b,
        model_prefill_flops_per_seq=_or_zero(model_prefill) / b,
        kv_bytes_per_token=kv_token,
        seq_len=s,
        gen_len=g,
        batch=b,
        tp=tp,
        pp=pp,
        dp=par.dp,
        ep=ep,
        num_gpus=src.cluster.num_gpus,
        generates=generates,
        continuous=sc.serving.continuous_batching,
        chunked=sc.serving.chunked_prefill,
        chunk_tokens=sc.serving.prefill_chunk_tokens,
        disaggregated=sc.serving.disaggregated,
        spec_tokens=sc.serving.speculative_tokens if draft else 0,
        spec_acceptance=sc.serving.speculative_acceptance,
        draft_weight_bytes=(draft or 0.0) * wb / (tp * pp),
        draft_flops_per_token=2.0 * (draft or 0.0) / (tp * pp),
        draft_bytes_per_seq=kv_seq * (draft or 0.0) / active,
        max_concurrency=max_concurrency,
        comm=comm_layout(src),
        expert_weight_bytes=ewb,
        transfer_link=_transfer_link(node),
        ops=stage_graph(arch, tp, ep, pp),
        profile=profile_for(gpu.id),
        compute_dtype=src.compute_dtype,
        act_bytes=max(sc.dtype.bytes, 2.0),
        eager=sc.attention is AttentionKernel.EAGER,
        vector_flops=_vector_flops(gpu),
        gemv_rows=GEMV_MAX_ROWS if gguf is not None else 0.0,
    )


def _vector_flops(gpu: Any) -> float:
    """The accelerator's non-tensor FP32 FLOP/s (the datasheet's FP32 column), 0 if unlisted."""
    fp32 = (getattr(gpu, "dense_tflops", None) or {}).get("fp32")
    return float(fp32) * 1e12 if fp32 else 0.0


_STAGE_GRAPHS: dict[tuple[int, int, int, int], tuple[object, GraphArrays]] = {}


def stage_graph(arch: ModelArchitecture, tp: int, ep: int, pp: int) -> GraphArrays:
    """The kernels of one pipeline stage's forward pass (cached per model and layout)."""
    key = (id(arch), tp, ep, pp)
    hit = _STAGE_GRAPHS.get(key)
    if hit is not None and hit[0] is arch:
        return hit[1]
    arrays = graph_arrays(forward_graph(arch, tp, ep), pp)
    if len(_STAGE_GRAPHS) > 512:
        _STAGE_GRAPHS.clear()
    _STAGE_GRAPHS[key] = (arch, arrays)
    return arrays


def _tokens_per_sequence(src: Source) -> int:
    """Tokens one sample carries: seq_len, or the patch count of a vision model."""
    sc = src.scenario
    return _tokens_from(src.number("flops.forward"), src.number("flops.per_token_forward"), sc.batch_size, sc.seq_len)


def _tokens_from(fwd: Any, per_token: Any, batch: Any, seq_len: Any) -> Any:
    """Tokens per sequence the compute plugin counted (images included): forward FLOPs / FLOPs
    per token / batch, rounded; ``seq_len`` when they are unknown. Arrays over a point group too."""
    if fwd is None or per_token is None:
        return seq_len
    if isinstance(fwd, np.ndarray) or isinstance(per_token, np.ndarray) or isinstance(batch, np.ndarray):
        known = (np.asarray(fwd) != 0) & (np.asarray(per_token) != 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            counted = np.maximum(np.rint(fwd / per_token / batch), 1)
        return np.where(known, counted, seq_len).astype(np.int64)
    if fwd and per_token:
        return max(round(fwd / per_token / batch), 1)
    return seq_len


def _or_zero(value: Any) -> Any:
    return 0.0 if value is None else value


#: What :func:`training_inputs` reads from the estimate, in one :meth:`Source.numbers` call.
TRAINING_NUMBERS = (
    "flops.forward",
    "flops.per_token_forward",
    "flops.backward",
    "flops.recompute",
    "roofline.peak_tflops",
    "roofline.bandwidth_gbps",
)
#: What :func:`inference_inputs` reads from the estimate (one :meth:`Source.numbers` call; a point group reads them once).
INFERENCE_NUMBERS = (
    "roofline.peak_tflops",
    "roofline.bandwidth_gbps",
    "roofline.decode.flops",
    "roofline.decode.bytes",
    "flops.forward",
    "flops.per_token_forward",
    "kv_cache.bytes_per_token",
    "roofline.prefill.flops",
    "flops.decode_step",
    "flops.prefill",
    "kv_cache.max_concurrency",
)


def trainable_per_gpu(src: Source) -> float:
    sc, arch, params = src.scenario, src.model, src.params
    par = sc.parallel
    split = par.tp * par.pp
    if sc.workload is Workload.FINETUNE and sc.method is not FinetuneMethod.FULL:
        return lora_parameters(arch, sc.lora_rank, sc.lora_targets == "attention") / split
    experts = float(params.breakdown.get("experts", 0))
    return (params.total - experts) / split + experts / (split * par.ep)


def training_inputs(source: Any) -> TrainingInputs:
    """Training-step model inputs of a scenario (an EstimateContext or an Estimate) or of a point
    group (a :class:`PointSource`: the micro-batch, the sequence length and the FLOPs per point).

    A micro-batch of ``b`` sequences of ``s`` tokens; ``global batch // (b x DP)`` micro-batches
    per optimizer step (1 without a global batch).
    """
    src = Source.of(source)
    sc, gpu = src.scenario, src.cluster.accelerator
    par = sc.parallel
    split = par.tp * par.pp
    fwd, per_token, bwd, rec, peak_tflops, bandwidth_gbps = src.numbers(TRAINING_NUMBERS)
    b = src.point("batch_size")
    seq = _tokens_from(fwd, per_token, b, src.point("seq_len"))
    tokens_mb = as_float(seq * b)
    fwd, bwd, rec = _or_zero(fwd), _or_zero(bwd), _or_zero(rec)
    global_batch = sc.global_batch_size
    m = 1 if global_batch is None else global_batch // (b * par.dp)  # Scenario.grad_accumulation_steps
    trainable = trainable_per_gpu(src)
    shard = trainable / par.dp if par.zero_stage >= 1 else trainable
    grad_el = sc.dtype.bytes
    offload = par.offload_optimizer is not Offload.NONE
    interleaved = par.pipeline_schedule is PipelineSchedule.INTERLEAVED
    known_bandwidth = bandwidth_gbps is not None and (isinstance(bandwidth_gbps, np.ndarray) or bandwidth_gbps)
    return TrainingInputs(
        peak_flops=_or_zero(peak_tflops) * 1e12,
        bandwidth=(bandwidth_gbps if known_bandwidth else gpu.memory_bandwidth_gbps) * 1e9,
        fwd_flops=fwd / split,
        bwd_flops=bwd / split,
        recompute_flops=rec / split,
        model_flops_step=(fwd + bwd) * m * par.dp,
        hardware_flops_step=(fwd + bwd + rec) * m * par.dp,
        tokens_mb=tokens_mb,
        tokens_step=tokens_mb * m * par.dp,
        microbatches=m,
        pp=par.pp,
        virtual_stages=par.virtual_stages if interleaved else 1,
        world=par.world_size,
        tp_passes=3.0 if sc.recompute is Recompute.FULL else 2.0,
        grad_bytes=trainable * grad_el,
        zero_stage=par.zero_stage,
        optimizer_bytes=0.0 if offload else shard * OPTIMIZER_BYTES[sc.optimizer.value],
        offload_bytes=shard * (grad_el + 2.0) if offload else 0.0,
        pcie_gbps=PCIE_GBPS.get(gpu.pcie_gen or 4, 32.0),
        mfu=sc.mfu,
        comm=comm_layout(src),
        ops=stage_graph(src.model, par.tp, par.ep, par.pp),
        profile=profile_for(gpu.id),
        compute_dtype=src.compute_dtype,
        act_bytes=max(sc.dtype.bytes, 2.0),
        seq_len=seq,
        ep=par.ep,
        weight_bytes=_weight_bytes(sc, src.model),
        sequences=b,
        eager=sc.attention is AttentionKernel.EAGER,
    )
