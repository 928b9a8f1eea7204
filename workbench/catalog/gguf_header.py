"""Read a ``.gguf`` file's header (metadata and tensor table), never the weights.

GGUF v2/v3 (ggml-org/ggml@01f0d4da3e444ca2bfe705e72adab08a4394bb1d:docs/gguf.md): the magic
``GGUF``, a uint32 version, uint64 tensor and key-value counts, the key-value pairs (a string
key, a uint32 value type, the value; arrays carry their element type and count), then one
entry per tensor (name, uint32 dimension count, uint64 dimensions, uint32 ggml type, uint64
offset from the aligned start of the data). Little-endian.

The file comes from anywhere, so every read is bounded: only a regular file is opened; counts,
string lengths, array lengths and dimensions are checked against limits far above real models
before anything is allocated; the header may span at most :data:`MAX_HEADER_BYTES`; each
tensor's data must lie inside the file. A malformed, truncated or absurd file raises one
:class:`~workbench.core.errors.ModelImportError` naming the file. Large arrays (a tokenizer's
vocabulary) are stepped over, only their length kept.
"""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.catalog.safe_read import open_regular
from workbench.core import gguf
from workbench.core.errors import InputError, ModelImportError

MAGIC = b"GGUF"
VERSIONS = (2, 3)
#: The most header bytes read (real headers are a few MB, tokenizer included).
MAX_HEADER_BYTES = 64 * 1024 * 1024
MAX_KV = 100_000
MAX_TENSORS = 1_000_000
#: Longest key (the spec's limit) and longest string value kept or stepped over.
MAX_KEY_BYTES = 65_535
MAX_STRING_BYTES = 64 * 1024 * 1024
#: Most elements of one array (vocabularies have a few 100,000 tokens).
MAX_ARRAY = 4 * 1024 * 1024
#: Arrays up to this length are kept (per-layer values); longer ones only as their length.
KEEP_ARRAY = 4096
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_NAME_BYTES = 63  # GGML_MAX_NAME (64) less the terminating NUL
MAX_ELEMENTS = 1 << 50
DEFAULT_ALIGNMENT = 32

# value type -> struct format (ggml docs/gguf.md, gguf_metadata_value_type)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_CHUNK = 1 << 20


@dataclass(frozen=True)
class LongArray:
    """An array too long to keep (a tokenizer's vocabulary): its element type and length."""

    type: int
    length: int


@dataclass(frozen=True)
class GgufTensor:
    name: str
    shape: tuple[int, ...]  # ggml order: ne0 first
    type: str  # ggml type name (Q4_K, F32, ...)
    offset: int  # from the start of the data section

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def bytes(self) -> int:
        return gguf.tensor_bytes(self.type, self.shape)


@dataclass(frozen=True)
class GgufHeader:
    path: Path
    version: int
    metadata: Mapping[str, Any]
    tensors: tuple[GgufTensor, ...]
    data_offset: int  # where the aligned data section starts
    file_size: int

    @property
    def architecture(self) -> str | None:
        arch = self.metadata.get("general.architecture")
        return arch if isinstance(arch, str) else None

    @property
    def weight_bytes(self) -> int:
        return sum(t.bytes for t in self.tensors)

    def types(self) -> dict[str, int]:
        """How many tensors each ggml type holds."""
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.type] = out.get(t.type, 0) + 1
        return out


class _Reader:
    """Sequential little-endian reads from a file descriptor, never past ``limit`` bytes."""

    def __init__(self, fd: int, size: int, where: str) -> None:
        self.fd, self.size, self.where = fd, size, where
        self.limit = min(size, MAX_HEADER_BYTES)
        self.buf = b""
        self.pos = 0  # file position of buf[0]
        self.at = 0  # read position within buf

    @property
    def tell(self) -> int:
        return self.pos + self.at

    def fail(self, what: str) -> ModelImportError:
        return ModelImportError(f"{self.where}: {what}")

    def take(self, n: int) -> bytes:
        if n < 0 or self.tell + n > self.limit:
            if self.tell + n > self.size:
                raise self.fail(f"the file ends inside its header (at byte {self.size:,}): truncated or not GGUF")
            raise self.fail(f"the header runs past {MAX_HEADER_BYTES:,} bytes: not a model file this reads")
        while len(self.buf) - self.at < n:
            self.buf, self.pos, self.at = self.buf[self.at :], self.tell, 0
            os.lseek(self.fd, self.pos + len(self.buf), os.SEEK_SET)  # (os.pread is POSIX only)
            chunk = os.read(self.fd, max(_CHUNK, n))
            if not chunk:
                raise self.fail("the file shrank while being read")
            self.buf += chunk
        out = self.buf[self.at : self.at + n]
        self.at += n
        return out

    def skip(self, n: int) -> None:
        if self.tell + n > self.limit:
            self.take(n)  # raises the right message
        left = len(self.buf) - self.at
        if n <= left:
            self.at += n
        else:
            self.pos, self.buf, self.at = self.tell + n, b"", 0

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def count(self, what: str, most: int) -> int:
        n = self.unpack("<Q")
        if n > most:
            raise self.fail(f"{what} {n:,} exceeds the limit of {most:,}: damaged or not a model file")
        return int(n)

    def string(self, what: str, most: int = MAX_STRING_BYTES) -> str:
        raw = self.take(self.count(f"{what} length", most))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not UTF-8") from None


