"""The GGUF header reader on small GGUF files this test writes, and on broken ones.

The writer follows the GGUF v3 layout of ggml-org/ggml@01f0d4da3e444ca2bfe705e72adab08a4394bb1d:
docs/gguf.md (magic, version, uint64 counts, typed key-value pairs, tensor infos, data aligned to
``general.alignment``); tensor types are ggml ids (ggml/include/ggml.h) with the block sizes of
resources/formats/gguf.yaml.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.catalog.gguf_header import MAX_HEADER_BYTES, import_gguf, read_gguf_header
from workbench.core import gguf
from workbench.core.dtypes import WeightFormat
from workbench.core.errors import ModelImportError
from workbench.core.params import count_parameters

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
        U64: "<Q", I64: "<q", F64: "<d"}


def _string(s: str | bytes) -> bytes:
    raw = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(raw)) + raw


def _value(vtype: int, value: Any) -> bytes:
    if vtype == STR:
        return _string(value)
    if vtype == ARR:
        etype, items = value
        return struct.pack("<IQ", etype, len(items)) + b"".join(_value(etype, v) for v in items)
    return struct.pack(_FMT.get(vtype, "<B"), value)  # an unknown type id gets one byte, for the refusal


def write_gguf(
    path: Path,
    kv: list[tuple[str, int, Any]],
    tensors: list[tuple[str, tuple[int, ...], str]],
    *,
    alignment: int = 32,
    version: int = 3,
) -> Path:
    """A GGUF file with zero-filled tensor data, each tensor at an aligned offset."""
    types = gguf.tables().types
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kv))
    head += b"".join(_string(k) + struct.pack("<I", t) + _value(t, v) for k, t, v in kv)
    offset, infos = 0, b""
    for name, shape, type_name in tensors:
        infos += _string(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in shape)
        infos += struct.pack("<IQ", types[type_name].id, offset)
        offset += -(-gguf.tensor_bytes(type_name, shape) // alignment) * alignment
    body = head + infos
    body += b"\0" * (-len(body) % alignment)
    with open(path, "wb") as fh:
        fh.write(body)
        fh.truncate(len(body) + offset)  # zero data, sparse: a 0.5B-parameter file takes no disk
    return path


# A small Llama: hidden 256 (whole Q4_K/Q6_K blocks), 4 heads of 64, 2 KV heads, FFN 512,
# vocab 320, 2 blocks, untied head.
H, FFN, HEADS, KV, HD, VOCAB, LAYERS = 256, 512, 4, 2, 64, 320, 2


def tiny_llama_tensors(preset: str | None = "q4_k_m") -> list[tuple[str, tuple[int, ...], str]]:
    """The tensors of the small Llama, typed as llama-quantize's ``preset`` rules give them."""
    t: list[tuple[str, tuple[int, ...], str]] = [("token_embd.weight", (H, VOCAB), "Q4_K")]
    for i in range(LAYERS):
        b = f"blk.{i}."
        # q4_k_m: attn_v and ffn_down at Q6_K where use_more_bits(i, 2): i < 0, i >= 1, (i - 0) % 3 == 2
        # -> block 1 only (llama-quant.cpp, see resources/formats/gguf.yaml).
        hi = "Q6_K" if i == 1 else "Q4_K"
        t += [
            (b + "attn_norm.weight", (H,), "F32"),
            (b + "attn_q.weight", (H, HEADS * HD), "Q4_K"),
            (b + "attn_k.weight", (H, KV * HD), "Q4_K"),
            (b + "attn_v.weight", (H, KV * HD), hi),
            (b + "attn_output.weight", (HEADS * HD, H), "Q4_K"),
            (b + "ffn_norm.weight", (H,), "F32"),
            (b + "ffn_gate.weight", (H, FFN), "Q4_K"),
            (b + "ffn_up.weight", (H, FFN), "Q4_K"),
            (b + "ffn_down.weight", (FFN, H), hi),
        ]
    t += [("output_norm.weight", (H,), "F32"), ("output.weight", (H, VOCAB), "Q6_K")]
    return t


