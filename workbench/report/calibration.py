"""The report's Calibration section, and the mark on every estimate a profile calibrated.

The section shows the profile as it was fitted (name, date, GPU + engine, how many
measurements), each fitted assumption with its default, fitted value and documented range, the
residual of every measurement before and after the fit and when left out of it, and the fit's
notes. It is left out when the report has no profile: a page saying "no calibration" would only
be noise in a plan made from the assumptions alone.
"""

from __future__ import annotations

from html import escape
from typing import Any

from workbench.measure.model import METRICS
from workbench.report.document import ReportData, is_calibrated

TITLE = "Calibration"


def _e(text: object) -> str:
    return escape(str(text))


def mark(data: ReportData, estimate: Any) -> str | None:
    """'calibrated on N measurements (date), profile NAME' for an estimate the profile calibrated."""
    profile = data.request.calibration
    if profile is None or not is_calibrated(data.request, estimate.resolved.scenario):
        return None
    return f"{profile.mark()}, profile '{profile.name}'"


def calibrated_names(data: ReportData) -> tuple[list[str], list[str]]:
    """The report's scenarios the profile calibrated, and those it did not (another GPU or engine)."""
    yes, no = [], []
    for e in data.estimates:
        (yes if is_calibrated(data.request, e.resolved.scenario) else no).append(e.resolved.scenario.name)
    return yes, no


def _pct(value: Any, signed: bool = True) -> str:
    if not isinstance(value, (int, float)):
        return "—"
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def _number(value: Any, unit: str = "") -> str:
    if not isinstance(value, (int, float)):
        return "—"
    if unit == "s":
        return f"{value * 1e3:.4g} ms" if value < 10 else f"{value:.4g} s"
    text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return f"{text} {unit}".strip()


def build(data: ReportData, body: Any) -> None:
    profile = data.request.calibration
    if profile is None:
        return
    body.section(TITLE, anchor="calibration")
    body.intro(
        "The efficiency assumptions below were fitted to measured runs of one GPU and engine (robust fit in "
        "log space, each assumption kept within its documented range; an assumption moves only when that "
        "explains the measurements clearly better than run-to-run noise would). The fitted values replace the "
        "defaults in every estimate of this report on that GPU and engine."
    )
    yes, no = calibrated_names(data)
    rows = [
        ("Profile", _e(profile.name)),
        ("Fitted", _e(f"{profile.created:%Y-%m-%d %H:%M} UTC")),
        ("GPU and engine", _e(f"{profile.gpu} / {profile.engine}")),
        ("Measurements", _e(f"{profile.measurements}")),
        ("Calibrated here", _e(", ".join(yes)) or "none of the report's scenarios runs on this GPU and engine"),
    ]
    if no:
        rows.append(("Not calibrated", _e(", ".join(no)) + ' <span class="small">(another GPU or engine)</span>'))
    body.table(None, rows, widths=[26, 74], cls="cover")

    body.heading("Assumptions fitted")
    params = list(profile.parameters)
    if params:
        body.table(
            ["Assumption", "Default", "Fitted", "Documented range", "Change"],
            [_parameter_row(p) for p in params],
            widths=[40, 13, 13, 20, 14],
            align=["left", "right", "right", "right", "right"],
            title="Assumptions fitted",
        )
    else:
        body.para("No assumption with a documented range moves these measurements' predictions; nothing was fitted.")

    body.heading("Residuals per measurement")
    body.intro(
        "Error of the estimate against each measured figure (estimate / measured − 1): before the fit, after it, "
        "and left out (predicted by a fit to the other measurements: whether the fit generalizes or only "
        "memorizes)."
    )
    if profile.residuals:
        body.table(
            ["Measurement", "Metric", "Measured", "Before", "After", "Left out"],
            [_residual_row(r) for r in profile.residuals],
            widths=[34, 18, 15, 11, 11, 11],
            align=["left", "left", "right", "right", "right", "right"],
            title="Residuals per measurement",
        )
    fit = profile.fit
    body.para(
        "Median absolute error: before "
        f"{_pct(fit.get('median_abs_error_before'), False)}, after {_pct(fit.get('median_abs_error_after'), False)}, "
        f"left out {_pct(fit.get('median_abs_error_left_out'), False)}.",
    )
    for note in profile.notes:
        body.para(_e(f"Note: {note}"), cls="small")


def _parameter_row(p: dict[str, Any]) -> list[str]:
    moved = bool(p.get("moved"))
    change = _pct(p.get("change")) if moved else "unchanged"
    title = f'{_e(p.get("title", ""))}<br><span class="code">{_e(p.get("id", ""))}</span>'
    fitted = _number(p.get("value"))
    return [
        title,
        _e(_number(p.get("default"))),
        f"<b>{_e(fitted)}</b>" if moved else _e(fitted),
        _e(f"{_number(p.get('low'))} – {_number(p.get('high'))}"),
        _e(change),
    ]


def _residual_row(r: dict[str, Any]) -> list[str]:
    metric = METRICS.get(str(r.get("metric")))
    unit = str(r.get("unit") or (metric.unit if metric else ""))
    return [
        _e(r.get("measurement", "")),
        _e(metric.title if metric else r.get("metric", "")),
        _e(_number(r.get("measured"), unit)),
        _e(_pct(r.get("error_before"))),
        _e(_pct(r.get("error_after"))),
        _e(_pct(r.get("error_left_out"))),
    ]
