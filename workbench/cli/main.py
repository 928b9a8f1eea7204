"""`gpu-workbench`: with no subcommand, open the window; with one, answer on the terminal.

Every user mistake (unknown id, bad file, impossible value) ends in one line on stderr and exit
code 2, never a traceback. ``--json`` prints exactly one JSON document on stdout.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from workbench import __version__
from workbench.cli.output import EscapingWriter, emit_json, one_line, stream_json_object
from workbench.core.errors import InputError
from workbench.core.units import format_bytes, format_count

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage dump) and exits 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)}\n")


def _emit_json(document: Any) -> None:
    emit_json(document, sys.stdout)


# --- catalog ------------------------------------------------------------------------------------


def _cmd_catalog(args: argparse.Namespace) -> int:
    if args.what == "gpus":
        from workbench.catalog.accelerators import load_accelerators
        from workbench.catalog.resolve import plugin_accelerators

        catalog = load_accelerators()
        accelerators = list(catalog.values())
        accelerators += [a for ident, a in plugin_accelerators().items() if ident not in catalog]
        if args.json:
            _emit_json(
                {"count": len(accelerators), "accelerators": [a.model_dump(mode="json") for a in accelerators]}
            )
            return 0
        print(f"{'id':<22} {'name':<40} {'memory':>10} {'GB/s':>7} {'bf16 TFLOPS':>11} {'fp8':>7} {'TDP W':>6}")
        for a in accelerators:
            bf16 = a.dense_tflops.get("bf16")  # type: ignore[call-overload]
            fp8 = a.dense_tflops.get("fp8")  # type: ignore[call-overload]
            print(
                f"{a.id:<22} {a.name[:40]:<40} {a.memory_gib:>6.0f} GiB {a.memory_bandwidth_gbps:>7.0f} "
                f"{_num(bf16):>11} {_num(fp8):>7} {_num(a.tdp_watts):>6}"
            )
        print(f"{len(accelerators)} accelerators; dense TFLOPS; `--json` for sources")
        return 0
    if args.what == "storage":
        from workbench.engine.storage_catalog import default_storage_id, storage_systems

        systems = list(storage_systems().values())
        if args.json:
            _emit_json({"count": len(systems), "default": default_storage_id(),
                        "storage": [s.model_dump(mode="json") for s in systems]})  # fmt: skip
            return 0
        print(f"{'id':<20} {'name':<52} {'kind':<7} {'read GB/s':>9} {'write GB/s':>10} {'units':>5}")
        for s in systems:
            print(f"{s.id:<20} {s.name[:52]:<52} {s.kind.value:<7} {s.read_gbps:>9g} {s.write_gbps:>10g} {s.count:>5}")
        print(f"{len(systems)} storage systems; figures per unit (drive, appliance or prefix); `--json` for sources")
        return 0
    if args.what == "nodes":
        from workbench.catalog.accelerators import load_node_shapes

        nodes = list(load_node_shapes().values())
        if args.json:
            _emit_json({"count": len(nodes), "nodes": [n.model_dump(mode="json") for n in nodes]})
            return 0
        for n in nodes:
            print(f"{n.id:<24} {n.name:<44} {n.gpus_per_node:>3} GPUs  {n.intra_node} / {n.inter_node}")
        return 0
    from workbench.catalog.models import load_model_catalog
    from workbench.core.params import count_parameters

    models = list(load_model_catalog().values())
    rows = []
    for m in models:
        counts = count_parameters(m.architecture)
        rows.append((m, counts))
    if args.json:
        _emit_json(
            {
                "count": len(rows),
                "models": [
                    {
                        "id": m.id,
                        "name": m.name,
                        "family": m.family,
                        "hf_repo": m.hf_repo,
                        "parameters": {"total": c.total, "active": c.active},
                        "published_parameters": m.published_parameters,
                        "source": m.source.model_dump(mode="json") if hasattr(m.source, "model_dump") else m.source,
                        "architecture": m.architecture.model_dump(mode="json"),
                    }
                    for m, c in rows
                ],
            }
        )
        return 0
    print(f"{'id':<22} {'family':<12} {'kind':<16} {'total':>9} {'active':>9} {'layers':>6} {'hidden':>7} attention")
    for m, c in rows:
        a = m.architecture
        print(
            f"{m.id:<22} {m.family:<12} {a.kind.value:<16} {format_count(c.total):>9} {format_count(c.active):>9} "
            f"{a.num_layers:>6} {a.hidden_size:>7} {a.attention_kind}"
        )
    print(f"{len(rows)} models")
    return 0


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


# --- import -------------------------------------------------------------------------------------


def _cmd_import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from workbench.catalog.hf_config import import_hf_path
    from workbench.catalog.safetensors_header import read_checkpoint
    from workbench.core.params import count_parameters

    path = Path(args.path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_file() and path.suffix.lower() == ".gguf":
        return _import_gguf(path, args)
    checkpoint = None
    if path.is_file() and path.suffix == ".safetensors":
        from workbench.catalog.safetensors_header import count_file

        count_file(path)  # a damaged header is reported as such
        raise InputError(f"{path}: a safetensors file holds weights, not the architecture; "
                         "import its folder (with config.json) or the config.json")
    config_present = path.is_file() or (path / "config.json").is_file()
    if path.is_dir():
        checkpoint = read_checkpoint(path)  # None when the folder has no safetensors files
        if not config_present and checkpoint is None:
            raise InputError(f"{path}: no config.json and no *.safetensors files: not a model folder")
    if not config_present:
        raise InputError(f"{path}: a config.json is needed to read the architecture")
    imported = import_hf_path(path, approximate=args.approximate)
    arch = imported.architecture
    counts = count_parameters(arch)
    if args.json:
        doc: dict[str, Any] = {
            "source": str(path),
            "architecture": arch.model_dump(mode="json"),
            "parameters": {"total": counts.total, "active": counts.active, "breakdown": dict(counts.breakdown)},
            "checkpoint": None,
            "reference_class": imported.reference_class,
            "approximate": arch.approximate,
            "notes": list(imported.notes),
        }
        if checkpoint is not None:
            doc["checkpoint"] = {
                "parameters": checkpoint.total,
                "by_dtype": dict(checkpoint.by_dtype),
                "files": [str(f) for f in checkpoint.files],
            }
        _emit_json(doc)
        return 0
    _print_architecture(arch, counts)
    for note in imported.notes:
        print(f"  note: {note}")
    if checkpoint is not None:
        dtypes = ", ".join(f"{k} {v:,}" for k, v in checkpoint.by_dtype.items())
        if checkpoint.exact:
            print(f"  checkpoint   {checkpoint.total:,} parameters in {len(checkpoint.files)} file(s) ({dtypes}); "
                  f"{format_bytes(checkpoint.data_bytes)}")
        else:
            print(f"  checkpoint   index only (shards absent): {format_bytes(checkpoint.data_bytes)} of weights")
    return 0


def _print_architecture(arch: Any, counts: Any) -> None:
    print(f"{arch.name}  ({arch.hf_model_type or arch.family}, {arch.kind.value}, {arch.attention_kind})")
    if arch.approximate:
        print(f"  APPROXIMATE: {arch.approximate}; every estimate from it is marked approximate")
    print(f"  parameters   {counts.total:,} total ({format_count(counts.total)}), "
          f"{counts.active:,} active per token ({format_count(counts.active)})")
    print(f"  layers {arch.num_layers}, hidden {arch.hidden_size}, heads {arch.num_attention_heads} "
          f"(KV {arch.num_kv_heads}, head dim {arch.head_dim}), FFN {arch.intermediate_size}, vocab {arch.vocab_size}")
    if arch.moe:
        print(f"  MoE: {arch.moe.num_experts} experts, top-{arch.moe.experts_per_token}, "
              f"{arch.moe.num_shared_experts} shared, expert FFN {arch.moe.expert_intermediate_size}")
    if arch.mla:
        print(f"  MLA: kv rank {arch.mla.kv_lora_rank}, q rank {arch.mla.q_lora_rank}, "
              f"rope dim {arch.mla.qk_rope_head_dim}")


def _import_gguf(path: Any, args: argparse.Namespace) -> int:
    """A .gguf file: the architecture from its metadata, the weights' real bytes from its tensor table."""
    from workbench.catalog.gguf_header import import_gguf
    from workbench.core.params import count_parameters

    imported = import_gguf(path, approximate=args.approximate)
    arch, header = imported.architecture, imported.header
    counts = count_parameters(arch)
    preset = imported.preset.value if imported.preset is not None else None
    if args.json:
        _emit_json({
            "source": str(path),
            "architecture": arch.model_dump(mode="json"),
            "parameters": {"total": counts.total, "active": counts.active, "breakdown": dict(counts.breakdown)},
            "gguf": {
                "version": header.version,
                "tensors": len(header.tensors),
                "weight_bytes": header.weight_bytes,
                "tensor_types": header.types(),
                "file_type": header.metadata.get("general.file_type"),
                "weights": preset,
            },
            "approximate": arch.approximate,
            "notes": list(imported.notes),
        })
        return 0
    _print_architecture(arch, counts)
    for note in imported.notes:
        print(f"  note: {note}")
    types = ", ".join(f"{k} {v}" for k, v in sorted(header.types().items(), key=lambda kv: -kv[1]))
    print(f"  GGUF v{header.version}  {len(header.tensors)} tensors ({types}); "
          f"weights {format_bytes(header.weight_bytes)} ({header.weight_bytes:,} B)")
    if preset is not None:
        print(f"  weights      llama.cpp {preset}: estimate with --model-config {path} --weights {preset}")
    return 0