def tiny_llama_kv(file_type: int = 15) -> list[tuple[str, int, Any]]:
    return [
        ("general.architecture", STR, "llama"),
        ("general.name", STR, "Tiny Llama"),
        ("general.file_type", U32, file_type),
        ("general.quantization_version", U32, 2),
        ("llama.context_length", U32, 4096),
        ("llama.embedding_length", U32, H),
        ("llama.block_count", U32, LAYERS),
        ("llama.feed_forward_length", U32, FFN),
        ("llama.attention.head_count", U32, HEADS),
        ("llama.attention.head_count_kv", U32, KV),
        ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5),
        ("llama.rope.freq_base", F32, 500000.0),
        ("tokenizer.ggml.model", STR, "gpt2"),
        ("tokenizer.ggml.tokens", ARR, (STR, [f"t{i}" for i in range(VOCAB)])),
        ("tokenizer.ggml.scores", ARR, (F32, [0.0] * VOCAB)),
        ("general.tags", ARR, (STR, ["a", "b"])),
        ("some.flag", BOOL, True),
        ("some.signed", I64, -3),
    ]


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return write_gguf(tmp_path / "tiny-Q4_K_M.gguf", tiny_llama_kv(), tiny_llama_tensors())


def test_reads_metadata_and_tensor_table(tiny: Path) -> None:
    h = read_gguf_header(tiny)
    assert h.version == 3
    assert h.architecture == "llama"
    assert h.metadata["llama.block_count"] == LAYERS
    assert h.metadata["general.tags"] == ["a", "b"]
    assert h.metadata["some.flag"] is True and h.metadata["some.signed"] == -3
    assert len(h.tensors) == 2 * 9 + 3
    by_name = {t.name: t for t in h.tensors}
    assert by_name["blk.0.ffn_down.weight"].shape == (FFN, H)
    assert by_name["output.weight"].type == "Q6_K"
    # Hand count from ggml's block sizes: Q4_K 144 B / 256, Q6_K 210 B / 256, F32 4 B. Block 0 is all
    # Q4_K; block 1 keeps attn_v and ffn_down at Q6_K; the output head is Q6_K.
    attn_q_o, kv_proj, ffn = 2 * H * HEADS * HD, H * KV * HD, H * FFN
    q4 = (H * VOCAB + (attn_q_o + 2 * kv_proj + 3 * ffn) + (attn_q_o + kv_proj + 2 * ffn)) * 144 // 256
    q6 = (H * VOCAB + kv_proj + ffn) * 210 // 256
    f32 = (2 * LAYERS + 1) * H * 4
    assert h.weight_bytes == q4 + q6 + f32 == 617_472 + 201_600 + 5_120
    assert h.types() == {"Q4_K": 13, "Q6_K": 3, "F32": 5}
    assert h.data_offset % 32 == 0
    assert h.file_size == h.data_offset + sum(-(-t.bytes // 32) * 32 for t in h.tensors)


def test_long_arrays_are_stepped_over(tmp_path: Path) -> None:
    kv = [*tiny_llama_kv()[:-3], ("tokenizer.ggml.merges", ARR, (STR, ["x y"] * 5000))]
    h = read_gguf_header(write_gguf(tmp_path / "m.gguf", kv, tiny_llama_tensors()))
    merges = h.metadata["tokenizer.ggml.merges"]
    assert (merges.type, merges.length) == (STR, 5000)


def test_import_gives_the_model_and_its_real_bytes(tiny: Path) -> None:
    imported = import_gguf(tiny)
    arch = imported.architecture
    assert (arch.num_layers, arch.hidden_size, arch.intermediate_size) == (LAYERS, H, FFN)
    assert (arch.num_attention_heads, arch.num_kv_heads, arch.head_dim, arch.vocab_size) == (HEADS, KV, HD, VOCAB)
    assert not arch.tie_word_embeddings and not arch.attention_bias
    assert arch.name == "Tiny Llama"
    assert imported.preset is WeightFormat.Q4_K_M
    # The file's tensors are exactly what llama-quantize's q4_k_m rules give this model:
    assert not [n for n in imported.notes if "other types" in n], imported.notes
    assert count_parameters(arch).total == sum(t.elements for t in imported.header.tensors)
    assert gguf.preset_bytes(arch, "q4_k_m").total == imported.header.weight_bytes


def test_tensors_off_the_preset_rules_are_noted(tmp_path: Path) -> None:
    tensors = [(n, s, "Q8_0" if n == "blk.0.attn_q.weight" else t) for n, s, t in tiny_llama_tensors()]
    imported = import_gguf(write_gguf(tmp_path / "x.gguf", tiny_llama_kv(), tensors))
    assert any("1 tensors are stored at other types" in n for n in imported.notes)


def test_tied_head_and_unknown_file_type(tmp_path: Path) -> None:
    tensors = [t for t in tiny_llama_tensors() if t[0] != "output.weight"]
    imported = import_gguf(write_gguf(tmp_path / "t.gguf", tiny_llama_kv(file_type=99), tensors))
    assert imported.architecture.tie_word_embeddings
    assert imported.preset is None
    assert any("file_type 99" in n for n in imported.notes)


def test_a_qwen2_shaped_file_imports_as_the_catalog_model(tmp_path: Path) -> None:
    """Qwen2.5-0.5B's tensors (q/k/v biases, tied head, rows of 896 that K-quants cannot block) typed
    by the q4_k_m rules: the import gives back the catalog's architecture and the preset."""
    from workbench.catalog.models import load_model_catalog

    a = load_model_catalog()["qwen2.5-0.5b"].architecture
    h, kv = a.hidden_size, a.num_kv_heads * a.head_dim
    tensors = [(t.name, t.shape, t.type) for t in gguf.plan(a, "q4_k_m") if t.role is not None]
    for i in range(a.num_layers):
        b = f"blk.{i}."
        tensors += [(b + "attn_norm.weight", (h,), "F32"), (b + "ffn_norm.weight", (h,), "F32"),
                    (b + "attn_q.bias", (h,), "F32"), (b + "attn_k.bias", (kv,), "F32"),
                    (b + "attn_v.bias", (kv,), "F32")]
    tensors.append(("output_norm.weight", (h,), "F32"))
    meta = [
        ("general.architecture", STR, "qwen2"), ("general.name", STR, "Qwen2.5 0.5B Instruct"),
        ("general.file_type", U32, 15), ("qwen2.block_count", U32, a.num_layers),
        ("qwen2.context_length", U32, a.max_position_embeddings), ("qwen2.embedding_length", U32, h),
        ("qwen2.feed_forward_length", U32, a.intermediate_size),
        ("qwen2.attention.head_count", U32, a.num_attention_heads),
        ("qwen2.attention.head_count_kv", U32, a.num_kv_heads),
        ("qwen2.rope.freq_base", F32, 1000000.0), ("qwen2.attention.layer_norm_rms_epsilon", F32, 1e-6),
    ]
    imported = import_gguf(write_gguf(tmp_path / "qwen.gguf", meta, tensors))
    got = imported.architecture
    assert imported.preset is WeightFormat.Q4_K_M
    assert got.tie_word_embeddings and got.attention_bias
    assert count_parameters(got).total == count_parameters(a).total
    assert not [n for n in imported.notes if "other types" in n or "hold" in n], imported.notes
    assert imported.header.types()["Q8_0"] >= 1  # the tied token_embd: 896 is not whole 256-blocks
    assert imported.header.weight_bytes == gguf.preset_bytes(a, "q4_k_m").total


def _broken(tmp_path: Path, raw: bytes) -> Path:
    p = tmp_path / "broken.gguf"
    p.write_bytes(raw)
    return p


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda raw: b"GGML" + raw[4:], "no 'GGUF' magic"),
        (lambda raw: raw[:4] + struct.pack("<I", 1) + raw[8:], "GGUF version 1"),
        (lambda raw: raw[:8] + struct.pack("<Q", 1 << 62) + raw[16:], "tensor count"),
        (lambda raw: raw[:16] + struct.pack("<Q", 1 << 40) + raw[24:], "metadata count"),
        (lambda raw: raw[:24] + struct.pack("<Q", 1 << 40) + raw[32:], "key length"),
        (lambda raw: raw[:24] + struct.pack("<Q", 10**6) + raw[32:], "key length 1,000,000 exceeds"),
        (lambda raw: raw[:200], "the file ends inside its header"),
        (lambda raw: raw[: len(raw) - 64], "past the end of the file"),
        (lambda raw: b"", "no 'GGUF' magic"),
    ],
)
def test_malformed_files_fail_in_one_line(tiny: Path, tmp_path: Path, mutate: Any, message: str) -> None:
    path = _broken(tmp_path, mutate(tiny.read_bytes()))
    with pytest.raises(ModelImportError, match=message) as info:
        read_gguf_header(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize(
    ("kv", "tensors", "message"),
    [
        ([("k", 99, 0)], [], "unknown value type 99"),
        ([("k", STR, "a"), ("k", STR, "b")], [], "appears twice"),
        ([("k", STR, b"\xff\xfe")], [], "not UTF-8"),
        ([("general.alignment", U32, 12)], [], "alignment"),
        ([("k", ARR, (ARR, [(ARR, [(U8, [1])])]))], [], "nested deeper"),
        ([], [("t", (32,), "Q8_0"), ("t", (32,), "Q8_0")], "appears twice"),
        ([], [("t", (33,), "Q8_0")], "not whole Q8_0 blocks"),
        ([], [("a" * 64, (4,), "F32")], "name length"),
    ],
)
def test_malformed_entries(tmp_path: Path, kv: Any, tensors: Any, message: str) -> None:
    with pytest.raises(ModelImportError, match=message):
        read_gguf_header(write_gguf(tmp_path / "bad.gguf", kv, tensors))


def test_bad_bool_type_id_dims_and_offset(tmp_path: Path) -> None:
    good = write_gguf(tmp_path / "g.gguf", [("flag", BOOL, True)], [("t", (32,), "F32")]).read_bytes()
    flag_at = good.index(b"flag") + 4 + 4
    cases = {
        "a bool must be 0 or 1": good[:flag_at] + b"\x02" + good[flag_at + 1 :],
    }
    name_at = good.index(b"t\x01\x00\x00\x00")  # the tensor name "t", then n_dims = 1
    dims_at, type_at, offset_at = name_at + 1, name_at + 1 + 4 + 8, name_at + 1 + 4 + 8 + 4
    cases["5 dimensions"] = good[:dims_at] + struct.pack("<I", 5) + good[dims_at + 4 :]
    cases["unknown ggml type id 4"] = good[:type_at] + struct.pack("<I", 4) + good[type_at + 4 :]
    cases["not a multiple of the alignment"] = good[:offset_at] + struct.pack("<Q", 8) + good[offset_at + 8 :]
    for message, raw in cases.items():
        with pytest.raises(ModelImportError, match=message):
            read_gguf_header(_broken(tmp_path, raw))


def test_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.gguf"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(ModelImportError):
        read_gguf_header(fifo)
    assert time.monotonic() - started < 5
    with pytest.raises(ModelImportError):
        read_gguf_header(tmp_path)


def test_header_size_limit(tmp_path: Path) -> None:
    # A string value that would run past the header limit is refused before it is read.
    path = tmp_path / "huge.gguf"
    with open(path, "wb") as fh:
        fh.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _string("k") + struct.pack("<IQ", STR, MAX_HEADER_BYTES))
        fh.truncate(MAX_HEADER_BYTES + 1024)  # sparse: no disk used
    with pytest.raises(ModelImportError, match="past"):
        read_gguf_header(path)


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_files_parse_or_fail_cleanly(tmp_path: Path, data: st.DataObject) -> None:
    """Flipped bytes, cut files and spliced garbage: a header or one ModelImportError, quickly."""
    raw = bytearray(_FUZZ_BASE)
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.one_of(st.none(), st.integers(0, len(raw))))
    if cut is not None:
        raw = raw[:cut]
    path = tmp_path / "fuzz.gguf"
    path.write_bytes(bytes(raw))
    started = time.monotonic()
    try:
        read_gguf_header(path)
    except ModelImportError as exc:
        assert "\n" not in str(exc)
    assert time.monotonic() - started < 2


