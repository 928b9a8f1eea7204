"""A model folder cannot make the importer open files outside it, and broken headers are one line.

A ``model.safetensors.index.json`` names its shards; a hostile one names ``/etc/passwd``,
``../secret`` or a link that leads out of the folder. An audit hook records every file the
process opens while the folder is read, so "never opened" is checked, not assumed.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli_bad_input import assert_one_line_error, run_cli

from workbench.catalog.hf_config import import_hf_path
from workbench.catalog.safetensors_header import (
    INDEX_NAME,
    MAX_DIMS,
    MAX_SHARDS,
    count_file,
    read_checkpoint,
    read_safetensors_folder,
)
from workbench.core.errors import ModelImportError

DATA = Path(__file__).resolve().parents[1] / "data" / "safetensors"
_OPENED: list[str] | None = None


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def opened() -> Iterator[list[str]]:
    """Paths opened while the test body runs (audit hooks cannot be removed, so it is switched)."""
    global _OPENED
    _OPENED = []
    try:
        yield _OPENED
    finally:
        _OPENED = None


def tensor_file(path: Path, names: tuple[str, ...] = ("w",)) -> Path:
    header = {name: {"dtype": "F32", "shape": [2], "data_offsets": [8 * i, 8 * i + 8]}
              for i, name in enumerate(names)}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(8 * len(names)))
    return path


def model_folder(tmp_path: Path, weight_map: dict[str, str]) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(DATA / "tiny-llama" / "config.json", folder / "config.json")
    tensor_file(folder / "model-00001-of-00002.safetensors")
    (folder / INDEX_NAME).write_text(json.dumps({"metadata": {"total_size": 8}, "weight_map": weight_map}))
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A real safetensors file next to (not inside) the model folder: reading it would succeed."""
    return tensor_file(tmp_path / "secret.safetensors", ("secret",))


@pytest.mark.parametrize(
    "entry",
    ["/etc/passwd", "../secret.safetensors", "sub/../../secret.safetensors", "{outside}", ""],
)
def test_index_naming_files_outside_is_refused(tmp_path: Path, outside: Path, opened: list[str],
                                               entry: str) -> None:
    entry = entry.format(outside=outside)
    folder = model_folder(tmp_path, {"w": "model-00001-of-00002.safetensors", "secret": entry})
    with pytest.raises(ModelImportError) as info:
        read_safetensors_folder(folder)
    message = str(info.value)
    assert repr(entry) in message and "refused" in message and "\n" not in message
    assert not any(p in ("/etc/passwd", str(outside)) or p.endswith("secret.safetensors") for p in opened)


def test_a_link_out_of_the_folder_is_refused(tmp_path: Path, outside: Path, opened: list[str]) -> None:
    folder = model_folder(tmp_path, {"w": "model-00001-of-00002.safetensors", "secret": "shard2.safetensors"})
    (folder / "shard2.safetensors").symlink_to(outside)
    with pytest.raises(ModelImportError, match="'shard2.safetensors' links to a file outside"):
        read_safetensors_folder(folder)
    assert not any(p.endswith("secret.safetensors") for p in opened)


def test_a_globbed_link_out_of_a_folder_without_index_is_refused(tmp_path: Path, outside: Path,
                                                                 opened: list[str]) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").symlink_to(outside)
    with pytest.raises(ModelImportError, match="links to a file outside"):
        read_checkpoint(folder)
    assert not any(p.endswith("secret.safetensors") for p in opened)


def test_links_out_of_the_folder_in_the_cli(tmp_path: Path, outside: Path, capsys: pytest.CaptureFixture[str],
                                            opened: list[str]) -> None:
    folder = model_folder(tmp_path, {"w": "model-00001-of-00002.safetensors", "secret": "/etc/passwd"})
    assert_one_line_error(*run_cli(capsys, "import", str(folder)), "'/etc/passwd'", "refused")
    (folder / INDEX_NAME).unlink()
    (folder / "config.json").unlink()
    (folder / "config.json").symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text('{"model_type": "llama", "secret_key": 1}')
    opened.clear()
    with pytest.raises(ModelImportError, match="'config.json' links to a file outside"):
        import_hf_path(folder)
    assert not [p for p in opened if p.endswith(("elsewhere.json", "/etc/passwd"))]


