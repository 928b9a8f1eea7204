"""The documentation names every result key and every assumption the engine has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.api import estimate
from workbench.pluginhost import default_engine

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "docs" / "output-keys.md").read_text() + (ROOT / "docs" / "validation.md").read_text()

SCENARIOS = [
    dict(model="llama-3.1-8b", gpu="h100-sxm"),
    dict(model="mixtral-8x7b", gpu="a100-80gb-sxm", num_gpus=4, parallel={"tp": 4}, batch_size=16),
    dict(model="llama-3.1-70b", gpu="h100-sxm", num_gpus=64, workload="pretrain",
         parallel={"zero_stage": 3, "dp": 64}, train_tokens=1e12),
    dict(model="llama-3.1-8b", gpu="l40s", workload="finetune", method="qlora"),
    dict(model="t5-base", gpu="l4"),
]


@pytest.mark.parametrize("fields", SCENARIOS, ids=lambda f: f"{f['model']}-{f.get('workload', 'inference')}")
def test_every_result_key_is_documented(fields: dict) -> None:
    est = estimate(**fields)
    assert not est.failures
    missing = [key for key in est.values if f"`{key}`" not in DOCS]
    assert missing == [], "document these keys in docs/output-keys.md or docs/validation.md"


def test_readme_lists_every_assumption() -> None:
    readme = (ROOT / "README.md").read_text()
    missing = [ident for ident in default_engine().assumptions if f"`{ident}`" not in readme]
    assert missing == [], "run `gpu-workbench assumptions --markdown` and update the README table"


def test_readme_validation_table_matches_docs() -> None:
    """The README copies the validation table of docs/validation.md (kept current by its own test)."""

    def rows(text: str) -> list[str]:
        return [line for line in text.splitlines() if re.match(r"\| [TIR]\d+ \|", line)]

    docs = rows((ROOT / "docs" / "validation.md").read_text())
    assert docs and rows((ROOT / "README.md").read_text()) == docs
