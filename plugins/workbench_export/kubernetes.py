"""A Kubernetes manifest for a serving plan: a Deployment on one node, a LeaderWorkerSet across
nodes, and a Service; GPU requests, a node selector, /dev/shm as a memory-backed emptyDir, and
readiness/liveness probes on the server's health endpoint."""

from __future__ import annotations

import re
import shlex
from typing import Any

import yaml

from workbench.core.errors import InputError
from workbench.core.hardware import Vendor
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import ServingEngine
from workbench_export import sglang, trtllm, vllm
from workbench_export.formats import ENGINES
from workbench_export.plan import Notes, ServingPlan, serving_plan

ENGINE, VERSION, SOURCE = ENGINES["kubernetes"]

#: The device-plugin resource each vendor's GPUs are requested by.
_GPU_RESOURCE = {Vendor.NVIDIA: "nvidia.com/gpu", Vendor.AMD: "amd.com/gpu"}
_RAY_PORT = 6379
_SGLANG_DIST_PORT = 20000


def _server(plan: ServingPlan, notes: Notes) -> tuple[Any, list[str]]:
    """The engine module and its server command for the plan's engine (generic: vLLM)."""
    if plan.engine is ServingEngine.SGLANG:
        return sglang, sglang.server_argv(plan, notes)
    if plan.engine is ServingEngine.TENSORRT_LLM:
        argv = trtllm.server_argv(plan, notes, extra_path="/config/" + trtllm.EXTRA_FILE)
        return trtllm, argv
    return vllm, vllm.server_argv(plan, notes)


def _name(text: str) -> str:
    """A DNS-1123 name from the scenario's name."""
    cleaned = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:50].strip("-")
    return cleaned or "gpu-workbench"


def _pod_spec(resolved: ResolvedScenario, image: str, command: list[str], gpus: int, port: int | None,
              health: str | None) -> dict[str, Any]:
    gpu = resolved.cluster.accelerator
    resource = _GPU_RESOURCE[gpu.vendor]
    container: dict[str, Any] = {
        "name": "server" if port else "worker",
        "image": image,
        "command": command,
        "resources": {"limits": {resource: gpus}, "requests": {resource: gpus}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if port is not None and health is not None:
        container["ports"] = [{"name": "http", "containerPort": port}]
        # Loading weights and capturing graphs takes minutes: readiness waits, liveness starts late.
        container["readinessProbe"] = {"httpGet": {"path": health, "port": port}, "initialDelaySeconds": 60,
                                       "periodSeconds": 10, "failureThreshold": 60}
        container["livenessProbe"] = {"httpGet": {"path": health, "port": port}, "initialDelaySeconds": 900,
                                      "periodSeconds": 30, "failureThreshold": 5}
    spec: dict[str, Any] = {
        "containers": [container],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}],
    }
    if gpu.vendor is Vendor.NVIDIA:
        spec["nodeSelector"] = {"nvidia.com/gpu.product": re.sub(r"[^A-Za-z0-9.]+", "-", gpu.name).strip("-")}
    return spec


def manifest(resolved: ResolvedScenario, notes: Notes) -> list[dict[str, Any]]:
    """The manifest's documents (TensorRT-LLM's LLM-API options as a ConfigMap it mounts)."""
    gpu = resolved.cluster.accelerator
    if gpu.vendor not in _GPU_RESOURCE:
        raise InputError(f"export kubernetes: no Kubernetes device plugin resource is known for {gpu.vendor.value} "
                         f"accelerators ({gpu.name})")
    plan = serving_plan(resolved)
    module, argv = _server(plan, notes)
    name = _name(resolved.scenario.name)
    labels = {"app": name}
    docs: list[dict[str, Any]] = []
    if plan.nodes == 1:
        replicas, gpus = 1, plan.gpus
        if module is trtllm and plan.dp > 1:
            replicas, gpus = plan.dp, plan.gpus_per_replica
        pod = _pod_spec(resolved, module.IMAGE, argv, gpus, module.PORT, module.HEALTH)
        if module is trtllm:
            _mount_trtllm_options(pod, name)
            docs.append({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": f"{name}-llm-api-options", "labels": labels},
                "data": {trtllm.EXTRA_FILE: yaml.safe_dump(trtllm.extra_options(plan), sort_keys=False)},
            })
        docs.append({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod}},
        })
    else:
        if module is trtllm:
            raise InputError("export kubernetes: a TensorRT-LLM plan across nodes runs under MPI (mpirun/Slurm); "
                             "the Kubernetes export covers vLLM and SGLang across nodes")
        per_pod = plan.gpus_per_node
        leader, worker = _multi_node(module, argv, plan)
        leader_pod = _pod_spec(resolved, module.IMAGE, leader, per_pod, module.PORT, module.HEALTH)
        worker_pod = _pod_spec(resolved, module.IMAGE, worker, per_pod, None, None)
        docs.append({
            "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": 1, "leaderWorkerTemplate": {
                "size": plan.nodes, "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {"metadata": {"labels": {**labels, "role": "leader"}}, "spec": leader_pod},
                "workerTemplate": {"metadata": {"labels": labels}, "spec": worker_pod},
            }},
        })
        labels = {**labels, "role": "leader"}
    docs.append({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"selector": labels, "ports": [{"name": "http", "port": module.PORT, "targetPort": module.PORT}]},
    })
    return docs


def _mount_trtllm_options(pod: dict[str, Any], name: str) -> None:
    pod["volumes"].append({"name": "llm-api-options", "configMap": {"name": f"{name}-llm-api-options"}})
    pod["containers"][0]["volumeMounts"].append({"name": "llm-api-options", "mountPath": "/config"})


def _multi_node(module: Any, argv: list[str], plan: ServingPlan) -> tuple[list[str], list[str]]:
    """Leader and worker commands: vLLM over a Ray cluster, SGLang with its own rendezvous."""
    if module is vllm:
        serve = shlex.join([*argv, "--distributed-executor-backend", "ray"])
        leader = f"ray start --head --port={_RAY_PORT} && {serve}"
        worker = f"ray start --address=$LWS_LEADER_ADDRESS:{_RAY_PORT} --block"
        return ["sh", "-c", leader], ["sh", "-c", worker]
    rendezvous = ["--nnodes", str(plan.nodes), "--dist-init-addr", f"$LWS_LEADER_ADDRESS:{_SGLANG_DIST_PORT}"]
    base = shlex.join([*argv, *rendezvous])
    # The shell expands $LWS_LEADER_ADDRESS and $LWS_WORKER_INDEX (set by LWS in every pod).
    base = base.replace(f"'$LWS_LEADER_ADDRESS:{_SGLANG_DIST_PORT}'", f"$LWS_LEADER_ADDRESS:{_SGLANG_DIST_PORT}")
    return ["sh", "-c", f"{base} --node-rank 0"], ["sh", "-c", f"{base} --node-rank $LWS_WORKER_INDEX"]
