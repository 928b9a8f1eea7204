"""Kernel-level efficiency data (published GEMM, attention, memory, collective and launch figures).

See :mod:`workbench_performance.kernels.data` for the lookup API the per-operator model reads.
"""

from workbench_performance.kernels.data import (
    KernelData,
    KernelDataError,
    achieved_bandwidth,
    arch_of,
    attention_points,
    collective_points,
    gemm_points,
    launch_overhead,
    load_kernel_data,
    memory_points,
    read_kernel_data,
)

__all__ = [
    "KernelData",
    "KernelDataError",
    "achieved_bandwidth",
    "arch_of",
    "attention_points",
    "collective_points",
    "gemm_points",
    "launch_overhead",
    "load_kernel_data",
    "memory_points",
    "read_kernel_data",
]
