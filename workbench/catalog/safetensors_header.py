"""Count a checkpoint's parameters from ``*.safetensors`` headers, never reading tensor data.

A safetensors file starts with an 8-byte little-endian header length, then that many bytes of
JSON mapping each tensor name to ``{"dtype", "shape", "data_offsets"}`` (offsets relative to the
end of the header), then the raw data. Reading the header alone gives the exact number of
stored values per dtype. Pure Python: neither ``safetensors`` nor torch is needed at runtime.

A sharded checkpoint has ``model.safetensors.index.json`` (``metadata.total_size`` in bytes and a
``weight_map`` from tensor name to shard file). When the shards are present their headers give
the exact count; with the index alone only the byte size is known.

Counts are of *stored* values: tied weights stored once count once, persistent buffers saved
with the weights count, and quantized checkpoints count their packed elements and scales as they
are stored (an FP8 checkpoint's ``weight_scale_inv`` tensors included).
"""

from __future__ import annotations

import itertools
import math
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.catalog.safe_read import (
    inside_folder,
    load_json_object,
    open_regular,
    parse_json,
    read_at_most,
)
from workbench.core.errors import ModelImportError

#: Largest header we accept (the safetensors reference implementation's own limit).
MAX_HEADER_BYTES = 100 * 1024 * 1024
INDEX_NAME = "model.safetensors.index.json"
#: Largest index read (those of the biggest public checkpoints are a few MB).
MAX_INDEX_BYTES = 64 * 1024 * 1024
#: Most shard files one index may name (the largest public checkpoints have a few hundred).
MAX_SHARDS = 10_000
#: Most dimensions of one tensor (real ones have at most 5 or 6).
MAX_DIMS = 64

#: Bits per element of each safetensors dtype.
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32,
    "I64": 64, "U64": 64, "F64": 64, "C64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}


@dataclass(frozen=True)
class CheckpointCount:
    """Stored values of one safetensors file or a folder of shards."""

    total: int | None
    """Exact number of stored values (None when only an index without its shards was found)."""
    by_dtype: dict[str, int] = field(default_factory=dict)
    tensors: int = 0
    data_bytes: int = 0
    files: tuple[Path, ...] = ()
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        return self.total is not None


