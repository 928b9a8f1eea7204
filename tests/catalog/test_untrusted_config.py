"""A hostile or broken ``config.json`` is refused in one line: no hang, no huge read, no traceback.

Each case is a file someone could hand the importer (or the CLI's ``import``): not a regular
file, too big, not UTF-8, nested too deep, an integer of thousands of digits, ``NaN``, absurd
sizes. The answer is always a :class:`ModelImportError` naming the file (exit 2 in the CLI).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from test_cli_bad_input import assert_one_line_error, run_cli

from workbench.catalog.hf_config import import_hf_config, import_hf_path, read_config_json
from workbench.catalog.safe_read import COUNT_LIMITS, MAX_CONFIG_BYTES, MAX_JSON_DEPTH, check_counts
from workbench.core.errors import ModelImportError

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
LLAMA = json.loads((CONFIGS / "llama-3.1-8b" / "config.json").read_text())


def _refused(path: Path, *needles: str) -> str:
    start = time.perf_counter()
    with pytest.raises(ModelImportError) as info:
        import_hf_path(path)
    assert time.perf_counter() - start < 2.0
    message = str(info.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, message
    return message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    _refused(fifo, "config.json", "FIFO")
    _refused(tmp_path, "FIFO")  # as a model folder's config.json, too


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_device_is_refused_without_reading_it(tmp_path: Path) -> None:
    _refused(Path("/dev/zero"), "device")
    (tmp_path / "config.json").symlink_to("/dev/zero")
    _refused(tmp_path, "config.json")


def test_a_folder_named_config_json_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelImportError, match="a folder"):
        read_config_json(tmp_path)


def test_a_huge_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "config.json"
    with big.open("wb") as fh:  # sparse: no disk space used
        fh.truncate(MAX_CONFIG_BYTES + 1)
    _refused(big, f"{MAX_CONFIG_BYTES:,}-byte limit")


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b'{"model_type": "llama\xe9"}', "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, f"nested more than {MAX_JSON_DEPTH} levels"),
        (b'{"a": ' * 200 + b"1" + b"}" * 200, f"nested more than {MAX_JSON_DEPTH} levels"),
        (b'{"num_hidden_layers": ' + b"9" * 5000 + b"}", "5,000 digits"),
        (b'{"num_hidden_layers": -' + b"9" * 30 + b"}", "30 digits"),
        (b'{"model_type": "llama", "rope_theta": NaN}', "NaN is not a number"),
        # Infinity parses (Python's json writes it, so real configs hold it), but never as a size:
        (b'{"model_type": "llama", "num_hidden_layers": Infinity}', "must be a finite number"),
        (b'{"model_type": "llama", "hidden_size": -Infinity}', "must be a finite number"),
        (b'{"model_type": "llama", "vocab_size": 1e999}', "must be a finite number"),
        (b'{"model_type": "llama",', "not valid JSON"),
        (b"", "not valid JSON"),
        (b'["llama"]', "must be a JSON object"),
    ],
)
def test_malformed_json_is_one_line(tmp_path: Path, raw: bytes, needle: str) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(raw)
    _refused(path, str(path), needle)


def test_infinity_where_a_real_config_has_it_is_read(tmp_path: Path) -> None:
    """Nemotron-H's published config.json holds ``"time_step_limit": [0.0, Infinity]`` (Python's json
    writes float('inf') so): a bound, not a size, and the config imports."""
    path = tmp_path / "config.json"
    path.write_bytes(b'{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, '
                     b'"num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, '
                     b'"time_step_limit": [0.0, Infinity]}')
    assert import_hf_path(path).architecture.num_layers == 2


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"num_hidden_layers": 10**9}, "'num_hidden_layers' = 1,000,000,000 is above the limit of 10,000"),
        ({"hidden_size": 10**12}, "'hidden_size' = 1,000,000,000,000 is above the limit"),
        ({"hidden_size": 1e12}, "'hidden_size' = 1e+12 is above the limit"),
        ({"vocab_size": 10**15}, "'vocab_size'"),
        ({"num_attention_heads": 10**7}, "'num_attention_heads'"),
        ({"max_position_embeddings": 10**30}, "'max_position_embeddings'"),
        ({"rope_scaling": {"factor": 8.0, "original_max_position_embeddings": 10**40}}, "133 bits"),
        ({"num_hidden_layers": float("inf")}, "finite"),
        ({"rope_theta": float("nan")}, "'rope_theta' is NaN"),
        ({"rope_theta": float("inf")}, "'rope_theta' must be a positive finite number"),
        ({"num_hidden_layers": 10**5000}, "16,610 bits"),
    ],
)
def test_absurd_sizes_are_refused_at_once(change: dict[str, object], needle: str) -> None:
    start = time.perf_counter()
    with pytest.raises(ModelImportError) as info:
        import_hf_config({**LLAMA, **change}, source="c.json")
    assert time.perf_counter() - start < 0.5
    assert needle in str(info.value)
    assert str(info.value).startswith("c.json: ")


def test_absurd_sizes_in_a_nested_config() -> None:
    gemma = json.loads((CONFIGS / "gemma-3-4b-it" / "config.json").read_text())
    gemma["text_config"]["num_hidden_layers"] = 10**8
    with pytest.raises(ModelImportError, match=r"'text_config\.num_hidden_layers' = 100,000,000"):
        import_hf_config(gemma)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"num_hidden_layers": "32"}, "must be an integer"),
        ({"num_hidden_layers": True}, "must be an integer"),
        ({"num_hidden_layers": -4}, "at least 1"),
        ({"hidden_size": [4096]}, "must be an integer"),
        ({"rope_scaling": "yarn"}, "must be an object"),
        ({"tie_word_embeddings": "no"}, "true or false"),
        ({"model_type": 7}, "must be a string"),
    ],
)
def test_wrong_types_are_one_line(change: dict[str, object], needle: str) -> None:
    with pytest.raises(ModelImportError, match=needle):
        import_hf_config({**LLAMA, **change})


def test_every_real_config_is_within_the_limits() -> None:
    """The limits sit far above every model we know: the shipped real configs all pass them."""
    configs = sorted(CONFIGS.glob("*/config.json"))
    assert len(configs) >= 20
    for path in configs:
        data = read_config_json(path)
        check_counts(data, str(path))
        for key, value in data.items():
            if key in COUNT_LIMITS and isinstance(value, int):
                assert value * 10 <= COUNT_LIMITS[key][0], (path, key)


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b'{"model_type": "llama", "num_hidden_layers": 1000000000}', "above the limit"),
        (b'{"model_type": "llama", "rope_theta": NaN}', "NaN"),
        (b'{"a": ' + b"9" * 5000 + b"}", "digits"),
        (b"[" * 50_000 + b"]" * 50_000, "nested"),
        (b"\xff\xfe{}", "UTF-8"),
    ],
)
def test_cli_import_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], raw: bytes,
                                          needle: str) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(raw)
    assert_one_line_error(*run_cli(capsys, "import", str(path)), needle)
    assert_one_line_error(*run_cli(capsys, "import", str(tmp_path)), needle)
    assert path.read_bytes() == raw


def test_a_name_too_long_to_show_is_not_taken_from_the_file() -> None:
    """A 100,000-character ``_name_or_path`` (a broken or hostile file) is no model name: the
    model type stands in; a name over the limit given any other way is refused in one line."""
    arch = import_hf_config({**LLAMA, "_name_or_path": "x" * 100_000}).architecture
    assert arch.name == "llama"
    with pytest.raises(ModelImportError) as info:
        import_hf_config(LLAMA, name="y" * 201, source="c.json")
    assert "\n" not in str(info.value) and "200" in str(info.value)