def test_links_inside_the_folder_and_the_hugging_face_cache_layout_are_read(tmp_path: Path) -> None:
    """huggingface_hub keeps ``snapshots/<rev>/<file>`` as links to ``../../blobs/<hash>``."""
    repo = tmp_path / "models--org--tiny"
    (repo / "blobs").mkdir(parents=True)
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    for source in (DATA / "tiny-llama").iterdir():
        blob = repo / "blobs" / f"hash-{source.name}"
        shutil.copy(source, blob)
        (snapshot / source.name).symlink_to(Path("..") / ".." / "blobs" / blob.name)
    assert read_checkpoint(snapshot).total == 26_784  # type: ignore[union-attr]
    assert import_hf_path(snapshot).architecture.num_layers == 2
    inner = tmp_path / "inner"
    inner.mkdir()
    shutil.copy(DATA / "tiny-llama" / "model.safetensors", inner / "real.bin")
    (inner / "model.safetensors").symlink_to("real.bin")
    assert read_checkpoint(inner).total == 26_784  # type: ignore[union-attr]


def test_a_blobs_link_outside_a_snapshots_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "blobs").mkdir()
    tensor_file(tmp_path / "blobs" / "x")
    folder = tmp_path / "not-a-snapshot"
    folder.mkdir()
    (folder / "model.safetensors").symlink_to(tmp_path / "blobs" / "x")
    with pytest.raises(ModelImportError, match="outside"):
        read_checkpoint(folder)


def _raw(path: Path, header: bytes, length: int | None = None, data: bytes = bytes(16)) -> Path:
    path.write_bytes(struct.pack("<Q", len(header) if length is None else length) + header + data)
    return path


def _entry(offsets: list[object], shape: list[object] | None = None, dtype: str = "F32") -> dict[str, object]:
    return {"dtype": dtype, "shape": [2] if shape is None else shape, "data_offsets": offsets}


@pytest.mark.parametrize(
    ("header", "length", "needle"),
    [
        (b"{}", 2**64 - 1, "exceeds the"),
        (b"{}", 2**40, "exceeds the"),
        (b"{}", 10_000, "larger than the file"),
        (b"\x00\x01\x02", None, "not valid JSON"),
        (b"null", None, "not a JSON object"),
        (b'{"w": NaN}', None, "NaN"),
        (b'{"w": {"dtype": "F32", "shape": [' + b"9" * 400 + b'], "data_offsets": [0, 8]}}', None, "digits"),
        (b"[" * 20_000 + b"]" * 20_000, None, "nested"),
        (json.dumps({"w": _entry([-8, 0])}).encode(), None, "non-negative"),
        (json.dumps({"w": _entry([0, 80])}).encode(), None, "truncated file"),
        (json.dumps({"w": _entry([8, 0])}).encode(), None, "is after end"),
        (json.dumps({"w": _entry([True, 8], [2])}).encode(), None, "'data_offsets'"),
        (json.dumps({"w": _entry([0, 8], [True, 2])}).encode(), None, "'shape'"),
        (json.dumps({"w": _entry([0, 4], [1] * (MAX_DIMS + 1))}).encode(), None, "dimensions"),
        (json.dumps({"a": _entry([0, 8]), "b": _entry([4, 12])}).encode(), None, "overlap"),
        (json.dumps({"a": _entry([8, 16]), "b": _entry([0, 8]), "c": _entry([0, 8])}).encode(), None,
         "overlap"),
    ],
)
def test_broken_headers_are_one_line(tmp_path: Path, header: bytes, length: int | None, needle: str) -> None:
    path = _raw(tmp_path / "x.safetensors", header, length)
    with pytest.raises(ModelImportError) as info:
        count_file(path)
    message = str(info.value)
    assert needle in message and str(path) in message and "\n" not in message


def test_adjacent_and_empty_tensors_do_not_overlap(tmp_path: Path) -> None:
    header = {"a": _entry([0, 8]), "empty": _entry([8, 8], [0]), "b": _entry([8, 16])}
    assert count_file(_raw(tmp_path / "x.safetensors", json.dumps(header).encode())).total == 4


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")
def test_a_fifo_named_safetensors_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    with pytest.raises(ModelImportError, match="FIFO"):
        count_file(fifo)
    assert_one_line_error(*run_cli(capsys, "import", str(fifo)), "model.safetensors")


def test_an_index_naming_absurdly_many_shards_is_refused_at_once(tmp_path: Path) -> None:
    weight_map = {f"t{i}": f"model-{i:07d}.safetensors" for i in range(MAX_SHARDS + 1)}
    folder = model_folder(tmp_path, weight_map)
    with pytest.raises(ModelImportError, match=f"names {MAX_SHARDS + 1:,} shard files"):
        read_safetensors_folder(folder)
