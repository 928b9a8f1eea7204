"""`gpu-workbench compare`, `sensitivity`, and the inverse questions `solve` gains here:
``cheapest``, ``train-in``, ``max-context-tpot`` and ``max-batch-tpot``.

Candidates are ``ID[:NODE][@USD_PER_GPU_HOUR][/USD_PER_GPU]`` in ``--gpus-list`` (``mi300x@3.5``:
MI300X at $3.50 per GPU-hour; ``b200@5/38000`` also at $38,000 to buy; ``b200@/38000`` the purchase
price alone), or ``--candidates all`` (the catalog plus the project's own accelerators).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from workbench.cli.output import emit_json
from workbench.cli.scenario_flags import finite_number, whole_number
from workbench.core.errors import InputError
from workbench.core.limits import MAX_GPUS as LIMIT_GPUS
from workbench.core.limits import MAX_TRAIN_TOKENS, MAX_USD
from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.core.units import format_count
from workbench.engine import serving_engines
from workbench.engine.compare import (
    Candidate,
    CandidateResult,
    Comparison,
    ScenarioComparison,
    Targets,
    format_metric,
    format_usd,
    has_load,
    load_words,
)
from workbench.engine.solvers import MAX_GPUS

SOLVE_QUESTIONS = ("cheapest", "train-in", "max-context-tpot", "max-batch-tpot")


def _emit_json(document: Any) -> None:
    emit_json(document, sys.stdout)


# --- arguments ----------------------------------------------------------------------------------


def _positive_float(text: str) -> float:
    value = finite_number(text)  # nan, inf and 1e999 are refused with their own message
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
    return value


def _positive_int(text: str) -> int:
    value = whole_number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got '{text}'")
    if value > LIMIT_GPUS:
        raise argparse.ArgumentTypeError(f"{value:,} is more than the limit of {LIMIT_GPUS:,}")
    return value


def _add_candidates(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--gpus-list",
        metavar="ID[:NODE][@USD[/USD]],...",
        help="candidate accelerators, e.g. h100-sxm,h200-sxm,mi300x@3.5/15000 (@: rental price per GPU-hour, "
        "/: purchase price per GPU)",
    )
    group.add_argument(
        "--candidates", choices=["all"], help="every accelerator of the catalog and the project"
    )
    parser.add_argument(
        "--max-gpus",
        type=_positive_int,
        default=MAX_GPUS,
        help=f"largest job the sizing considers (default {MAX_GPUS:,})",
    )


def _add_targets(parser: argparse.ArgumentParser, days_alias: bool = False) -> None:
    group = parser.add_argument_group("targets")
    group.add_argument(
        "--max-ttft", type=_positive_float, metavar="S", help="time to first token at most S seconds"
    )
    group.add_argument(
        "--max-tpot", type=_positive_float, metavar="S", help="time per output token at most S seconds"
    )
    group.add_argument(
        "--min-tokens-per-s", type=_positive_float, metavar="N", help="throughput at least N tokens/s"
    )
    names = ["--deadline-days", "--days"] if days_alias else ["--deadline-days"]
    group.add_argument(
        *names,
        dest="deadline_days",
        type=_positive_float,
        metavar="D",
        help="training finishes within D days",
    )
    group.add_argument("--budget-usd", type=_positive_float, metavar="X", help="spend at most X USD")
    group.add_argument(
        "--budget-basis",
        choices=["auto", "run", "tco", "capex"],
        default="auto",
        help="what the budget pays for: the training run, the cheaper of buying and renting over "
        "--years, or buying (auto: run for training with --train-tokens, else tco)",
    )


def _targets(args: argparse.Namespace) -> Targets:
    return Targets(
        args.max_ttft,
        args.max_tpot,
        args.min_tokens_per_s,
        args.deadline_days,
        args.budget_usd,
        args.budget_basis,
    )


def parse_candidates(text: str) -> list[Candidate]:
    """``h100-sxm,mi300x:mi300x-8-oam@3.5/21000`` -> candidates (node and prices optional: after
    @ the rental price per GPU-hour, after / the purchase price per GPU; either may be left out,
    as in ``b200@/38000``)."""
    out = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        spec, at, prices = item.partition("@")
        ident, _, node = spec.partition(":")
        rent_text, slash, buy_text = prices.partition("/")
        if at and not rent_text and not buy_text:
            raise InputError(f"--gpus-list: '{item}': give a price after @ (USD per GPU-hour, then /USD per GPU)")
        rent = _price(item, rent_text, "the price after @ must be a positive number (USD per GPU-hour)")
        buy = _price(item, buy_text, "the price after / must be a positive number (USD per GPU)")
        if slash and not buy_text:
            raise InputError(f"--gpus-list: '{item}': give the purchase price after / (USD per GPU)")
        if not ident:
            raise InputError(f"--gpus-list: '{item}' names no accelerator")
        out.append(Candidate(ident.lower(), node.lower() or None, rent, buy))
    if not out:
        raise InputError("--gpus-list: name at least one accelerator")
    return out


def draw_count(text: str) -> int:
    """A --confidence flag: a whole number of Monte Carlo draws within the engine's limit."""
    from workbench.engine.confidence import MAX_DRAWS

    value = whole_number(text)
    if not 1 <= value <= MAX_DRAWS:
        raise argparse.ArgumentTypeError(f"a whole number of draws from 1 to {MAX_DRAWS:,}")
    return value


