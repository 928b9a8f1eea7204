"""Launch-configuration exporters: what a plugin registers through ``workbench_register_exporters``.

An exporter turns a resolved scenario (and its estimate) into the files a team runs elsewhere: a
``vllm serve`` command line, a DeepSpeed JSON config, a Kubernetes manifest. Each states the
engine and the engine version whose argument names it follows, so that a reader (and the tests)
can check every emitted argument against that version's documented list.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Workload

#: What every exporter is for: the workloads it can express.
SERVING: tuple[Workload, ...] = (Workload.INFERENCE,)
TRAINING: tuple[Workload, ...] = (Workload.FINETUNE, Workload.PRETRAIN)


class ExporterInfo(BaseModel):
    """What an exporter writes, for which engine version, and for which workloads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9.\-]*$",
                    description="Format id, as given to `export --to`.")
    title: str = Field(min_length=1, max_length=200, description="What the exported files are.")
    engine: str = Field(min_length=1, max_length=100, description="The software that reads the files.")
    engine_version: str = Field(
        min_length=1, max_length=100, description="The engine version whose argument names the files follow."
    )
    source: str = Field(
        min_length=1, max_length=1000,
        description="Where those argument names were read (repository@commit:path).",
    )
    workloads: tuple[Workload, ...] = Field(min_length=1, description="Workloads the exporter can express.")


@runtime_checkable
class Exporter(Protocol):
    """``info`` and ``export(resolved, estimate) -> {file name: text}``.

    ``estimate`` is the :class:`workbench.engine.estimate.Estimate` of ``resolved`` (typed loosely
    here: the core layer does not import the engine). An exporter never drops a scenario field
    silently: a field the engine has no argument for becomes a comment (or a notes file, for
    formats without comments) in what it returns.
    """

    info: ExporterInfo

    def export(self, resolved: ResolvedScenario, estimate: Any) -> dict[str, str]: ...