def _fuzz_base() -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        # A whole small file (no tokenizer arrays, small tensors): mutations land in the structure
        # often, and many mutated files still parse.
        kv = [*tiny_llama_kv()[:13], ("general.tags", ARR, (STR, ["a", "b"]))]
        tensors = [("a.weight", (32,), "F32"), ("b.weight", (32, 2), "Q8_0"), ("c.weight", (256, 1), "Q4_K")]
        return write_gguf(Path(d) / "b.gguf", kv, tensors).read_bytes()


_FUZZ_BASE = _fuzz_base()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_cli_import_of_a_gguf(tiny: Path, tmp_path: Path) -> None:
    done = _cli("import", str(tiny))
    assert done.returncode == 0, done.stderr
    assert "Tiny Llama" in done.stdout
    assert "GGUF v3  21 tensors (Q4_K 13, F32 5, Q6_K 3)" in done.stdout
    assert f"({read_gguf_header(tiny).weight_bytes:,} B)" in done.stdout
    assert "--weights q4_k_m" in done.stdout
    done = _cli("estimate", "--model-config", str(tiny), "--gpu", "rtx-4090", "--weights", "q4_k_m", "--json")
    assert done.returncode == 0, done.stderr
    import json

    assert json.loads(done.stdout)["memory"]["per_gpu"]["weights"] == read_gguf_header(tiny).weight_bytes
    broken = _broken(tmp_path, tiny.read_bytes()[:300])
    done = _cli("import", str(broken))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "ends inside its header" in done.stderr
