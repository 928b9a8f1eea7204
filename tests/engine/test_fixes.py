"""Fixes for plans that do not fit: each one, applied, fits; they respect what the scenario uses;
a fix that adds GPUs names the model-parallel split that fits; the words are the window's."""

from __future__ import annotations

import pytest

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.engine.fixes import WINDOW_WORDS, fix_text, memory_fixes
from workbench.engine.quantity import Warning
from workbench.engine.solvers import runnable
from workbench.engine.variations import with_fields


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    from workbench.pluginhost import default_engine

    return default_engine()


def _resolved(**fields):  # type: ignore[no-untyped-def]
    from workbench.catalog.resolve import resolve_scenario

    return resolve_scenario(Scenario(name="s", **fields), Project())


CASES = {
    "70b-serving-on-one-h100": dict(model="llama-3.1-70b", gpu="h100-sxm", batch_size=64, seq_len=8192),
    "70b-qlora-on-one-h100": dict(model="llama-3.1-70b", gpu="h100-sxm", workload="finetune", method="qlora",
                                  batch_size=4, seq_len=4096),
    "70b-qlora-on-one-4090": dict(model="llama-3.1-70b", gpu="rtx-4090", workload="finetune", method="qlora",
                                  batch_size=4, seq_len=4096),
    "70b-pretrain-dp8": dict(model="llama-3.1-70b", gpu="h100-sxm", workload="pretrain", num_gpus=8,
                             parallel={"dp": 8}, batch_size=2, seq_len=4096),
    "8b-long-context-serving": dict(model="llama-3.1-8b", gpu="h100-sxm", batch_size=512, seq_len=32768),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_fix_fits_when_applied(engine, case: str) -> None:  # type: ignore[no-untyped-def]
    resolved = _resolved(**CASES[case])
    assert engine.run(resolved).get("memory.fits") is False
    fixes = memory_fixes(engine, resolved)
    assert fixes, f"{case}: no fix found"
    for fix in fixes:
        applied = Scenario.model_validate(with_fields(resolved.scenario, fix.changes).model_dump())
        estimate = engine.run(resolved.with_scenario(applied))
        assert runnable(estimate), fix.label
        assert "--" not in fix.label and fix.label[0].isupper()


def test_more_gpus_name_the_split_that_fits_not_copies(engine) -> None:  # type: ignore[no-untyped-def]
    resolved = _resolved(**CASES["70b-serving-on-one-h100"])
    more = [f for f in memory_fixes(engine, resolved) if f.changes.get("num_gpus", 1) > 1]
    assert more and more[0].label == "Use 8 GPUs as TP 8 \u00d7 PP 1"
    for fix in more:
        assert fix.changes["parallel.tp"] * fix.changes["parallel.pp"] > 1  # DP copies alone never fit
        assert fix.changes["num_gpus"] == (fix.changes["parallel.tp"] * fix.changes["parallel.pp"]
                                           * fix.changes["parallel.dp"])


def test_fixes_respect_the_current_settings(engine) -> None:  # type: ignore[no-untyped-def]
    qlora = memory_fixes(engine, _resolved(**CASES["70b-qlora-on-one-h100"]))
    assert not any("LoRA" in f.label for f in qlora)  # already on QLoRA
    assert any("recomputation" in f.label for f in qlora)
    recomputing = memory_fixes(engine, _resolved(**CASES["70b-qlora-on-one-h100"], recompute="full"))
    assert recomputing and not any("recomputation" in f.label for f in recomputing)
    full = memory_fixes(engine, _resolved(model="llama-3.1-8b", gpu="rtx-4090", workload="finetune",
                                          method="full", batch_size=1, seq_len=1024))
    assert any("LoRA" in f.label for f in full)


def test_window_words_replace_flag_texts() -> None:
    for code, words in WINDOW_WORDS.items():
        assert "--" not in words
        assert fix_text(Warning(code, "m", "warning", "lower --batch")) == words
    assert fix_text(Warning("other", "m", "warning", "set EP to 1")) == "set EP to 1"
    oom = Warning("out-of-memory", "m", "error", "use at least 4 GPUs")
    assert "no single change" in fix_text(oom, [])
    assert fix_text(oom, None) == "use at least 4 GPUs"
