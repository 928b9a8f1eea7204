"""The report's "Where the time goes" table: a scenario's kernel groups per phase (the decode step
and the prefill of one prompt when serving, the forward pass of one micro-batch when training),
longest first, with their time, share of the phase and bound.

It sits under the roofline table, whose phases it breaks down. A phase with many groups shows the
longest ones and sums the rest into one row, so the table stays a page's part, not a page.
"""

from __future__ import annotations

from html import escape
from typing import Any

from workbench.kernel_breakdown import (
    SCOPE,
    PhaseRows,
    Row,
    format_ms,
    format_share,
    generic_note,
    step_breakdown,
)

#: Kernel groups listed per phase; the rest are summed into one row.
MAX_ROWS = 8


def _rows(phase: PhaseRows) -> list[tuple[str, str, str, str]]:
    """(group, ms, share, bound) of the longest groups, then one row for the rest."""
    shown: list[Row] = list(phase.rows)
    rest: list[Row] = []
    if len(shown) > MAX_ROWS:
        shown, rest = shown[:MAX_ROWS - 1], shown[MAX_ROWS - 1:]
    out = [(escape(r.name), format_ms(r.seconds), format_share(r.share), r.bound) for r in shown]
    if rest:
        bounds = sorted({r.bound for r in rest})
        out.append((f"{len(rest)} shorter groups", format_ms(sum(r.seconds for r in rest)),
                    format_share(sum(r.share for r in rest)), " / ".join(bounds)))
    return out


def add_kernel_table(body: Any, estimate: Any) -> None:
    """Append the table of ``estimate``'s kernel time to ``body`` (a report
    :class:`~workbench.report.sections.Body`); a line saying why when there is none."""
    breakdown = step_breakdown(estimate)
    body.heading("Where the time goes", level=3)
    if not breakdown.phases:
        body.para(escape(breakdown.empty_reason), cls="small")
        return
    profile = breakdown.phases[0].profile
    body.intro(f"Kernel groups of the per-operator speed model, longest first; {escape(SCOPE)}. "
               f"Kernel profile: {escape(profile)}.")
    if breakdown.generic:
        note = generic_note(estimate.resolved.cluster.accelerator.name)
        body.intro(f'<span class="bad">{escape(note)}</span>')
    rows = []
    for phase in breakdown.phases:
        for n, (group, ms, share, bound) in enumerate(_rows(phase)):
            head = f"{escape(phase.title)}<br><span class=\"small\">{format_ms(phase.total_s)} in all</span>"
            rows.append((head if n == 0 else "", group, ms, share, escape(bound)))
    body.table(
        ["Phase", "Kernel group", "Time", "Share", "Bound"],
        rows,
        widths=[29, 32, 12, 9, 18],
        align=["left", "left", "right", "right", "left"],
        title=f"Where the time goes in {estimate.resolved.scenario.name}",
    )
