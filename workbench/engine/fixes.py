"""Fixes for a plan that does not fit: scenario changes, each checked to fit, with a label in plain
words (the window shows them as buttons, the report lists the same labels).

The out-of-memory warning of the memory plugin carries one fix text, written for the command line
and for any scenario. Here each fix is a set of field changes (paths as
:func:`workbench.engine.variations.with_fields` takes them) that respects what the scenario already
uses (no "QLoRA" on a QLoRA run) and was run through the engine: applied, the plan fits and no
guard-rail says it cannot run. GPU counts and layouts come from the solvers, so a fix that adds
GPUs names the TP x PP split that fits, not DP copies that would not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from workbench.core.dtypes import DType, WeightFormat
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import FinetuneMethod, Offload, Recompute, Scenario, Workload
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine
from workbench.engine.quantity import Warning
from workbench.engine.solvers import LayoutSearch, fewest_gpus, largest_fitting, runnable
from workbench.engine.variations import with_fields

#: Fixes offered at most, cheapest kind first (settings, the same GPUs split otherwise, a smaller
#: workload, more GPUs).
MAX_FIXES = 4

#: Fix texts of warnings whose plugin text names command-line flags, in the window's words (by
#: warning code; the plugins keep their text for the command line).
WINDOW_WORDS = {
    "batch-exceeds-kv-cache": "fewer concurrent requests (batch size), more GPUs, or an fp8 KV cache",
    "pipeline-underfilled": "a larger global batch or a smaller micro-batch, so that there are at least "
                            "4 micro-batches per pipeline stage",
    "communication-bound": "more tokens per GPU and step (a larger micro-batch, longer sequences, or "
                           "gradient accumulation through the global batch), fewer GPUs, or a faster "
                           "interconnect",
}


@dataclass(frozen=True)
class Fix:
    """One way to make the plan fit."""

    label: str
    #: Field path -> new value; applied together they make ``estimate``.
    changes: dict[str, Any] = field(hash=False)
    #: The estimate of the scenario with ``changes`` applied (it fits).
    estimate: Estimate = field(hash=False, compare=False)


def fix_text(warning: Warning, fixes: list[Fix] | None = None) -> str:
    """A warning's fix in the window's words. The out-of-memory warning lists ``fixes`` (the
    labels of :func:`memory_fixes`) when they were computed."""
    if warning.code == "out-of-memory" and fixes is not None:
        if not fixes:
            return ("no single change tried here makes it fit (other layouts and GPU counts, a smaller "
                    "batch or sequence, lighter settings)")
        return "; or ".join(f.label[0].lower() + f.label[1:] for f in fixes)
    return WINDOW_WORDS.get(warning.code, warning.fix)


def _layout_words(tp: int, pp: int, dp: int) -> str:
    parts = [f"TP {tp}", f"PP {pp}"] + ([f"DP {dp}"] if dp > 1 else [])
    return " \u00d7 ".join(parts)


def _settings(s: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """Lighter settings the scenario does not use yet, each with its label."""
    out: list[tuple[str, dict[str, Any]]] = []
    par = s.parallel
    if s.is_training:
        if s.recompute is not Recompute.FULL:
            out.append(("Turn on full activation recomputation", {"recompute": Recompute.FULL}))
        if par.dp > 1 and par.zero_stage < 3:
            out.append(("Shard weights, gradients and optimizer states over DP (ZeRO-3)",
                        {"parallel.zero_stage": 3}))
        if s.workload is Workload.FINETUNE and s.method is FinetuneMethod.FULL:
            out.append(("Fine-tune with LoRA adapters", {"method": FinetuneMethod.LORA}))
        elif s.workload is Workload.FINETUNE and s.method is FinetuneMethod.LORA:
            out.append(("Fine-tune with QLoRA (4-bit base weights)", {"method": FinetuneMethod.QLORA, "weights": None}))
        if par.offload_optimizer is Offload.NONE and not (s.workload is Workload.FINETUNE
                                                          and s.method is not FinetuneMethod.FULL):
            out.append(("Keep optimizer states in CPU memory", {"parallel.offload_optimizer": Offload.CPU}))
    else:
        if (s.kv_dtype or s.dtype) not in (DType.FP8,):
            out.append(("Store the KV cache in fp8", {"kv_dtype": DType.FP8}))
        if s.weights is None and s.dtype in (DType.BF16, DType.FP16, DType.FP32):
            out.append(("Store the weights in fp8", {"weights": WeightFormat.FP8}))
            out.append(("Store the weights in int4", {"weights": WeightFormat.INT4}))
    return out


class _Trial:
    """Runs candidate scenarios of one resolved scenario; keeps those that can run."""

    def __init__(self, engine: Engine, resolved: ResolvedScenario) -> None:
        self.engine, self.resolved = engine, resolved

    def scenario(self, changes: dict[str, Any], base: Scenario | None = None) -> Scenario | None:
        candidate = with_fields(base or self.resolved.scenario, changes)
        try:  # with_fields trusts its values; a combination the scenario refuses is no fix
            return Scenario.model_validate(candidate.model_dump())
        except ValidationError:
            return None

    def run(self, label: str, changes: dict[str, Any]) -> Fix | None:
        scenario = self.scenario(changes)
        if scenario is None:
            return None
        estimate = self.engine.run(self.resolved.with_scenario(scenario))
        return Fix(label, changes, estimate) if runnable(estimate) else None


def _layout_changes(base: Scenario, tp: int, pp: int, dp: int) -> dict[str, Any]:
    """A TP x PP x DP split as field changes (EP kept where it still divides, as the solvers do)."""
    ep = base.parallel.ep if (dp * tp) % base.parallel.ep == 0 else 1
    return {"num_gpus": tp * pp * dp, "parallel.tp": tp, "parallel.pp": pp, "parallel.dp": dp, "parallel.ep": ep}


def _workload(trial: _Trial, resolved: ResolvedScenario, prefix: str, base_changes: dict[str, Any]) -> list[Fix]:
    """The largest batch and the longest sequence that fit (after ``base_changes``)."""
    s = resolved.scenario
    out = []
    words = {
        "batch_size": ("at most {v:,} concurrent requests (batch size)" if not s.is_training
                       else "a micro-batch of {v:,}"),
        "seq_len": "prompts of at most {v:,} tokens" if not s.is_training else "sequences of {v:,} tokens",
    }
    for name in ("batch_size", "seq_len"):
        current = getattr(s, name)
        if current <= 1:
            continue
        found = largest_fitting(trial.engine, resolved, name, upper=current - 1)
        if found is None:
            continue
        value, _ = found
        label = prefix + ("Serve " if not s.is_training and name == "batch_size" else "Use ") + words[name].format(v=value)
        fix = trial.run(label, {**base_changes, name: value})
        if fix is not None:
            out.append(fix)
    return out


def _gpus(trial: _Trial, resolved: ResolvedScenario, prefix: str, base_changes: dict[str, Any],
          max_gpus: int) -> list[Fix]:
    """The same GPUs split differently, or the fewest GPUs with the split that fits."""
    s = resolved.scenario
    search = LayoutSearch(trial.engine, resolved)
    out = []
    same = search.best(s.num_gpus)
    if same is not None:
        label = f"{prefix}Split the model as {_layout_words(same.tp, same.pp, same.dp)} on the same {s.num_gpus} GPUs"
        fix = trial.run(label, {**base_changes, **_layout_changes(s, same.tp, same.pp, same.dp)})
        if fix is not None:
            out.append(fix)
    more = fewest_gpus(trial.engine, resolved, max_gpus, search)
    if more is not None and more.tp * more.pp * more.dp > s.num_gpus:
        n = more.tp * more.pp * more.dp
        label = f"{prefix}Use {n:,} GPUs as {_layout_words(more.tp, more.pp, more.dp)}"
        fix = trial.run(label, {**base_changes, **_layout_changes(s, more.tp, more.pp, more.dp)})
        if fix is not None:
            out.append(fix)
    return out


def memory_fixes(engine: Engine, resolved: ResolvedScenario, limit: int = MAX_FIXES,
                 max_gpus: int = 4096, stale: Callable[[], bool] = lambda: False) -> list[Fix]:
    """Up to ``limit`` changes that each make ``resolved`` fit, cheapest kind first.

    Tried: each lighter setting the scenario does not use yet, alone and all together; the same
    GPUs in another split; a smaller batch or sequence; the fewest GPUs with their best split. The
    last three also after the lighter settings together. Settings come first, then the same GPUs,
    then a smaller workload (the one that keeps most of it first), then more GPUs (fewest first).
    ``stale`` stops the search early (an edit made it moot); what was found so far is returned.
    """
    trial = _Trial(engine, resolved)
    ranked: list[tuple[tuple[float, ...], Fix]] = []
    settings = _settings(resolved.scenario)
    for label, changes in settings:
        if stale():
            break
        fix = trial.run(label, changes)
        if fix is not None:
            ranked.append(((0, 0), fix))
    if not stale():
        _add_searches(trial, resolved, "", {}, ranked, max_gpus)
    together = _together(settings)
    lighter = trial.scenario(together) if together else None
    if lighter is not None and not stale() and len(settings) > 1:
        fix = trial.run(_sentence(settings, together), together)
        if fix is not None:
            ranked.append(((0, 1), fix))
    if lighter is not None and not stale() and not any(rank[0] == 0 for rank, _ in ranked):
        prefix = _sentence(settings, together) + ", and "
        _add_searches(trial, resolved.with_scenario(lighter), prefix, together, ranked, max_gpus)
    base = resolved.scenario
    if not ranked and base.batch_size > 1 and not stale():
        # Nothing single or double fits: the lightest plan (lighter settings, one sequence per
        # step) on the fewest GPUs that hold it.
        smallest = {**together, "batch_size": 1}
        lightest = trial.scenario(smallest)
        if lightest is not None:
            words = (_sentence(settings, together) + ", " if together else "") + (
                "serve one request at a time" if not base.is_training else "use a micro-batch of 1")
            prefix = words[0].upper() + words[1:] + ", and "
            for fix in _gpus(trial, resolved.with_scenario(lightest), prefix, smallest, max_gpus):
                ranked.append(((4, fix.changes["num_gpus"]), _lower_first(fix, len(prefix))))
    # A fix that adds GPUs after lighter settings is no better than one that needs no more GPUs
    # without them.
    plain = min((f.changes["num_gpus"] for r, f in ranked if r[0] == 3 and len(r) > 2 and r[2] == 0),
                default=None)
    ranked = [(r, f) for r, f in ranked
              if not (r[0] == 3 and len(r) > 2 and r[2] > 0 and plain is not None and r[1] >= plain)]
    ranked.sort(key=lambda item: item[0])
    seen: set[str] = set()
    out = []
    for _, fix in ranked:
        if fix.label not in seen:
            seen.add(fix.label)
            out.append(fix)
    return out[:limit]


def _add_searches(trial: _Trial, resolved: ResolvedScenario, prefix: str, base_changes: dict[str, Any],
                  ranked: list[tuple[tuple[float, ...], Fix]], max_gpus: int) -> None:
    """The solver-found fixes of ``resolved`` (after ``base_changes``), ranked."""
    s = resolved.scenario
    for fix in _gpus(trial, resolved, prefix, base_changes, max_gpus):
        n = fix.changes["num_gpus"]
        ranked.append(((1, 0) if n == s.num_gpus else (3, n, len(base_changes)), _lower_first(fix, len(prefix))))
    for fix in _workload(trial, resolved, prefix, base_changes):
        name = "batch_size" if "batch_size" in fix.changes else "seq_len"
        kept = fix.changes[name] / getattr(s, name)
        # Keeping less than half the workload is a last resort: more GPUs come before it.
        ranked.append(((2 if kept >= 0.5 else 3.5, -kept, len(base_changes)), _lower_first(fix, len(prefix))))


def _together(settings: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """All lighter settings at once (of the weight formats offered, the lightest)."""
    together: dict[str, Any] = {}
    for _, changes in settings:
        together.update(changes)
    if together.get("weights") is not None:
        together["weights"] = WeightFormat.INT4
    return together


def _sentence(settings: list[tuple[str, dict[str, Any]]], together: dict[str, Any]) -> str:
    """The labels of the settings ``together`` applies, as one sentence."""
    words = [label for label, changes in settings if all(together.get(k) == v for k, v in changes.items())]
    text = ", ".join(w[0].lower() + w[1:] for w in words)
    return text[0].upper() + text[1:]


def _lower_first(fix: Fix, at: int) -> Fix:
    """``fix`` with the word after a joined prefix in lower case ("..., and use 8 GPUs")."""
    if not at:
        return fix
    label = fix.label[:at] + fix.label[at:at + 1].lower() + fix.label[at + 1:]
    return Fix(label, fix.changes, fix.estimate)
