"""Turn a scenario's ids into the objects the engine needs: architecture and cluster."""

from __future__ import annotations

from workbench.core.dtypes import WeightFormat
from workbench.core.errors import CatalogError
from workbench.core.hardware import Accelerator, Cluster
from workbench.core.model import ModelArchitecture
from workbench.core.project import Project
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario


def resolve_model_ref(ref: str, project: Project | None = None) -> ModelArchitecture:
    """A project model, a catalog model, or a config.json / model folder path."""
    if project is not None and ref in project.models:
        return project.models[ref]
    from workbench.catalog.models import resolve_model

    try:
        return resolve_model(ref)
    except CatalogError:
        plugin_model = plugin_models().get(ref)
        if plugin_model is None:
            raise
        return plugin_model


def resolve_accelerator(ref: str, project: Project | None = None) -> Accelerator:
    if project is not None and ref in project.accelerators:
        return project.accelerators[ref]
    from workbench.catalog.accelerators import get_accelerator

    try:
        return get_accelerator(ref)
    except CatalogError:
        plugin_gpu = plugin_accelerators().get(ref)
        if plugin_gpu is None:
            raise
        return plugin_gpu


def plugin_accelerators() -> dict[str, Accelerator]:
    """Accelerators registered by loaded plugins (the catalog's own ids take precedence)."""
    from workbench.pluginhost import get_host

    return {a.id: a for a in get_host().registry.accelerators}


def plugin_models() -> dict[str, ModelArchitecture]:
    from workbench.pluginhost import get_host

    return dict(get_host().registry.models)


def resolve_scenario(scenario: Scenario, project: Project | None = None) -> ResolvedScenario:
    from workbench.catalog.accelerators import default_node_for, load_node_shapes

    model = resolve_model_ref(scenario.model, project)
    # (model_copy(update=...) may leave the plain string there, so the enum is made here)
    if scenario.weights is not None and WeightFormat(scenario.weights).is_gguf:
        from workbench.core.gguf import model_tensors

        model_tensors(model)  # a model llama.cpp's layout does not describe is refused here, in one line
    accelerator = resolve_accelerator(scenario.gpu, project)
    if scenario.node is None:
        node = default_node_for(accelerator)
    else:
        nodes = load_node_shapes()
        if scenario.node not in nodes:
            known = ", ".join(sorted(nodes))
            raise CatalogError(f"unknown node shape '{scenario.node}'; known: {known}")
        node = nodes[scenario.node]
    cluster = Cluster(accelerator=accelerator, node=node, num_gpus=scenario.num_gpus)
    return ResolvedScenario(scenario=scenario, model=model, cluster=cluster)
