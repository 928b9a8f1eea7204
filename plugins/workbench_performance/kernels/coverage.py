"""Which (architecture, kernel kind) cells the kernel data covers, as a Markdown table.

The data README embeds this table between markers and a test checks it is current, so the
"no source" cells the cost model must fill from elsewhere are always stated where the data is.
"""

from __future__ import annotations

from collections import Counter

from workbench_performance.kernels.data import KernelData
from workbench_performance.kernels.schema import AttentionPoint, CollectivePoint, GemmPoint, Row

#: Column order of the coverage table: (column id, heading).
KINDS: tuple[tuple[str, str], ...] = (
    ("gemm", "GEMM"),
    ("grouped_gemm", "grouped GEMM"),
    ("attention_prefill", "attention prefill"),
    ("attention_decode", "attention decode"),
    ("memory", "memory bandwidth"),
    ("collective_scale_up", "collective, scale-up"),
    ("collective_scale_out", "collective, scale-out"),
    ("launch", "launch"),
)
_SCALE_OUT = {"ib", "roce", "efa"}
NO_SOURCE = "no source"


def kind_of(file_name: str, row: Row) -> str:
    """The coverage column a row counts in."""
    if isinstance(row, GemmPoint):
        return "grouped_gemm" if row.grouped else "gemm"
    if isinstance(row, AttentionPoint):
        return f"attention_{row.phase}"
    if isinstance(row, CollectivePoint):
        return "collective_scale_out" if row.link in _SCALE_OUT else "collective_scale_up"
    return file_name.removesuffix(".yaml")


def coverage(data: KernelData) -> Counter[tuple[str, str]]:
    """Row count per (architecture id, kind)."""
    return Counter((row.arch, kind_of(name, row)) for name, row in data.rows())


def coverage_table(data: KernelData) -> str:
    """Markdown table: one line per architecture, rows per kind or "no source"."""
    counts = coverage(data)
    lines = [
        "| architecture | " + " | ".join(title for _, title in KINDS) + " |",
        "|---|" + "---|" * len(KINDS),
    ]
    for arch in data.architectures.values():
        cells = [str(counts[(arch.id, kind)]) if counts[(arch.id, kind)] else NO_SOURCE for kind, _ in KINDS]
        lines.append(f"| {arch.id} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
