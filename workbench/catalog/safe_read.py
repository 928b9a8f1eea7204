"""Read untrusted model files (``config.json``, safetensors indexes) without hanging or blowing up.

A model folder comes from anywhere, so every read is bounded before it starts:

* only regular files are read: a FIFO, a device (``/dev/zero``) or a folder is refused without
  being opened for reading (``O_NONBLOCK`` keeps ``open`` itself from waiting on a FIFO);
* the size is checked before reading (``MAX_CONFIG_BYTES`` for a ``config.json``; the biggest
  real ones are a few KiB) and never more than the limit plus one byte is read;
* the JSON must be UTF-8, nested at most ``MAX_JSON_DEPTH`` levels, hold no integer longer than
  ``MAX_INT_DIGITS`` digits (Python refuses to parse more than 4,300 with a ValueError) and no
  ``NaN``. ``Infinity`` is accepted as Python's json (and so transformers' ``save_pretrained``)
  writes it: real configs carry it where it is a bound, not a size (Nemotron-H's
  ``time_step_limit: [0.0, Infinity]``); a non-finite value in a size or count is refused;
* a config's sizes and counts must be below :data:`COUNT_LIMITS`, far above any real model, so
  that a config with 10^9 layers is refused in one line instead of building per-layer lists.

Every refusal is a :class:`~workbench.core.errors.ModelImportError` with one line naming the file.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.core.errors import ModelImportError

#: Largest ``config.json`` read (real ones are a few KiB).
MAX_CONFIG_BYTES = 16 * 1024 * 1024
#: Deepest JSON nesting accepted (real configs nest 3-4 levels).
MAX_JSON_DEPTH = 64
#: Longest integer literal accepted (2**63 has 19 digits).
MAX_INT_DIGITS = 20

_LAYERS = 10_000
_WIDTH = 1 << 20
_HEADS = 1 << 16
_POSITIONS = 1 << 28
#: Upper limit of each size/count key, wherever it appears in the config (top level or nested
#: ``text_config``/``vision_config``). The largest published models stay at least 10x below each.
COUNT_LIMITS: dict[str, tuple[int, str]] = {
    **{k: (_LAYERS, "layers") for k in (
        "num_hidden_layers", "n_layer", "num_layers", "num_decoder_layers", "first_k_dense_replace",
        "max_window_layers", "num_nextn_predict_layers", "decoder_sparse_step", "interleave_moe_layer_step",
        "moe_layer_freq", "sliding_window_pattern",
    )},
    **{k: (_WIDTH, "dimensions") for k in (
        "hidden_size", "n_embd", "d_model", "intermediate_size", "intermediate_size_mlp", "n_inner",
        "moe_intermediate_size", "shared_expert_intermediate_size", "d_ff", "ffn_dim", "ffn_hidden_size",
        "head_dim", "d_kv", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
        "v_head_dim", "word_embed_proj_dim", "pooler_output_size", "image_size", "patch_size",
    )},
    **{k: (_HEADS, "heads") for k in (
        "num_attention_heads", "n_head", "num_heads", "num_key_value_heads", "num_kv_heads", "n_head_kv",
    )},
    **{k: (_HEADS, "experts") for k in (
        "num_experts", "num_local_experts", "n_routed_experts", "n_shared_experts", "num_experts_per_tok",
    )},
    **{k: (1 << 24, "tokens") for k in ("vocab_size", "type_vocab_size")},
    **{k: (_POSITIONS, "positions") for k in (
        "max_position_embeddings", "n_positions", "sliding_window", "relative_attention_num_buckets",
    )},
    "num_channels": (1024, "channels"),
}


def open_regular(path: Path, what: str) -> tuple[int, int]:
    """``(fd, size)`` of ``path`` opened for reading, refusing anything but a regular file.

    ``O_NONBLOCK`` keeps ``open`` from waiting for a writer on a FIFO; the type is checked on
    the open descriptor, so a file swapped after a check cannot slip through.
    """
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0)  # O_BINARY: no newline translation on Windows
    for name in ("O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC"):  # POSIX only
        flags |= getattr(os, name, 0)
    try:
        fd = os.open(path, flags)
    except IsADirectoryError:
        raise ModelImportError(f"{path}: is a folder, not a {what}") from None
    except OSError as exc:
        raise ModelImportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise ModelImportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ModelImportError(f"{path}: not a regular file ({_kind(info.st_mode)}), not a {what}")
    return fd, info.st_size


def read_at_most(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes from ``fd`` (fewer at the end of the file)."""
    chunks = []
    while limit > 0:
        chunk = os.read(fd, min(limit, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        limit -= len(chunk)
    return b"".join(chunks)


def read_regular_file(path: Path, max_bytes: int, what: str) -> bytes:
    """The bytes of ``path``, refusing anything but a regular file of at most ``max_bytes``."""
    fd, size = open_regular(path, what)
    try:
        if size > max_bytes:
            raise ModelImportError(
                f"{path}: {size:,} bytes is more than the {max_bytes:,}-byte limit for a {what}"
            )
        data = read_at_most(fd, max_bytes + 1)  # the file may grow while it is read
    except OSError as exc:
        raise ModelImportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise ModelImportError(f"{path}: more than the {max_bytes:,}-byte limit for a {what}")
    return data


def inside_folder(root: Path, name: str, where: str) -> Path:
    """``root / name``, refused in one line unless it stays inside ``root``.

    A model folder's index names its shards; a hostile one may name ``/etc/passwd``, ``../x`` or
    a link that points out of the folder. Those are refused before anything is opened or
    stat-ed. One exception: the Hugging Face cache keeps ``snapshots/<revision>/<file>`` as links
    to ``../../blobs/<hash>``, and a link from a snapshot into its own repository's ``blobs``
    folder is allowed.
    """
    pure = Path(name)
    if not name or "\x00" in name or pure.is_absolute() or pure.anchor or ".." in pure.parts:
        raise ModelImportError(f"{where}: {name!r} is not a file inside the model folder; refused")
    base = root.resolve()
    target = (base / pure).resolve()
    if target.is_relative_to(base):
        return base / pure
    if base.parent.name == "snapshots" and target.parent == base.parent.parent / "blobs":
        return base / pure
    raise ModelImportError(f"{where}: {name!r} links to a file outside the model folder; refused")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a plain file"


class _Refused(Exception):
    """Raised inside the JSON parser's hooks; turned into one line naming the file."""


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer with {len(text.lstrip('-')):,} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _float(text: str) -> float:
    return float(text)  # 1e999 is infinity, as the Infinity literal: refused where it is a size


def _constant(text: str) -> Any:
    if text == "NaN":
        raise _Refused("NaN is not a number")
    return float(text)  # Infinity / -Infinity, as Python's json.dump writes them


def parse_json(raw: bytes, where: str) -> Any:
    """Strict JSON from untrusted bytes: UTF-8, finite numbers, bounded integers and nesting."""
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark is harmless: editors on Windows add one
    except UnicodeDecodeError as exc:
        raise ModelImportError(
            f"{where}: not valid JSON (not UTF-8: bad byte at offset {exc.start:,})"
        ) from None
    try:
        data = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except _Refused as exc:
        raise ModelImportError(f"{where}: not accepted: {exc}") from None
    except RecursionError:
        raise ModelImportError(f"{where}: nested more than {MAX_JSON_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise ModelImportError(f"{where}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:  # anything else the decoder refuses, in one line
        raise ModelImportError(f"{where}: not valid JSON ({exc})") from None
    _check_depth(data, where)
    return data


def _check_depth(data: Any, where: str) -> None:
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise ModelImportError(f"{where}: nested more than {MAX_JSON_DEPTH} levels deep")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def load_json_object(path: Path, max_bytes: int, what: str) -> dict[str, Any]:
    """A JSON object read from ``path`` under the limits above."""
    data = parse_json(read_regular_file(path, max_bytes, what), str(path))
    if not isinstance(data, dict):
        raise ModelImportError(f"{path}: the {what} must be a JSON object, got {type(data).__name__}")
    return data


def check_counts(config: Mapping[str, Any], where: str) -> None:
    """Refuse a size or count above :data:`COUNT_LIMITS` anywhere in a config, in one line.

    Any integer beyond 64 bits is refused too (a parsed dict may come from elsewhere than
    :func:`parse_json`; printing one of 4,300+ digits would itself raise).
    """
    stack: list[tuple[Any, str, int]] = [(config, "", 1)]
    while stack:
        value, name, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise ModelImportError(f"{where}: nested more than {MAX_JSON_DEPTH} levels deep")
        if isinstance(value, Mapping):
            prefix = f"{name}." if name else ""
            stack.extend((v, f"{prefix}{k}", depth + 1) for k, v in value.items())
        elif isinstance(value, list | tuple):
            stack.extend((v, f"{name}[{i}]", depth + 1) for i, v in enumerate(value))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            _check_number(value, name, where)


def printable(text: str) -> str:
    """``text`` with control characters escaped: a key from a hostile file must not break the line
    (or retitle the terminal) when a message quotes it."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def _check_number(value: float, name: str, where: str) -> None:
    name = printable(name)
    if isinstance(value, int) and value.bit_length() > 63:
        raise ModelImportError(f"{where}: '{name}' is an integer of {value.bit_length():,} bits (at most 63)")
    limit = COUNT_LIMITS.get(name.rsplit(".", 1)[-1])
    if isinstance(value, float) and math.isnan(value):
        raise ModelImportError(f"{where}: '{name}' is NaN, not a number")
    if isinstance(value, float) and math.isinf(value) and limit is not None:
        raise ModelImportError(f"{where}: '{name}' must be a finite number, got {value}")
    if limit is not None and value > limit[0]:
        shown = f"{value:,}" if isinstance(value, int) else f"{value:g}"
        raise ModelImportError(f"{where}: '{name}' = {shown} is above the limit of {limit[0]:,} {limit[1]}")
