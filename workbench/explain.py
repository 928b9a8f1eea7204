"""Text rendering of an estimate for the terminal (``estimate`` and ``--explain``)."""

from __future__ import annotations

from workbench.core.units import format_bytes, format_count, format_flops
from workbench.engine.estimate import Estimate
from workbench.core.scenario import ServingEngine
from workbench.engine import serving_engines
from workbench.engine.quantity import Quantity


def format_quantity(quantity: Quantity) -> str:
    value, unit = quantity.value, quantity.unit
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if unit == "B":
        return format_bytes(value)
    if unit == "B/token":
        return f"{format_bytes(value)}/token"
    if unit == "FLOP":
        return format_flops(value)
    if unit in ("count", "params", "parameters"):
        return f"{format_count(value)} ({value:,.0f})" if abs(value) >= 1000 else f"{value:,.0f}"
    if unit == "s":
        return f"{value * 1000:.3g} ms" if abs(value) < 1 else f"{value:,.3g} s"
    if isinstance(value, float):
        text = f"{value:,.4g}"
    else:
        text = f"{value:,}"
    return f"{text} {unit}".rstrip()


_SECTION_TITLES = {"kv_cache": "KV cache", "flops": "FLOPs", "roofline": "Roofline", "cost": "Cost and energy"}


def _quantity_lines(items: list[tuple[str, Quantity]], explain: bool) -> list[str]:
    lines = []
    for key, quantity in items:
        if quantity.value is None and not explain:
            continue  # does not apply to this workload
        lines.append(f"  {quantity.label or key:<44} {format_quantity(quantity)}")
        if explain:
            lines.append(f"      key: {key}")
            if quantity.formula:
                lines.append(f"      = {quantity.formula}")
            if quantity.assumptions:
                lines.append(f"      assumes: {', '.join(quantity.assumptions)}")
            if quantity.note:
                lines.append(f"      note: {quantity.note}")
    return lines


def render(estimate: Estimate, explain: bool = False) -> str:
    resolved = estimate.resolved
    s = resolved.scenario
    lines = [
        f"{s.name}: {s.workload.value} of {resolved.model.name} on {resolved.cluster.num_gpus} x "
        f"{resolved.cluster.accelerator.name}",
        f"  TP {s.parallel.tp} x PP {s.parallel.pp} x DP {s.parallel.dp}, EP {s.parallel.ep}, ZeRO {s.parallel.zero_stage}; "
        f"batch {s.batch_size}, sequence {s.seq_len}" + (f", generate {s.gen_len}" if not s.is_training else ""),
    ]
    errors = [w for w in estimate.warnings if w.severity == "error"]
    others = [w for w in estimate.warnings if w.severity != "error"]
    for title, group in (("Problems", errors), ("Warnings", others)):
        if group:
            lines.append(f"\n{title}:")
            for w in group:
                lines.append(f"  [{w.code}] {w.message}" + (f"\n      fix: {w.fix}" if w.fix else ""))
    sections: dict[str, list[tuple[str, Quantity]]] = {}
    stateless = resolved.model.recurrent_layers == 0
    for key, quantity in estimate.values.items():
        if stateless and not explain and "recurrent_state" in key:
            continue  # always 0 B for a model without recurrent layers: noise in a text summary
        sections.setdefault(key.split(".")[0], []).append((key, quantity))
    for head, items in sections.items():
        lines.append(f"\n{_SECTION_TITLES.get(head, head.replace('_', ' ').capitalize())}:")
        lines.extend(_quantity_lines(items, explain))
    if estimate.failures:

        lines.append("\nEstimators that failed (their numbers are missing):")
        lines.extend(f"  {f.estimator}: {f.message}" for f in estimate.failures)
    if explain and not s.is_training and s.serving.engine is not ServingEngine.GENERIC:
        lines.append(f"\nServing engine: {serving_engines.title(s.serving.engine)} (defaults fill the knobs not set):")
        for name, value, origin in serving_engines.provenance(s, resolved.cluster.accelerator):
            shown = getattr(value, "value", value)
            lines.append(f"  {name:<24} {'none' if shown is None else shown}")
            lines.append(f"      {origin}")
    if explain:
        used = estimate.assumptions_used()
        if used:
            lines.append("\nAssumptions (override with --set ID=VALUE):")
            for row in used:
                mark = " (overridden)" if row["overridden"] else ""
                lines.append(f"  {row['id']:<40} {row['value']:g} {row['unit']}{mark}")
                lines.append(f"      {row['title']}. Source: {row['source']}")
    return "\n".join(lines)
