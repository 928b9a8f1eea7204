"""Report sections: each turns :class:`ReportData` into rich text (Qt's HTML subset) and charts.

A section appends to a :class:`Body`: HTML for text and tables, :meth:`Body.chart` for a chart
(painted later as vectors by the PDF writer). Headings and captions are marked "keep with next"
so the writer never leaves one alone at the foot of a page.

Plugins add sections through the ``workbench_register_report_sections`` hook: each registered
object has ``id`` and ``title`` (str) and ``html(data) -> str`` (Qt rich text); it is listed after
the built-in sections. A plugin section that raises is reported in its place; the rest of the
report is still made.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from workbench.core.hardware import Accelerator, Source
from workbench.core.params import count_parameters
from workbench.core.scenario import Scenario
from workbench.core.units import format_count
from workbench.engine.compare import has_load, load_words
from workbench.engine.estimate import Estimate
from workbench.engine.fixes import fix_text
from workbench.engine.quantity import Quantity
from workbench.explain import format_quantity
from workbench.report import numbers
from workbench.report.charts import (
    MEMORY_COMPONENTS,
    Bar,
    BarChart,
    Chart,
    ChartStyle,
    MemoryStackChart,
    ParetoChart,
    ParetoSeries,
    RooflineChart,
    SideBySide,
    TornadoChart,
    TornadoRow,
)
from workbench.report import calibration, under_load
from workbench.report.document import SECTIONS, ReportData, SectionInfo
from workbench.report.kernel_table import add_kernel_table

NOT_RUNNABLE = '<span class="small">— (does not fit as planned)</span>'
KEEP = "-qt-user-state: 1"  # block user state 1: keep this block on the page of the next one

#: Headline numbers per workload (a range shown beside those that have one).
HEADLINE_INFERENCE = (
    "memory.per_gpu.total",
    "memory.fits",
    "memory.min_gpus",
    "performance.tokens_per_s",
    "performance.tokens_per_s_per_gpu",
    "performance.ttft_s",
    "performance.tpot_s",
    "performance.tokens_per_s_per_user",
    "performance.mfu",
    "cost.usd_per_hour",
    "cost.usd_per_million_tokens",
    "cost.usd_per_million_output_tokens",
    "cost.tco.buy_usd",
    "cost.tco.rent_usd",
    "cost.tco.break_even_months",
)
HEADLINE_TRAINING = (
    "memory.per_gpu.total",
    "memory.fits",
    "memory.min_gpus",
    "performance.step_time_s",
    "performance.tokens_per_s",
    "performance.mfu",
    "performance.train_time_days",
    "cost.usd_per_hour",
    "cost.total_usd",
    "cost.usd_per_million_tokens",
    "cost.energy_kwh",
    "cost.co2_kg",
    "cost.tco.buy_usd",
    "cost.tco.rent_usd",
)
RANGES: dict[str, tuple[str, str]] = {
    key: (f"{key}_low", f"{key}_high")
    for key in (
        "performance.tokens_per_s",
        "performance.ttft_s",
        "performance.tpot_s",
        "performance.step_time_s",
        "performance.train_time_days",
        "cost.usd_per_million_tokens",
        "cost.total_usd",
    )
}


# --- output ---------------------------------------------------------------------------------------


@dataclass
class TableSpec:
    """A table as the sections describe it; the PDF writer measures and paints it row by row."""

    header: list[str] | None
    rows: list[list[str]]
    widths: list[float]
    align: list[str]
    cls: str = "grid"
    title: str = ""  # shown as "<title> (continued)" above the header it repeats on a new page


@dataclass
class Body:
    """What the sections build: one rich-text document and the charts it refers to."""

    style: ChartStyle = field(default_factory=ChartStyle)
    width: float = 680.0
    parts: list[str] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)
    tables: list[TableSpec] = field(default_factory=list)
    first_section: bool = True

    def html(self, text: str) -> None:
        self.parts.append(text)

    def section(self, title: str, new_page: bool = True, anchor: str = "") -> None:
        style = KEEP
        if new_page and not self.first_section:
            style += "; page-break-before: always"
        self.first_section = False
        name = f'<a name="{escape(anchor)}"></a>' if anchor else ""
        self.parts.append(f'<h1 style="{style}">{name}{escape(title)}</h1>')

    def heading(self, title: str, level: int = 2) -> None:
        self.parts.append(f'<h{level} style="{KEEP}">{escape(title)}</h{level}>')

    def caption(self, text: str) -> None:
        """A line that belongs to what follows it (kept on its page)."""
        self.parts.append(f'<p class="caption" style="{KEEP}">{text}</p>')

    def para(self, text: str, cls: str = "") -> None:
        self.parts.append(f'<p class="{cls}">{text}</p>' if cls else f"<p>{text}</p>")

    def intro(self, text: str) -> None:
        """A short note under a heading, kept on the page of what it introduces."""
        self.parts.append(f'<p class="small" style="{KEEP}">{text}</p>')

    def chart(self, chart: Chart, keep_with_next: bool = False) -> None:
        """A chart; ``keep_with_next``: on the page of what follows (its table)."""
        chart.style = self.style
        index = len(self.charts)
        self.charts.append(chart)
        height = math.ceil(chart.height_for(self.width))
        keep = f' style="{KEEP}"' if keep_with_next else ""
        image = f'<img src="chart:{index}" width="{int(self.width)}" height="{height}">'
        self.parts.append(f'<p class="chart"{keep}>{image}</p>')

    def table(
        self,
        header: Sequence[str] | None,
        rows: Iterable[Sequence[str]],
        widths: Sequence[float] | None = None,
        align: Sequence[str] | None = None,
        cls: str = "grid",
        title: str = "",
    ) -> None:
        """A table, one vector row per line of the document: a row never splits over two pages,
        and the header row is repeated at the top of each page the table runs onto. Cells are HTML."""
        rows = [list(r) for r in rows]
        cols = len(header) if header is not None else len(rows[0]) if rows else 1
        spec = TableSpec(
            header=list(header) if header is not None else None,
            rows=rows,
            widths=list(widths) if widths else [100.0 / cols] * cols,
            align=list(align) if align else ["left"] * cols,
            cls=cls,
            title=title,
        )
        index = len(self.tables)
        self.tables.append(spec)
        width = int(self.width)
        if spec.header is not None:
            self.parts.append(f'<p class="row" style="{KEEP}"><img src="row:{index}:-1" width="{width}"></p>')
        for r in range(len(rows)):
            self.parts.append(f'<p class="row"><img src="row:{index}:{r}" width="{width}"></p>')
        self.parts.append('<p class="after-table"></p>')

    def box(self, html: str) -> None:
        """A framed paragraph (the recommendation): kept whole on one page."""
        self.table(None, [[html]], cls="box")

    def text(self) -> str:
        return "\n".join(self.parts)


# --- formatting -----------------------------------------------------------------------------------


def format_value(quantity: Quantity | None) -> str:
    """A quantity as the report prints it: the CLI's format, money as dollars, fractions as %."""
    if quantity is None or quantity.value is None:
        return "n/a"
    value, unit = quantity.value, quantity.unit
    if isinstance(value, (bool, str)) or unit in ("B", "B/token", "FLOP", "s", "params"):
        return format_quantity(quantity)
    number = float(value)
    if unit == "GPUs":
        return f"{number:,.0f} GPU" + ("" if number == 1 else "s")
    # The one number policy (workbench.report.numbers), as in the window's Results and Compare.
    if unit == "fraction":
        return numbers.percent(number)
    if unit == "days":
        return numbers.days(number)
    if unit.startswith("USD"):
        per = unit[3:]
        return numbers.money(number) + {"": "", "/h": "/h", "/GPU-h": " per GPU-hour", "/Mtoken": " per M tokens"}.get(
            per, f" {per}"
        )
    return f"{numbers.number(number)} {unit}".rstrip()


