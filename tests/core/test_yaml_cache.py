"""The parsed-YAML cache: the same data as parsing, never stale, and never a way to run code."""

from __future__ import annotations

import datetime as dt
import pickle
from pathlib import Path

import pytest
import yaml

from workbench.core import yaml_cache
from workbench.core.yaml_cache import load_yaml

TEXT = """
name: h100
date: 2024-03-18
when: 2024-03-18T10:00:00+01:00
figures: [1.5, 3, -0.1, null, true, "text"]
nested: {a: {b: [1, 2]}}
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(folder))
    return folder


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.pickle"))


def test_the_cached_document_equals_the_parsed_one_with_its_dates(cache: Path) -> None:
    expected = yaml.safe_load(TEXT)
    assert isinstance(expected["date"], dt.date) and isinstance(expected["when"], dt.datetime)
    assert load_yaml(TEXT) == expected  # parsed, then stored
    assert len(_entries(cache)) == 1
    assert load_yaml(TEXT) == expected  # read back from the entry
    assert load_yaml(TEXT) is not load_yaml(TEXT)  # a fresh object every time: callers may mutate it


def test_the_entry_is_what_a_second_load_reads_and_an_edited_text_is_parsed_afresh(cache: Path) -> None:
    load_yaml(TEXT)
    (entry,) = _entries(cache)
    entry.write_bytes(pickle.dumps({"from": "the cache"}))
    assert load_yaml(TEXT) == {"from": "the cache"}
    assert load_yaml(TEXT + "\nextra: 1\n")["extra"] == 1  # other text, other key: never stale
    assert len(_entries(cache)) == 2


def test_a_damaged_entry_is_parsed_afresh_and_replaced(cache: Path) -> None:
    load_yaml(TEXT)
    (entry,) = _entries(cache)
    entry.write_bytes(b"\x80\x05 not a pickle")
    assert load_yaml(TEXT) == yaml.safe_load(TEXT)
    assert load_yaml(TEXT) == yaml.safe_load(TEXT)
    assert pickle.loads(entry.read_bytes()) == yaml.safe_load(TEXT)


class _Planted:
    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (Path.touch, (Path(self.target),))

    def __init__(self, target: Path) -> None:
        self.target = str(target)


def test_a_planted_entry_cannot_run_code(cache: Path, tmp_path: Path) -> None:
    load_yaml(TEXT)
    (entry,) = _entries(cache)
    marker = tmp_path / "ran"
    entry.write_bytes(pickle.dumps(_Planted(marker)))
    assert load_yaml(TEXT) == yaml.safe_load(TEXT)
    assert not marker.exists()


def test_a_cache_that_cannot_be_written_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(blocker / "cache"))
    assert load_yaml(TEXT) == yaml.safe_load(TEXT)
    assert list(tmp_path.iterdir()) == [blocker]  # no temporary file left behind


def test_yaml_errors_are_the_same_with_or_without_the_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = "a: [1, 2\nb: 3\n"
    with pytest.raises(yaml.YAMLError) as cached:
        load_yaml(bad)
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", "off")
    with pytest.raises(yaml.YAMLError) as plain:
        load_yaml(bad)
    assert str(cached.value) == str(plain.value)
    assert not cache.exists() or not _entries(cache)


def test_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", "off")
    assert yaml_cache.cache_dir() is None
    assert load_yaml(TEXT) == yaml.safe_load(TEXT)


def test_old_entries_are_pruned(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yaml_cache, "MAX_ENTRIES", 3)
    for i in range(6):
        load_yaml(f"n: {i}\n")
    assert len(_entries(cache)) == 3
