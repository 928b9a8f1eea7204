"""A comparison as CSV, JSON or a standalone HTML page. Plain text writers: no Qt.

* CSV: one row per candidate x scenario, every metric of :data:`~workbench.engine.compare.METRICS`
  in its own column, the unit in the header (``TTFT (s)``); numbers at full precision, an empty
  cell where a figure is unknown, ``true``/``false`` for flags.
* JSON: the same numbers keyed by metric id, plus the metric table (title, unit, source key),
  the targets and the recommendations.
* HTML: one self-contained page (inline style, no scripts) with a ranked table per scenario,
  every value formatted with its unit, every text escaped.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
from pathlib import Path
from typing import Any

from workbench.core.atomic_write import verify_json, write_text
from workbench.engine.compare import (
    METRICS,
    SIM_METRICS,
    CandidateResult,
    Comparison,
    Metric,
    ScenarioComparison,
    format_metric,
    metrics_for,
)

FORMAT = "gpu-workbench comparison"
SCHEMA_VERSION = 1

#: Columns before the metrics: (field of CandidateResult.as_dict(), header).
LEADING_COLUMNS: tuple[tuple[str, str], ...] = (
    ("scenario", "Scenario"),
    ("rank", "Rank"),
    ("accelerator", "Accelerator"),
    ("accelerator_name", "Accelerator name"),
    ("node", "Node shape"),
    ("fits", "Fits"),
    ("tp", "TP"),
    ("pp", "PP"),
    ("dp", "DP"),
    ("sizing", "Sizing"),
    ("meets_targets", "Meets targets"),
    ("recommended", "Recommended"),
    ("cost_metric", "Ranked by"),
    ("verdict", "Verdict"),
)


def metric_header(metric: Metric) -> str:
    return f"{metric.title} ({metric.unit})"


def csv_columns(metrics: tuple[Metric, ...] = METRICS) -> list[tuple[str, str]]:
    """(header, field): leading fields by name, metrics by id (the simulated ones too when a
    compared scenario carries a load: :func:`~workbench.engine.compare.metrics_for`)."""
    return [(header, name) for name, header in LEADING_COLUMNS] + [(metric_header(m), m.id) for m in metrics]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        # Shortest text that reads back to the same float; "" for NaN/infinity, as for unknown.
        return repr(value) if math.isfinite(value) else ""
    return str(value)


def _flat(result: CandidateResult) -> dict[str, Any]:
    doc = result.as_dict()
    return {**{name: doc[name] for name, _ in LEADING_COLUMNS}, **doc["values"]}


def comparison_csv(comparison: Comparison) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = csv_columns(metrics_for(s.scenario for s in comparison.scenarios))
    writer.writerow([header for header, _ in columns])
    for result in comparison.rows():
        flat = _flat(result)
        # A scenario without a load has no simulated values: empty cells, as for unknown.
        writer.writerow([_cell(flat.get(name)) for _, name in columns])
    return out.getvalue()


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    doc = comparison.as_dict()
    return {"format": FORMAT, "schema_version": SCHEMA_VERSION, **doc}


# Each writer goes through core.atomic_write: a full disk leaves the old file, never a fragment.


def write_csv(comparison: Comparison, path: str | Path) -> None:
    write_text(path, comparison_csv(comparison), what="the CSV export")


def write_json(comparison: Comparison, path: str | Path) -> None:
    text = json.dumps(comparison_json(comparison), indent=2) + "\n"
    write_text(path, text, verify=verify_json, what="the JSON export")


def write_html(comparison: Comparison, path: str | Path, title: str = "GPU comparison") -> None:
    write_text(path, comparison_html(comparison, title), what="the HTML export")


# --- HTML -------------------------------------------------------------------------------------

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em; color: #1d232a; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border-bottom: 1px solid #d5dbe1; padding: 0.35em 0.6em; text-align: right; vertical-align: top; }
th { background: #eef2f6; } td.text, th.text { text-align: left; }
tr.recommended { background: #e6f4ea; font-weight: 600; }
tr.fails td { color: #5f6b76; }
.range, .unit { font-size: 0.8em; color: #5f6b76; font-weight: normal; }
td.verdict { min-width: 16em; }
.note { color: #5f6b76; }
"""


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _shown_metrics(comparison: ScenarioComparison) -> list[Metric]:
    workload = "training" if comparison.scenario.is_training else "inference"
    shown = []
    for metric in metrics_for([comparison.scenario]):
        if metric.id.endswith(("_low", "_high")) or metric.applies not in ("both", workload):
            continue
        if metric.id in (
            "gpus",
            "usd_per_gpu_hour",
            "tco_cheaper",
            "tco_break_even_months",
            "memory_per_gpu_bytes",
        ):
            continue
        if (
            all(r.values.get(metric.id) is None for r in comparison.results)
            and metric.id != comparison.cost_metric
        ):
            continue
        shown.append(metric)
    return shown


#: Unit suffixes a cell drops because its column header names them.
_HEADER_UNITS = {
    "tokens/s": " tokens/s",
    "tokens/kWh": " tokens/kWh",
    "USD/Mtoken": "/Mtoken",
    "USD/h": "/h",
    "kW": " kW",
    "days": " days",
}


def _plain(metric: Metric, value: Any) -> str:
    text = format_metric(metric.id, value)
    suffix = _HEADER_UNITS.get(metric.unit)
    return text.removesuffix(suffix) if suffix else text