def format_range(estimate: Estimate, key: str) -> str:
    """``low – high`` for a key with optimistic/pessimistic companions ('' when it has none)."""
    pair = RANGES.get(key)
    if pair is None:
        return ""
    ends = [estimate.values.get(k) for k in pair]
    if any(q is None or not isinstance(q.value, (int, float)) for q in ends):
        return ""
    low, high = sorted(ends, key=lambda q: float(q.value))  # type: ignore[arg-type, union-attr]
    return join_range(format_value(low), format_value(high))


def join_range(low: str, high: str) -> str:
    """``1,171–1,919 tokens/s`` when both ends share their unit, else ``12.3 ms – 1.02 s``."""
    low_number, _, low_unit = low.partition(" ")
    high_number, _, high_unit = high.partition(" ")
    if low_unit and low_unit == high_unit:
        return f"{low_number}–{high_number} {low_unit}"
    return f"{low} – {high}"


def value_with_range(estimate: Estimate, key: str) -> str:
    text = format_value(estimate.values.get(key))
    spread = format_range(estimate, key)
    return f"{text} ({spread})" if spread else text


def _e(text: object) -> str:
    return escape(str(text))


def _formula(text: str) -> str:
    """A formula, breakable after operators so long ones wrap inside a table cell."""
    return re.sub(r"([+x/=,]) ", r"\1 ", _e(text))


def _hardware(estimate: Estimate) -> str:
    cluster = estimate.resolved.cluster
    return f"{cluster.num_gpus} × {cluster.accelerator.name}"


def _layout(scenario: Scenario) -> str:
    p = scenario.parallel
    return (
        f"TP {p.tp} × PP {p.pp} × DP {p.dp}"
        + (f", EP {p.ep}" if p.ep > 1 else "")
        + (f", ZeRO-{p.zero_stage}" if p.zero_stage else "")
    )


def _workload(scenario: Scenario) -> str:
    if scenario.workload.value == "inference":
        return "serving"
    if scenario.workload.value == "finetune":
        return {"lora": "LoRA", "qlora": "QLoRA"}.get(scenario.method.value, "full") + " fine-tuning"
    return "pre-training"


def headline_keys(estimate: Estimate) -> tuple[str, ...]:
    keys = HEADLINE_TRAINING if estimate.resolved.scenario.is_training else HEADLINE_INFERENCE
    return tuple(k for k in keys if k in estimate.values and estimate.values[k].value is not None)


def speed_key(estimate: Estimate) -> str:
    return "performance.step_time_s" if estimate.resolved.scenario.is_training else "performance.tokens_per_s"


def cost_key(estimate: Estimate) -> str:
    if estimate.resolved.scenario.is_training and estimate.get("cost.total_usd") is not None:
        return "cost.total_usd"
    return "cost.usd_per_million_tokens"


def fit_verdict(estimate: Estimate) -> tuple[bool | None, str]:
    """(fits, one sentence) for the summary: fit, GPUs needed, headline speed and cost."""
    s = estimate.resolved.scenario
    fits = estimate.get("memory.fits")
    total = estimate.values.get("memory.per_gpu.total")
    usable = estimate.values.get("memory.usable_capacity")
    min_gpus = estimate.get("memory.min_gpus")
    hardware = _hardware(estimate)
    if fits is True:
        text = (
            f"<b>Fits</b> on {_e(hardware)}: {format_value(total)} per GPU of {format_value(usable)} usable "
            f"({format_value(estimate.values.get('memory.headroom'))} headroom)."
        )
    elif fits is False:
        if isinstance(min_gpus, int) and min_gpus <= s.num_gpus:
            need = f"another split of its GPUs (even {min_gpus} fit with more tensor or pipeline parallelism)"
        elif isinstance(min_gpus, int):
            need = f"at least {min_gpus} GPUs"
        else:
            need = "a different plan: no number of these GPUs fits with these settings"
        text = (
            f"<b>Does not fit</b> on {_e(hardware)}: {format_value(total)} per GPU against "
            f"{format_value(usable)} usable; needs {need}."
        )
    else:
        text = f"Memory fit on {_e(hardware)} is not known (the memory estimate is missing)."
    if isinstance(min_gpus, int) and fits is True:
        text += f" Fewest GPUs that fit: {min_gpus}."
    if fits is not False:
        speed = speed_key(estimate)
        if estimate.get(speed) is not None:
            label = "Step time" if s.is_training else "Throughput"
            text += f" {label} {value_with_range(estimate, speed)}"
            if s.is_training and estimate.get("performance.train_time_days") is not None:
                text += f"; time to train {value_with_range(estimate, 'performance.train_time_days')}"
            text += "."
        cost = cost_key(estimate)
        if estimate.get(cost) is not None:
            what = "Cost of the run" if cost == "cost.total_usd" else "Cost"
            text += f" {what} {value_with_range(estimate, cost)} (rented)."
    return fits if isinstance(fits, bool) else None, text


# --- sections -------------------------------------------------------------------------------------


def build_cover(data: ReportData, body: Body) -> None:
    r = data.request
    names = [e.resolved.scenario.name for e in data.estimates]
    titles = [s.title for s in available_sections() if s.id in r.sections and s.id != "cover"
              and not (s.id == "calibration" and r.calibration is None)]  # left out without a profile
    rows = [
        ("Project", _e(r.project_name)),
        ("Prepared by", _e(r.author_name or "—")),
        ("Date", _e(r.date.isoformat())),
        ("Workbench version", _e(f"GPU Planning Workbench {r.app_version}")),
        ("Scenarios", "<br>".join(_e(n) for n in names)),
        ("Sections", _e(", ".join(titles) or "—")),
    ]
    if r.calibration is not None:
        rows.append(("Calibration", _e(f"{r.calibration.mark()}, profile '{r.calibration.name}' "
                                       f"({r.calibration.gpu} / {r.calibration.engine})")))
    body.first_section = False
    body.html('<p class="cover-kicker">GPU Planning Workbench</p>')
    body.html(f'<p class="cover-title">{_e(r.title)}</p>')
    body.html(f'<p class="cover-project">{_e(r.project_name)}</p>')
    body.table(None, rows, widths=[26, 74], cls="cover")
    if r.project.notes.strip():
        body.html(f'<p class="note"><b>Notes.</b> {_e(r.project.notes.strip())}</p>')
    body.html(
        '<p class="note">Every figure in this report is an estimate made from published formulas and '
        "vendor datasheets, not a measurement. Ranges give the estimate with every efficiency assumption "
        "at the optimistic and at the pessimistic end of its plausible range. Memory capacity is binary "
        "(GiB); bandwidth and FLOP rates are decimal (GB/s, TFLOPS); prices are US dollars.</p>"
    )