def _price(item: str, text: str, why: str) -> float | None:
    """A positive price (None when ``text`` is empty); InputError naming the candidate otherwise."""
    if not text:
        return None
    try:
        price = float(text) if len(text) <= 64 else -1.0
    except ValueError:
        price = -1.0
    if not 0 < price <= MAX_USD:  # also refuses nan and inf
        raise InputError(f"--gpus-list: '{item}': {why}")
    return price


def _candidates(
    args: argparse.Namespace, project: Project | None, required: bool = True
) -> list[Candidate] | None:
    from workbench.catalog.accelerators import load_accelerators, load_node_shapes
    from workbench.catalog.resolve import resolve_accelerator

    if args.candidates == "all":
        ids = list(load_accelerators())
        if project is not None:
            ids += [i for i in project.accelerators if i not in ids]
        return [Candidate(i) for i in ids]
    if not args.gpus_list:
        if required:
            raise InputError("name the candidates with --gpus-list ID,ID,... or --candidates all")
        return None
    candidates = parse_candidates(args.gpus_list)
    nodes = None
    for c in candidates:
        resolve_accelerator(c.accelerator, project)  # an unknown id is refused with the closest known one
        if c.node is not None:
            nodes = nodes or load_node_shapes()
            if c.node not in nodes:
                raise InputError(f"--gpus-list: unknown node shape '{c.node}' (see `catalog nodes`)")
    return candidates


def _with(args: argparse.Namespace, **changes: Any) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), **changes})


def _scenarios(args: argparse.Namespace) -> tuple[list[Scenario], Project | None]:
    """The scenarios to compare: one from flags / a file, or named ones from ``--project``."""
    from workbench.cli.scenario_flags import project_from_args, scenario_from_args

    project = project_from_args(args)
    names: list[str] = list(args.scenario or [])
    if project is not None:
        names = names or [s.name for s in project.scenarios]
        if not names:
            raise InputError(f"{args.project}: the project has no scenarios")
        return [scenario_from_args(_with(args, scenario=name), project) for name in names], project
    if len(names) > 1:
        raise InputError("--scenario: give one scenario file, or a --project to compare several by name")
    return [scenario_from_args(_with(args, scenario=names[0] if names else None))], None


def _apply_price_flags(args: argparse.Namespace, candidates: list[Candidate]) -> list[Candidate]:
    """A price given with --usd-per-gpu-hour / --purchase-usd is for one accelerator."""
    rental = getattr(args, "s_pricing__cloud_usd_per_gpu_hour", None)
    purchase = getattr(args, "s_pricing__purchase_usd_per_gpu", None)
    if rental is None and purchase is None:
        return candidates
    if len(candidates) == 1:
        c = candidates[0]
        return [
            Candidate(c.accelerator, c.node, c.usd_per_gpu_hour or rental, c.purchase_usd_per_gpu or purchase)
        ]
    named = getattr(args, "s_gpu", None)
    if named is None or all(c.accelerator != named.lower() for c in candidates):
        flag = "--usd-per-gpu-hour" if rental is not None else "--purchase-usd"
        raise InputError(
            f"{flag} is the price of one accelerator: name it with --gpu, or give each candidate's "
            "rental price as ID@USD in --gpus-list"
        )
    return candidates


def _resolver(project: Project | None):  # type: ignore[no-untyped-def]
    from workbench.catalog.resolve import resolve_scenario

    return lambda scenario: resolve_scenario(scenario, project)


# --- compare ------------------------------------------------------------------------------------

