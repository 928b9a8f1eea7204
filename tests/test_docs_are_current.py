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


def _readme_examples() -> list[tuple[list[str], str | None]]:
    """The `gpu-workbench ...` lines of the README's "What it answers" block, each with the comment
    line that follows it (its quoted answer) when there is one."""
    import shlex

    text = (ROOT / "README.md").read_text()
    block = text.split("## What it answers", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    lines = block.splitlines()
    examples = []
    for i, line in enumerate(lines):
        if line.startswith("gpu-workbench ") and "..." not in line:
            after = lines[i + 1] if i + 1 < len(lines) else ""
            quoted = after[len("#   "):] if after.startswith("#   ") else None
            examples.append((shlex.split(line.split(" #", 1)[0])[1:], quoted))
    return examples


@pytest.mark.parametrize("argv,quoted", _readme_examples(), ids=lambda v: " ".join(v[:2]) if isinstance(v, list) else "")
def test_readme_examples_run_and_print_what_the_readme_quotes(argv, quoted, capsys) -> None:  # type: ignore[no-untyped-def]
    """Every command of the README's "What it answers" block runs; a `solve` answer or a warning it
    quotes is the one printed, word for word (the numbers are the engine's: a change shows here)."""
    from workbench.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    if argv[0] == "solve" and quoted is not None:
        assert out.splitlines()[0] == quoted
    if quoted is not None and quoted.startswith("["):  # a warning, as the CLI words it
        assert quoted in " ".join(out.split())


def test_every_warning_code_is_documented() -> None:
    """Each code a first-party plugin or the engine can emit is in docs/output-keys.md's table."""
    sources = [*ROOT.glob("plugins/workbench_*/*.py"), *ROOT.glob("workbench/engine/*.py")]
    codes = {m for path in sources for m in re.findall(r'Warning\(\s*"([a-z0-9-]+)"', path.read_text())}
    assert len(codes) > 15  # the pattern still finds them
    documented = (ROOT / "docs" / "output-keys.md").read_text().split("## Warning codes", 1)[1]
    assert sorted(c for c in codes if f"| `{c}` |" not in documented) == []


def test_readme_lists_every_model_type_the_importer_knows() -> None:
    from workbench.catalog.hf_config import known_model_types

    readme = (ROOT / "README.md").read_text()
    section = readme.split("reads these `model_type`s", 1)[1].split("Any other type", 1)[0]
    listed = set(re.findall(r"`([a-z0-9_-]+)`", section))
    assert listed == known_model_types()
