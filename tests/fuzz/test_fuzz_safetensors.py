"""Fuzz the safetensors header reader and a model folder's shard index.

Headers: random bytes, random length prefixes (0 to 2**64-1), and JSON headers whose entries
have random dtypes, shapes and offsets. Indexes: weight maps whose shard names try to leave
the folder. Each answer is a count that adds up, or one :class:`ModelImportError` line; no hang;
the files unchanged; and nothing outside the model folder is ever opened.
"""

from __future__ import annotations

import json
import math
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from fuzz_support import FUZZ, assert_one_line, digest, no_hang, opened_files
from hypothesis import event, given, settings
from hypothesis import strategies as st

from workbench.catalog.safetensors_header import DTYPE_BITS, INDEX_NAME, count_file, read_safetensors_folder
from workbench.core.errors import ModelImportError

TINY = Path(__file__).resolve().parents[1] / "data" / "safetensors" / "tiny-llama" / "model.safetensors"

_INT = st.one_of(st.integers(min_value=-8, max_value=64), st.integers(min_value=-(2**65), max_value=2**65))
_ENTRY = st.one_of(
    st.fixed_dictionaries(
        {
            "dtype": st.one_of(st.sampled_from(sorted(DTYPE_BITS)), st.text(max_size=5)),
            "shape": st.lists(_INT, max_size=4),
            "data_offsets": st.lists(_INT, min_size=0, max_size=3),
        }
    ),
    st.integers(),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=3),
)


@st.composite
def safetensors_files(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["random", "json", "mutated", "consistent"]))
    if kind == "consistent":
        return _consistent(draw)
    if kind == "random":
        header = draw(st.binary(max_size=300))
    elif kind == "json":
        entries: dict[str, Any] = draw(st.dictionaries(st.text(max_size=8), _ENTRY, max_size=5))
        if draw(st.booleans()):
            metadata = st.dictionaries(st.text(max_size=4), st.text(max_size=4))
            entries["__metadata__"] = draw(st.one_of(metadata, st.integers(), st.none()))
        header = json.dumps(entries).encode()
    else:
        raw = bytearray(TINY.read_bytes())
        (length,) = struct.unpack("<Q", raw[:8])
        for _ in range(draw(st.integers(min_value=1, max_value=5))):
            at = draw(st.integers(min_value=8, max_value=8 + length - 1))
            raw[at] = draw(st.integers(min_value=0, max_value=255))
        if draw(st.booleans()):
            del raw[draw(st.integers(min_value=0, max_value=len(raw))):]
        return bytes(raw)
    length = draw(st.one_of(st.just(len(header)), st.integers(min_value=0, max_value=2**64 - 1),
                            st.integers(min_value=0, max_value=len(header) + 16)))
    data = bytes(draw(st.integers(min_value=0, max_value=256)))
    return struct.pack("<Q", length) + header + data


def _consistent(draw: st.DrawFn) -> bytes:
    """A well-formed file with random tensors, then at most one thing spoiled."""
    entries: dict[str, Any] = {}
    end = 0
    for name in draw(st.lists(st.text(max_size=6), unique=True, max_size=6)):
        dtype = draw(st.sampled_from(sorted(DTYPE_BITS)))
        shape = draw(st.lists(st.integers(min_value=0, max_value=6), max_size=3))
        size = -(-math.prod(shape) * DTYPE_BITS[dtype] // 8)
        entries[name] = {"dtype": dtype, "shape": shape, "data_offsets": [end, end + size]}
        end += size
    spoil = draw(st.sampled_from(["none", "offsets", "shape", "short", "overlap"]))
    names = sorted(entries)
    if names and spoil == "offsets":
        entries[draw(st.sampled_from(names))]["data_offsets"] = draw(st.lists(_INT, min_size=2, max_size=2))
    elif names and spoil == "shape":
        entries[draw(st.sampled_from(names))]["shape"] = draw(st.lists(_INT, max_size=3))
    elif names and spoil == "overlap":
        begin, stop = entries[names[0]]["data_offsets"]
        entries[f"{names[0]}-copy"] = {**entries[names[0]], "data_offsets": [begin, stop]}
    header = json.dumps(entries).encode()
    data = bytes(max(0, end - (draw(st.integers(min_value=1, max_value=8)) if spoil == "short" else 0)))
    return struct.pack("<Q", len(header)) + header + data


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-safetensors")


@settings(FUZZ, max_examples=600)
@given(safetensors_files())
def test_headers(folder: Path, raw: bytes) -> None:
    path = folder / "x.safetensors"
    path.write_bytes(raw)
    before = digest(path)
    with no_hang():
        try:
            count = count_file(path)
        except ModelImportError as exc:
            event("refused")
            assert_one_line(exc)
            assert str(path) in str(exc)
        else:
            event("counted")
            assert count.total == sum(count.by_dtype.values()) >= 0
            assert 0 <= count.data_bytes <= len(raw) - 8
    assert digest(path) == before


_ESCAPES = st.sampled_from([
    "/etc/passwd", "../outside.safetensors", "../../outside.safetensors", "./../outside.safetensors",
    "sub/../../outside.safetensors", "{outside}", "link.safetensors", "", ".", "..", "model.safetensors",
    "sub/model.safetensors", "C:\\outside.safetensors", "\x00", "missing.safetensors",
])


@settings(FUZZ, max_examples=300)
@given(st.dictionaries(st.text(min_size=1, max_size=6), st.one_of(_ESCAPES, st.text(max_size=12)),
                      max_size=5),
       st.one_of(st.none(), st.integers(min_value=-(2**70), max_value=2**70), st.text(max_size=3)))
def test_index_shard_names_stay_inside_the_folder(tmp_path_factory: pytest.TempPathFactory,
                                                   weight_map: dict[str, str], total_size: object) -> None:
    root = tmp_path_factory.mktemp("index")
    outside = root / "outside.safetensors"
    shutil.copy(TINY, outside)
    model = root / "model"
    (model / "sub").mkdir(parents=True)
    shutil.copy(TINY, model / "model.safetensors")
    shutil.copy(TINY, model / "sub" / "model.safetensors")
    (model / "link.safetensors").symlink_to(outside)
    shard_map = {k: v.replace("{outside}", str(outside)) for k, v in weight_map.items()}
    index = model / INDEX_NAME
    index.write_text(json.dumps({"metadata": {"total_size": total_size}, "weight_map": shard_map}))
    hashes = {p: digest(p) for p in (outside, index, model / "model.safetensors")}
    with no_hang(), opened_files() as opened:
        try:
            read_safetensors_folder(model)
            event("counted")
        except ModelImportError as exc:
            event("refused")
            assert_one_line(exc)
    assert not [p for p in opened if not p.startswith(str(model.resolve()))], opened
    assert {p: digest(p) for p in hashes} == hashes