def build_summary(data: ReportData, body: Body) -> None:
    body.section("Executive summary", anchor="summary")
    comparison = data.comparison
    single = len(data.estimates) == 1
    approximate = sorted({e.resolved.model.name for e in data.estimates if e.resolved.model.approximate})
    if approximate:
        # An approximated architecture casts doubt on every number: say so before any verdict.
        body.box(
            f'<span class="bad"><b>Approximate architecture.</b></span> {_e(", ".join(approximate))} '
            "could not be read block for block and was read as a Llama-style block on request: "
            "parameter counts, memory, FLOPs and speed in this report may be far off."
        )
    if comparison is not None:
        body.box(_recommendation_html(comparison))
    elif single:
        fits, text = fit_verdict(data.estimates[0])
        verdict = {True: "proceed", False: "do not proceed as planned"}.get(fits, "see the warnings")
        body.box(f"<b>Recommendation: {verdict}.</b> {text}")
    else:
        fitting = [e for e in data.estimates if e.get("memory.fits") is True]
        body.box(
            f"<b>Summary.</b> {len(fitting)} of {len(data.estimates)} scenarios fit in GPU memory as "
            "planned. Each is judged on its own below."
        )
    if not single or comparison is not None:
        for estimate in data.estimates:
            fits, text = fit_verdict(estimate)
            mark = {True: '<span class="ok">✔</span>', False: '<span class="bad">✘</span>'}.get(fits, "•")
            body.para(f"{mark} <b>{_e(estimate.resolved.scenario.name)}</b> — {text}", cls="verdict")
    marked = [(e.resolved.scenario.name, m) for e in data.estimates if (m := calibration.mark(data, e))]
    if marked:
        # every figure below is the calibrated one: said before them, with the profile that made it
        who = "" if single else " (" + ", ".join(name for name, _ in marked) + ")"
        text = marked[0][1]
        body.para(f'<span class="ok"><b>{_e(text[0].upper() + text[1:])}</b></span>{_e(who)}: the figures below '
                  "use the fitted assumptions (see the Calibration section).", cls="verdict")
    body.heading("Key figures")
    if single:
        e = data.estimates[0]
        rows = [
            (_e(e.values[k].label or k), format_value(e.values[k]), _e(format_range(e, k)) or "—")
            for k in headline_keys(e)
        ]
        body.table(
            ["Figure", "Estimate", "Range (low – high)"],
            rows,
            widths=[44, 24, 32],
            align=["left", "right", "right"],
            title="Key figures",
        )
    else:
        rows = []
        for e in data.estimates:
            s = e.resolved.scenario
            fits = e.get("memory.fits")
            fit_text = {
                True: '<span class="ok">fits</span>',
                False: '<span class="bad">does not fit</span>',
            }.get(fits, "n/a")
            min_gpus = e.get("memory.min_gpus")
            rows.append(
                [
                    (
                        f"<b>{_e(s.name)}</b><br>"
                        f'<span class="small">{_e(_workload(s))} of {_e(e.resolved.model.name)}</span>'
                    ),
                    f'{_e(_hardware(e))}<br><span class="small">{_e(_layout(s))}</span>',
                    f"{fit_text}<br>{format_value(e.values.get('memory.per_gpu.total'))}",
                    _e(min_gpus) if min_gpus is not None else "none",
                    value_with_range(e, speed_key(e)) if fits is not False else NOT_RUNNABLE,
                    value_with_range(e, cost_key(e)) if fits is not False else NOT_RUNNABLE,
                ]
            )
        body.table(
            ["Scenario", "Hardware", "Memory / GPU", "Fewest GPUs", "Speed (range)", "Cost (range)"],
            rows,
            widths=[22, 20, 14, 9, 17, 18],
            title="Key figures",
        )
        body.para(
            "Speed is throughput (tokens/s, all GPUs) for serving and the optimizer step time for training; "
            "cost is per million tokens for serving and the whole run for training, at rental prices. "
            "Ranges run from the low to the high estimate, every efficiency assumption at one end of "
            "its range.",
            cls="small",
        )
    for estimate in data.estimates:
        # The tail under the scenario's load, next to the closed-form figures above.
        under_load.build(estimate, body, named=not single)
    for note in data.notes:
        body.para(_e(note), cls="small")


def build_inputs(data: ReportData, body: Body) -> None:
    body.section("Inputs", anchor="inputs")
    body.heading("Models")
    seen: set[str] = set()
    for e in data.estimates:
        arch = e.resolved.model
        if arch.name in seen:
            continue
        seen.add(arch.name)
        counts = count_parameters(arch)
        rows = [
            ("Kind", f"{_e(arch.kind.value)} ({_e(arch.hf_model_type or arch.family)})"),
            (
                "Parameters",
                (
                    f"{format_count(counts.total)} ({counts.total:,}) total; "
                    f"{format_count(counts.active)} ({counts.active:,}) active per token"
                ),
            ),
            (
                "Layers / width",
                f"{arch.num_layers} layers, hidden {arch.hidden_size:,}, FFN {arch.intermediate_size:,}"
                + (" (gated)" if arch.gated_mlp else ""),
            ),
            (
                "Attention",
                (
                    f"{_e(arch.attention_kind)}: {arch.num_attention_heads} query heads, "
                    f"{arch.num_kv_heads} KV heads, head dim {arch.head_dim}"
                ),
            ),
            (
                "Vocabulary / context",
                f"{arch.vocab_size:,} tokens; built for {arch.max_position_embeddings:,}",
            ),
        ]
        if arch.moe:
            m = arch.moe
            rows.append(
                (
                    "Mixture of experts",
                    (
                        f"{m.num_experts} experts, top-{m.experts_per_token}, "
                        f"{m.num_shared_experts} shared, "
                        f"expert FFN {m.expert_intermediate_size:,}"
                    ),
                )
            )
        if arch.mla:
            rows.append(
                ("Latent attention", f"KV rank {arch.mla.kv_lora_rank}, rope dim {arch.mla.qk_rope_head_dim}")
            )
        body.caption(f"<b>{_e(arch.name)}</b>")
        body.table(["Property", "Value"], rows, widths=[26, 74], cls="kv", title=arch.name)
    body.heading("Hardware")
    body.intro("Datasheet figures as the estimates use them, each with the document it was read from.")
    accelerators: dict[str, tuple[Accelerator, Any]] = {}
    for e in data.estimates:
        accelerators.setdefault(
            e.resolved.cluster.accelerator.id, (e.resolved.cluster.accelerator, e.resolved.cluster.node)
        )
    for accelerator, node in accelerators.values():
        _hardware_table(body, accelerator, node)
    body.heading("Scenarios")
    for e in data.estimates:
        body.caption(f"<b>{_e(e.resolved.scenario.name)}</b>")
        knobs = scenario_knobs(e)
        half = (len(knobs) + 1) // 2
        left, right = knobs[:half], knobs[half:] + [("", "")] * (2 * half - len(knobs))
        body.table(
            ["Setting", "Value", "Setting", "Value"],
            [(a, b, c, d) for (a, b), (c, d) in zip(left, right)],
            widths=[20, 30, 20, 30],
            cls="kv",
            title=e.resolved.scenario.name,
        )