def _header(metric: Metric) -> str:
    unit = metric.unit if metric.unit in _HEADER_UNITS else ""
    shown = f"<br><span class='unit'>{_esc(unit)}</span>" if unit else ""
    return f"<th>{_esc(metric.title)}{shown}</th>"


def _value_cell(result: CandidateResult, metric: Metric) -> str:
    text = _esc(_plain(metric, result.values.get(metric.id)))
    low, high = result.values.get(f"{metric.id}_low"), result.values.get(f"{metric.id}_high")
    if low is not None and high is not None:
        text += f"<br><span class='range'>{_esc(_plain(metric, low))} to {_esc(_plain(metric, high))}</span>"
    return f"<td>{text}</td>"


def _table(comparison: ScenarioComparison) -> str:
    metrics = _shown_metrics(comparison)
    head = [
        '<th class="text">#</th>',
        '<th class="text">Accelerator</th>',
        "<th>GPUs</th>",
        '<th class="text">Layout</th>',
        *(_header(m) for m in metrics),
        '<th class="text">Verdict</th>',
    ]
    rows = []
    for r in comparison.results:
        css = "recommended" if r.recommended else ("fails" if r.failures else "")
        layout = f"TP {r.tp} x PP {r.pp} x DP {r.dp}" if r.fits else "does not fit"
        how = r.sizing.split(" (")[0]
        cells = [
            f'<td class="text">{r.rank}</td>',
            f"<td class='text'>{_esc(r.candidate.label)}<br>"
            f"<span class='range'>{_esc(r.accelerator_name)}</span></td>",
            f"<td>{_esc(format_metric('gpus', r.values.get('gpus')))}</td>",
            f"<td class='text'>{_esc(layout)}<br><span class='range'>{_esc(how)}</span></td>",
            *(_value_cell(r, m) for m in metrics),
            f'<td class="text verdict">{_esc(r.verdict)}</td>',
        ]
        rows.append(f'<tr class="{css}">' + "".join(cells) + "</tr>")
    return (
        "<table>\n<thead><tr>"
        + "".join(head)
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>"
    )


def targets_text(comparison: Comparison) -> str:
    t = comparison.targets
    parts = []
    if t.max_ttft_s is not None:
        parts.append(f"TTFT at most {format_metric('ttft_s', t.max_ttft_s)}")
    if t.max_tpot_s is not None:
        parts.append(f"TPOT at most {format_metric('tpot_s', t.max_tpot_s)}")
    if t.min_tokens_per_s is not None:
        parts.append(f"throughput at least {t.min_tokens_per_s:,.0f} tokens/s")
    if t.deadline_days is not None:
        parts.append(f"trained within {t.deadline_days:g} days")
    if t.budget_usd is not None:
        parts.append(f"budget {format_metric('run_usd', t.budget_usd)} ({t.budget_basis})")
    return "; ".join(parts) or "none"


def comparison_html(comparison: Comparison, title: str = "GPU comparison") -> str:
    """One self-contained HTML page: recommendation, targets, a ranked table per scenario."""
    rec = comparison.recommendation
    verdict = (
        f"Recommendation: <strong>{_esc(rec.label)}</strong>"
        if rec is not None
        else f"No recommendation: {_esc(comparison.why_no_recommendation or '')}"
    )
    sections = []
    for sc in comparison.scenarios:
        s = sc.scenario
        what = f"{s.workload.value} of {s.model}, batch {s.batch_size}, sequence {s.seq_len}"
        ranked_by = next(m.title for m in METRICS if m.id == sc.cost_metric)
        pick = (
            f"recommended: {_esc(sc.recommendation.candidate.label)}"
            if sc.recommendation is not None
            else f"no recommendation: {_esc(sc.why_no_recommendation or '')}"
        )
        sections.append(
            f"<h2>{_esc(s.name)}</h2>\n"
            f"<p class='note'>{_esc(what)}; ranked by {_esc(ranked_by)}; {pick}</p>\n" + _table(sc)
        )
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f"<title>{_esc(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"<h1>{_esc(title)}</h1>\n<p>{verdict}</p>\n"
        f"<p class='note'>Targets: {_esc(targets_text(comparison))}. "
        "Ranges: every efficiency assumption at one end of its plausible range. Costs at rental prices "
        "unless marked TCO.</p>\n" + "\n".join(sections) + "\n</body>\n</html>\n"
    )


def parse_csv(text: str) -> list[dict[str, Any]]:
    """Read :func:`comparison_csv` back: metric columns as floats (or None), flags as bools."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader)
    by_header = dict(csv_columns((*METRICS, *SIM_METRICS)))
    metric_ids = {m.id for m in (*METRICS, *SIM_METRICS) if m.unit != "text"}
    rows: list[dict[str, Any]] = []
    for raw in reader:
        row: dict[str, Any] = {}
        for head, cell in zip(header, raw):
            name = by_header[head]
            if cell == "":
                row[name] = None
            elif cell in ("true", "false"):
                row[name] = cell == "true"
            elif name in metric_ids or name in ("rank", "tp", "pp", "dp"):
                row[name] = float(cell) if name in metric_ids else int(cell)
            else:
                row[name] = cell
        rows.append(row)
    return rows
