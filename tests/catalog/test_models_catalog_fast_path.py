"""Resolving one catalog model reads its own file, not the whole catalog, and gives the same model."""

from __future__ import annotations

from workbench.catalog import models as M


def test_one_model_is_read_from_its_own_file_and_equals_the_catalogs() -> None:
    M.clear_cache()
    alone = M.resolve_model("llama-3.1-8b")
    assert M._load.cache_info().currsize == 0  # the other files were not parsed
    whole = M.load_model_catalog()["llama-3.1-8b"].architecture
    assert alone == whole
    # once the catalog is in memory it answers, and an id that is a repo name still resolves
    assert M.resolve_model("llama-3.1-8b") == whole
    repo = M.load_model_catalog()["llama-3.1-8b"].hf_repo
    if repo:
        M.clear_cache()
        assert M.resolve_model(repo) == whole
    M.clear_cache()
