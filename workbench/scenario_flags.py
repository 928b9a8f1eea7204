"""Scenario flags shared by every CLI subcommand that estimates, and scenario files.

``--scenario FILE`` (JSON or YAML) gives a base scenario; any flag given on the command line
overrides the matching field. The result is validated once, as a :class:`Scenario`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from workbench.core.dtypes import WeightFormat
from workbench.core.errors import InputError, describe_validation_error
from workbench.core.project import Project
from workbench.core.scenario import (
    AttentionKernel,
    FinetuneMethod,
    Offload,
    Optimizer,
    PipelineSchedule,
    Recompute,
    Scenario,
    Workload,
)


def _choices(enum: type) -> list[str]:
    return [member.value for member in enum]


# (flag, dest path in the scenario dict, type, choices, help)
_FLAGS: list[tuple[str, str, Any, list[str] | None, str]] = [
    ("--name", "name", str, None, "scenario name"),
    ("--gpu", "gpu", str, None, "accelerator id (see `catalog gpus`)"),
    ("--gpus", "num_gpus", int, None, "GPUs in the job (default: TP x PP x DP)"),
    ("--node", "node", str, None, "node shape id (default: the accelerator's usual server)"),
    ("--workload", "workload", str, _choices(Workload), "what runs"),
    ("--method", "method", str, _choices(FinetuneMethod), "fine-tuning method"),
    ("--lora-rank", "lora_rank", int, None, "LoRA rank r"),
    ("--lora-targets", "lora_targets", str, ["all-linear", "attention"], "projections that get adapters"),
    ("--dtype", "dtype", str, ["fp32", "bf16", "fp16", "fp8"], "compute/activation precision"),
    ("--weights", "weights", str, _choices(WeightFormat), "weight storage format"),
    ("--quant-group", "quant_group_size", int, None, "weights per int4 quantization group"),
    ("--kv-dtype", "kv_dtype", str, ["fp32", "bf16", "fp16", "fp8"], "KV-cache precision"),
    ("--batch", "batch_size", int, None, "micro-batch (training) or concurrent requests (inference)"),
    ("--seq-len", "seq_len", int, None, "tokens per sequence (prompt length for inference)"),
    ("--gen-len", "gen_len", int, None, "output tokens per request"),
    ("--images", "images_per_request", int, None, "images per request (vision-language models; default 0)"),
    ("--global-batch", "global_batch_size", int, None, "sequences per optimizer step, all replicas"),
    ("--train-tokens", "train_tokens", float, None, "tokens to train on, e.g. 15e12"),
    ("--tp", "parallel.tp", int, None, "tensor parallel degree"),
    ("--pp", "parallel.pp", int, None, "pipeline parallel degree"),
    ("--dp", "parallel.dp", int, None, "data parallel degree (default: GPUs / (TP x PP))"),
    ("--ep", "parallel.ep", int, None, "expert parallel degree"),
    ("--zero", "parallel.zero_stage", int, ["0", "1", "2", "3"], "ZeRO stage (3 = FSDP)"),
    ("--schedule", "parallel.pipeline_schedule", str, _choices(PipelineSchedule), "pipeline schedule"),
    ("--virtual-stages", "parallel.virtual_stages", int, None, "model chunks per pipeline rank"),
    ("--offload-optimizer", "parallel.offload_optimizer", str, _choices(Offload), "optimizer state offload"),
    ("--offload-params", "parallel.offload_params", str, _choices(Offload), "weight offload (ZeRO-3)"),
    ("--optimizer", "optimizer", str, _choices(Optimizer), "optimizer"),
    ("--recompute", "recompute", str, _choices(Recompute), "activation recomputation"),
    ("--attention", "attention", str, _choices(AttentionKernel), "attention kernel"),
    ("--gpu-mem-util", "serving.gpu_memory_utilization", float, None, "serving engine memory fraction"),
    ("--usd-per-gpu-hour", "pricing.cloud_usd_per_gpu_hour", float, None, "rental price per GPU-hour"),
    ("--purchase-usd", "pricing.purchase_usd_per_gpu", float, None, "purchase price per GPU"),
    ("--power-usd-per-kwh", "pricing.power_usd_per_kwh", float, None, "electricity price"),
    ("--pue", "pricing.pue", float, None, "data-centre PUE"),
    ("--years", "pricing.years", float, None, "ownership period for buy vs rent"),
    ("--mfu", "mfu", float, None, "override: achieved fraction of peak FLOPS"),
]


def add_scenario_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("scenario")
    source = group.add_mutually_exclusive_group()
    source.add_argument("--model", help="model id (see `catalog models`)")
    source.add_argument("--model-config", metavar="PATH", help="a config.json file or model folder")
    parser.add_argument(
        "--approximate",
        action="store_true",
        help="read a config.json whose model_type the importer does not know as a Llama-style block "
        "instead of refusing it; every estimate then carries an approximate-architecture warning",
    )
    group.add_argument(
        "--scenario", metavar="FILE|NAME",
        help="a scenario file (JSON or YAML), or with --project a scenario's name; flags override it",
    )
    group.add_argument("--project", metavar="FILE", help="a project file (.gpuwb) holding the scenario")
    for flag, dest, typ, choices, help_text in _FLAGS:
        kwargs: dict[str, Any] = {"dest": _dest(dest), "help": help_text, "default": None}
        if choices is not None:
            kwargs["choices"] = choices
        kwargs["type"] = str if choices is not None and typ is int else typ
        group.add_argument(flag, **kwargs)
    group.add_argument(
        "--image-size", dest="image_size", type=_image_size, default=None, metavar="WxH",
        help="resolution of each image in pixels, e.g. 1920x1080 (default 1024x1024)",
    )
    group.add_argument(
        "--sp", dest="s_parallel__sequence_parallel", action="store_const", const=True, default=None,
        help="sequence parallelism across the TP group",
    )
    group.add_argument(
        "--set", dest="assumption_overrides", action="append", default=[], metavar="ID=VALUE",
        help="override a named assumption (repeatable)",
    )


def _image_size(text: str) -> tuple[int, int]:
    """``WxH`` (e.g. ``1920x1080``) as (width, height); argparse reports a ValueError in one line."""
    width, sep, height = text.lower().partition("x")
    if not sep or not width.strip().isdigit() or not height.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels, e.g. 1920x1080, got '{text}'")
    return int(width), int(height)


def _dest(path: str) -> str:
    return "s_" + path.replace(".", "__")


def read_scenario_file(path: str | Path) -> dict[str, Any]:
    """A scenario file as a plain dict (validated later, with the flags applied)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{file}: cannot read scenario file ({exc.strerror or exc})") from None
    try:
        data = json.loads(text) if file.suffix.lower() == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{file}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise InputError(f"{file}: not valid YAML ({problem}{where})") from None
    if not isinstance(data, dict):
        raise InputError(f"{file}: a scenario file must hold one object (mapping)")
    return data