def _hardware_table(body: Body, acc: Accelerator, node: Any) -> None:
    sources: list[Source] = []

    def ref(key: str) -> str:
        source = acc.provenance.get(key)
        if source is None:
            return "—" if not acc.custom else "user entry"
        if source not in sources:
            sources.append(source)
        return f"[{sources.index(source) + 1}]"

    rows: list[tuple[str, str, str]] = [
        ("Memory", f"{acc.memory_gib:g} GiB {_e(acc.memory_type)}", ref("memory_gib")),
        ("Memory bandwidth", f"{acc.memory_bandwidth_gbps:,.0f} GB/s", ref("memory_bandwidth_gbps")),
    ]
    for dtype, tflops in acc.dense_tflops.items():
        unit = "TOPS" if dtype.value.startswith("int") else "TFLOPS"
        sparse = acc.sparse_tflops.get(dtype)
        extra = f" (2:4 sparse {sparse:,.6g})" if sparse else ""
        rows.append(
            (f"Dense {dtype.value}", f"{tflops:,.6g} {unit}{extra}", ref(f"dense_tflops.{dtype.value}"))
        )
    if acc.tdp_watts:
        rows.append(("Power (TDP)", f"{acc.tdp_watts:,.0f} W", ref("tdp_watts")))
    if acc.interconnect:
        speed = f", {acc.interconnect_gbps:,.0f} GB/s" if acc.interconnect_gbps else ""
        rows.append(("Scale-up link", f"{_e(acc.interconnect)}{speed}", ref("interconnect")))
    rows.append(("Form factor / year", f"{_e(acc.form_factor)}, {acc.launch_year}", ref("form_factor")))
    if acc.list_price_usd:
        rows.append(("Purchase price", f"${acc.list_price_usd:,.0f} per GPU", ref("list_price_usd")))
    if acc.cloud_usd_per_hour:
        rows.append(
            ("Cloud price", f"${acc.cloud_usd_per_hour:,.2f} per GPU-hour", ref("cloud_usd_per_hour"))
        )
    node_ref = ""
    if node is not None and node.source is not None:
        if node.source not in sources:
            sources.append(node.source)
        node_ref = f"[{sources.index(node.source) + 1}]"
    if node is not None:
        link = (
            f"{_e(node.name)}: {node.gpus_per_node} GPUs; "
            f"{_e(node.intra_node)} {node.intra_node_gbps:,.0f} GB/s; "
            f"{_e(node.inter_node)} {node.inter_node_gbps:,.0f} GB/s"
        )
        rows.append(("Server (node)", link, node_ref or "—"))
    custom = " (custom entry)" if acc.custom else ""
    body.caption(f"<b>{_e(acc.name)}</b>{custom}")
    body.table(["Figure", "Value", "Source"], rows, widths=[24, 64, 12], cls="kv", title=acc.name)
    if sources:
        items = []
        for i, s in enumerate(sources, 1):
            url = f' — <a href="{_e(s.url)}">{_e(s.url)}</a>' if s.url else ""
            note = f" {_e(s.note)}" if s.note else ""
            items.append(f"[{i}] {_e(s.title)}{url}, retrieved {s.retrieved.isoformat()}.{note}")
        body.html('<p class="sources">' + "<br>".join(items) + "</p>")


def scenario_knobs(estimate: Estimate) -> list[tuple[str, str]]:
    """Every setting the estimate used, as (label, value) text (HTML-escaped)."""
    s = estimate.resolved.scenario
    p = s.parallel
    rows: list[tuple[str, str]] = [
        ("Workload", _workload(s)),
        ("Model", f"{estimate.resolved.model.name} ({s.model})"),
        ("Accelerator", f"{estimate.resolved.cluster.accelerator.name} ({s.gpu})"),
        ("GPUs / server", f"{s.num_gpus} on {estimate.resolved.cluster.node.name}"),
        ("Parallelism", _layout(s) + (", sequence parallel" if p.sequence_parallel else "")),
        (
            "Precision",
            f"compute {s.dtype.value}, weights {s.weight_format.value}, KV {s.kv_cache_dtype.value}",
        ),
        (
            "Batch",
            f"{s.batch_size} sequences" + (f", global {s.global_batch_size}" if s.global_batch_size else ""),
        ),
        ("Sequence", f"{s.seq_len:,} tokens" + ("" if s.is_training else f" in, {s.gen_len:,} out")),
        ("Attention kernel", s.attention.value),
    ]
    if s.is_training:
        rows += [
            ("Optimizer", s.optimizer.value + (", fp32 master weights" if s.master_weights else "")),
            ("Recompute", s.recompute.value),
            ("Offload", f"optimizer {p.offload_optimizer.value}, params {p.offload_params.value}"),
        ]
        if p.pp > 1:
            rows.append(
                ("Pipeline schedule", f"{p.pipeline_schedule.value}, {p.virtual_stages} virtual stages")
            )
        if s.train_tokens:
            rows.append(("Training tokens", f"{format_count(s.train_tokens)}"))
        if s.method.value != "full":
            rows.append(("LoRA", f"rank {s.lora_rank} on {s.lora_targets}"))
    else:
        sv = s.serving
        rows += [
            ("Server memory share", f"{sv.gpu_memory_utilization:.0%}"),
            ("KV cache", f"paged, {sv.kv_block_size}-token blocks" if sv.paged_kv else "contiguous"),
            (
                "Batching",
                ("continuous" if sv.continuous_batching else "static")
                + (f", chunked prefill {sv.prefill_chunk_tokens}" if sv.chunked_prefill else "")
                + (", disaggregated prefill" if sv.disaggregated else ""),
            ),
        ]
        if sv.speculative_draft_params:
            rows.append(
                (
                    "Speculative decoding",
                    (
                        f"draft {format_count(sv.speculative_draft_params)}, "
                        f"{sv.speculative_tokens} tokens, "
                        f"acceptance {sv.speculative_acceptance}"
                    ),
                )
            )
    pr = s.pricing
    rent = estimate.values.get("cost.usd_per_gpu_hour")
    rows += [
        ("Rental price", format_value(rent) if rent is not None else "catalog"),
        (
            "Purchase price",
            f"${pr.purchase_usd_per_gpu:,.0f} per GPU" if pr.purchase_usd_per_gpu else "catalog",
        ),
        ("Power", f"${pr.power_usd_per_kwh}/kWh, PUE {pr.pue}, {pr.grid_kg_co2_per_kwh} kg CO2e/kWh"),
        (
            "Ownership",
            (
                f"{pr.years:g} years at {pr.utilization:.0%} use, "
                f"server overhead {pr.server_overhead_fraction:.0%}"
            ),
        ),
    ]
    if s.mfu is not None:
        rows.append(("MFU override", f"{s.mfu:.0%}"))
    for ident, value in sorted(s.assumptions.items()):
        rows.append((f"Override {ident}", f"{value:g}"))
    return [(_e(a), _e(b)) for a, b in rows]


