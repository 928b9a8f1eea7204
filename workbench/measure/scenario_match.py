"""Tie a measurement to a scenario: the scenario the user names, with what the file states filled in.

The file is the record of what ran, so its prompt/output lengths, concurrency, request rate,
layout and engine replace the scenario's. A GPU or model that contradicts the scenario is an
error, not an override: a measurement taken on another GPU would calibrate the wrong part.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from workbench.core.errors import InputError, describe_validation_error
from workbench.core.project import Project
from workbench.core.scenario import Scenario, ServingEngine, Workload
from workbench.measure.errors import MeasurementError
from workbench.measure.model import Measurement

_SUFFIXES = ("-instruct", "-chat", "-it", "-hf")


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def catalog_gpu(text: str, project: Project | None = None) -> str:
    """The accelerator id a tool's GPU name means ("NVIDIA H100 80GB HBM3" -> h100-sxm)."""
    from workbench.catalog.accelerators import load_accelerators
    from workbench.catalog.resolve import plugin_accelerators

    catalog = {**plugin_accelerators(), **load_accelerators(), **(project.accelerators if project else {})}
    if text in catalog:
        return text
    key = _key(text.removeprefix("NVIDIA ").removeprefix("AMD "))
    for ident, accelerator in catalog.items():
        if key in (_key(ident), _key(accelerator.name), _key(accelerator.name.removeprefix("NVIDIA ")
                                                             .removeprefix("AMD ").removeprefix("Intel "))):
            return ident
    # A family token (h100, mi300x, a100) with the form factor the name states: SXM unless it says
    # PCIe or NVL, the memory size where a family has two.
    lowered = text.lower()
    families = sorted({ident.split("-")[0] for ident in catalog}, key=len, reverse=True)
    family = next((f for f in families if re.search(rf"(?<![a-z0-9]){re.escape(f)}(?![0-9])", lowered)), None)
    if family is not None:
        members = [ident for ident in catalog if ident.split("-")[0] == family
                   and ("mig" in lowered or "-mig-" not in ident)]  # a MIG slice only when named
        for marker in ("pcie", "nvl"):
            if marker in lowered:
                members = [m for m in members if marker in m] or members
                break
        else:
            members = [m for m in members if "pcie" not in m and "nvl" not in m] or members
        sized = [m for m in members if (size := re.search(r"(\d+)\s*gb", m)) and f"{size[1]}gb" in lowered.replace(" ", "")]
        members = sized or members
        if len(members) == 1:
            return members[0]
    raise MeasurementError(f"GPU '{text[:60]}' is not in the catalog (see `gpu-workbench catalog gpus`); "
                           "add it to the project or give the scenario's --gpu")


def catalog_model(text: str) -> str | None:
    """The catalog id of a Hugging Face repo id a tool names (instruct/chat variants: the base)."""
    from workbench.catalog.models import load_model_catalog

    models = load_model_catalog()
    if text in models:
        return text
    wanted = text.lower()
    candidates = {wanted, wanted.split("/")[-1], wanted.split("/")[-1].removeprefix("meta-")}
    for suffix in _SUFFIXES:
        candidates |= {c.removesuffix(suffix) for c in list(candidates)}
    for ident, entry in models.items():
        repo = (entry.hf_repo or "").lower()
        if repo and (repo in candidates or repo.split("/")[-1] in candidates):
            return ident
    return None


def scenario_for(measurement: Measurement, base: Scenario, project: Project | None = None) -> Scenario:
    """``base`` with the fields ``measurement`` states; refused if GPU, model or workload disagree."""
    where = f"{measurement.file_name}{' ' + measurement.record if measurement.record else ''}"
    serving = measurement.workload == "serving"
    if serving != (base.workload == Workload.INFERENCE):
        raise MeasurementError(f"{where}: a {measurement.workload} measurement cannot belong to scenario "
                               f"'{base.name}' ({base.workload.value})")
    if measurement.gpu is not None:
        gpu = catalog_gpu(measurement.gpu, project) if measurement.gpu not in (base.gpu,) else base.gpu
        if gpu != base.gpu:
            raise MeasurementError(f"{where}: measured on {gpu} ({measurement.gpu}), but scenario "
                                   f"'{base.name}' uses {base.gpu}")
    if measurement.model is not None:
        model = catalog_model(measurement.model)
        if model is not None and model != base.model and catalog_model(base.model) != model:
            raise MeasurementError(f"{where}: the file measured {measurement.model} ({model}), but scenario "
                                   f"'{base.name}' is for {base.model}")
    data: dict[str, Any] = base.model_dump(mode="json")
    parallel = data["parallel"]
    if measurement.tp is not None:
        parallel["tp"] = measurement.tp
    if measurement.pp is not None:
        parallel["pp"] = measurement.pp
    if measurement.num_gpus is not None:
        data["num_gpus"] = measurement.num_gpus
    if measurement.num_gpus is not None or measurement.tp is not None or measurement.pp is not None:
        group = parallel["tp"] * parallel["pp"]
        if data["num_gpus"] % group:
            raise MeasurementError(f"{where}: {data['num_gpus']} GPUs cannot be split into TP x PP = {group} groups")
        parallel["dp"] = data["num_gpus"] // group
    if serving:
        if measurement.input_tokens is not None:
            data["seq_len"] = max(1, round(measurement.input_tokens))
        if measurement.output_tokens is not None:
            data["gen_len"] = max(1, round(measurement.output_tokens))
        if measurement.concurrency is not None:
            data["batch_size"] = max(1, round(measurement.concurrency))
        if measurement.request_rate is not None:
            data["serving"]["arrival_rate"] = measurement.request_rate
        if measurement.engine in {e.value for e in ServingEngine}:
            data["serving"]["engine"] = measurement.engine
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise MeasurementError(describe_validation_error(exc, f"{where}: scenario")) from None


def check_resolves(scenario: Scenario, project: Project | None, where: str) -> None:
    from workbench.catalog.resolve import resolve_scenario

    try:
        resolve_scenario(scenario, project)
    except InputError as exc:
        raise MeasurementError(f"{where}: {exc}") from None