def project_from_args(args: argparse.Namespace) -> Project | None:
    """The project named by ``--project``, or None."""
    if not getattr(args, "project", None):
        return None
    from workbench.store import open_project

    return open_project(args.project)


def scenario_from_args(args: argparse.Namespace, project: Project | None = None) -> Scenario:
    """Build and validate the scenario the flags (and optional ``--scenario`` file) describe."""
    if project is not None:
        if not args.scenario:
            names = ", ".join(s.name for s in project.scenarios) or "none"
            raise InputError(f"--project: name a scenario with --scenario NAME (scenarios: {names})")
        try:
            data: dict[str, Any] = project.scenario(args.scenario).model_dump(mode="json")
        except KeyError as exc:
            raise InputError(f"{args.project}: {exc.args[0]}") from None
    else:
        data = read_scenario_file(args.scenario) if args.scenario else {}
    if args.model:
        data["model"] = args.model
    if args.model_config:
        data["model"] = str(Path(args.model_config))
    for key, value in vars(args).items():
        if not key.startswith("s_") or value is None:
            continue
        target = data
        *parents, leaf = key[2:].split("__")
        for parent in parents:
            target = target.setdefault(parent, {})
            if not isinstance(target, dict):
                raise InputError(f"scenario: '{parent}' must be a mapping")
        target[leaf] = value
    if getattr(args, "image_size", None) is not None:
        data["image_width"], data["image_height"] = args.image_size
    for item in args.assumption_overrides:
        ident, sep, raw = item.partition("=")
        try:
            value = float(raw)
        except ValueError:
            value = None
        if not sep or not ident or value is None:
            raise InputError(f"--set: expected ID=NUMBER, got '{item}'")
        data.setdefault("assumptions", {})[ident.strip()] = value
    if "model" not in data:
        raise InputError("scenario: a model is needed (--model ID or --model-config PATH)")
    if getattr(args, "approximate", False) and isinstance(data["model"], str):
        from workbench.catalog.models import allow_approximate

        allow_approximate(data["model"])
    if "gpu" not in data:
        data["gpu"] = "h100-sxm"
    _fill_gpu_count(data)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, "scenario")) from None


def _fill_gpu_count(data: dict[str, Any]) -> None:
    """Default ``num_gpus`` to TP x PP x DP and DP to GPUs / (TP x PP), as launchers do."""
    parallel = data.setdefault("parallel", {})
    if not isinstance(parallel, dict):
        return
    try:
        tp = int(parallel.get("tp", 1))
        pp = int(parallel.get("pp", 1))
    except (TypeError, ValueError):
        return
    if "num_gpus" not in data:
        try:
            data["num_gpus"] = tp * pp * int(parallel.get("dp", 1))
        except (TypeError, ValueError):
            return
    elif "dp" not in parallel and tp > 0 and pp > 0:
        try:
            gpus = int(data["num_gpus"])
        except (TypeError, ValueError):
            return
        if gpus % (tp * pp):
            raise InputError(f"scenario: {gpus} GPUs cannot be split into TP x PP = {tp * pp} groups")
        parallel["dp"] = max(gpus // (tp * pp), 1)


def scenario_to_dict(scenario: Scenario) -> dict[str, Any]:
    return scenario.model_dump(mode="json")