def build_memory(data: ReportData, body: Body) -> None:
    body.section("Memory per GPU", anchor="memory")
    body.intro(
        "What each GPU holds: the most-loaded GPU (the worst pipeline stage or expert share) and the "
        "average over all GPUs, against the GPU's capacity and the share the runtime may use."
    )
    for e in data.estimates:
        body.heading(e.resolved.scenario.name)
        body.caption(
            f"{_e(_workload(e.resolved.scenario))} of {_e(e.resolved.model.name)} on {_e(_hardware(e))}, "
            f"{_e(_layout(e.resolved.scenario))}"
        )
        body.chart(MemoryStackChart(e), keep_with_next=True)
        rows = []
        for key, name, _ in MEMORY_COMPONENTS:
            most, avg = e.values.get(f"memory.per_gpu.{key}"), e.values.get(f"memory.average_gpu.{key}")
            if most is None and avg is None:
                continue
            if key == "recurrent_state" and not (most and most.value) and not (avg and avg.value):
                continue  # only models with state-space / linear-attention layers keep one
            rows.append((_e(name), format_value(most), format_value(avg)))
        rows.append(
            (
                "<b>Total</b>",
                f"<b>{format_value(e.values.get('memory.per_gpu.total'))}</b>",
                f"<b>{format_value(e.values.get('memory.average_gpu.total'))}</b>",
            )
        )
        body.table(
            ["Component", "Most-loaded GPU", "Average GPU"],
            rows,
            widths=[40, 30, 30],
            align=["left", "right", "right"],
            title=f"Memory of {e.resolved.scenario.name}",
        )


def build_roofline(data: ReportData, body: Body) -> None:
    body.section("Roofline", anchor="roofline")
    body.intro(
        "Attainable speed per GPU against arithmetic intensity (FLOPs per byte moved): below the ridge "
        "point a phase is limited by memory bandwidth, above it by the compute ceiling of its precision."
    )
    for e in data.estimates:
        body.heading(e.resolved.scenario.name)
        peak = e.values.get("roofline.peak_tflops")
        bandwidth = e.values.get("roofline.bandwidth_gbps")
        body.caption(
            f"{_e(e.resolved.cluster.accelerator.name)}: {format_value(peak)} dense "
            f"{_e(e.get('roofline.compute_dtype') or '')}, {format_value(bandwidth)}"
        )
        body.chart(RooflineChart(e), keep_with_next=True)
        phases = ("training",) if e.resolved.scenario.is_training else ("prefill", "decode")
        rows = []
        for phase in phases:
            if e.get(f"roofline.{phase}.arithmetic_intensity") is None:
                continue
            rows.append(
                (
                    phase,
                    format_value(e.values.get(f"roofline.{phase}.flops")),
                    format_value(e.values.get(f"roofline.{phase}.bytes")),
                    format_value(e.values.get(f"roofline.{phase}.arithmetic_intensity")),
                    format_value(e.values.get(f"roofline.{phase}.attainable_tflops")),
                    _e(e.get(f"roofline.{phase}.bound") or ""),
                )
            )
        if rows:
            body.table(
                ["Phase", "FLOPs / GPU", "Bytes / GPU", "Intensity", "Attainable", "Bound"],
                rows,
                align=["left", "right", "right", "right", "right", "left"],
                title=f"Roofline of {e.resolved.scenario.name}",
            )
        add_kernel_table(body, e)


def build_comparison(data: ReportData, body: Body) -> None:
    comparison = data.comparison
    why = next((n for n in data.notes if "comparison" in n.lower()), "")
    if comparison is None and not why:
        return  # one scenario on one accelerator: nothing to compare, no empty section
    body.section("Comparison", anchor="comparison")
    if comparison is None:
        body.para(_e(why))
        return
    _comparison_body(comparison, body)
    if data.pareto:
        _pareto_body(data.pareto, body)
    if data.confidence is not None:
        _confidence_body(data.confidence, body)
    else:
        failed = next((n for n in data.notes if "decision confidence" in n), "")
        if failed:
            body.para(_e(failed))
    if data.iso is not None:
        _iso_body(*data.iso, body)
    else:
        failed = next((n for n in data.notes if "equal service level" in n), "")
        if failed:
            body.para(_e(failed))


def _iso_body(scenario: str, results: Any, confidence: Any, demand: bool, body: Body) -> None:
    """Each candidate in its cheapest configuration meeting the targets, with its share of the
    draws and its break-even price; then the assumption thresholds at which the winner changes."""
    body.heading("At equal service level")
    body.intro(
        f"{_e(scenario)} with each candidate in the configuration that meets the targets at the lowest cost: "
        "tensor parallelism and concurrency on one node, the allowed weight precisions, and replicas for the "
        "demand; where a demand and latency targets are set, configurations (with replicas added where the tail "
        "needs them) are simulated under the demand's load in cost order until one holds at p99; 'not settled' "
        "marks a candidate whose search stopped before it knew. Cost: "
        + ("per hour of the replicas the demand needs." if demand else "per million output tokens.")
        + " A losing candidate's break-even is the rental price per GPU-hour below which it would win."
        + ("" if confidence is None else f" Share of draws: how often it wins over {confidence.draws:,} draws of "
           "the documented assumption ranges.")
    )  # fmt: skip
    shares = {} if confidence is None else confidence.shares
    rows = []
    for r in results:
        b = r.best
        if not r.settled:
            what, cost = _e(r.reason), ""  # "not settled: ...": the search stopped before it knew
        elif b is None or not r.meets:
            what, cost = _e(f"does not meet the targets: {r.reason}"), ""
        else:
            what = _e(f"{b.describe()} ({b.gpus} GPUs)")
            value = b.usd_per_hour if demand else b.usd_per_million_tokens
            cost = "" if value is None else f"${value:,.2f}/h" if demand else f"${value:.3g}/Mtok"
        breaks = "" if r.break_even_usd_per_gpu_hour is None else f"${r.break_even_usd_per_gpu_hour:,.2f}/GPU-h"
        row = [str(r.rank), _e(r.candidate.label), what, cost, breaks]
        if confidence is not None:
            row.append(f"{shares.get(r.candidate.label, 0.0):.0%}")
        rows.append(row)
    headers = ["#", "Candidate", "Configuration", "Cost", "Break-even price"]
    widths = [4, 14, 48, 15, 19]
    if confidence is not None:
        headers.append("Share of draws")
        widths = [4, 13, 41, 14, 17, 11]
    body.table(headers, rows, widths=widths, align=["right", "left", "left", "right", "right", "right"][: len(headers)],
               title="At equal service level")  # fmt: skip
    if confidence is None:
        return
    if confidence.no_recommendation:
        body.para(f"No candidate meets the targets in {confidence.no_recommendation:.0%} of the draws.")
    for b in confidence.break_even:
        body.para(_e("Break-even: " + b.describe() + "."))
    for note in confidence.notes:
        body.para(_e(note))


