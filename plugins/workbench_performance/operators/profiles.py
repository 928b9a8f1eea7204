"""Kernel efficiency profiles: how close each GPU architecture's kernels come to its datasheet.

A profile holds the parameters of the per-kernel cost model (:mod:`.cost`) for one GPU
architecture: the fraction of the dense peak large GEMMs reach per dtype, the M-tile that
small-row GEMMs are padded to, the thin-matrix half widths, the achieved copy bandwidth, the
minimum duration of a kernel, the attention kernels' efficiency and the number of memory-bound
kernels per layer. The values are kernel-level measurements published by others (vendor GEMM
and attention benchmarks, microbenchmarks), read in ``profiles.yaml`` with the source of every
figure; none is fitted to end-to-end training or serving results.

An accelerator without a profile of its own gets the ``generic`` one, and every estimate that
uses it says so (``performance`` warning ``generic-kernel-profile``): a number without data
behind it is never presented as one with.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workbench.core.yaml_cache import load_yaml

_FRACTION = dict(gt=0.0, le=1.0)


class KernelProfile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    title: str
    gpus: tuple[str, ...] = ()
    gemm_efficiency: dict[str, float] = Field(description="Fraction of the dense peak of large GEMMs, per dtype.")
    tile_m: float = Field(gt=0, description="Rows of the M-tile small-row GEMMs are padded to.")
    gpu_gemm_efficiency: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="Accelerators with GEMM measurements of their own: their efficiencies."
    )
    gemm_half_m: float = Field(ge=0, description="Rows per expert at which a grouped GEMM runs at half efficiency.")
    gemm_group_rows_min: float = Field(
        ge=1, description="Fewest rows per expert the grouped-GEMM data measured (the factor is held below it)."
    )
    gemm_half_k: dict[str, float] = Field(description="Per dtype: reduction width at which a thin GEMM runs at half efficiency.")
    gemm_half_n: dict[str, float] = Field(description="Per dtype: output width at which a thin GEMM runs at half efficiency.")
    bandwidth_efficiency: float = Field(**_FRACTION, description="Achieved fraction of peak memory bandwidth.")
    min_kernel_s: float = Field(ge=0, description="Shortest a kernel takes (launch and tail, CUDA graphs).")
    attention_efficiency: dict[str, float] = Field(description="Fraction of the dense peak of prefill attention, per dtype.")
    attention_half_seq: float = Field(ge=0, description="Keys per query at which attention runs at half its efficiency.")
    attention_backward_ratio: float = Field(
        gt=0, le=1.5, description="Backward attention efficiency as a share of the forward's."
    )
    elementwise_kernels_per_layer: float = Field(ge=0, description="Memory-bound kernels per layer (fused stacks: fewer).")
    sources: dict[str, str] = Field(description="Source of each figure, by field name.")
    partial: tuple[str, ...] = Field((), description="Fields without data of this architecture (pooled from others).")
    generic: bool = False

    @model_validator(mode="after")
    def _check(self) -> KernelProfile:
        for table in (self.gemm_efficiency, self.attention_efficiency):
            if "bf16" not in table:
                raise ValueError(f"profile {self.id}: a bf16 efficiency is needed")
            for dtype, value in table.items():
                if not 0.0 < value <= 1.0:
                    raise ValueError(f"profile {self.id}: efficiency {dtype}={value} outside (0, 1]")
        unsourced = [f for f in _SOURCED if f not in self.sources]
        if unsourced:
            raise ValueError(f"profile {self.id}: no source for {', '.join(unsourced)}")
        return self

    def gemm_efficiency_for(self, dtype: str) -> float:
        return _pick(self.gemm_efficiency, dtype)

    def attention_efficiency_for(self, dtype: str) -> float:
        return _pick(self.attention_efficiency, dtype)

    def half_widths(self, dtype: str) -> tuple[float, float]:
        """(K, N) half-widths of the thin-matrix factor for GEMMs in ``dtype``."""
        return _pick(self.gemm_half_k, dtype), _pick(self.gemm_half_n, dtype)


_SOURCED = (
    "gemm_efficiency",
    "tile_m",
    "gemm_half_m",
    "gemm_group_rows_min",
    "gemm_half_k",
    "gemm_half_n",
    "bandwidth_efficiency",
    "min_kernel_s",
    "attention_efficiency",
    "attention_half_seq",
    "attention_backward_ratio",
    "elementwise_kernels_per_layer",
)

#: dtypes that share a tensor-core path with one listed in a profile
_FALLBACK = {"fp16": "bf16", "fp32": "bf16", "tf32": "bf16", "int8": "fp8", "fp4": "fp8", "int4": "fp8", "fp6": "fp8"}


def _pick(table: dict[str, float], dtype: str) -> float:
    if dtype in table:
        return table[dtype]
    fallback = _FALLBACK.get(dtype, "bf16")
    return table.get(fallback, table["bf16"])


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: int
    description: str
    profiles: list[KernelProfile]


@lru_cache(maxsize=1)
def _profiles() -> tuple[dict[str, KernelProfile], KernelProfile]:
    text = resources.files("workbench_performance.operators").joinpath("profiles.yaml").read_text("utf-8")
    data = _File.model_validate(load_yaml(text))
    by_gpu: dict[str, KernelProfile] = {}
    generic = None
    for profile in data.profiles:
        if profile.generic:
            generic = profile
        for gpu in profile.gpus:
            if gpu in by_gpu:
                raise ValueError(f"profiles.yaml: {gpu} is in two profiles")
            by_gpu[gpu] = profile
    if generic is None:
        raise ValueError("profiles.yaml: no generic profile")
    return by_gpu, generic


@lru_cache(maxsize=256)
def profile_for(gpu_id: str) -> KernelProfile:
    """The kernel profile of an accelerator (catalog id); the generic one when it has none. An
    accelerator with GEMM measurements of its own gets them in place of its architecture's."""
    by_gpu, generic = _profiles()
    profile = by_gpu.get(gpu_id, generic)
    own = profile.gpu_gemm_efficiency.get(gpu_id)
    if own:
        profile = profile.model_copy(update={"gemm_efficiency": {**profile.gemm_efficiency, **own}})
    return profile


def all_profiles() -> tuple[KernelProfile, ...]:
    by_gpu, generic = _profiles()
    seen = {id(p): p for p in by_gpu.values()}
    return (*seen.values(), generic)