def read_header(path: str | Path) -> dict[str, Any]:
    """The parsed JSON header of a ``.safetensors`` file (only the header bytes are read)."""
    p = Path(path)
    fd, size = open_regular(p, "safetensors file")
    try:
        prefix = read_at_most(fd, 8)
        if len(prefix) < 8:
            raise ModelImportError(f"{p}: not a safetensors file (only {len(prefix)} bytes)")
        (length,) = struct.unpack("<Q", prefix)
        if length > MAX_HEADER_BYTES:
            raise ModelImportError(
                f"{p}: header length {length:,} bytes exceeds the {MAX_HEADER_BYTES:,}-byte limit "
                "(not a safetensors file?)"
            )
        if length > size - 8:
            raise ModelImportError(
                f"{p}: header length {length:,} bytes is larger than the file ({size:,} bytes): "
                "truncated or not a safetensors file"
            )
        raw = read_at_most(fd, length)
    except OSError as exc:
        raise ModelImportError(f"{p}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(raw) < length:
        raise ModelImportError(f"{p}: the file ended inside its header (it shrank while being read)")
    header = parse_json(raw, f"{p}: the safetensors header")
    if not isinstance(header, dict):
        raise ModelImportError(f"{p}: the safetensors header is not a JSON object")
    _check_entries(p, header, data_size=size - 8 - length)
    return header


def _check_entries(path: Path, header: dict[str, Any], data_size: int) -> None:
    spans: list[tuple[int, int, str]] = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        where = f"{path}: tensor {name!r}"
        if not isinstance(entry, dict):
            raise ModelImportError(f"{where}: entry is not an object")
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if not isinstance(dtype, str):
            raise ModelImportError(f"{where}: 'dtype' missing")
        if not isinstance(shape, list) or not all(_count_like(d) for d in shape):
            raise ModelImportError(f"{where}: 'shape' must be a list of non-negative integers")
        if len(shape) > MAX_DIMS:
            raise ModelImportError(f"{where}: {len(shape):,} dimensions (at most {MAX_DIMS})")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(_count_like(o) for o in offsets):
            raise ModelImportError(f"{where}: 'data_offsets' must be [begin, end], non-negative integers")
        if offsets[0] > offsets[1]:
            raise ModelImportError(
                f"{where}: 'data_offsets' begin {offsets[0]:,} is after end {offsets[1]:,}"
            )
        if offsets[1] > data_size:
            raise ModelImportError(
                f"{where}: data ends at byte {offsets[1]:,} but the file holds {data_size:,} data bytes "
                "(truncated file)"
            )
        bits = DTYPE_BITS.get(dtype)
        if bits is not None and offsets[1] - offsets[0] != math.ceil(math.prod(shape) * bits / 8):
            raise ModelImportError(
                f"{where}: {offsets[1] - offsets[0]:,} bytes do not hold a {dtype} tensor of shape {shape}"
            )
        spans.append((offsets[0], offsets[1], name))
    spans.sort()
    for (_, end, before), (begin, _, after) in itertools.pairwise(spans):
        if begin < end:
            raise ModelImportError(f"{path}: tensors {before!r} and {after!r} overlap in the data")


def _count_like(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def count_file(path: str | Path) -> CheckpointCount:
    """Exact stored values of one ``.safetensors`` file, in total and per dtype."""
    return _count(Path(path))[0]


def _count(p: Path) -> tuple[CheckpointCount, set[str]]:
    header = read_header(p)
    metadata = header.get("__metadata__") or {}
    by_dtype: dict[str, int] = {}
    tensors = data_bytes = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        n = math.prod(entry["shape"])
        by_dtype[entry["dtype"]] = by_dtype.get(entry["dtype"], 0) + n
        data_bytes += entry["data_offsets"][1] - entry["data_offsets"][0]
        tensors += 1
    count = CheckpointCount(
        total=sum(by_dtype.values()),
        by_dtype=by_dtype,
        tensors=tensors,
        data_bytes=data_bytes,
        files=(p,),
        metadata={str(k): str(v) for k, v in metadata.items()} if isinstance(metadata, dict) else {},
    )
    return count, set(header) - {"__metadata__"}


def find_safetensors(folder: str | Path) -> list[Path]:
    """The ``*.safetensors`` files directly in ``folder``, sorted."""
    return sorted(p for p in Path(folder).glob("*.safetensors") if p.is_file())


def read_index(path: str | Path) -> tuple[int | None, dict[str, str]]:
    """``(metadata.total_size, weight_map)`` of a ``model.safetensors.index.json``."""
    p = Path(path)
    data = load_json_object(p, MAX_INDEX_BYTES, "safetensors index")
    if not isinstance(data, dict):
        raise ModelImportError(f"{p}: the index must be a JSON object")
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        raise ModelImportError(f"{p}: 'weight_map' must map tensor names to shard file names")
    metadata = data.get("metadata") or {}
    total_size = metadata.get("total_size") if isinstance(metadata, dict) else None
    if total_size is not None and (isinstance(total_size, bool) or not isinstance(total_size, int | float)):
        raise ModelImportError(f"{p}: 'metadata.total_size' must be a number of bytes")
    return (int(total_size) if total_size is not None else None), weight_map


def _merge(counts: list[CheckpointCount]) -> CheckpointCount:
    by_dtype: dict[str, int] = {}
    for c in counts:
        for dtype, n in c.by_dtype.items():
            by_dtype[dtype] = by_dtype.get(dtype, 0) + n
    return CheckpointCount(
        total=sum(c.total or 0 for c in counts),
        by_dtype=by_dtype,
        tensors=sum(c.tensors for c in counts),
        data_bytes=sum(c.data_bytes for c in counts),
        files=tuple(f for c in counts for f in c.files),
    )


def read_safetensors_folder(folder: str | Path) -> CheckpointCount:
    """Count a model folder's weights: its index and shards, or every ``*.safetensors`` in it.

    With an index whose shards are all present, each listed tensor must appear in its shard and
    the count is exact. With the index alone, ``total`` is None and ``data_bytes`` is
    ``metadata.total_size``.
    """
    root = Path(folder)
    if root.is_file():
        return count_file(root)
    index = inside_folder(root, INDEX_NAME, str(root))
    if index.is_file():
        total_size, weight_map = read_index(index)
        shard_names = sorted(set(weight_map.values()))
        if len(shard_names) > MAX_SHARDS:
            raise ModelImportError(f"{index}: names {len(shard_names):,} shard files (at most {MAX_SHARDS:,})")
        # Every name is checked before any is looked at: nothing outside the folder is stat-ed.
        shard_paths = [inside_folder(root, s, f"{index}: shard") for s in shard_names]
        present = [s for s in shard_paths if s.is_file()]
        if len(present) < len(shard_names):
            missing = len(shard_names) - len(present)
            if present:
                raise ModelImportError(
                    f"{index}: {missing} of {len(shard_names)} shards are missing from {root}"
                )
            return CheckpointCount(
                total=None, tensors=len(weight_map), data_bytes=total_size or 0, files=(index,)
            )
        counts = []
        for name, shard in zip(shard_names, shard_paths, strict=True):
            if shard not in present:
                continue
            count, names = _count(shard)
            counts.append(count)
            listed = {k for k, v in weight_map.items() if v == name}
            absent = sorted(listed - names)
            if absent:
                raise ModelImportError(f"{index}: tensor {absent[0]!r} is not in shard {name!r}")
        return _merge(counts)
    shards = find_safetensors(root)
    if not shards:
        raise ModelImportError(f"{root}: no *.safetensors files and no {INDEX_NAME}")
    return _merge([count_file(inside_folder(root, p.name, f"{root}: file")) for p in shards])


def read_checkpoint(path: str | Path) -> CheckpointCount | None:
    """Exact count of a ``.safetensors`` file or of a folder's shards; None when there are none.

    A folder whose index lists shards that are all absent also gives None (nothing to count);
    use :func:`read_safetensors_folder` to get the index's byte size in that case.
    """
    p = Path(path)
    if p.is_file():
        return count_file(p)
    if not find_safetensors(p):
        return None
    return read_safetensors_folder(p)
