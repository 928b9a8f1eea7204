"""Published kernel-level efficiency data: loader and lookups for the per-operator speed model.

The data are YAML files shipped in ``workbench_performance/data/kernels/`` (their README says
what each holds and which (architecture, kernel) cells have no source). Every row is a number a
vendor, library or paper printed for ONE kernel (a GEMM shape, an attention kernel at a context
length, a copy kernel, a collective at a message size, a kernel launch), with its exact source
and the quoted text. End-to-end MFU never enters these files (issue 15, item 7).

Lookup API (what the cost model reads; all return tuples of frozen pydantic rows, in file
order unless stated, and never interpolate)::

    data = load_kernel_data()             # cached; raises KernelDataError on a bad file
    arch_of("h100-sxm")                   # -> "hopper"; None for an id no architecture lists
    gemm_points("hopper", "fp8")          # GemmPoint rows, sorted by (grouped, m, n, k)
    gemm_points("hopper", "fp8", grouped=True)
    attention_points("hopper", "fa3", "prefill")   # AttentionPoint rows (family/phase optional)
    memory_points("h100-pcie")            # MemoryPoint rows of one accelerator
    memory_points(arch="ampere")          # ... or of an architecture (incl. rows with gpu None)
    achieved_bandwidth("h100-sxm")        # highest achieved GB/s of any row for it, else None
    collective_points("nvswitch", "all_reduce")    # CollectivePoint rows, sorted by size
    launch_overhead("hopper")             # LaunchPoint rows (kind optional)

Figures: ``tflops`` is achieved TFLOP/s as the source counted FLOPs (2*m*n*k per GEMM; the
FlashAttention papers' attention FLOPs); ``gbps`` and ``*_gbps`` are decimal GB/s; latencies are
microseconds. Flags the interpolating model must respect: ``GemmPoint.best_shape`` and
``AttentionPoint.peak_claim`` mark upper envelopes (the fastest shape of a search, or an "up to"
figure), not points on a curve; ``GemmPoint.source_peak_tflops`` is the peak the source itself
divided by; ``CollectivePoint.algorithm`` names ring / nvls where the source did (NVLS bus
bandwidth exceeds the link rate by design); ``AttentionPoint.kv_heads`` is set for GQA shapes. A row's ``gpu`` is a catalog id, or an id in its architecture's ``off_catalog``
list (e.g. ``h800-sxm``, which the catalog lacks: same SMs, clocks and HBM as the H100 SXM, with
NVLink cut to 400 GB/s). The efficiency of a row is its figure divided by the catalog's peak for
that GPU and dtype; that division is the cost model's job, not this module's.

Architecture ids come from ``architectures.yaml``: the accelerator catalog has no
architecture field, so that file maps every catalog accelerator id to one architecture (a test
checks it covers the whole catalog and names no unknown id).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from workbench.core.dtypes import DType
from workbench.core.errors import WorkbenchError, describe_validation_error
from workbench.core.yaml_cache import load_yaml
from workbench_performance.kernels.schema import (
    Architecture,
    AttentionPoint,
    CollectivePoint,
    GemmPoint,
    LaunchPoint,
    MemoryPoint,
    Row,
    Source,
)

ARCHITECTURES_FILE = "architectures.yaml"
#: file name -> row model; each file has a `sources` table and a `points` list.
POINT_FILES: dict[str, type[Row]] = {
    "gemm.yaml": GemmPoint,
    "attention.yaml": AttentionPoint,
    "memory.yaml": MemoryPoint,
    "collectives.yaml": CollectivePoint,
    "launch.yaml": LaunchPoint,
}

_R = TypeVar("_R", bound=Row)


class KernelDataError(WorkbenchError):
    """A kernel-data file is malformed or refers to an unknown architecture, GPU or source."""


@dataclass(frozen=True)
class KernelData:
    """All kernel files, validated."""

    architectures: dict[str, Architecture]
    sources: dict[str, dict[str, Source]]  # file name -> source key -> source
    gemm: tuple[GemmPoint, ...]
    attention: tuple[AttentionPoint, ...]
    memory: tuple[MemoryPoint, ...]
    collectives: tuple[CollectivePoint, ...]
    launch: tuple[LaunchPoint, ...]

    def rows(self) -> Iterable[tuple[str, Row]]:
        """(file name, row) for every measurement row of every file."""
        for name, rows in zip(
            POINT_FILES, (self.gemm, self.attention, self.memory, self.collectives, self.launch)
        ):
            for row in rows:
                yield name, row

    def arch_of(self, gpu: str) -> str | None:
        key = gpu.strip().lower()
        for arch in self.architectures.values():
            if key in arch.gpus or key in arch.off_catalog:
                return arch.id
        return None


def data_dir() -> Path:
    """The shipped kernel-data folder (inside the installed plugin package)."""
    return Path(str(resources.files("workbench_performance") / "data" / "kernels"))


@functools.cache
def load_kernel_data() -> KernelData:
    """The shipped kernel data, read and validated once per process."""
    return read_kernel_data(data_dir())


def read_kernel_data(folder: Path | str) -> KernelData:
    """Read and validate every kernel-data file in ``folder`` (uncached; for tests and tools)."""
    folder = Path(folder)
    architectures = _read_architectures(folder / ARCHITECTURES_FILE)
    sources: dict[str, dict[str, Source]] = {}
    tables: dict[str, tuple[Row, ...]] = {}
    for name, model in POINT_FILES.items():
        sources[name], tables[name] = _read_points(folder / name, model, architectures)
    return KernelData(
        architectures=architectures,
        sources=sources,
        gemm=tables["gemm.yaml"],  # type: ignore[arg-type]
        attention=tables["attention.yaml"],  # type: ignore[arg-type]
        memory=tables["memory.yaml"],  # type: ignore[arg-type]
        collectives=tables["collectives.yaml"],  # type: ignore[arg-type]
        launch=tables["launch.yaml"],  # type: ignore[arg-type]
    )


# --- lookups (shipped data) ----------------------------------------------------------------------


def arch_of(gpu: str) -> str | None:
    """Architecture id of a catalog (or off-catalog) accelerator id; None if none lists it."""
    return load_kernel_data().arch_of(gpu)


def gemm_points(arch: str, dtype: DType | str, *, grouped: bool | None = None) -> tuple[GemmPoint, ...]:
    """GEMM rows of one architecture and dtype (plain, grouped, or both when None)."""
    want = DType(dtype)
    rows = [
        r
        for r in load_kernel_data().gemm
        if r.arch == arch and r.dtype is want and (grouped is None or r.grouped == grouped)
    ]
    return tuple(sorted(rows, key=lambda r: (r.grouped, r.m, r.n, r.k)))


def attention_points(
    arch: str, family: str | None = None, phase: str | None = None
) -> tuple[AttentionPoint, ...]:
    """Attention rows of one architecture, optionally one kernel family and phase."""
    return tuple(
        r
        for r in load_kernel_data().attention
        if r.arch == arch and (family is None or r.family == family) and (phase is None or r.phase == phase)
    )


def memory_points(gpu: str | None = None, *, arch: str | None = None) -> tuple[MemoryPoint, ...]:
    """Achieved-bandwidth rows of one accelerator and/or architecture (rows whose source names no
    variant have ``gpu`` None and are found by ``arch`` only)."""
    key = gpu.strip().lower() if gpu is not None else None
    return tuple(
        r
        for r in load_kernel_data().memory
        if (key is None or r.gpu == key) and (arch is None or r.arch == arch)
    )


def achieved_bandwidth(gpu: str) -> float | None:
    """Highest device-memory bandwidth (GB/s) any row measured on ``gpu``; None without a row."""
    rows = memory_points(gpu)
    return max(r.gbps for r in rows) if rows else None


def collective_points(
    link: str, collective: str | None = None, *, arch: str | None = None
) -> tuple[CollectivePoint, ...]:
    """Collective rows over one link kind, sorted by (collective, ranks, message size)."""
    rows = [
        r
        for r in load_kernel_data().collectives
        if r.link == link
        and (collective is None or r.collective == collective)
        and (arch is None or r.arch == arch)
    ]
    return tuple(sorted(rows, key=lambda r: (r.collective, r.ranks, r.message_bytes or 0, r.tokens or 0)))


def launch_overhead(arch: str | None = None, kind: str | None = None) -> tuple[LaunchPoint, ...]:
    """Per-kernel launch / graph-replay rows, optionally of one architecture and kind."""
    return tuple(
        r
        for r in load_kernel_data().launch
        if (arch is None or r.arch == arch) and (kind is None or r.kind == kind)
    )


# --- reading -------------------------------------------------------------------------------------


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        doc = load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise KernelDataError(f"{path.name}: cannot be read ({exc.strerror or exc})") from exc
    except yaml.YAMLError as exc:
        raise KernelDataError(f"{path.name}: not valid YAML ({exc})".replace("\n", " ")) from exc
    if not isinstance(doc, dict):
        raise KernelDataError(f"{path.name}: expected a mapping at the top")
    return doc


def _validated(model: type[BaseModel], raw: Any, context: str) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise KernelDataError(describe_validation_error(exc, context)) from exc


def _read_architectures(path: Path) -> dict[str, Architecture]:
    raw = _read_yaml(path).get("architectures")
    if not isinstance(raw, list) or not raw:
        raise KernelDataError(f"{path.name}: `architectures` must be a non-empty list")
    archs: dict[str, Architecture] = {}
    owner: dict[str, str] = {}
    for i, item in enumerate(raw):
        arch = _validated(Architecture, item, f"{path.name}: architectures[{i}]")
        if arch.id in archs:
            raise KernelDataError(f"{path.name}: architecture {arch.id!r} is listed twice")
        for gpu in (*arch.gpus, *arch.off_catalog):
            if gpu in owner:
                raise KernelDataError(f"{path.name}: {gpu!r} is listed under both {owner[gpu]} and {arch.id}")
            owner[gpu] = arch.id
        archs[arch.id] = arch
    return archs


def _read_points(
    path: Path, model: type[_R], architectures: dict[str, Architecture]
) -> tuple[dict[str, Source], tuple[_R, ...]]:
    doc = _read_yaml(path)
    raw_sources, raw_points = doc.get("sources"), doc.get("points")
    if not isinstance(raw_sources, dict):
        raise KernelDataError(f"{path.name}: `sources` must be a mapping")
    if not isinstance(raw_points, list):
        raise KernelDataError(f"{path.name}: `points` must be a list")
    sources = {str(k): _validated(Source, v, f"{path.name}: sources.{k}") for k, v in raw_sources.items()}
    rows: list[_R] = []
    for i, item in enumerate(raw_points):
        context = f"{path.name}: points[{i}]"
        row = _validated(model, item, context)
        _check_refs(row, context, architectures, sources)
        rows.append(row)
    unused = sorted(set(sources) - {r.source for r in rows})
    if unused:
        raise KernelDataError(f"{path.name}: sources {', '.join(unused)} are cited by no row")
    return sources, tuple(rows)


def _check_refs(
    row: Row, context: str, architectures: dict[str, Architecture], sources: dict[str, Source]
) -> None:
    arch = architectures.get(row.arch)
    if arch is None:
        raise KernelDataError(
            f"{context}: unknown architecture {row.arch!r} (known: {', '.join(architectures)})"
        )
    if row.gpu is not None and row.gpu not in arch.gpus and row.gpu not in arch.off_catalog:
        raise KernelDataError(
            f"{context}: {row.gpu!r} is not a {arch.id} accelerator in {ARCHITECTURES_FILE}"
        )
    if row.source not in sources:
        raise KernelDataError(f"{context}: source {row.source!r} is not in the file's `sources`")