_INFERENCE_COLUMNS = (
    "gpus",
    "ttft_s",
    "tpot_s",
    "tokens_per_s",
    "usd_per_hour",
    "usd_per_m_tokens",
    "tokens_per_kwh",
    "tco_buy_usd",
    "tco_rent_usd",
)
_TRAINING_COLUMNS = (
    "gpus",
    "tokens_per_s",
    "train_days",
    "usd_per_hour",
    "run_usd",
    "usd_per_m_tokens",
    "tokens_per_kwh",
    "tco_buy_usd",
    "tco_rent_usd",
)
_SHORT = {
    "gpus": "GPUs",
    "ttft_s": "TTFT",
    "tpot_s": "TPOT",
    "tokens_per_s": "tokens/s",
    "train_days": "days",
    "usd_per_hour": "$/h",
    "usd_per_m_tokens": "$/Mtok",
    "run_usd": "$/run",
    "tokens_per_kwh": "tok/kWh",
    "tco_buy_usd": "TCO buy",
    "tco_rent_usd": "TCO rent",
}


#: Simulated columns (a scenario with a load): header with its unit, and the scale into that unit.
_SIM_COLUMNS: dict[str, tuple[str, float]] = {
    "sim_ttft_p50_s": ("TTFT p50 (s)", 1.0),
    "sim_ttft_p99_s": ("TTFT p99 (s)", 1.0),
    "sim_tpot_p50_s": ("TPOT p50 (ms)", 1e3),
    "sim_tpot_p99_s": ("TPOT p99 (ms)", 1e3),
    "sim_goodput_rps": ("goodput (req/s)", 1.0),
}


def _cell(metric: str, value: Any) -> str:
    if value is None:
        return "-"
    if metric in _SIM_COLUMNS:
        return f"{value * _SIM_COLUMNS[metric][1]:.3g}"
    if metric == "tokens_per_s":
        return f"{value:,.0f}"
    if metric == "tokens_per_kwh":
        return format_count(value, 1)
    text = format_metric(metric, value)
    return text.replace("/Mtoken", "").replace("/h", "").replace(" days", "")


