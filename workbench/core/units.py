"""Units used throughout the workbench, and how they are shown.

Memory capacity is binary (GiB = 2**30 bytes), as GPU memory is built and as ``nvidia-smi``
reports it (an "80GB" A100 shows 81920 MiB). Bandwidth and FLOP rates are decimal
(GB/s = 1e9 bytes/s, TFLOPS = 1e12 FLOP/s), as every vendor datasheet prints them.
The two are never mixed in one figure: every formatted value names its unit.
"""

from __future__ import annotations

KiB = 1024
MiB = 1024**2
GiB = 1024**3
TiB = 1024**4

KB = 1_000
MB = 1_000_000
GB = 1_000_000_000
TB = 1_000_000_000_000

TERA = 1e12
GIGA = 1e9


def format_bytes(n: float, digits: int = 2) -> str:
    """Format a byte count in binary units (B, KiB, MiB, GiB, TiB)."""
    sign = "-" if n < 0 else ""
    n = abs(float(n))
    for unit, size in (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            return f"{sign}{n / size:.{digits}f} {unit}"
    return f"{sign}{n:.0f} B"


def format_count(n: float, digits: int = 2) -> str:
    """Format a large count with a decimal suffix (K, M, B, T): 70.55B parameters."""
    sign = "-" if n < 0 else ""
    n = abs(float(n))
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{sign}{n / size:.{digits}f}{unit}"
    return f"{sign}{n:.0f}"


def format_flops(n: float, digits: int = 2) -> str:
    """Format a FLOP count (not a rate) with decimal prefixes."""
    sign = "-" if n < 0 else ""
    n = abs(float(n))
    for unit, size in (("EFLOP", 1e18), ("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9)):
        if n >= size:
            return f"{sign}{n / size:.{digits}f} {unit}"
    return f"{sign}{n:.0f} FLOP"