def _pareto_body(pareto: Any, body: Body) -> None:
    """Each candidate's throughput front on one node, as a chart."""
    scenario, fronts, left_out = pareto
    body.heading("Pareto fronts")
    more = f" ({left_out} lower-ranked candidates left out of the chart)" if left_out else ""
    body.intro(
        f"Every configuration of one node that runs {_e(scenario)}: tensor parallelism over the node's GPUs and "
        "1 to 1,024 concurrent requests per replica. Each line is a candidate's best trade-off between what "
        "a GPU delivers and what each user sees; configurations below a line are beaten on both" + more + "."
    )
    series = [
        ParetoSeries(f.candidate.label, [(p.tokens_per_s_per_user, p.tokens_per_s_per_gpu) for p in f.throughput])
        for f in fronts
    ]
    body.chart(ParetoChart("Throughput per GPU against speed per user", "output tokens/s per user",
                           "output tokens/s per GPU", series))  # fmt: skip


def _confidence_body(confidence: Any, body: Body) -> None:
    """How often each candidate is the recommendation over the Monte Carlo draws."""
    body.heading("Decision confidence")
    drawn = ", ".join(f"{f.title.lower()} {_factor_value(f.low, f.unit)} to {_factor_value(f.high, f.unit)}"
                      for f in confidence.drawn)  # fmt: skip
    body.intro(
        f"The comparison repeated {confidence.draws:,} times, each time with every assumption that has a "
        f"documented range drawn uniformly in it (seed {confidence.seed}): {drawn or 'none moves these estimates'}. "
        "The share of draws in which each candidate is the cheapest that meets the targets says how much "
        "the recommendation rests on the assumptions."
    )
    ranked = sorted(confidence.shares.items(), key=lambda item: (-item[1], item[0]))
    rows = [[_e(label), f"{share:.0%}"] for label, share in ranked]
    if confidence.no_recommendation:
        rows.append(["no candidate meets the targets", f"{confidence.no_recommendation:.0%}"])
    body.table(["Candidate", "Share of draws"], rows, widths=[70, 30], align=["left", "right"],
               title="Decision confidence")  # fmt: skip
    for note in confidence.notes:
        body.para(_e(note))


def build_sensitivity(data: ReportData, body: Body) -> None:
    body.section("Sensitivity", anchor="sensitivity")
    if not data.sensitivity:
        why = next((n for n in data.notes if "sensitivity" in n.lower()), "")
        body.para(_e(why or "No sensitivity results."))
        return
    body.intro(
        "Each bar moves one assumption from the low to the high end of its plausible range and keeps the "
        "others at their defaults; the longest bars are the assumptions worth pinning down first."
    )
    for e in data.estimates:
        result = data.sensitivity.get(e.resolved.scenario.name)
        if result is None:
            continue
        body.heading(e.resolved.scenario.name)
        _sensitivity_body(result, body)


def build_assumptions(data: ReportData, body: Body) -> None:
    body.section("Assumptions and formulas", anchor="assumptions")
    body.heading("Assumptions")
    fitted = data.request.calibration.assumptions if data.request.calibration is not None else {}
    body.intro(
        "Every assumption the estimates read, with the value used, its default and where the default "
        "comes from. A value that differs from the default was set in the scenario"
        + (", or fitted by the calibration (marked calibrated)." if fitted else ".")
    )
    used: dict[str, dict[str, Any]] = {}
    values: dict[str, dict[str, list[str]]] = {}
    for e in data.estimates:
        for row in e.assumptions_used():
            used.setdefault(row["id"], row)
            values.setdefault(row["id"], {}).setdefault(_factor_value(row["value"], row["unit"]), []).append(
                e.resolved.scenario.name
            )
    rows = []
    for ident in sorted(used):
        row = used[ident]
        by_value = values[ident]
        if len(by_value) == 1:
            value = _e(next(iter(by_value)))
        else:
            value = "<br>".join(f"{_e(v)} ({_e(', '.join(names))})" for v, names in by_value.items())
        mark = (
            " <b>(set)</b>" if any(v != _factor_value(row["default"], row["unit"]) for v in by_value) else ""
        )
        if mark and ident in fitted and any(calibration.mark(data, e) for e in data.estimates):
            mark = " <b>(calibrated)</b>"
        rows.append(
            (
                f'{_e(row["title"])}<br><span class="code">{_e(ident)}</span>',
                f"{value}{mark}",
                _e(_factor_value(row["default"], row["unit"])),
                _e(row["source"]),
            )
        )
    if rows:
        body.table(
            ["Assumption", "Value used", "Default", "Source"],
            rows,
            widths=[27, 13, 11, 49],
            title="Assumptions",
        )
    else:
        body.para("No assumption was read.")
    body.heading("Formulas")
    body.intro("Each headline number with its formula, the scenario's values substituted.")
    for e in data.estimates:
        body.caption(f"<b>{_e(e.resolved.scenario.name)}</b>")
        rows = []
        for key in headline_keys(e):
            q = e.values[key]
            rows.append(
                (
                    f'{_e(q.label or key)}<br><span class="code">{_e(key)}</span>',
                    format_value(q),
                    _formula(q.formula or "—"),
                )
            )
        body.table(
            ["Quantity", "Value", "Formula (values substituted)"],
            rows,
            widths=[26, 16, 58],
            title=f"Formulas of {e.resolved.scenario.name}",
        )


def build_warnings(data: ReportData, body: Body) -> None:
    body.section("Warnings and fixes", anchor="warnings")
    for e in data.estimates:
        body.heading(e.resolved.scenario.name)
        if not e.warnings and not e.failures:
            body.para("No warnings.")
            continue
        rows = []
        for w in sorted(e.warnings, key=lambda w: {"error": 0, "warning": 1}.get(w.severity, 2)):
            badge = {
                "error": '<span class="bad"><b>problem</b></span>',
                "warning": '<span class="warn"><b>warning</b></span>',
            }.get(w.severity, "note")
            fix = fix_text(w, data.fixes.get(e.resolved.scenario.name))
            rows.append((badge, _e(w.message), _e(fix[:1].upper() + fix[1:] if fix else "—")))
        for f in e.failures:
            rows.append(
                (
                    '<span class="bad"><b>failed</b></span>',
                    _e(f"Estimator {f.estimator} failed: {f.message}. Its numbers are missing."),
                    "—",
                )
            )
        body.table(
            ["", "Finding", "Fix"], rows, widths=[11, 50, 39], title=f"Warnings of {e.resolved.scenario.name}"
        )