# --- scenario -----------------------------------------------------------------------------------


def _cmd_scenario(args: argparse.Namespace) -> int:
    resolved = _resolved_from_args(args)
    scenario = resolved.scenario
    if args.json:
        _emit_json(scenario.model_dump(mode="json"))
        return 0
    print(f"{scenario.name}: {scenario.workload.value} of {resolved.model.name} on "
          f"{scenario.num_gpus} x {resolved.cluster.accelerator.name} ({resolved.cluster.node.name})")
    p = scenario.parallel
    print(f"  TP {p.tp}, PP {p.pp}, DP {p.dp}, EP {p.ep}, ZeRO {p.zero_stage}; dtype {scenario.dtype.value}, "
          f"weights {scenario.weight_format.value}, KV {scenario.kv_cache_dtype.value}")
    print(f"  batch {scenario.batch_size}, sequence {scenario.seq_len}, generate {scenario.gen_len}")
    return 0


# --- estimate, sweep, solve, plugins -----------------------------------------------------------


def _resolved_from_args(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from workbench.catalog.resolve import resolve_scenario
    from workbench.cli.scenario_flags import project_from_args, scenario_from_args

    project = project_from_args(args)
    return resolve_scenario(scenario_from_args(args, project), project)


def _cmd_estimate(args: argparse.Namespace) -> int:
    from workbench.explain import render
    from workbench.pluginhost import default_engine

    from workbench.cli.measure import calibrated, calibration_line

    resolved, calibration = calibrated(args, _resolved_from_args(args))
    estimate = default_engine().run(resolved)
    if args.json:
        _emit_json({**estimate.to_json(explain=True), **({"calibration": calibration} if calibration else {})})
    else:
        if calibration:
            print(calibration_line(calibration))
        print(render(estimate, explain=args.explain))
    return 0


_DEFAULT_SWEEP_KEYS = (
    "memory.per_gpu.total",
    "memory.fits",
    "kv_cache.bytes",
    "flops.forward",
    "roofline.bound",
    "performance.ttft_s",
    "performance.tpot_s",
    "performance.tokens_per_s",
    "performance.step_time_s",
    "cost.usd_per_million_tokens",
)


def _cmd_sweep(args: argparse.Namespace) -> int:
    import csv
    import io

    from workbench.catalog.resolve import resolve_scenario
    from workbench.cli.scenario_flags import project_from_args, scenario_from_args
    from workbench.engine.sweep import check_sweep_size, parse_axis, sweep_chunks, sweep_rows
    from workbench.pluginhost import default_engine

    if not args.vary:
        raise InputError("sweep: give at least one --vary FIELD=V1,V2,...")
    from workbench.cli.measure import calibrated_scenario, calibration_line

    project = project_from_args(args)
    base, calibration = calibrated_scenario(args, scenario_from_args(args, project))
    axes = [parse_axis(spec, base) for spec in args.vary]
    check_sweep_size(axes)  # before any output: a refused sweep writes nothing
    if calibration and any(axis.path in ("gpu", "serving.engine", "workload") for axis in axes):
        # a profile holds one GPU + engine's values: other points would carry values not fitted for them
        raise InputError("sweep: --calibration is for one GPU and engine; do not --vary gpu, engine or workload with it")
    keys = [k.strip() for k in args.keys.split(",")] if args.keys else list(_DEFAULT_SWEEP_KEYS)
    names = [axis.name for axis in axes]
    resolve = lambda s: resolve_scenario(s, project)  # noqa: E731
    if args.format == "csv":
        # The sweep's workers write the CSV text of their chunks themselves; this process only
        # prints it, in order. A name given twice keeps one column per name, as a dict would.
        unique = len(set(names)) == len(names)

        def render(rows: list[Any]) -> str:
            # An empty cell for None, NaN and infinities (finite_or_none's rule), written inline:
            # a million-row sweep has ten million cells. ``v - v`` is NaN only for NaN and +-inf.
            text = io.StringIO()
            csv.writer(text, lineterminator="\n").writerows(
                [*(combo if unique else dict(zip(names, combo)).values()),
                 *["" if v is None or (isinstance(v, float) and v - v != 0.0) else v for v in values],
                 error or ""]
                for combo, values, error in rows
            )  # fmt: skip
            return text.getvalue()

        if calibration:  # a CSV has no place for it that every reader skips: said beside it
            print(f"gpu-workbench: note: {calibration_line(calibration)}", file=sys.stderr)
        csv.writer(sys.stdout, lineterminator="\n").writerow([*names, *keys, "error"])
        for chunk in sweep_chunks(base, axes, resolve, default_engine(), keys, render):
            sys.stdout.write(chunk)
        return 0
    count = check_sweep_size(axes)
    rows = ({**r.settings, **r.values, "error": r.error} for r in sweep_rows(base, axes, resolve, default_engine(), keys))
    # Streamed: a million points are written as they come, never held as one document.
    head: dict[str, Any] = {"varied": names, "keys": keys, "count": count}
    if calibration:
        head["calibration"] = calibration
    stream_json_object(head, "points", rows, sys.stdout)
    return 0


#: What each `solve` question answers; the choices themselves are registered in two places
#: (here and cli.compare), so the help text lists them all once.
SOLVE_DESCRIPTION = """Inverse questions about one scenario (scenario flags as for `estimate`):

  min-gpus          fewest GPUs (and the TP/PP/DP layout) on which the scenario fits
  max-batch         largest batch that fits the scenario's GPUs
  max-context       largest sequence length that fits
  layouts           TP/PP/DP layouts of --gpus that fit, best first
  cheapest          cheapest accelerator and count that fits and meets the targets
                    (candidates: --gpus-list, default every catalog accelerator)
  train-in          fewest GPUs to train --tokens N within --deadline-days D
  max-context-tpot  largest context whose time per output token stays under --max-tpot
  max-batch-tpot    largest batch whose time per output token stays under --max-tpot
"""


def _cmd_solve(args: argparse.Namespace) -> int:
    from workbench.engine import solvers
    from workbench.pluginhost import default_engine

    from workbench.cli.measure import calibrated, calibration_line

    engine = default_engine()
    resolved, calibration = calibrated(args, _resolved_from_args(args))
    doc: dict[str, Any] = {"question": args.question}
    if calibration:
        doc["calibration"] = calibration
    if args.question == "min-gpus":
        layout = solvers.min_gpus(engine, resolved)
        doc["answer"] = None if layout is None else {"num_gpus": layout.tp * layout.pp * layout.dp, **layout.as_dict()}
        if layout is None:
            why = engine.run(resolved).values.get("memory.min_gpus")
            text = "nothing fits" + (f": {why.formula}" if why is not None and why.formula else "")
            doc["reason"] = text
        else:
            text = f"{layout.tp * layout.pp * layout.dp} GPUs (TP {layout.tp} x PP {layout.pp} x DP {layout.dp})"
    elif args.question in ("max-batch", "max-context"):
        field = "batch_size" if args.question == "max-batch" else "seq_len"
        found = solvers.largest_fitting(engine, resolved, field)
        doc["answer"] = None if found is None else {field: found[0], "memory_per_gpu": found[1].get("memory.per_gpu.total")}
        text = "nothing fits, even at 1" if found is None else f"{field} = {found[0]:,}"
        if found is not None and solvers.at_search_limit(field, found[0]):
            # The limit itself fits: the true maximum is unknown, so say "at least", never "=".
            limit = solvers.SEARCH_LIMITS[field]
            doc["answer"] = None
            doc["at_least"] = {field: limit, "memory_per_gpu": found[1].get("memory.per_gpu.total")}
            doc["reason"] = text = f"fits beyond the search limit: {field} >= {limit:,} (the largest a scenario accepts)"
        sc = resolved.scenario
        if sc.images_per_request and resolved.model.vision_tower is not None:
            # the solved prompt is text; each request's images come on top of it
            text += f" (text tokens, beside {sc.images_per_request} image(s) of {sc.image_width}x{sc.image_height})"
    else:
        found_layouts = solvers.layouts(engine, resolved)
        doc["answer"] = [layout.as_dict() for layout in found_layouts]
        text = "\n".join(
            f"  TP {l.tp:>2} x PP {l.pp:>2} x DP {l.dp:>3}  {'fits' if l.fits else 'OOM '}  "
            f"{format_bytes(float(l.estimate.get('memory.per_gpu.total') or 0))}/GPU"
            for l in found_layouts
        ) or "no layout"
    if args.json:
        _emit_json(doc)
    else:
        if calibration:
            print(calibration_line(calibration))
        print(f"{args.question}: {text}" if args.question != "layouts" else f"layouts, best first:\n{text}")
    return 0


def _cmd_assumptions(args: argparse.Namespace) -> int:
    from workbench.pluginhost import default_engine

    rows = sorted(default_engine().assumptions.values(), key=lambda a: a.id)
    if args.json:
        _emit_json({"assumptions": [
            {"id": a.id, "title": a.title, "default": a.default, "unit": a.unit, "source": a.source,
             "description": a.description, "minimum": a.minimum, "maximum": a.maximum} for a in rows]})
        return 0
    if args.markdown:
        print("| id | default | unit | what | source |")
        print("|---|---|---|---|---|")
        for a in rows:
            print(f"| `{a.id}` | {a.default:g} | {a.unit} | {a.title} | {a.source} |")
        return 0
    for a in rows:
        print(f"{a.id:<42} {a.default:g} {a.unit} (allowed: {a.range_text()})")
        print(f"    {a.title}. Source: {a.source}")
    return 0


def _cmd_plugins(args: argparse.Namespace) -> int:
    from workbench.pluginhost import default_engine, get_host

    statuses = get_host().status_list()
    rejected = [{"estimator": f.estimator, "reason": f.message} for f in default_engine().rejected]
    if args.json:
        _emit_json({"plugins": [s.as_dict() for s in statuses], "rejected_estimators": rejected})
        return 0
    for s in statuses:
        what = ", ".join(f"{n} {k}" for k, n in s.registered.items()) or "nothing registered"
        print(f"{s.name:<28} {s.version or '-':<8} {s.status:<9} {s.origin}  ({what})")
        if s.error:
            print(f"    error: {s.error}")
    for r in rejected:
        print(f"estimator {r['estimator']} not used: {r['reason']}")
    return 0


# --- entry --------------------------------------------------------------------------------------


#: Commands this module defines whole. Parsing one of them needs none of the other command groups,
#: whose modules import the comparison engine, the report and the exporters (~25 ms of a
#: 0.45 s sweep); ``solve`` is not among them (cli.compare adds its questions).
OWN_COMMANDS = frozenset({"catalog", "import", "scenario", "estimate", "sweep", "assumptions", "plugins"})


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; given one of :data:`OWN_COMMANDS`, only what parsing that command needs
    (the other command groups are left out, so ``--help`` of the whole CLI must not pass one)."""
    from workbench.cli.measure import add_calibration_option
    from workbench.cli.scenario_flags import add_scenario_flags

    parser = _Parser(
        prog="gpu-workbench",
        description="Size AI workloads on GPUs before buying or renting them. "
        "With no command, opens the window.",
    )
    parser.add_argument("--version", action="version", version=f"gpu-workbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    catalog = sub.add_parser("catalog", help="list catalog accelerators, node shapes or models")
    catalog.add_argument("what", choices=["gpus", "models", "nodes", "storage"])
    catalog.add_argument("--json", action="store_true", help="one JSON document on stdout")
    catalog.set_defaults(handler=_cmd_catalog)

    imp = sub.add_parser(
        "import", help="read a config.json, a model folder or a .gguf header and count its parameters"
    )
    imp.add_argument("path", help="config.json file, model folder or .gguf file")
    imp.add_argument("--json", action="store_true", help="one JSON document on stdout")
    imp.add_argument(
        "--approximate",
        action="store_true",
        help="read an unknown model_type as a Llama-style block instead of refusing it (marked approximate)",
    )
    imp.set_defaults(handler=_cmd_import)

    scen = sub.add_parser("scenario", help="validate scenario flags/file and print the scenario")
    add_scenario_flags(scen)
    scen.add_argument("--json", action="store_true", help="print the scenario as JSON (a --scenario file)")
    scen.set_defaults(handler=_cmd_scenario)

    est = sub.add_parser("estimate", help="memory, compute, speed and cost of one scenario")
    add_scenario_flags(est)
    est.add_argument("--json", action="store_true", help="one JSON document on stdout (see README)")
    est.add_argument("--explain", action="store_true", help="print every formula and assumption")
    add_calibration_option(est)
    est.set_defaults(handler=_cmd_estimate)

    sweep = sub.add_parser("sweep", help="estimate every combination of varied fields")
    add_scenario_flags(sweep)
    sweep.add_argument("--vary", action="append", default=[], metavar="FIELD=V1,V2,...",
                       help="a field and its values (repeatable), e.g. batch=1,2,4 or batch=1..512; "
                       "at most 10,000 values per field and 1,000,000 points in all (points are streamed)")
    sweep.add_argument("--keys", help="comma-separated result keys to output")
    sweep.add_argument("--format", choices=["json", "csv"], default="json", help="output format")
    add_calibration_option(sweep)
    sweep.set_defaults(handler=_cmd_sweep)

    solve = sub.add_parser(
        "solve",
        help="inverse questions: fewest GPUs, largest batch/context, layouts, cheapest accelerator",
        description=SOLVE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    solve.add_argument("question", choices=["min-gpus", "max-batch", "max-context", "layouts"],
                       help="which question (see above)")
    add_scenario_flags(solve)
    solve.add_argument("--json", action="store_true", help="one JSON document on stdout")
    add_calibration_option(solve)
    solve.set_defaults(handler=_cmd_solve)

    if command not in OWN_COMMANDS:
        _add_command_groups(sub, add_scenario_flags, solve)

    assumptions = sub.add_parser("assumptions", help="every named assumption with its default and source")
    assumptions.add_argument("--json", action="store_true", help="one JSON document on stdout")
    assumptions.add_argument("--markdown", action="store_true", help="a Markdown table")
    assumptions.set_defaults(handler=_cmd_assumptions)

    plugins = sub.add_parser("plugins", help="list plugins with version, origin and status")
    plugins.add_argument("--json", action="store_true", help="one JSON document on stdout")
    plugins.set_defaults(handler=_cmd_plugins)
    return parser


def _add_command_groups(sub: Any, add_scenario_flags: Callable[[argparse.ArgumentParser], None],
                        solve: argparse.ArgumentParser) -> None:
    """The command groups other modules define: projects, report, measurements, comparison, export."""
    from workbench.cli.project import add_project_commands

    add_project_commands(sub, _Parser, add_scenario_flags)

    from workbench.cli.report import add_report_command

    add_report_command(sub, add_scenario_flags)

    from workbench.cli.measure import add_measure_commands

    add_measure_commands(sub, _Parser, add_scenario_flags)

    from workbench.cli.compare import add_compare_commands

    add_compare_commands(sub, _Parser, add_scenario_flags, solve)

    from workbench.cli.export import add_export_command

    add_export_command(sub, add_scenario_flags)


def _open_window(argv: Sequence[str]) -> int:
    from workbench.gui.app import run_app

    return run_app(list(argv))


def _show_warning(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
    """Warnings (e.g. importer notes) as one readable line, without source excerpts."""
    print(f"gpu-workbench: note: {one_line(str(message))}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    warnings.showwarning = _show_warning
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything the CLI prints goes through one filter: names from files and flags may hold
    # terminal escape sequences, which are shown escaped (\x1b), never sent to the terminal.
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = EscapingWriter(stdout), EscapingWriter(stderr)
    try:
        parser = build_parser(argv[0] if argv and not argv[0].startswith("-") else None)
        if any("\x00" in item for item in argv):  # only an in-process caller can pass one
            parser.error("an argument holds a NUL character")
        args = parser.parse_args(argv)
        handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
        if handler is None:
            sys.stdout, sys.stderr = stdout, stderr
            return _open_window(argv)
        from workbench.cli.guard import guarded_command, report_runtime_faults

        try:
            # The guard needs the real stream: it keeps its file descriptor for our output and
            # points descriptor 1 at stderr, so nothing a plugin writes can corrupt --json.
            sys.stdout = stdout
            with guarded_command():
                sys.stdout = EscapingWriter(sys.stdout)
                code = handler(args)
            sys.stdout = EscapingWriter(stdout)
            report_runtime_faults()
            return code
        except InputError as exc:
            print(f"gpu-workbench: error: {one_line(str(exc))}", file=sys.stderr)
            return EXIT_USAGE
        except BrokenPipeError:
            return 0
        except KeyboardInterrupt:  # the user's Ctrl+C (a plugin's own KeyboardInterrupt fails the plugin)
            print("gpu-workbench: interrupted", file=sys.stderr)
            return 130
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        sys.stdout, sys.stderr = stdout, stderr


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