def render_scenario(sc: ScenarioComparison, max_gpus: int = MAX_GPUS) -> str:
    s = sc.scenario
    columns = _TRAINING_COLUMNS if s.is_training else _INFERENCE_COLUMNS
    if has_load(s):
        columns = (*columns, *_SIM_COLUMNS)
    ranked_by = {"run_usd": "$ of the training run", "usd_per_m_tokens": "$ per million tokens"}[
        sc.cost_metric
    ]
    lines = [
        f"{s.name}: {s.workload.value} of {s.model}, batch {s.batch_size}, sequence {s.seq_len}"
        + (f", {s.train_tokens:.3g} tokens" if s.train_tokens else "")
        + f"; ranked by {ranked_by}"
    ]
    if has_load(s):
        lines.append(f"  under load: {_load_text(s)}; TTFT/TPOT targets judged on the simulated p99")
    headers = (_SIM_COLUMNS[c][0] if c in _SIM_COLUMNS else _SHORT[c] for c in columns)
    rows = [["#", "accelerator", *headers, "layout", "verdict"]]
    for r in sc.results:
        layout = f"TP{r.tp} PP{r.pp} DP{r.dp}" if r.fits else "-"
        rows.append(
            [str(r.rank), r.candidate.label, *(_cell(c, r.values.get(c)) for c in columns), layout, r.verdict]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [
            row[i].ljust(widths[i]) if i in (0, 1, len(widths) - 1) else row[i].rjust(widths[i])
            for i in range(len(widths))
        ]
        lines.append("  " + "  ".join(cells) + "  " + row[-1])
    if sc.recommendation is not None:
        best = sc.recommendation
        lines.append(
            f"recommendation: {best.candidate.label} x {best.gpus} "
            f"({format_metric(best.cost_metric, best.cost)}; {best.sizing})"
        )
    else:
        lines.append(f"no recommendation: {sc.why_no_recommendation}")
    return "\n".join(lines)


def _load_text(s: Scenario) -> str:
    sv = s.serving
    load = load_words(s) if sv.trace is not None else f"{sv.arrival_rate:g} requests/s"
    if sv.trace is None and sv.arrival_cv != 1.0:
        load += f" (CV {sv.arrival_cv:g})"
    count = "" if sv.trace is not None else f"{sv.requests:,} requests, "
    if not sv.explicit("batching"):
        # the engine's scheduler, resolved per candidate GPU (vLLM's budget depends on its memory)
        return f"{count}{load}, {serving_engines.title(sv.engine)} scheduling defaults"
    return f"{count}{load}, {sv.batching.value} batching"


def render(comparison: Comparison, max_gpus: int = MAX_GPUS) -> str:
    parts = [render_scenario(sc, max_gpus) for sc in comparison.scenarios]
    if len(comparison.scenarios) > 1:
        rec = comparison.recommendation
        parts.append(
            f"overall: {rec.label}" if rec is not None else f"overall: {comparison.why_no_recommendation}"
        )
    return "\n\n".join(parts)


def _write(text: str, target: str, what: str) -> None:
    if target == "-":
        sys.stdout.write(text)
        return
    from workbench.core.atomic_write import write_text

    write_text(target, text, what=what)  # a full disk leaves the old file and exits 2


def _cmd_compare(args: argparse.Namespace) -> int:
    from workbench.engine.compare import compare
    from workbench.pluginhost import default_engine
    from workbench.report import exports

    from workbench.cli.measure import calibrated_resolver

    scenarios, project = _scenarios(args)
    candidates = _apply_price_flags(args, _candidates(args, project) or [])
    if args.confidence_tails != "base" and not (args.iso_sla and args.confidence):
        raise InputError("--confidence-tails goes with --iso-sla --confidence N")
    resolve = calibrated_resolver(args, _resolver(project))
    if args.iso_sla:  # its own search: the comparison at the typed batch is not shown with it
        return _iso_sla(args, scenarios[0], candidates, resolve)
    confidence = None
    if args.confidence:
        from workbench.engine.confidence import decision_confidence

        confidence = decision_confidence(default_engine(), scenarios, candidates, resolve, _targets(args),
                                         draws=args.confidence, max_gpus=args.max_gpus)  # fmt: skip
        comparison = confidence.base
    else:
        comparison = compare(default_engine(), scenarios, candidates, resolve, _targets(args), max_gpus=args.max_gpus)
    fronts = None
    if args.pareto or args.pareto_csv:
        from workbench.engine.pareto import pareto_fronts

        fronts = pareto_fronts(default_engine(), scenarios[0], candidates, resolve)
    if args.pareto_csv:
        _write(_pareto_csv(fronts), args.pareto_csv, "the Pareto CSV export")
        if args.pareto_csv == "-":
            return 0
    calibration = _calibration_summary(resolve)
    if args.json:
        doc = exports.comparison_json(comparison)
        if calibration:
            doc["calibration"] = calibration
        if confidence is not None:
            doc["confidence"] = confidence.as_dict()
        if args.pareto:
            doc["pareto"] = {"scenario": scenarios[0].name, "fronts": [f.as_dict() for f in fronts]}
        _emit_json(doc)
        return 0
    if (confidence is not None or args.pareto) and (args.csv or args.html):
        raise InputError("--confidence and --pareto go with the text or --json output, not --csv/--html")
    if calibration and "-" in (args.csv, args.html):
        print(f"gpu-workbench: note: {_calibration_text(calibration)}", file=sys.stderr)
    if args.csv:
        _write(exports.comparison_csv(comparison), args.csv, "the CSV export")
        if args.csv == "-":
            return 0
    if args.html:
        _write(exports.comparison_html(comparison), args.html, "the HTML export")
        if args.html == "-":
            return 0
    if calibration:
        print(_calibration_text(calibration))
    print(render(comparison, args.max_gpus))
    if confidence is not None:
        print()
        print(render_confidence(confidence))
    if args.pareto:
        print()
        print(render_pareto(scenarios[0].name, fronts))
    for path in (args.csv, args.html, args.pareto_csv):
        if path:
            print(f"wrote {path}")
    return 0


def _calibration_summary(resolve: Any) -> dict[str, Any] | None:
    from workbench.cli.measure import CalibratedResolver

    return resolve.summary() if isinstance(resolve, CalibratedResolver) else None


def _calibration_text(summary: dict[str, Any]) -> str:
    from workbench.cli.measure import calibration_line

    return calibration_line(summary) or ""


def _iso_sla(args: argparse.Namespace, scenario: Scenario, candidates: list[Any], resolve: Any) -> int:
    from workbench.engine.iso_sla import iso_sla
    from workbench.pluginhost import default_engine

    weights = [w.strip() for w in args.weights_options.split(",") if w.strip()] if args.weights_options else None
    if args.csv or args.html:
        raise InputError("--iso-sla goes with the text or --json output, not --csv/--html")
    confidence = None
    if args.confidence:
        from workbench.engine.iso_confidence import iso_sla_confidence

        confidence = iso_sla_confidence(default_engine(), scenario, candidates, resolve, _targets(args),
                                        weights=weights, draws=args.confidence, tails=args.confidence_tails)  # fmt: skip
        iso = confidence.base
    else:
        iso = iso_sla(default_engine(), scenario, candidates, resolve, _targets(args), weights=weights)
    calibration = _calibration_summary(resolve)
    if args.json:
        doc = {"scenario": scenario.name, "targets": _targets(args).as_dict(), "results": [r.as_dict() for r in iso]}
        if confidence is not None:
            doc["confidence"] = confidence.as_dict()
        if calibration:
            doc["calibration"] = calibration
        _emit_json(doc)
    else:
        if calibration:
            print(_calibration_text(calibration))
        print(render_iso_sla(scenario.name, iso, _targets(args), confidence))
    return 0


def render_iso_sla(scenario: str, results: Any, targets: Any, confidence: Any = None) -> str:
    """Each candidate in its cheapest configuration that meets the targets, ranked; with a
    confidence, each one's share of the draws beside it and the break-even thresholds after."""
    demand = targets.min_tokens_per_s is not None
    shares = {} if confidence is None else confidence.shares
    lines = [f"{scenario} at equal service level: each candidate in its cheapest configuration of one-node replicas "
             f"that meets the targets ({'cost per hour of the replicas the demand needs' if demand else 'cost per million tokens'})"]  # fmt: skip
    for r in results:
        if not getattr(r, "settled", True):
            # The search ran out of simulations before it knew: not a verdict that it misses.
            lines.append(f"  {r.rank:>2}  {r.candidate.label}: {r.reason}")
            continue
        if r.best is None or not r.meets:
            lines.append(f"  {r.rank:>2}  {r.candidate.label}: does not meet the targets: {r.reason}")
            continue
        b = r.best
        cost = f"${b.usd_per_hour:,.2f}/h" if demand else f"${b.usd_per_million_tokens:.3g}/Mtok"
        lines.append(f"  {r.rank:>2}  {r.candidate.label}: {cost} with {b.describe()} ({b.gpus} GPUs; "
                     f"mean TTFT {b.ttft_s * 1e3:.3g} ms, TPOT {b.tpot_s * 1e3:.3g} ms, {b.tokens_per_s:,.0f} tokens/s)")  # fmt: skip
        lines.extend(f"      {note}" for note in r.notes if note.startswith("simulated"))
        if r.break_even_usd_per_gpu_hour is not None:
            lines.append(f"      it would win at a price below ${r.break_even_usd_per_gpu_hour:,.2f}/GPU-h")
    general = next((n for r in results for n in r.notes if not n.startswith("simulated")), "")
    if general:
        lines.append(f"  note: {general}")
    if confidence is not None:
        lines.append(render_iso_confidence(confidence))
    return "\n".join(lines)


def render_iso_confidence(confidence: Any) -> str:
    """The shares of the draws each candidate wins at equal service level, and the thresholds."""
    lines = [f"confidence at equal service level over {confidence.draws:,} draws (seed {confidence.seed}) of "
             f"{len(confidence.drawn)} assumptions, each uniform over its documented range:"]  # fmt: skip
    for label, share in sorted(confidence.shares.items(), key=lambda item: (-item[1], item[0])):
        if share:
            lines.append(f"  {label}: the cheapest that meets the targets in {share:.1%} of draws")
    if confidence.no_recommendation:
        lines.append(f"  no candidate meets the targets in {confidence.no_recommendation:.1%} of draws")
    if confidence.drawn:
        lines.append("  drawn: " + ", ".join(f"{f.id} {f.low:.3g}..{f.high:.3g}" for f in confidence.drawn))
    for b in confidence.break_even:
        lines.append(f"  break-even: {b.describe()}")
    lines.extend(f"  note: {note}" for note in confidence.notes)
    return "\n".join(lines)


def render_pareto(scenario: str, fronts: Any) -> str:
    """Each candidate's throughput front: per-GPU against per-user speed, with cost and TPOT."""
    lines = [f"Pareto fronts of {scenario} (one node; TP x concurrency): throughput per GPU against tokens/s per user"]
    for f in fronts:
        lines.append(f"  {f.candidate.label}:" + ("" if f.throughput else "  " + "; ".join(f.notes)))
        for p in f.throughput:
            usd = "no price" if p.usd_per_million_tokens is None else f"${p.usd_per_million_tokens:.3g}/Mtok"
            lines.append(f"    TP{p.tp} x {p.batch:>4}: {p.tokens_per_s_per_gpu:>8,.0f} tok/s/GPU  "
                         f"{p.tokens_per_s_per_user:>6.1f} tok/s/user  TPOT {p.tpot_s * 1e3:.1f} ms  {usd}")  # fmt: skip
    return "\n".join(lines)


def _pareto_csv(fronts: Any) -> str:
    import csv
    import io

    text = io.StringIO()
    out = csv.writer(text, lineterminator="\n")
    out.writerow(["candidate", "tp", "batch", "gpus", "tokens_per_s_per_gpu", "tokens_per_s_per_user", "tpot_s",
                  "ttft_s", "usd_per_million_tokens", "throughput_front", "cost_front"])  # fmt: skip
    for f in fronts:
        on_throughput, on_cost = set(f.throughput), set(f.cost)
        for p in f.points:
            out.writerow([f.candidate.label, p.tp, p.batch, p.gpus, p.tokens_per_s_per_gpu, p.tokens_per_s_per_user,
                          p.tpot_s, p.ttft_s, "" if p.usd_per_million_tokens is None else p.usd_per_million_tokens,
                          p in on_throughput, p in on_cost])  # fmt: skip
    return text.getvalue()


def render_confidence(confidence: Any) -> str:
    """How often each candidate is the recommendation over the draws, most often first."""
    lines = [f"decision confidence over {confidence.draws:,} draws (seed {confidence.seed}) of "
             f"{len(confidence.drawn)} assumptions, each uniform over its documented range:"]  # fmt: skip
    ranked = sorted(confidence.shares.items(), key=lambda item: (-item[1], item[0]))
    for label, share in ranked:
        lines.append(f"  {label}: the cheapest that meets the targets in {share:.0%} of draws")
    if confidence.no_recommendation:
        lines.append(f"  no candidate meets the targets in {confidence.no_recommendation:.0%} of draws")
    lines.append("  drawn: " + ", ".join(f"{f.id} {f.low:.3g}..{f.high:.3g}" for f in confidence.drawn))
    lines.extend(f"  note: {note}" for note in confidence.notes)
    return "\n".join(lines)


# --- sensitivity --------------------------------------------------------------------------------


def _fmt_factor(value: float, unit: str) -> str:
    if unit == "x price":
        return f"x{value:.2f}"
    return f"{value:.3g}"


def render_sensitivity(sens: Any) -> str:
    head = f"{sens.scenario}: {sens.metric_title} ({sens.unit}) = {_num(sens.base)}; "
    lines = [head + "each factor swung alone from low to high, biggest swing first"]
    if sens.recommendation is not None:
        lines[0] += f"; recommendation {sens.recommendation}"
    rows = [["factor", "low", "high", "at low", "at high", "swing", "recommendation"]]
    still = []
    for bar in sens.bars:
        if bar.swing == 0 and not bar.recommendation_changes:
            still.append(bar.factor.id)
            continue
        changed = []
        if bar.recommendation_changes:
            for end, pick in (("low", bar.recommendation_at_low), ("high", bar.recommendation_at_high)):
                if pick != sens.recommendation:
                    changed.append(f"at {end}: {pick or 'none'}")
        rec = "; ".join(changed)
        f = bar.factor
        rows.append(
            [
                f.id,
                _fmt_factor(f.low, f.unit),
                _fmt_factor(f.high, f.unit),
                _num(bar.at_low),
                _num(bar.at_high),
                _num(bar.swing),
                rec,
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        lines.append(
            "  "
            + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        )
    if still:
        lines.append("no effect: " + ", ".join(still))
    if sens.spans:
        lines.append("ranges (every efficiency assumption at one end of its range):")
        for span in sens.spans:
            lines.append(
                f"  {span.title:<26} {_num(span.low)} .. {_num(span.likely)} .. {_num(span.high)} {span.unit}"
            )
    for note in sens.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def _cmd_sensitivity(args: argparse.Namespace) -> int:
    from workbench.engine import sensitivity
    from workbench.pluginhost import default_engine

    from workbench.cli.measure import calibrated_resolver, calibrated_scenario

    engine = default_engine()
    scenarios, project = _scenarios(args)
    candidates = _candidates(args, project, required=False)
    if candidates is None:
        if len(scenarios) > 1:
            raise InputError(
                "sensitivity: name one scenario (--scenario NAME), or give candidates to compare"
            )
        from workbench.catalog.resolve import resolve_scenario

        scenario, calibration = calibrated_scenario(args, scenarios[0])
        sens = sensitivity.tornado(engine, resolve_scenario(scenario, project), args.metric)
    else:
        if args.metric:
            raise InputError("--metric: with candidates the metric is the recommendation's cost")
        candidates = _apply_price_flags(args, candidates)
        resolve = calibrated_resolver(args, _resolver(project))
        _, sens = sensitivity.comparison_tornado(engine, scenarios, candidates, resolve, _targets(args))
        calibration = _calibration_summary(resolve)
    if args.json:
        _emit_json({**sens.as_dict(), **({"calibration": calibration} if calibration else {})})
    else:
        if calibration:
            print(_calibration_text(calibration))
        print(render_sensitivity(sens))
    return 0


# --- solve: cheapest, train-in, max-*-tpot -----------------------------------------------------


def _result_doc(result: CandidateResult) -> dict[str, Any]:
    doc = result.as_dict()
    doc["num_gpus"] = result.gpus
    return doc


def _cmd_solve_more(args: argparse.Namespace) -> int:
    from workbench.catalog.resolve import resolve_scenario
    from workbench.cli.scenario_flags import project_from_args, scenario_from_args
    from workbench.engine import solvers
    from workbench.pluginhost import default_engine

    from workbench.cli.measure import calibrated_resolver, calibrated_scenario

    engine = default_engine()
    project = project_from_args(args)
    scenario = scenario_from_args(args, project)
    doc: dict[str, Any] = {"question": args.question}
    calibration = None
    if args.question != "cheapest":  # one GPU: the profile must be fitted on it
        scenario, calibration = calibrated_scenario(args, scenario)
    if args.question == "cheapest":
        from workbench.engine.compare import cheapest

        candidates = _candidates(args, project, required=False)
        if candidates is None:
            candidates = _candidates(_with(args, candidates="all"), project)
        candidates = _apply_price_flags(args, candidates or [])
        resolve = calibrated_resolver(args, _resolver(project))
        found = cheapest(engine, scenario, candidates, resolve, _targets(args), max_gpus=args.max_gpus)
        calibration = _calibration_summary(resolve)
        best = found.recommendation
        doc["answer"] = None if best is None else _result_doc(best)
        doc["reason"] = found.why_no_recommendation
        doc["ranking"] = [_result_doc(r) for r in found.results]
        if best is None:
            text = f"none: {found.why_no_recommendation}"
        else:
            text = (
                f"{best.candidate.label} x {best.gpus} (TP {best.tp} x PP {best.pp} x DP {best.dp}), "
                f"{format_metric(best.cost_metric, best.cost)}"
            )
            runners = [r for r in found.results[1:4] if r.meets_targets]
            if runners:
                text += "; next: " + ", ".join(
                    f"{r.candidate.label} x {r.gpus} {format_metric(r.cost_metric, r.cost)}" for r in runners
                )
    elif args.question == "train-in":
        tokens = args.tokens or scenario.train_tokens
        if not scenario.is_training:
            raise InputError("train-in: a training scenario is needed (--workload pretrain or finetune)")
        if tokens is None:
            raise InputError("train-in: give the tokens to train on (--tokens N)")
        if args.deadline_days is None:
            raise InputError("train-in: give the deadline (--days D)")
        if tokens > MAX_TRAIN_TOKENS:
            raise InputError(f"train-in: --tokens {tokens:g} is more than the limit of {MAX_TRAIN_TOKENS:g}")
        scenario = scenario.model_copy(update={"train_tokens": float(tokens)})
        layout = solvers.train_within(
            engine, resolve_scenario(scenario, project), args.deadline_days, args.max_gpus
        )
        if layout is None:
            doc["answer"] = None
            text = (
                f"cannot train {tokens:.3g} tokens in {args.deadline_days:g} days "
                f"on up to {args.max_gpus:,} GPUs"
            )
            doc["reason"] = text
        else:
            n = layout.tp * layout.pp * layout.dp
            days = layout.estimate.get("performance.train_time_days")
            run = layout.estimate.get("cost.total_usd")
            doc["answer"] = {"num_gpus": n, **layout.as_dict(), "train_days": days, "run_usd": run}
            text = (
                f"{n} GPUs (TP {layout.tp} x PP {layout.pp} x DP {layout.dp}) train {tokens:.3g} tokens "
                f"in {days:.3g} days" + ("" if run is None else f", {format_usd(float(run))}")
            )
    else:
        field = "seq_len" if args.question == "max-context-tpot" else "batch_size"
        if args.max_tpot is None:
            raise InputError(f"{args.question}: give the TPOT target (--max-tpot S)")
        if scenario.is_training:
            raise InputError(f"{args.question}: TPOT applies to inference scenarios")
        found = solvers.largest_under_tpot(engine, resolve_scenario(scenario, project), field, args.max_tpot)
        if found is None:
            doc["answer"] = None
            text = (
                f"none: even {field} = 1 misses TPOT {format_metric('tpot_s', args.max_tpot)} or does not fit"
            )
            doc["reason"] = text
        else:
            value, estimate = found
            tpot = estimate.get("performance.tpot_s")
            doc["answer"] = {
                field: value,
                "tpot_s": tpot,
                "memory_per_gpu": estimate.get("memory.per_gpu.total"),
            }
            limit = format_metric("tpot_s", args.max_tpot)
            text = f"{field} = {value:,} (TPOT {format_metric('tpot_s', tpot)} <= {limit})"
            if solvers.at_search_limit(field, value):
                # The search limit itself qualifies: report a bound, not an answer.
                doc["at_least"], doc["answer"] = doc["answer"], None
                doc["reason"] = text = (
                    f"meets the target beyond the search limit: {field} >= {value:,} "
                    f"(TPOT {format_metric('tpot_s', tpot)} <= {limit})"
                )
    if args.json:
        _emit_json({**doc, **({"calibration": calibration} if calibration else {})})
    else:
        if calibration:
            print(_calibration_text(calibration))
        print(f"{args.question}: {text}")
    return 0


# --- registration -------------------------------------------------------------------------------


def add_compare_commands(
    sub: Any, parser_class: type, add_scenario_flags: Any, solve: argparse.ArgumentParser
) -> None:
    """Register `compare` and `sensitivity`, and teach the existing `solve` its new questions."""
    from workbench.cli.measure import add_calibration_option

    repeat_help = (
        "a scenario file, or with --project a scenario's name (repeatable with --project; "
        "default: every scenario of the project)"
    )

    comp = sub.add_parser(
        "compare", help="rank candidate accelerators on one or more scenarios", conflict_handler="resolve"
    )
    add_scenario_flags(comp)
    comp.add_argument("--scenario", action="append", metavar="FILE|NAME", help=repeat_help)
    _add_candidates(comp)
    _add_targets(comp)
    comp.add_argument(
        "--confidence", type=draw_count, metavar="N",
        help="also draw the assumptions N times over their documented ranges (Monte Carlo, seed 0) and say "
        "how often each candidate is the recommendation (1000 is plenty)",
    )  # fmt: skip
    comp.add_argument(
        "--iso-sla", action="store_true",
        help="rank at equal service level instead: each candidate in its cheapest configuration (TP x concurrency x "
        "weight precision, replicas for --min-tokens-per-s) that meets the targets (first scenario)",
    )  # fmt: skip
    comp.add_argument("--weights-options", metavar="W,W", help="with --iso-sla: weight precisions allowed (e.g. bf16,fp8)")
    comp.add_argument(
        "--confidence-tails", choices=["base", "drawn"], default="base",
        help="with --iso-sla --confidence and a demand: simulate each configuration's p99 once at the assumptions' "
        "own values (base, fast) or at every draw's values (drawn: exact, seconds per hundred draws)",
    )  # fmt: skip
    comp.add_argument(
        "--pareto", action="store_true",
        help="also each candidate's Pareto fronts on one node (TP x concurrency): throughput per GPU against "
        "tokens/s per user, and $/M tokens against TPOT (first scenario)",
    )  # fmt: skip
    comp.add_argument("--pareto-csv", metavar="FILE", help="write every configuration of the fronts as CSV ('-': stdout)")
    out = comp.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON document on stdout")
    out.add_argument("--csv", metavar="FILE", help="write the comparison as CSV ('-': stdout)")
    out.add_argument("--html", metavar="FILE", help="write a standalone HTML table ('-': stdout)")
    add_calibration_option(comp)
    comp.set_defaults(handler=_cmd_compare)

    sens = sub.add_parser(
        "sensitivity",
        help="tornado: which assumption or price moves the headline number",
        conflict_handler="resolve",
    )
    add_scenario_flags(sens)
    sens.add_argument("--scenario", action="append", metavar="FILE|NAME", help=repeat_help)
    sens.add_argument(
        "--metric", metavar="KEY", help="result key to swing (default: $/M tokens, $ of the run, or speed)"
    )
    _add_candidates(sens)
    _add_targets(sens)
    sens.add_argument("--json", action="store_true", help="one JSON document on stdout")
    add_calibration_option(sens)
    sens.set_defaults(handler=_cmd_sensitivity)

    question = next(a for a in solve._actions if a.dest == "question")
    question.choices = [*question.choices, *SOLVE_QUESTIONS]  # type: ignore[misc]
    _add_candidates(solve)
    _add_targets(solve, days_alias=True)
    solve.add_argument(
        "--tokens", type=_positive_float, metavar="N", help="train-in: tokens to train on, e.g. 1e12"
    )
    original = solve.get_default("handler")

    def handler(args: argparse.Namespace) -> int:
        return _cmd_solve_more(args) if args.question in SOLVE_QUESTIONS else original(args)

    solve.set_defaults(handler=handler)