# --- comparison and sensitivity results -----------------------------------------------------------


def _attr(obj: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return default


def _candidate_name(comparison: Any, candidate: Any) -> str:
    for result in comparison.rows():
        if result.candidate == candidate:
            return f"{result.accelerator_name} ({candidate.label})"
    return str(candidate.label)


def _recommendation_html(comparison: Any) -> str:
    """The comparison's overall recommendation and why each other candidate loses (HTML)."""
    scenarios = comparison.scenarios
    if comparison.recommendation is None:
        why = comparison.why_no_recommendation or "no candidate meets the targets"
        text = f"<b>No recommendation.</b> {_e(why[:1].upper() + why[1:])}."
    else:
        rec = comparison.recommendation
        scope = "the scenario" if len(scenarios) == 1 else f"all {len(scenarios)} scenarios"
        text = (
            f"<b>Recommendation: {_e(_candidate_name(comparison, rec))}</b> for {scope}: the cheapest "
            "candidate that fits and meets the targets"
            + (" in every scenario" if len(scenarios) > 1 else "")
            + "."
        )
        picks = []
        for sc in scenarios:
            result = next((r for r in sc.results if r.candidate == rec), None)
            if result is None:
                continue
            picks.append(
                f"{_e(sc.scenario.name)}: {_gpus(result.gpus)}, "
                f"{_e(format_metric_safe(result.cost_metric, result.cost))}"
            )
        if picks:
            text += "<br>" + "; ".join(picks) + "."
    losers = _why_others_lose(comparison)
    if losers:
        text += "<br><b>Why not the others.</b> " + " ".join(losers)
    return text


def _loser_summary(comparison: Any, candidate: Any) -> str:
    """One clause on why ``candidate`` is not the pick: misses or cost ratios over the scenarios."""
    rec = comparison.recommendation
    misses, ratios = [], []
    for sc in comparison.scenarios:
        result = next((r for r in sc.results if r.candidate == candidate), None)
        if result is None:
            continue
        where = f" for {_e(sc.scenario.name)}" if len(comparison.scenarios) > 1 else ""
        if not result.fits:
            misses.append(f"does not fit{where}")
        elif result.failures:
            misses.append(f"{_e(result.failures[0])}{where}")
        else:
            best = next((r for r in sc.results if rec is not None and r.candidate == rec), None)
            if best is not None and best.cost and result.cost is not None:
                ratios.append(result.cost / best.cost)
    parts = misses[:2] + ([f"and {len(misses) - 2} more misses"] if len(misses) > 2 else [])
    if ratios:
        low, high = min(ratios), max(ratios)
        span = f"{low:.2f}×" if abs(high - low) < 0.005 else f"{low:.2f}–{high:.2f}×"
        parts.append(f"costs {span} the recommended choice")
    return "; ".join(parts)


def _why_others_lose(comparison: Any) -> list[str]:
    reasons: list[str] = []
    for candidate in comparison.candidates:
        if candidate == comparison.recommendation:
            continue
        clause = _loser_summary(comparison, candidate)
        if clause:
            reasons.append(f"<i>{_e(_candidate_name(comparison, candidate))}</i>: {clause}.")
    return reasons


def _gpus(count: int | None) -> str:
    return "no GPU count" if count is None else f"{count} GPU" + ("" if count == 1 else "s")


def format_metric_safe(metric: str, value: Any) -> str:
    """A comparison figure in the one number policy (workbench.report.numbers), as the window's
    Compare table shows it: 6.90 ms, $0.036/Mtoken, $26K, 6.54M tokens/kWh; "-" when unknown."""
    from workbench.engine.compare import METRIC_BY_ID, format_metric

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return format_metric(metric, value)
    unit = METRIC_BY_ID[metric].unit if metric in METRIC_BY_ID else ""
    if unit == "s":
        return numbers.seconds(value)
    if unit.startswith("USD"):
        return numbers.money(value, compact=True) + unit[3:]
    if unit == "days":
        return numbers.days(value)
    if unit == "GPUs":
        return f"{value:,.0f}"
    if unit == "B":
        return format_metric(metric, value)
    return f"{numbers.number(value, compact=True)} {unit}".rstrip()


def _comparison_body(comparison: Any, body: Body) -> None:
    from workbench.report.exports import targets_text

    body.box(_recommendation_html(comparison))
    body.intro(
        "Each candidate is sized for each scenario: the scenario's GPU count and layout when they run, "
        "else the best layout of that count, else the fewest GPUs that fit. Candidates that fit and meet "
        f"the targets rank first, cheapest first. Targets: {_e(targets_text(comparison))}."
    )
    for sc in comparison.scenarios:
        body.heading(sc.scenario.name)
        training = sc.scenario.is_training
        metric = sc.cost_metric
        cost_title = "Cost of the run" if metric == "run_usd" else "Cost per M tokens"
        loaded = has_load(sc.scenario)
        rows = []
        for r in sc.results:
            name = (
                f"{'<b>' if r.recommended else ''}{_e(r.accelerator_name)}{'</b>' if r.recommended else ''}"
            )
            layout = (
                f'{_gpus(r.gpus)}<br><span class="small">TP {r.tp} × PP {r.pp} × DP {r.dp}; '
                f"{_e(r.sizing)}</span>"
                if r.fits
                else '<span class="bad">does not fit</span>'
            )
            speed = _metric_range(
                r, "train_days" if training and r.values.get("train_days") is not None else "tokens_per_s"
            )
            row = [str(r.rank), name, layout, speed, _metric_range(r, metric), _e(r.verdict)]
            if loaded:
                row.insert(5, _under_load_cell(r))
            rows.append(row)
        speed_title = (
            "Time to train"
            if training and any(r.values.get("train_days") is not None for r in sc.results)
            else "Throughput"
        )
        body.chart(
            SideBySide(
                [
                    _metric_chart(
                        sc, metric, cost_title, "USD" if metric == "run_usd" else "USD per million tokens"
                    ),
                    _metric_chart(sc, "tokens_per_s", "Throughput", "tokens/s, all GPUs"),
                ]
            ),
            keep_with_next=True,
        )
        header = ["#", "Candidate", "GPUs", f"{speed_title} (range)", f"{cost_title} (range)", "Verdict"]
        widths, align = [4, 18, 22, 17, 17, 22], ["right", "left", "left", "left", "left", "left"]
        if loaded:
            header.insert(5, f"Simulated p99 under {load_words(sc.scenario)}")
            widths, align = [4, 15, 19, 15, 15, 14, 18], [*align[:5], "left", "left"]
        body.table(header, rows, widths=widths, align=align, title=f"Comparison for {sc.scenario.name}")


def _under_load_cell(result: Any) -> str:
    """TTFT and TPOT p99 and goodput of a candidate under the scenario's load (HTML)."""
    values = result.values
    if values.get("sim_ttft_p99_s") is None:
        return "—"
    lines = [
        f"TTFT {format_metric_safe('sim_ttft_p99_s', values.get('sim_ttft_p99_s'))}",
        f"TPOT {format_metric_safe('sim_tpot_p99_s', values.get('sim_tpot_p99_s'))}",
    ]
    goodput = values.get("sim_goodput_rps")
    if isinstance(goodput, (int, float)):
        lines.append(f'<span class="small">goodput {goodput:.3g} req/s</span>')
    return "<br>".join(lines)


def _metric_range(result: Any, metric: str) -> str:
    value = result.values.get(metric)
    if value is None:
        return "—"
    text = format_metric_safe(metric, value)
    low, high = result.values.get(f"{metric}_low"), result.values.get(f"{metric}_high")
    if isinstance(low, (int, float)) and isinstance(high, (int, float)):
        a, b = sorted((low, high))
        spread = join_range(format_metric_safe(metric, a), format_metric_safe(metric, b))
        text += f'<br><span class="small">{_e(spread)}</span>'
    return text


def _metric_chart(sc: Any, metric: str, title: str, axis: str) -> BarChart:
    bars = []
    for r in sc.results:
        value = r.values.get(metric) if r.fits else None
        low, high = r.values.get(f"{metric}_low"), r.values.get(f"{metric}_high")
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        bars.append(
            Bar(
                label=r.candidate.label,
                value=number,
                text=format_metric_safe(metric, value) if number is not None else "",
                low=float(low) if isinstance(low, (int, float)) and number is not None else None,
                high=float(high) if isinstance(high, (int, float)) and number is not None else None,
                highlight=r.recommended,
                missing="does not fit" if not r.fits else "no figure",
            )
        )
    return BarChart(title=title, axis_label=axis, bars=bars)


def _factor_value(value: float, unit: str) -> str:
    """An input value with its unit, short: 5 µs, 80%, 0.85× price, 0.5 GiB."""
    if unit == "x price":
        return f"{value:.2f}× price"
    if unit == "s":
        return (
            f"{value * 1e6:.3g} µs"
            if abs(value) < 1e-3
            else f"{value * 1e3:.3g} ms"
            if abs(value) < 1
            else f"{value:.3g} s"
        )
    if unit == "fraction":
        return f"{value * 100:.3g}%"
    if unit.startswith("USD"):
        return f"${value:.3g}{unit[3:]}"
    return f"{value:.3g} {unit}".rstrip()


def _sensitivity_body(result: Any, body: Body, top: int = 10) -> None:
    bars = [b for b in result.bars if b.at_low is not None and b.at_high is not None and b.swing > 0]
    unit = str(result.unit)
    quantity = Quantity(result.base, unit)
    body.caption(
        f"{_e(result.metric_title)}: {format_value(quantity)} as estimated; each bar is this number "
        "with one input at the ends of its range."
    )
    if not bars or result.base is None:
        body.para("No input moves this number.")
        return
    shown = bars[:top]
    rows = [
        TornadoRow(
            b.factor.title,
            float(b.at_low),
            float(b.at_high),
            _factor_value(b.factor.low, b.factor.unit),
            _factor_value(b.factor.high, b.factor.unit),
        )
        for b in shown
    ]
    body.chart(
        TornadoChart(
            title="",
            axis_label=f"{result.metric_title} ({_unit_words(unit)})",
            base=float(result.base),
            rows=rows,
        ),
        keep_with_next=True,
    )
    table = []
    for b in shown:
        low = format_value(Quantity(b.at_low, unit))
        high = format_value(Quantity(b.at_high, unit))
        spread = (
            f"{_e(_factor_value(b.factor.low, b.factor.unit))} – "
            f"{_e(_factor_value(b.factor.high, b.factor.unit))}"
        )
        table.append(
            (
                f'{_e(b.factor.title)}<br><span class="code">{_e(b.factor.id)}</span>',
                f'{spread}<br><span class="small">{_e(b.factor.range_source)}</span>',
                low,
                high,
            )
        )
    body.table(
        ["Input", "Range (low – high)", "Result at low", "Result at high"],
        table,
        widths=[34, 34, 16, 16],
        align=["left", "left", "right", "right"],
        title=f"Sensitivity of {result.scenario}",
    )
    if len(bars) > top:
        body.para(f"{len(bars) - top} inputs with smaller effects are not shown.", cls="small")
    for note in getattr(result, "notes", []) or []:
        body.para(_e(f"Note: {note}."), cls="small")


def _unit_words(unit: str) -> str:
    return {
        "USD/Mtoken": "US dollars per million tokens",
        "USD": "US dollars",
        "s": "seconds",
        "tokens/s": "tokens per second",
        "days": "days",
    }.get(unit, unit)


# --- registry -------------------------------------------------------------------------------------

Builder = Callable[[ReportData, Body], None]

BUILDERS: dict[str, Builder] = {
    "cover": build_cover,
    "summary": build_summary,
    "inputs": build_inputs,
    "memory": build_memory,
    "roofline": build_roofline,
    "comparison": build_comparison,
    "sensitivity": build_sensitivity,
    "calibration": calibration.build,
    "assumptions": build_assumptions,
    "warnings": build_warnings,
}


def plugin_sections() -> list[Any]:
    """Sections registered by plugins (objects with ``id``, ``title`` and ``html(data)``)."""
    try:
        from workbench.pluginhost import get_host

        registered = get_host().registry.report_sections
    except Exception:  # noqa: BLE001 - no plugin host: no plugin sections
        return []
    builtin = {s.id for s in SECTIONS}
    return [
        s
        for s in registered
        if isinstance(getattr(s, "id", None), str)
        and s.id not in builtin
        and callable(getattr(s, "html", None))
    ]


def available_sections() -> list[SectionInfo]:
    extra = [
        SectionInfo(s.id, str(getattr(s, "title", s.id)), str(getattr(s, "description", "")))
        for s in plugin_sections()
    ]
    return [*SECTIONS, *extra]


def build_body(data: ReportData, body: Body) -> Body:
    """Every chosen section, in report order."""
    plugins = {s.id: s for s in plugin_sections()}
    for info in available_sections():
        if info.id not in data.request.sections:
            continue
        builder = BUILDERS.get(info.id)
        if builder is not None:
            builder(data, body)
            continue
        section = plugins[info.id]
        body.section(info.title, anchor=info.id)
        try:
            body.html(str(section.html(data)))
        except Exception as exc:  # noqa: BLE001 - a broken plugin section must not sink the report
            body.para(_e(f"This section (plugin '{info.id}') failed: {exc}"), cls="bad")
    return body
