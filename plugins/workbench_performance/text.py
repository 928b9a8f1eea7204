"""Small helpers the result builders share: number formatting and null quantities."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache, lru_cache
from types import MappingProxyType
from typing import Any

from workbench.core.scenario import Scenario
from workbench.engine.points import SharedColumn
from workbench.engine.quantity import FixedQuantity, Quantity, Warning
from workbench_performance import keys as K


def g(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 1e3:.3g} ms"


def lazy(text: str) -> Callable[[], str]:
    return lambda: text


@lru_cache(maxsize=256)
def null(label: str, unit: str, why: str) -> Quantity:
    """No value, with the reason as formula and note: a handful of fixed texts, so each is built
    once and shared (read-only :class:`~workbench.engine.quantity.FixedQuantity`)."""
    return FixedQuantity(None, unit, label, why, note=why)


def not_applicable(key: str, why: str) -> Quantity:
    """A key that does not apply to this workload: value None, with the reason as note."""
    return null(K.LABELS.get(key, key), K.unit(key), why)


@cache
def not_applicable_to(workload: str, why: str) -> Mapping[str, Quantity]:
    """Every key that applies only to ``workload``, as :func:`not_applicable` says it, built once.

    The quantities are shared by every estimate that lacks them (read-only
    :class:`~workbench.engine.quantity.FixedQuantity`, formula = the reason), so an estimate adds
    them with one ``dict.update`` in key order instead of building 15 objects.
    """
    return MappingProxyType(
        {
            key: FixedQuantity(None, K.unit(key), K.LABELS.get(key, key), why, note=why)
            for key in K.keys_for(workload)
        }
    )


@cache
def not_applicable_columns(workload: str, why: str) -> Mapping[str, SharedColumn]:
    """:func:`not_applicable_to` as columns every point of every group shares."""
    return MappingProxyType({key: SharedColumn(q) for key, q in not_applicable_to(workload, why).items()})


@lru_cache(maxsize=256)
def null_column(label: str, unit: str, why: str) -> SharedColumn:
    """:func:`null` as a column every point shares."""
    return SharedColumn(null(label, unit, why))  # type: ignore[arg-type] - null() gives a FixedQuantity


def idle_gpus(sc: Scenario, warnings: list[Warning]) -> None:
    """Warn when TP x PP x DP leaves some of the scenario's GPUs without work."""
    world = sc.parallel.world_size
    if sc.num_gpus > world:
        warnings.append(
            Warning(
                "idle-gpus",
                f"{sc.num_gpus} GPUs but TP x PP x DP = {world}: {sc.num_gpus - world} GPUs idle "
                "(they are still paid for)",
                fix="set --dp so that TP x PP x DP = --gpus",
            )
        )


def kernel_profile_warning(gpu_name: str, profile: Any, warnings: list[Warning]) -> None:
    """Say so when no kernel-level data stands behind the accelerator's speed figures."""
    if profile.generic:
        warnings.append(
            Warning(
                "generic-kernel-profile",
                f"no published kernel benchmarks for {gpu_name}'s architecture: its speed figures use "
                "generic kernel efficiencies, not measured ones (memory and FLOPs are unaffected)",
                fix="treat latency and throughput as rough; set --mfu or perf.kernel_efficiency_scale "
                "from a measurement of your own",
            )
        )
    elif profile.partial:
        names = {
            "bandwidth_efficiency": "achieved memory bandwidth",
            "attention_efficiency": "attention kernel efficiency",
            "gemm_efficiency": "GEMM efficiency",
        }
        missing = ", ".join(names.get(field, field) for field in profile.partial)
        warnings.append(
            Warning(
                "partial-kernel-profile",
                f"{gpu_name}: no published kernel measurement of its {missing}; those figures are the median "
                "of the measured architectures (the rest of its kernel profile is its own)",
                severity="info",
                fix="set perf.bandwidth_efficiency_scale or perf.kernel_efficiency_scale from a measurement "
                "of your own",
            )
        )
