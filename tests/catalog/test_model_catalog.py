"""The model catalog loader: the shipped files, and made-up catalogs for the error paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from workbench.catalog import models as catalog
from workbench.core.errors import CatalogError, ModelImportError
from workbench.core.params import count_parameters

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
SAFETENSORS = Path(__file__).resolve().parents[1] / "data" / "safetensors"


def entry(model_id: str, config_name: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": model_id,
        "name": model_id.title(),
        "family": "llama",
        "hf_repo": f"example/{model_id}",
        "published_parameters": 8_030_000_000,
        "published_parameters_note": None,
        "active_parameters": None,
        "source": {"title": "Model card", "url": "https://example.org/card", "retrieved": "2025-01-01"},
        "config": json.loads((CONFIGS / config_name / "config.json").read_text()),
    }
    data.update(changes)
    return data


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    catalog.clear_cache()
    (tmp_path / "llama-3.1-8b.json").write_text(json.dumps(entry("llama-3.1-8b", "llama-3.1-8b")))
    (tmp_path / "mixtral-8x7b.json").write_text(
        json.dumps(entry("mixtral-8x7b", "mixtral-8x7b", family="mistral", published_parameters=46.7e9,
                         active_parameters=12.9e9))
    )
    yield tmp_path
    catalog.clear_cache()


def test_loads_and_imports(folder: Path) -> None:
    models = catalog.load_model_catalog(folder)
    assert sorted(models) == ["llama-3.1-8b", "mixtral-8x7b"]
    llama = models["llama-3.1-8b"]
    assert llama.architecture.name == "Llama-3.1-8B"
    assert llama.architecture.source == "example/llama-3.1-8b"
    assert count_parameters(llama.architecture).total == 8_030_261_248
    assert llama.source.url == "https://example.org/card"
    mixtral = models["mixtral-8x7b"]
    assert mixtral.published_parameters == 46_700_000_000 and isinstance(mixtral.published_parameters, int)
    assert mixtral.architecture.family == "mistral"


def test_cached_until_cleared(folder: Path) -> None:
    first = catalog.load_model_catalog(folder)["llama-3.1-8b"]
    assert catalog.load_model_catalog(folder)["llama-3.1-8b"] is first
    catalog.clear_cache()
    assert catalog.load_model_catalog(folder)["llama-3.1-8b"] is not first


def test_get_model_suggests(folder: Path) -> None:
    assert catalog.get_model("llama-3.1-8b", folder).id == "llama-3.1-8b"
    assert catalog.get_model("LLAMA-3.1-8B", folder).id == "llama-3.1-8b"
    with pytest.raises(CatalogError, match="unknown model 'llama-3.1-7b'; did you mean 'llama-3.1-8b'"):
        catalog.get_model("llama-3.1-7b", folder)
    with pytest.raises(CatalogError, match="unknown model 'zzz'$"):
        catalog.get_model("zzz", folder)


def test_resolve_model(folder: Path) -> None:
    assert catalog.resolve_model("mixtral-8x7b", folder).moe is not None
    assert catalog.resolve_model("example/llama-3.1-8b", folder).num_kv_heads == 8
    by_file = catalog.resolve_model(str(CONFIGS / "gpt2" / "config.json"), folder)
    assert by_file.hf_model_type == "gpt2"
    by_folder = catalog.resolve_model(SAFETENSORS / "tiny-llama", folder)
    assert by_folder.name == "tiny-llama"
    with pytest.raises(ModelImportError, match="no such file or folder"):
        catalog.resolve_model("./nowhere/config.json", folder)
    with pytest.raises(CatalogError, match="did you mean 'mixtral-8x7b'"):
        catalog.resolve_model("mixtral-8x7", folder)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{oops", "not valid JSON"),
        ("[]", "must be a JSON object"),
        (json.dumps({"name": "x", "config": {}, "source": {}}), "missing required key 'id'"),
        (json.dumps(entry("x", "gpt2", extra=1)), "unknown key 'extra'"),
        (json.dumps(entry("x", "gpt2", config=[1])), "'config' must be"),
        (json.dumps(entry("x", "gpt2", source={"title": "t"})), "source.url"),
        (json.dumps(entry("x", "gpt2", published_parameters=-5)), "published_parameters"),
        (json.dumps(entry("x", "gpt2", config={"model_type": "gpt2", "n_layer": "many"})), "'n_layer'"),
    ],
)
def test_bad_files_name_the_file_and_field(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    catalog.clear_cache()
    with pytest.raises(CatalogError, match=message) as info:
        catalog.load_model_catalog(tmp_path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_duplicate_ids(folder: Path) -> None:
    (folder / "copy.json").write_text(json.dumps(entry("llama-3.1-8b", "llama-3.1-8b")))
    catalog.clear_cache()
    with pytest.raises(CatalogError, match="already used"):
        catalog.load_model_catalog(folder)


def test_shipped_catalog_loads() -> None:
    """Every shipped file is valid, imports, and cites a source (the counts are in tests/validation)."""
    catalog.clear_cache()
    models = catalog.load_model_catalog()
    for model in models.values():
        assert model.path is not None and model.path.stem == model.id, f"{model.path}: file name != id"
        assert model.source.url.startswith("http"), model.id
        assert count_parameters(model.architecture).total > 0


def test_no_qt_imported() -> None:
    code = (
        "import sys, workbench.catalog.models, workbench.catalog.hf_config, "
        "workbench.catalog.safetensors_header, workbench.core.params; "
        "heavy = ('PySide6', 'pyqtgraph', 'torch', 'transformers'); "
        "bad = [m for m in sys.modules if m.split('.')[0] in heavy]; "
        "sys.exit(', '.join(bad) or None)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
