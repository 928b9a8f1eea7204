"""The first-party exporters: one object per format, each an ``info`` and ``export(resolved, estimate)``."""

from __future__ import annotations

from typing import Any

import yaml

from workbench.core.errors import InputError
from workbench.core.exporter import ExporterInfo
from workbench.core.resolved import ResolvedScenario
from workbench_export import (
    accelerate,
    bench,
    deepspeed,
    kubernetes,
    megatron,
    sglang,
    shell,
    torchtitan,
    trtllm,
    vllm,
)
from workbench_export.formats import format_info
from workbench_export.plan import Notes, expected_serving, expected_training, header, serving_plan


class _Dumper(yaml.SafeDumper):
    """Writes a mapping used twice (a label set) out in full: anchors and aliases puzzle readers."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _check(info: ExporterInfo, resolved: ResolvedScenario) -> None:
    workload = resolved.scenario.workload
    if workload not in info.workloads:
        kinds = ", ".join(w.value for w in info.workloads)
        raise InputError(f"export {info.id}: a {workload.value} scenario cannot be written as {info.title} "
                         f"(it expresses {kinds})")


def _bench_script(resolved: ResolvedScenario, estimate: Any, port: int, result: str) -> str:
    notes = Notes()
    argv = bench.bench_argv(serving_plan(resolved), notes, port, result)
    head = header("Benchmark of the serving plan", resolved, bench.ENGINE, bench.VERSION, bench.SOURCE)
    expected = expected_serving(estimate)
    if expected:
        head += "# The plan expects: " + ", ".join(expected) + "\n"
    return shell.script(head + notes.comment_block(), shell.command(argv))


class _ServingExporter:
    module: Any
    info: ExporterInfo

    def export(self, resolved: ResolvedScenario, estimate: Any) -> dict[str, str]:
        _check(self.info, resolved)
        notes = Notes()
        plan = serving_plan(resolved)
        argv = self.module.server_argv(plan, notes)
        head = header(self.info.title, resolved, self.module.ENGINE, self.module.VERSION, self.module.SOURCE)
        files = {"serve.sh": shell.script(head + notes.comment_block(), shell.command(argv))}
        files.update(self._extra(plan))
        files["bench.sh"] = _bench_script(resolved, estimate, self.module.PORT, f"bench-{self.info.id}.json")
        return files

    def _extra(self, plan: Any) -> dict[str, str]:
        return {}


class VllmExporter(_ServingExporter):
    module = vllm
    info = format_info("vllm")


class SglangExporter(_ServingExporter):
    module = sglang
    info = format_info("sglang")


class TrtllmExporter(_ServingExporter):
    module = trtllm
    info = format_info("trtllm")

    def _extra(self, plan: Any) -> dict[str, str]:
        return {trtllm.EXTRA_FILE: yaml.safe_dump(trtllm.extra_options(plan), sort_keys=False)}


class KubernetesExporter:
    info = format_info("kubernetes")

    def export(self, resolved: ResolvedScenario, estimate: Any) -> dict[str, str]:
        _check(self.info, resolved)
        notes = Notes()
        docs = kubernetes.manifest(resolved, notes)
        head = header(self.info.title, resolved, kubernetes.ENGINE, kubernetes.VERSION, kubernetes.SOURCE)
        head += ("# nodeSelector: set the value to your nodes' GPU product label "
                 "(kubectl get nodes -L nvidia.com/gpu.product).\n")
        body = yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, width=1000)
        return {"manifest.yaml": head + notes.comment_block() + body}


class DeepSpeedExporter:
    info = format_info("deepspeed")

    def export(self, resolved: ResolvedScenario, estimate: Any) -> dict[str, str]:
        _check(self.info, resolved)
        return deepspeed.render(resolved, expected_training(estimate))


class MegatronExporter:
    info = format_info("megatron")

    def export(self, resolved: ResolvedScenario, estimate: Any) -> dict[str, str]:
        _check(self.info, resolved)
        notes = Notes()
        argv = [*megatron.launcher(resolved, notes), megatron.SCRIPT, *megatron.arguments(resolved, notes)]
        return {"train.sh": _training_script(self.info, megatron, resolved, estimate, notes, shell.command(argv))}


class TorchtitanExporter:
    info = format_info("torchtitan")

    def export(self, resolved: ResolvedScenario, estimate: Any) -> dict[str, str]:
        _check(self.info, resolved)
        notes = Notes()
        doc = torchtitan.config(resolved, notes)
        return {"train.toml": _commented(self.info, torchtitan, resolved, estimate, notes) + torchtitan.toml(doc)}


class AccelerateExporter:
    info = format_info("accelerate-fsdp")

    def export(self, resolved: ResolvedScenario, estimate: Any) -> dict[str, str]:
        _check(self.info, resolved)
        notes = Notes()
        doc = accelerate.config(resolved, notes)
        body = yaml.safe_dump(doc, sort_keys=False)
        return {"accelerate_fsdp.yaml": _commented(self.info, accelerate, resolved, estimate, notes) + body}


def _commented(info: ExporterInfo, module: Any, resolved: ResolvedScenario, estimate: Any, notes: Notes) -> str:
    text = header(info.title, resolved, module.ENGINE, module.VERSION, module.SOURCE)
    expected = expected_training(estimate)
    if expected:
        text += "# The plan expects: " + ", ".join(expected) + "\n"
    return text + notes.comment_block()


def _training_script(info: ExporterInfo, module: Any, resolved: ResolvedScenario, estimate: Any, notes: Notes,
                     body: str) -> str:
    return shell.script(_commented(info, module, resolved, estimate, notes), body)


ALL = (VllmExporter(), SglangExporter(), TrtllmExporter(), KubernetesExporter(),
       DeepSpeedExporter(), MegatronExporter(), TorchtitanExporter(), AccelerateExporter())
