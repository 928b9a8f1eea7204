"""Serving stacks as a scenario input: each engine's documented defaults, resolved in one place.

The defaults are data, with their sources: ``resources/engines/serving.yaml`` (beside the
catalog, which the architecture guide keeps under ``resources/`` as YAML with sources). They are
read here, in the engine layer, rather than by a plugin, because both the memory plugin (how much
of the GPU the server may use) and the performance plugin (the scheduler the simulator runs)
need the same resolved scenario, and plugins may import only ``workbench.core`` and
``workbench.engine``.

:func:`resolve` is the one place where "not set explicitly" turns into a number: a knob of
:data:`~workbench.core.scenario.ENGINE_KNOBS` that is not in the serving options'
``model_fields_set`` takes the engine's default for the scenario's GPU (vLLM's and SGLang's
depend on its memory). A knob the source does not give (null in the data) keeps its generic
value, and :func:`provenance` says so. ``generic`` resolves to the scenario unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from workbench.core.hardware import Accelerator
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import ENGINE_KNOBS, Batching, Scenario, ServingEngine, ServingOptions
from workbench.core.yaml_cache import load_yaml
from workbench.paths import resources_dir

_MIB_PER_GIB = 1024


@dataclass(frozen=True, slots=True)
class Default:
    """One knob's value under an engine: None where the source gives none (generic kept)."""

    value: Any
    source: str


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    path = resources_dir() / "engines" / "serving.yaml"
    data = load_yaml(path.read_text(encoding="utf-8"))
    engines = data.get("engines") if isinstance(data, dict) else None
    missing = {e.value for e in ServingEngine} - set(engines or {})
    if missing:
        raise ValueError(f"{path}: no entry for engine(s) {', '.join(sorted(missing))}")
    return engines


def memory_rule(engine: ServingEngine) -> str:
    """``total`` (a fraction of the whole GPU, claimed up front) or ``free`` (a fraction of the
    memory left after weights and workspace: TensorRT-LLM)."""
    return str(_table()[engine.value]["memory_rule"])


def memory_knob(engine: ServingEngine) -> str:
    """The engine's own name for its memory fraction (what ``--explain`` shows)."""
    return str(_table()[engine.value]["memory_knob"])


def _banded(entry: dict[str, Any], gpu: Accelerator) -> dict[str, Any] | None:
    """The first band whose memory floor the GPU reaches (and whose name filter it passes)."""
    name = gpu.name.lower()
    for band in entry["bands"]:
        if gpu.memory_gib >= band["min_gib"] and band.get("exclude_name", "\0") not in name:
            return band
    return None


def _value(entry: dict[str, Any], gpu: Accelerator) -> Any:
    if "bands" in entry:
        band = _banded(entry, gpu)
        return None if band is None else band["value"]
    return entry["value"]


def _sglang_fraction(engine: dict[str, Any], gpu: Accelerator, tp: int, pp: int) -> float:
    """SGLang's mem_fraction_static for this GPU and layout: the device's memory less a reserve
    for activations of one prefill chunk and the CUDA graphs (in MiB, as ServerArgs counts)."""
    rule = engine["memory_fraction_rule"]
    band = _banded(engine["step_token_budget"], gpu)
    assert band is not None  # the last band starts at 0 GiB
    chunk = band["value"]
    graph_batch = band["graph_batch"][0 if tp < 4 else 1]
    mib = gpu.memory_gib * _MIB_PER_GIB
    reserved = (
        rule["base_mib"]
        + max(chunk, rule["min_chunk_tokens"]) * rule["per_chunk_token_mib"]
        + graph_batch * rule["per_graph_batch_mib"]
        + tp * pp * rule["per_parallel_rank_mib"]
    )
    floor = rule["floor_mib_above"]
    if gpu.memory_gib > floor["gib"]:
        reserved = max(reserved, floor["mib"])
    return round((mib - reserved) / mib, 3)


def engine_defaults(engine: ServingEngine, gpu: Accelerator, tp: int = 1, pp: int = 1) -> dict[str, Default]:
    """Each knob of :data:`ENGINE_KNOBS` under ``engine`` on ``gpu``, with its source."""
    e = _table()[engine.value]
    fraction = e["memory_fraction"]
    if fraction.get("rule") == "sglang":
        memory = Default(_sglang_fraction(e, gpu, tp, pp), fraction["source"])
    else:
        memory = Default(fraction["value"], fraction["source"])
    chunked = e["chunked_prefill"]
    batching = None if chunked["value"] is None else Batching.CHUNKED if chunked["value"] else Batching.CONTINUOUS
    return {
        "gpu_memory_utilization": memory,
        "kv_block_size": Default(e["kv_block_tokens"]["value"], e["kv_block_tokens"]["source"]),
        "batching": Default(batching, chunked["source"]),
        "prefill_chunk_tokens": Default(_value(e["step_token_budget"], gpu), e["step_token_budget"]["source"]),
        "max_running_sequences": Default(_value(e["max_running"], gpu), e["max_running"]["source"]),
    }


def _filled(serving: ServingOptions, gpu: Accelerator, tp: int, pp: int) -> dict[str, Any]:
    defaults = engine_defaults(serving.engine, gpu, tp, pp)
    return {
        name: defaults[name].value
        for name in ENGINE_KNOBS
        if not serving.explicit(name) and defaults[name].value is not None
    }


def resolve_scenario(scenario: Scenario, gpu: Accelerator) -> Scenario:
    """``scenario`` with its engine's defaults in the serving knobs the user left unset."""
    serving = scenario.serving
    if serving.engine is ServingEngine.GENERIC:
        return scenario
    update = _filled(serving, gpu, scenario.parallel.tp, scenario.parallel.pp)
    if not update:
        return scenario
    filled = serving.model_copy(update=update)
    # The filled knobs stay "not set": the scenario still says where each value came from
    # (provenance, --explain), saves without them, and on another GPU resolves to that GPU's
    # defaults; resolving it again on the same GPU gives the same values.
    object.__setattr__(filled, "__pydantic_fields_set__", set(serving.model_fields_set))
    return scenario.model_copy(update={"serving": filled})


def resolve(resolved: ResolvedScenario) -> ResolvedScenario:
    """The engine's input with the serving engine's defaults filled in (the same object if none)."""
    scenario = resolve_scenario(resolved.scenario, resolved.cluster.accelerator)
    if scenario is resolved.scenario:
        return resolved
    return ResolvedScenario(scenario, resolved.model, resolved.cluster)


def provenance(scenario: Scenario, gpu: Accelerator) -> list[tuple[str, Any, str]]:
    """(knob, value, where it came from) for each engine knob of ``scenario`` before resolution:
    what ``--explain`` prints under the engine's name."""
    serving = scenario.serving
    defaults = engine_defaults(serving.engine, gpu, scenario.parallel.tp, scenario.parallel.pp)
    rows = []
    for name in ENGINE_KNOBS:
        default = defaults[name]
        if name in serving.model_fields_set:
            rows.append((name, getattr(serving, name), "set explicitly"))
        elif default.value is None:
            rows.append((name, getattr(serving, name), f"kept: {default.source}"))
        else:
            rows.append((name, default.value, default.source))
    return rows


def title(engine: ServingEngine) -> str:
    return str(_table()[engine.value]["title"])
