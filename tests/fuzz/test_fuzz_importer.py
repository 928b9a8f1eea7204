"""Fuzz the config importer: real configs mutated, and raw bytes, through the API and the CLI.

Starting from the real published configs under tests/data/configs, keys are dropped or given
wrong types, huge, negative or non-finite numbers, random strings and deep nesting. Each
answer is an architecture whose parameter count is a non-negative integer, or one
:class:`ModelImportError` line (exit 2 in the CLI); nothing else, no hang, the file unchanged.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from fuzz_support import FUZZ, assert_cli_contract, assert_one_line, digest, no_hang, run_cli
from hypothesis import event, given, settings
from hypothesis import strategies as st

from workbench.catalog.hf_config import import_hf_config, import_hf_path
from workbench.core.errors import ModelImportError
from workbench.core.params import count_parameters

_DATA = Path(__file__).resolve().parents[1] / "data" / "configs"
CONFIGS = {p.parent.name: json.loads(p.read_text()) for p in sorted(_DATA.glob("*/config.json"))}

#: Values a hostile or careless config may hold where a number is expected.
WEIRD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2, 3, 7, 10**9, 10**12, 2**31, 2**63 - 1, 2**63, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(min_value=-4, max_value=10**6), max_size=6),
    st.dictionaries(st.text(max_size=6), st.integers(), max_size=3),
)


def _paths(config: dict[str, Any]) -> list[tuple[str, ...]]:
    """Every key of the config, nested ones (``text_config.hidden_size``) included."""
    found: list[tuple[str, ...]] = []
    stack: list[tuple[dict[str, Any], tuple[str, ...]]] = [(config, ())]
    while stack:
        mapping, prefix = stack.pop()
        for key, value in mapping.items():
            found.append((*prefix, key))
            if isinstance(value, dict):
                stack.append((value, (*prefix, key)))
    return sorted(found)


def _nest(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def mutated_configs(draw: st.DrawFn) -> dict[str, Any]:
    config = copy.deepcopy(CONFIGS[draw(st.sampled_from(sorted(CONFIGS)))])
    paths = _paths(config)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        path = draw(st.sampled_from(paths))
        parent = config
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None  # type: ignore[assignment]
        if not isinstance(parent, dict):
            continue
        action = draw(st.sampled_from(["drop", "replace", "nest", "add"]))
        if action == "drop":
            parent.pop(path[-1], None)
        elif action == "replace":
            parent[path[-1]] = draw(WEIRD)
        elif action == "nest":
            parent[path[-1]] = _nest(parent.get(path[-1]), draw(st.integers(min_value=1, max_value=200)))
        else:
            parent[draw(st.text(max_size=10))] = draw(WEIRD)
    return config


def _check_answer(outcome: Any) -> None:
    counts = count_parameters(outcome.architecture)
    assert isinstance(counts.total, int) and counts.total >= 0
    assert 0 <= counts.active <= counts.total


@settings(FUZZ, max_examples=500)
@given(mutated_configs())
def test_mutated_configs(config: dict[str, Any]) -> None:
    before = repr(config)
    with no_hang():
        try:
            _check_answer(import_hf_config(config, source="fuzzed.json"))
            event("imported")
        except ModelImportError as exc:
            event("refused")
            assert_one_line(exc)
            assert str(exc).startswith("fuzzed.json")
    assert repr(config) == before  # the caller's dict is not changed


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-importer")


def _dump(config: dict[str, Any]) -> bytes:
    # Python's json writes NaN/Infinity literals and integers of any size, as a careless tool would.
    import sys

    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return json.dumps(config, allow_nan=True).encode()
    finally:
        sys.set_int_max_str_digits(old)


@settings(FUZZ, max_examples=300)
@given(mutated_configs())
def test_mutated_config_files_through_the_cli(folder: Path, config: dict[str, Any]) -> None:
    path = folder / "config.json"
    path.write_bytes(_dump(config))
    before = digest(path)
    with no_hang():
        code, out, err = run_cli("import", "--json", str(path))
    assert_cli_contract(code, out, err)
    event(f"exit {code}")
    if code == 0:
        doc = json.loads(out)
        assert doc["parameters"]["total"] >= 0
    assert digest(path) == before


_TOKENS = [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"9" * 5000, b"[" * 3000, b"{", b"}", b'"', b"\\",
           b"\xff", b"\xc3", b"\x00", b"\xef\xbb\xbf", b"-0", b"1.5", b"null", b"true", b",", b":"]


@st.composite
def raw_configs(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()):
        return draw(st.binary(max_size=400))
    raw = bytearray(_dump(CONFIGS[draw(st.sampled_from(sorted(CONFIGS)))]))
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        at = draw(st.integers(min_value=0, max_value=len(raw)))
        action = draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        if action == "flip" and at < len(raw):
            raw[at] ^= 1 << draw(st.integers(min_value=0, max_value=7))
        elif action == "cut":
            del raw[at:]
        elif action == "insert":
            raw[at:at] = draw(st.sampled_from(_TOKENS))
        else:
            del raw[at : at + draw(st.integers(min_value=1, max_value=40))]
    return bytes(raw)


@settings(FUZZ, max_examples=400)
@given(raw_configs())
def test_raw_bytes(folder: Path, raw: bytes) -> None:
    path = folder / "raw-config.json"
    path.write_bytes(raw)
    before = digest(path)
    with no_hang():
        try:
            _check_answer(import_hf_path(path))
            event("imported")
        except ModelImportError as exc:
            event("refused")
            assert_one_line(exc)
            assert str(path) in str(exc)
    assert digest(path) == before


@settings(FUZZ, max_examples=200)
@given(raw_configs())
def test_raw_bytes_through_the_cli(folder: Path, raw: bytes) -> None:
    model = folder / "model"
    model.mkdir(exist_ok=True)
    path = model / "config.json"
    path.write_bytes(raw)
    before = digest(path)
    with no_hang():
        code, out, err = run_cli("import", str(model))
    assert_cli_contract(code, out, err)
    event(f"exit {code}")
    assert digest(path) == before


def test_the_real_configs_all_import() -> None:
    """The starting points are valid: mutations, not the seeds, make the refusals."""
    assert len(CONFIGS) >= 20
    for name, config in CONFIGS.items():
        counts = count_parameters(import_hf_config(config, source=name).architecture)
        assert counts.total > 0 and math.isfinite(counts.total)
