"""The safetensors header reader on real files written by ``save_pretrained`` and on broken ones.

tests/data/safetensors holds tiny checkpoints made by tests/data/safetensors/generate.py; the
comparison with what the safetensors library and torch report is in
tests/validation/test_param_counts_vs_transformers.py.
"""

from __future__ import annotations

import json
import shutil
import struct
import time
from pathlib import Path

import pytest

from workbench.catalog.safetensors_header import (
    MAX_HEADER_BYTES,
    count_file,
    find_safetensors,
    read_checkpoint,
    read_header,
    read_index,
    read_safetensors_folder,
)
from workbench.core.errors import ModelImportError

DATA = Path(__file__).resolve().parents[1] / "data" / "safetensors"


def write(path: Path, header: object, data: bytes = b"", length: int | None = None) -> Path:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + data)
    return path


def test_single_file() -> None:
    count = count_file(DATA / "tiny-llama" / "model.safetensors")
    # LlamaConfig(vocab 256, hidden 32, inner 64, 2 layers, 4 heads, 2 kv heads, tied), saved in bf16:
    # 256*32 + 2*(32*32 + 2*32*16 + 32*32 + 3*32*64 + 2*32) + 32 = 26,784; the tied head is stored once.
    assert count.total == 26_784
    assert count.by_dtype == {"BF16": 26_784}
    assert count.data_bytes == 2 * 26_784
    assert count.tensors == 2 * 9 + 2
    assert count.metadata.get("format") == "pt"


def test_sharded_folder_with_index() -> None:
    folder = DATA / "tiny-deepseek-v3-sharded"
    count = read_safetensors_folder(folder)
    total_size, weight_map = read_index(folder / "model.safetensors.index.json")
    assert count.exact
    assert count.tensors == len(weight_map)
    assert count.data_bytes == total_size
    assert count.by_dtype == {"F32": count.total}
    assert len(count.files) == len(find_safetensors(folder)) == 8
    assert count.total == sum(count_file(p).total or 0 for p in find_safetensors(folder))


def test_index_without_shards() -> None:
    count = read_safetensors_folder(DATA / "index-only")
    assert not count.exact and count.total is None
    total_size, weight_map = read_index(DATA / "index-only" / "model.safetensors.index.json")
    assert count.data_bytes == total_size
    assert count.tensors == len(weight_map)


def test_missing_shard(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    shutil.copytree(DATA / "tiny-deepseek-v3-sharded", folder)
    (folder / "model-00003-of-00008.safetensors").unlink()
    with pytest.raises(ModelImportError, match="1 of 8 shards are missing"):
        read_safetensors_folder(folder)


def test_index_naming_an_absent_tensor(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    shutil.copytree(DATA / "tiny-deepseek-v3-sharded", folder)
    index = folder / "model.safetensors.index.json"
    data = json.loads(index.read_text())
    data["weight_map"]["model.ghost.weight"] = "model-00001-of-00008.safetensors"
    index.write_text(json.dumps(data))
    with pytest.raises(ModelImportError, match="'model.ghost.weight' is not in shard"):
        read_safetensors_folder(folder)


def test_bad_index(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text('{"weight_map": [1]}')
    with pytest.raises(ModelImportError, match="weight_map"):
        read_safetensors_folder(tmp_path)
    (tmp_path / "model.safetensors.index.json").write_text("nope")
    with pytest.raises(ModelImportError, match="not valid JSON"):
        read_safetensors_folder(tmp_path)


def test_folder_of_files_without_index(tmp_path: Path) -> None:
    shutil.copy(DATA / "tiny-llama" / "model.safetensors", tmp_path / "a.safetensors")
    shutil.copy(DATA / "tiny-llama" / "model.safetensors", tmp_path / "b.safetensors")
    assert read_safetensors_folder(tmp_path).total == 2 * 26_784


def test_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelImportError, match="no \\*.safetensors files"):
        read_safetensors_folder(tmp_path)


def test_truncated_file() -> None:
    path = DATA / "truncated.safetensors"
    with pytest.raises(ModelImportError, match="truncated file") as info:
        count_file(path)
    assert str(path) in str(info.value)


def test_length_larger_than_file(tmp_path: Path) -> None:
    path = write(tmp_path / "x.safetensors", {}, length=1000)
    with pytest.raises(ModelImportError, match="larger than the file"):
        read_header(path)


def test_length_over_limit(tmp_path: Path) -> None:
    path = write(tmp_path / "x.safetensors", {}, length=MAX_HEADER_BYTES + 1)
    with pytest.raises(ModelImportError, match="exceeds the"):
        read_header(path)


def test_too_short(tmp_path: Path) -> None:
    path = tmp_path / "x.safetensors"
    path.write_bytes(b"\x01\x02")
    with pytest.raises(ModelImportError, match="not a safetensors file"):
        read_header(path)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        ({"w": [1]}, "entry is not an object"),
        ({"w": {"shape": [2], "data_offsets": [0, 8]}}, "'dtype' missing"),
        ({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, "'shape'"),
        ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, "'data_offsets'"),
        ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, "do not hold a F32 tensor"),
    ],
)
def test_bad_headers(tmp_path: Path, header: object, message: str) -> None:
    path = write(tmp_path / "x.safetensors", header, data=bytes(8))
    with pytest.raises(ModelImportError, match=message):
        count_file(path)


def test_sub_byte_and_unknown_dtypes(tmp_path: Path) -> None:
    header = {
        "packed": {"dtype": "F4", "shape": [3, 4], "data_offsets": [0, 6]},
        "future": {"dtype": "X9", "shape": [5], "data_offsets": [6, 16]},
        "__metadata__": {"format": "pt"},
    }
    count = count_file(write(tmp_path / "x.safetensors", header, data=bytes(16)))
    assert count.by_dtype == {"F4": 12, "X9": 5}
    assert count.total == 17


def test_reads_only_the_header(tmp_path: Path) -> None:
    """A 4 GiB (sparse) file is counted instantly: the tensor data is never read."""
    n = 2**30
    header = json.dumps({"big": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}}).encode()
    path = tmp_path / "big.safetensors"
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(header)) + header)
        fh.truncate(8 + len(header) + 4 * n)
    start = time.perf_counter()
    assert count_file(path).total == n
    assert time.perf_counter() - start < 1.0


def test_unreadable_path(tmp_path: Path) -> None:
    with pytest.raises(ModelImportError, match="cannot read"):
        read_header(tmp_path / "missing.safetensors")


def test_read_checkpoint(tmp_path: Path) -> None:
    assert read_checkpoint(tmp_path) is None
    assert read_checkpoint(DATA / "index-only") is None
    assert read_checkpoint(DATA / "tiny-llama").total == 26_784  # type: ignore[union-attr]
    assert read_checkpoint(DATA / "tiny-llama" / "model.safetensors").total == 26_784  # type: ignore[union-attr]
    assert read_checkpoint(DATA / "tiny-deepseek-v3-sharded").exact  # type: ignore[union-attr]
