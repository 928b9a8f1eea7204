"""Scenario flags shared by every CLI subcommand that estimates, and scenario files.

``--scenario FILE`` (JSON or YAML) gives a base scenario; any flag given on the command line
overrides the matching field. The result is validated once, as a :class:`Scenario`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from workbench.core.dtypes import WeightFormat
from workbench.core.errors import InputError, describe_validation_error
from workbench.core.limits import (
    MAX_FILE_DEPTH,
    MAX_GPUS,
    MAX_NAME_CHARS,
    MAX_PATH_CHARS,
    MAX_SCENARIO_FILE_BYTES,
)
from workbench.core.project import Project
from workbench.core.scenario import (
    AttentionKernel,
    Batching,
    DatasetFormat,
    FinetuneMethod,
    Offload,
    Optimizer,
    PipelineSchedule,
    Recompute,
    Scenario,
    ServingEngine,
    Workload,
)
from workbench.engine.assumptions import check_overrides


def _choices(enum: type) -> list[str]:
    return [member.value for member in enum]


# (flag, dest path in the scenario dict, type, choices, help)
_FLAGS: list[tuple[str, str, Any, list[str] | None, str]] = [
    ("--name", "name", str, None, "scenario name"),
    ("--gpu", "gpu", str, None, "accelerator id (see `catalog gpus`)"),
    ("--gpus", "num_gpus", int, None, "GPUs in the job (default: TP x PP x DP; at most 1,048,576)"),
    ("--node", "node", str, None, "node shape id (default: the accelerator's usual server)"),
    ("--workload", "workload", str, _choices(Workload), "what runs"),
    ("--method", "method", str, _choices(FinetuneMethod), "fine-tuning method"),
    ("--lora-rank", "lora_rank", int, None, "LoRA rank r"),
    ("--lora-targets", "lora_targets", str, ["all-linear", "attention"], "projections that get adapters"),
    ("--dtype", "dtype", str, ["fp32", "bf16", "fp16", "fp8"], "compute/activation precision"),
    ("--weights", "weights", str, _choices(WeightFormat), "weight storage format"),
    ("--quant-group", "quant_group_size", int, None, "weights per int4 quantization group"),
    ("--kv-dtype", "kv_dtype", str, ["fp32", "bf16", "fp16", "fp8", "q8_0", "q4_0"],
     "KV-cache precision (q8_0/q4_0: llama.cpp's block-quantized cache)"),
    ("--batch", "batch_size", int, None, "micro-batch (training) or concurrent requests (inference); at most 1,048,576"),
    ("--seq-len", "seq_len", int, None, "tokens per sequence (prompt length for inference); at most 16,777,216"),
    ("--gen-len", "gen_len", int, None, "output tokens per request; at most 16,777,216"),
    ("--images", "images_per_request", int, None, "images per request (vision-language models; default 0; at most 256)"),
    ("--global-batch", "global_batch_size", int, None, "sequences per optimizer step, all replicas"),
    ("--train-tokens", "train_tokens", float, None, "tokens to train on, e.g. 15e12 (at most 1e18)"),
    ("--tp", "parallel.tp", int, None, "tensor parallel degree (TP, PP, DP, EP: each at most 1,048,576)"),
    ("--pp", "parallel.pp", int, None, "pipeline parallel degree (at most the model's layer count)"),
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
    ("--engine", "serving.engine", str, _choices(ServingEngine),
     "serving software stack whose documented defaults fill the serving flags not given (default generic)"),
    ("--gpu-mem-util", "serving.gpu_memory_utilization", float, None,
     "serving engine memory fraction (TensorRT-LLM: of the memory free after weights and workspace)"),
    ("--kv-block-size", "serving.kv_block_size", int, None, "tokens per KV-cache page"),
    ("--prefill-chunk", "serving.prefill_chunk_tokens", int, None, "token budget of a step with chunked prefill"),
    ("--max-running", "serving.max_running_sequences", int, None, "most sequences the server runs at once"),
    ("--batching", "serving.batching", str, _choices(Batching), "serving scheduler: static, continuous or chunked prefill"),
    ("--arrival-rate", "serving.arrival_rate", float, None,
     "requests per second for the serving simulation (default: a closed loop of --batch users)"),
    ("--arrival-cv", "serving.arrival_cv", float, None, "variation of the gaps between arrivals (1 = Poisson; default 1)"),
    ("--requests", "serving.requests", int, None, "requests the serving simulation runs (default 1,000; at most 100,000)"),
    ("--trace", "serving.trace", str, None,
     "CSV or JSONL file of requests to replay: prompt_tokens, output_tokens[, arrival_s] (at most 64 MiB)"),
    ("--slo-ttft", "serving.slo_ttft_s", float, None, "time-to-first-token target for goodput, seconds"),
    ("--slo-tpot", "serving.slo_tpot_s", float, None, "time-per-output-token target for goodput, seconds"),
    ("--usd-per-gpu-hour", "pricing.cloud_usd_per_gpu_hour", float, None, "rental price per GPU-hour"),
    ("--purchase-usd", "pricing.purchase_usd_per_gpu", float, None, "purchase price per GPU"),
    ("--power-usd-per-kwh", "pricing.power_usd_per_kwh", float, None, "electricity price"),
    ("--pue", "pricing.pue", float, None, "data-centre PUE"),
    ("--years", "pricing.years", float, None, "ownership period for buy vs rent"),
    ("--mfu", "mfu", float, None, "override: achieved fraction of peak FLOPS"),
    ("--storage", "cluster.storage", str, None, "storage system id (see `catalog storage`; default: the catalog's default)"),
    ("--storage-count", "cluster.storage_count", int, None,
     "drives per node (local storage), appliances (parallel file system) or key prefixes (object store)"),
    ("--storage-gbps", "cluster.storage_gbps", float, None, "aggregate storage bandwidth the job gets, GB/s"),
    ("--dataset-format", "cluster.dataset_format", str, _choices(DatasetFormat),
     "training data stored as token ids (tokenized) or raw text tokenized while loading"),
    ("--checkpoint-interval", "cluster.checkpoint_interval_s", float, None,
     "seconds between checkpoints (default: the Young/Daly optimum)"),
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
        help="a scenario file (JSON or YAML, at most 16 MiB), or with --project a scenario's name; "
        "flags override it",
    )
    group.add_argument("--project", metavar="FILE", help="a project file (.gpuwb) holding the scenario")
    for flag, dest, typ, choices, help_text in _FLAGS:
        kwargs: dict[str, Any] = {"dest": _dest(dest), "help": help_text, "default": None}
        if choices is not None:
            kwargs["choices"] = choices
            kwargs["type"] = str
        else:
            kwargs["type"] = {int: whole_number, float: finite_number}.get(typ, typ)
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
        "--async-checkpoint", dest="s_cluster__async_checkpoint", action="store_const", const=True, default=None,
        help="asynchronous checkpoints: training stalls only for the copy to host memory",
    )
    group.add_argument(
        "--spot", dest="s_cluster__spot", action="store_const", const=True, default=None,
        help="spot/preemptible capacity: discounted, and preempted now and then (assumptions cluster.spot_*)",
    )
    group.add_argument(
        "--set", dest="assumption_overrides", action="append", default=[], metavar="ID=VALUE",
        help="override a named assumption (repeatable); the value must be finite and within the "
        "assumption's range (`gpu-workbench assumptions --json` lists them)",
    )


def _image_size(text: str) -> tuple[int, int]:
    """``WxH`` (e.g. ``1920x1080``) as (width, height); argparse reports a ValueError in one line."""
    width, sep, height = text.lower().partition("x")
    if not sep or not width.strip().isdigit() or not height.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels, e.g. 1920x1080, got '{text}'")
    return int(width), int(height)


def _dest(path: str) -> str:
    return "s_" + path.replace(".", "__")


#: Digits a count flag may have: every limit (:mod:`workbench.core.limits`) has at most 10.
_MAX_DIGITS = 20


def _quoted(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def whole_number(text: str) -> int:
    """An integer flag: a whole number of reasonable length (the range is the scenario's to check)."""
    digits = text.strip().lstrip("+-")
    if len(digits) > _MAX_DIGITS and digits.isdigit():
        raise argparse.ArgumentTypeError(f"{_quoted(text, 24)} is too large")
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {_quoted(text)}") from None


def finite_number(text: str) -> float:
    """A number flag: finite (``nan``, ``inf`` and ``1e999`` are refused here, not estimated)."""
    if len(text) > 64:
        raise argparse.ArgumentTypeError(f"{_quoted(text, 24)} is too long for a number")
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {_quoted(text)}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{_quoted(text)} is not a finite number")
    return value


def read_scenario_file(path: str | Path) -> dict[str, Any]:
    """A scenario file as a plain dict (validated later, with the flags applied)."""
    file = Path(path)
    data = _parse_scenario_text(file, read_input_text(path, "scenario file"))
    if not isinstance(data, dict):
        raise InputError(f"{file}: a scenario file must hold one object (mapping)")
    if _depth(data) > MAX_FILE_DEPTH:
        raise InputError(f"{file}: nested more than {MAX_FILE_DEPTH} levels deep (a scenario needs 3)")
    return data


def read_input_text(path: str | Path, what: str, limit: int = MAX_SCENARIO_FILE_BYTES) -> str:
    """The UTF-8 text of a small input file, or InputError (one line) saying why not.

    The file's type and size are checked before it is read: a FIFO would block the read, and
    ``/dev/zero`` or a huge file would fill memory. At most ``limit`` bytes (16 MiB) are read.
    """
    file = Path(path)
    if len(str(path)) > MAX_PATH_CHARS:
        raise InputError(f"{what}: the path is longer than {MAX_PATH_CHARS:,} characters")
    try:
        info = file.stat()
    except (OSError, ValueError) as exc:
        raise InputError(f"{file}: cannot read {what} ({getattr(exc, 'strerror', None) or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise InputError(f"{file}: cannot read {what} ({kind})")
    if info.st_size > limit:
        raise InputError(f"{file}: {what} is {info.st_size:,} bytes; the limit is {limit:,}")
    try:
        # O_NONBLOCK: should the file have been swapped for a FIFO since the check, open() returns
        # at once instead of waiting for a writer.
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise InputError(f"{file}: cannot read {what} (not a regular file)")
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise InputError(f"{file}: cannot read {what} ({exc.strerror or exc})") from None
    if len(raw) > limit:
        raise InputError(f"{file}: {what} is larger than the limit of {limit:,} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{file}: not UTF-8 text (byte {exc.start:,} cannot be decoded)") from None


def _parse_scenario_text(file: Path, text: str) -> Any:
    try:
        return json.loads(text) if file.suffix.lower() == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{file}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise InputError(f"{file}: not valid {'YAML' if file.suffix.lower() != '.json' else 'JSON'} "
                         f"({_one_line(str(problem))}{where})") from None
    except RecursionError:
        raise InputError(f"{file}: nested too deeply to read (the limit is {MAX_FILE_DEPTH} levels)") from None
    except ValueError as exc:
        # int() of a number with more than 4,300 digits (sys.get_int_max_str_digits) is a
        # ValueError in both parsers; a YAML timestamp out of range is another.
        if "digits" in str(exc):
            raise InputError(f"{file}: a number is too large (more than 4,300 digits)") from None
        raise InputError(f"{file}: cannot read a value ({_one_line(str(exc))})") from None
    except (TypeError, OverflowError) as exc:  # YAML keys that cannot be dict keys, dates far out
        raise InputError(f"{file}: cannot read a value ({_one_line(str(exc))})") from None


def _one_line(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _depth(data: Any) -> int:
    """Nesting depth of lists and mappings, walked without recursion; YAML aliases make a graph,
    so each container is visited once (a "billion laughs" file stays cheap)."""
    deepest = 0
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        deepest = max(deepest, depth)
        if depth > MAX_FILE_DEPTH:
            return depth
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


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
    definitions = _assumption_definitions() if args.assumption_overrides or data.get("assumptions") else {}
    if getattr(args, "image_size", None) is not None:
        data["image_width"], data["image_height"] = args.image_size
    for item in args.assumption_overrides:
        ident, sep, raw = item.partition("=")
        ident = ident.strip()
        try:
            value = float(raw) if len(raw) <= 64 else None
        except ValueError:
            value = None
        if not sep or not ident or value is None:
            raise InputError(f"--set: expected ID=NUMBER, got {_quoted(item, 60)}")
        if len(ident) > MAX_NAME_CHARS:
            raise InputError(f"--set: an assumption id is at most {MAX_NAME_CHARS} characters")
        _check_assumption(definitions, ident, value, "--set")
        overrides = data.setdefault("assumptions", {})
        if not isinstance(overrides, dict):
            raise InputError("scenario: 'assumptions' must be a mapping of id to number")
        overrides[ident] = value
    file_overrides = data.get("assumptions")
    if isinstance(file_overrides, dict):
        for ident, value in file_overrides.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and isinstance(ident, str):
                _check_assumption(definitions, ident, value, "scenario")
    if "model" not in data:
        raise InputError("scenario: a model is needed (--model ID or --model-config PATH)")
    if getattr(args, "approximate", False) and isinstance(data["model"], str):
        from workbench.catalog.models import allow_approximate

        allow_approximate(data["model"])
    if "gpu" not in data:
        data["gpu"] = "h100-sxm"
    _fill_gpu_count(data)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, "scenario")) from None
    for ident, value in scenario.assumptions.items():  # values the file gave as text ("0.5")
        _check_assumption(definitions or _assumption_definitions(), ident, value, "scenario")
    if scenario.cluster.storage is not None:
        _check_storage(scenario.cluster.storage)
    if scenario.parallel.pp > 1:
        _check_stages(scenario, project)
    if scenario.serving.trace is not None:
        # A trace that cannot be read is a mistake in the command line: refused here, in one line,
        # not left for the estimate to report as a missing result.
        from workbench.core.request_trace import read_trace

        read_trace(scenario.serving.trace, scenario.serving.requests)
    return scenario


def _check_storage(ident: str) -> None:
    from workbench.engine.storage_catalog import storage_systems

    known = storage_systems()
    if ident not in known:
        raise InputError(f"--storage: unknown storage {_quoted(ident)} (known: {', '.join(known)})")


def _check_stages(scenario: Scenario, project: Project | None) -> None:
    """PP beyond the model's layers is a layout no framework runs, and the memory model builds
    every stage: a million empty stages would take minutes to refuse later."""
    from workbench.catalog.resolve import resolve_model_ref

    try:
        layers = resolve_model_ref(scenario.model, project).total_layers
    except InputError:
        return  # an unknown model is named when the scenario is resolved
    if scenario.parallel.pp > layers:
        raise InputError(
            f"scenario: parallel.pp: {scenario.parallel.pp:,} pipeline stages for a model of {layers:,} layers; "
            "PP is at most the layer count"
        )


def _assumption_definitions() -> dict[str, Any]:
    from workbench.pluginhost import default_engine

    return default_engine().assumptions


def _check_assumption(definitions: dict[str, Any], ident: str, value: float, context: str) -> None:
    """Refuse a non-finite override, or one outside its assumption's published range (one line:
    the assumption, the value, the allowed range)."""
    try:
        check_overrides(definitions, {ident: value})
    except ValueError as exc:
        raise InputError(f"{context}: {exc}") from None


def _fill_gpu_count(data: dict[str, Any]) -> None:
    """Default ``num_gpus`` to TP x PP x DP and DP to GPUs / (TP x PP), as launchers do."""
    parallel = data.setdefault("parallel", {})
    if not isinstance(parallel, dict):
        return
    try:
        tp = _as_count(parallel.get("tp", 1))
        pp = _as_count(parallel.get("pp", 1))
    except (TypeError, ValueError, OverflowError):
        return  # the scenario's validation names the field
    if "num_gpus" not in data:
        try:
            data["num_gpus"] = tp * pp * _as_count(parallel.get("dp", 1))
        except (TypeError, ValueError, OverflowError):
            return
    elif "dp" not in parallel and tp > 0 and pp > 0:
        try:
            gpus = _as_count(data["num_gpus"])
        except (TypeError, ValueError, OverflowError):
            return
        if gpus % (tp * pp):
            raise InputError(f"scenario: {gpus} GPUs cannot be split into TP x PP = {tp * pp} groups")
        parallel["dp"] = max(gpus // (tp * pp), 1)


def _as_count(value: Any) -> int:
    """A layout degree as the scenario will read it, for the GPU count only: bounded (a count past
    the limit is left for the scenario's validation to refuse, with its message)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError("not a count")
    number = int(value)  # ValueError/OverflowError for "x", nan, inf
    if not 0 < number <= MAX_GPUS:
        raise ValueError("out of range")
    return number


def scenario_to_dict(scenario: Scenario) -> dict[str, Any]:
    return scenario.model_dump(mode="json")