def _value(r: _Reader, vtype: int, key: str, depth: int = 0) -> Any:
    if vtype in _SCALARS:
        v = r.unpack(_SCALARS[vtype])
        if vtype == 7 and r.buf[r.at - 1] not in (0, 1):
            raise r.fail(f"key {key!r}: a bool must be 0 or 1")
        return v
    if vtype == _STRING:
        return r.string(f"key {key!r}: string")
    if vtype == _ARRAY:
        if depth > 1:
            raise r.fail(f"key {key!r}: arrays nested deeper than two levels")
        etype = r.unpack("<I")
        n = r.count(f"key {key!r}: array", MAX_ARRAY)
        if etype not in _SCALARS and etype not in (_STRING, _ARRAY):
            raise r.fail(f"key {key!r}: unknown array element type {etype}")
        if n > KEEP_ARRAY:
            if etype in _SCALARS:
                r.skip(n * struct.calcsize(_SCALARS[etype]))
            else:
                for _ in range(n):
                    _value(r, etype, key, depth + 1)
            return LongArray(etype, n)
        return [_value(r, etype, key, depth + 1) for _ in range(n)]
    raise r.fail(f"key {key!r}: unknown value type {vtype}")


def read_gguf_header(path: str | Path) -> GgufHeader:
    """The metadata and tensor table of a ``.gguf`` file (the tensor data is never read)."""
    p = Path(path)
    fd, size = open_regular(p, "GGUF file")
    try:
        return _read(p, _Reader(fd, size, str(p)))
    except OSError as exc:
        raise ModelImportError(f"{p}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def _read(p: Path, r: _Reader) -> GgufHeader:
    if r.size < 4 or r.take(4) != MAGIC:
        raise r.fail("not a GGUF file (no 'GGUF' magic)")
    version = r.unpack("<I")
    if version not in VERSIONS:
        raise r.fail(f"GGUF version {version} (this reads versions 2 and 3)")
    n_tensors = r.count("tensor count", MAX_TENSORS)
    n_kv = r.count("metadata count", MAX_KV)
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = r.string("a metadata key", MAX_KEY_BYTES)
        if key in metadata:
            raise r.fail(f"key {key!r} appears twice")
        metadata[key] = _value(r, r.unpack("<I"), key)
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or isinstance(alignment, bool) or alignment <= 0 or alignment % 8:
        raise r.fail(f"general.alignment {alignment!r} is not a positive multiple of 8")
    by_id = gguf.tables().by_id
    infos = []
    names: set[str] = set()
    for _ in range(n_tensors):
        name = r.string("a tensor name", MAX_NAME_BYTES)
        if name in names:
            raise r.fail(f"tensor {name!r} appears twice")
        names.add(name)
        n_dims = r.unpack("<I")
        if not 1 <= n_dims <= MAX_DIMS:
            raise r.fail(f"tensor {name!r}: {n_dims} dimensions (GGUF allows 1 to {MAX_DIMS})")
        shape = tuple(int(r.unpack("<Q")) for _ in range(n_dims))
        if math.prod(shape) > MAX_ELEMENTS:
            raise r.fail(f"tensor {name!r}: shape {list(shape)} is absurdly large")
        type_id = r.unpack("<I")
        t = by_id.get(type_id)
        if t is None:
            raise r.fail(f"tensor {name!r}: unknown ggml type id {type_id}")
        if shape[0] % t.block:
            raise r.fail(f"tensor {name!r}: rows of {shape[0]} are not whole {t.name} blocks of {t.block}")
        offset = r.unpack("<Q")
        if offset % alignment:
            raise r.fail(f"tensor {name!r}: offset {offset:,} is not a multiple of the alignment {alignment}")
        infos.append(GgufTensor(name, shape, t.name, int(offset)))
    data_offset = -(-r.tell // alignment) * alignment
    room = r.size - data_offset
    for t in infos:
        if t.offset + t.bytes > room:
            raise r.fail(
                f"tensor {t.name!r}: its data ends at byte {data_offset + t.offset + t.bytes:,}, past the "
                f"end of the file ({r.size:,} bytes): truncated"
            )
    return GgufHeader(p, version, metadata, tuple(infos), data_offset, r.size)


# --- the model a GGUF header describes -----------------------------------------------------------

#: llama.cpp architecture (general.architecture) -> the transformers model_type whose reader
#: builds the workbench's architecture from the translated keys.
_MODEL_TYPES = {
    "llama": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "qwen2moe": "qwen2_moe",
    "qwen3moe": "qwen3_moe",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3": "gemma3_text",
    "phi3": "phi3",
}
#: GGUF key suffix (after "<arch>.") -> config.json key (llama.cpp's LLM_KV names, docs/gguf.md).
_KEYS = {
    "embedding_length": "hidden_size",
    "block_count": "num_hidden_layers",
    "feed_forward_length": "intermediate_size",
    "attention.head_count": "num_attention_heads",
    "attention.head_count_kv": "num_key_value_heads",
    "attention.key_length": "head_dim",
    "context_length": "max_position_embeddings",
    "attention.layer_norm_rms_epsilon": "rms_norm_eps",
    "rope.freq_base": "rope_theta",
    "attention.sliding_window": "sliding_window",
    "expert_used_count": "num_experts_per_tok",
    "expert_feed_forward_length": "moe_intermediate_size",
    "expert_shared_feed_forward_length": "shared_expert_intermediate_size",
}


@dataclass(frozen=True)
class GgufImport:
    architecture: Any  # ModelArchitecture
    header: GgufHeader
    preset: Any  # WeightFormat | None: the llama-quantize file type, when it is one --weights takes
    notes: tuple[str, ...]


def _config(h: GgufHeader) -> dict[str, Any]:
    arch = h.architecture
    where = str(h.path)
    if arch is None:
        raise ModelImportError(f"{where}: no general.architecture key: not a model GGUF")
    model_type = _MODEL_TYPES.get(arch)
    if model_type is None:
        raise ModelImportError(
            f"{where}: GGUF architecture {arch!r} is not one this reads ({', '.join(_MODEL_TYPES)})"
        )
    cfg: dict[str, Any] = {}
    for suffix, key in _KEYS.items():
        value = h.metadata.get(f"{arch}.{suffix}")
        if isinstance(value, list):  # per-layer values: the reader takes one
            if len(set(value)) != 1:
                raise ModelImportError(f"{where}: {arch}.{suffix} differs between layers; not read")
            value = value[0]
        if value is not None and not isinstance(value, LongArray):
            cfg[key] = value
    experts = h.metadata.get(f"{arch}.expert_count")
    if arch == "llama" and isinstance(experts, int) and experts > 1:
        model_type = "mixtral"  # llama.cpp stores Mixtral as llama with experts
        cfg["num_local_experts"] = experts
    elif isinstance(experts, int) and experts > 0:
        cfg["num_experts"] = experts
    names = {t.name: t for t in h.tensors}
    embd = names.get("token_embd.weight")
    if embd is None or len(embd.shape) != 2:
        raise ModelImportError(f"{where}: no 2-D token_embd.weight tensor")
    cfg.update(
        model_type=model_type,
        vocab_size=embd.shape[1],
        tie_word_embeddings="output.weight" not in names,
    )
    if model_type == "llama":
        cfg["attention_bias"] = "blk.0.attn_q.bias" in names
    return cfg


def import_gguf(path: str | Path, *, approximate: bool = False) -> GgufImport:
    """The architecture a GGUF file describes, its llama-quantize preset and real weight bytes."""
    from workbench.catalog.hf_config import import_hf_config
    from workbench.core.dtypes import WeightFormat
    from workbench.core.params import count_parameters

    h = read_gguf_header(path)
    name = h.metadata.get("general.name")
    result = import_hf_config(
        _config(h), name=name if isinstance(name, str) and name else h.path.stem, source=str(h.path),
        approximate=approximate,
    )
    arch = result.architecture
    notes = list(result.notes)
    held = sum(t.elements for t in h.tensors if t.name != "rope_freqs.weight")
    counted = count_parameters(arch).total
    if held != counted:
        notes.append(f"the GGUF tensors hold {held:,} values, the architecture counts {counted:,} ({held - counted:+,})")
    preset = _preset(h, arch, notes, WeightFormat)
    return GgufImport(arch, h, preset, tuple(notes))


def _preset(h: GgufHeader, arch: Any, notes: list[str], formats: Any) -> Any:
    file_type = h.metadata.get("general.file_type")
    found = next((p for p in gguf.tables().presets.values() if p.file_type == file_type), None)
    if found is None:
        notes.append(f"general.file_type {file_type!r} is not a preset --weights takes; sized from the tensors")
        return None
    plain = {"f32": "fp32", "f16": "fp16", "bf16": "bf16"}.get(found.id, found.id)
    fmt = formats(plain)
    if fmt.is_gguf:
        try:
            planned = {t.name: t.type for t in gguf.plan(arch, found.id)}
        except InputError as exc:  # a layout the preset rules do not describe: the file's bytes stand
            notes.append(f"{found.id}: {exc}")
            return fmt
        differ = sum(1 for t in h.tensors if t.name in planned and planned[t.name] != t.type)
        if differ:
            notes.append(
                f"{differ} tensors are stored at other types than llama-quantize's default {found.id} rules "
                "give (an importance matrix or per-tensor overrides); the file's bytes are the real ones"
            )
    return fmt
