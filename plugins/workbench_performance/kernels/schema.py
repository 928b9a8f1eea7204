"""Row models of the kernel-efficiency files in ``workbench_performance/data/kernels/``.

Every row is one published kernel-level measurement, copied as printed (never interpolated) and
tied to the text it came from: ``source`` names an entry of the file's ``sources`` table (the
exact citation: repository@commit:path, or paper and table / figure), ``where`` says which
table row or chart bar, and ``quote`` is the printed text (or, for a chart, the transcribed bar
labels) that holds the number. Numbers are positive and finite; shapes are whole numbers.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workbench.core.dtypes import DType

# NaN passes every range check, so it is refused outright (as in workbench.core.hardware).
_ROW = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

Positive = Field(gt=0)

#: How a row's figure was read: from printed text or a table, or from a chart's bar labels.
ReadFrom = Literal["text", "table", "chart-label"]
#: Attention kernel families with rows; the cost model picks one per software stack.
AttentionFamily = Literal[
    "fa2", "fa3", "cudnn", "triton", "flashmla", "flashinfer", "ck", "aiter", "hipkittens", "flydsl"
]
#: prefill = many query tokens per sequence (training forward too); decode = one or a few.
Phase = Literal["prefill", "decode"]
#: Which passes the figure covers; FLOPs of fwd+bwd are counted as 3.5x (causal 3.5/2) forward by
#: the FlashAttention papers, which is what their TFLOPS figures divide by.
AttentionPass = Literal["fwd", "bwd", "fwd_bwd"]
LinkKind = Literal["nvlink", "nvswitch", "pcie", "xgmi", "ib", "roce", "efa"]
Collective = Literal[
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "moe_dispatch",
    "moe_combine",
    "send_recv",
]
MemoryKind = Literal["copy", "read", "write", "triad"]
#: host_enqueue = CPU time of one asynchronous launch call; launch_throughput = time per kernel of
#: back-to-back launches of empty kernels (one sync at the end); graph_replay_per_kernel = added
#: time per kernel node of a replayed CUDA graph; graph_launch_fixed = a graph replay's fixed cost.
LaunchKind = Literal["host_enqueue", "launch_throughput", "graph_replay_per_kernel", "graph_launch_fixed"]


class Source(BaseModel):
    """One document the rows of a file cite."""

    model_config = _ROW

    cite: str = Field(min_length=8, description="Exact citation: owner/repo@commit:path, or paper + table.")
    title: str = Field(min_length=1)
    url: str | None = None
    retrieved: dt.date = Field(description="Date the numbers were read from the document.")
    note: str | None = Field(None, description="Test setup as the document states it, and caveats.")


class Row(BaseModel):
    """What every measurement row carries besides its own figures."""

    model_config = _ROW

    arch: str = Field(min_length=1, description="Architecture id from architectures.yaml.")
    gpu: str | None = Field(
        None,
        min_length=1,
        description="Catalog or off-catalog accelerator id; null where the source names no variant.",
    )
    source: str = Field(min_length=1, description="Key of the file's `sources` table.")
    where: str = Field(min_length=1, description="Table row or chart bar the figure was read from.")
    quote: str = Field(min_length=1, description="The printed text (or transcribed labels) holding it.")
    read_from: ReadFrom = "table"
    note: str | None = None


class GemmPoint(Row):
    """A GEMM of shape (m x k) @ (k x n); a grouped GEMM runs `groups` of them, `m` rows each."""

    dtype: DType
    library: str = Field(min_length=1, description="deepgemm, cublas, hipblaslt, cutlass, ...")
    m: int = Field(gt=0, description="Rows of the left operand (tokens); per group when grouped.")
    n: int = Field(gt=0)
    k: int = Field(gt=0)
    grouped: bool = False
    groups: int = Field(1, gt=0)
    layout: Literal["dense", "contiguous", "masked"] = "dense"
    tflops: float = Positive
    gbps: float | None = Field(None, gt=0, description="Memory traffic rate the source printed beside it.")
    best_shape: bool = Field(
        False,
        description="The shape is the fastest a shape search found (an upper envelope, not a typical shape).",
    )
    source_peak_tflops: float | None = Field(
        None, gt=0, description="The theoretical peak the source divided by, where it printed one."
    )

    @model_validator(mode="after")
    def _groups_match(self) -> GemmPoint:
        if self.grouped == (self.layout == "dense") or (not self.grouped and self.groups != 1):
            raise ValueError("a grouped GEMM has layout contiguous or masked; a plain one has 1 group")
        return self


class AttentionPoint(Row):
    """An attention kernel at one shape; shape fields are null where the source gives none."""

    family: AttentionFamily
    phase: Phase
    passes: AttentionPass = "fwd"
    dtype: DType
    causal: bool | None = None
    head_dim: int | None = Field(None, gt=0, description="Query/key head size (576 for MLA's MQA mode).")
    seqlen: int | None = Field(None, gt=0, description="Key length (context) per sequence.")
    batch: int | None = Field(None, gt=0)
    heads: int | None = Field(None, gt=0, description="Query heads.")
    kv_heads: int | None = Field(
        None, gt=0, description="Key/value heads where fewer than query heads (GQA)."
    )
    peak_claim: bool = Field(False, description="An 'up to' figure with no shape given.")
    tflops: float | None = Field(None, gt=0)
    gbps: float | None = Field(None, gt=0, description="Achieved memory bandwidth (decode kernels).")

    @model_validator(mode="after")
    def _has_figure(self) -> AttentionPoint:
        if self.tflops is None and self.gbps is None:
            raise ValueError("an attention row needs tflops or gbps")
        return self


class MemoryPoint(Row):
    """Achieved device-memory bandwidth of a copy / read / stream kernel."""

    kind: MemoryKind
    gbps: float = Positive
    bytes: int | None = Field(None, gt=0, description="Buffer size, where given.")
    tool: str = Field(min_length=1, description="The benchmark program (nvbandwidth, babelstream, ...).")


class CollectivePoint(Row):
    """A collective's achieved bandwidth and/or latency at one size and rank count."""

    collective: Collective
    library: str = Field(min_length=1, description="nccl, rccl, deepep-normal, deepep-low-latency, ...")
    link: LinkKind
    ranks: int = Field(gt=1)
    ranks_per_node: int | None = Field(None, gt=0)
    message_bytes: int | None = Field(None, gt=0)
    tokens: int | None = Field(None, gt=0, description="Tokens per rank (MoE dispatch/combine rows).")
    hidden: int | None = Field(None, gt=0)
    busbw_gbps: float | None = Field(
        None, gt=0, description="nccl-tests bus bandwidth (or DeepEP's bottleneck bandwidth)."
    )
    algbw_gbps: float | None = Field(None, gt=0)
    latency_us: float | None = Field(None, gt=0)
    algorithm: str | None = Field(None, description="Algorithm where the source names it (ring, nvls, tree).")

    @model_validator(mode="after")
    def _has_figure(self) -> CollectivePoint:
        if self.busbw_gbps is None and self.algbw_gbps is None and self.latency_us is None:
            raise ValueError("a collective row needs busbw_gbps, algbw_gbps or latency_us")
        return self


class LaunchPoint(Row):
    """Fixed cost per kernel on the host/device path."""

    kind: LaunchKind
    latency_us: float = Positive
    tool: str = Field(min_length=1)


class Architecture(BaseModel):
    """A GPU architecture and the accelerator ids built on it."""

    model_config = _ROW

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9\-]*$")
    name: str = Field(min_length=1)
    vendor: str = Field(min_length=1)
    gpus: tuple[str, ...] = Field(min_length=1, description="Catalog accelerator ids.")
    off_catalog: tuple[str, ...] = Field(
        (), description="Ids of parts sources measure that the catalog lacks."
    )
