"""Small helpers the result builders share: number formatting and null quantities."""

from __future__ import annotations

from collections.abc import Callable

from workbench.core.scenario import Scenario
from workbench.engine.quantity import Quantity, Warning, q
from workbench_performance import keys as K


def g(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 1e3:.3g} ms"


def lazy(text: str) -> Callable[[], str]:
    return lambda: text


def null(label: str, unit: str, why: str) -> Quantity:
    return q(None, unit, label, lambda: why, note=why)


def not_applicable(key: str, why: str) -> Quantity:
    """A key that does not apply to this workload: value None, with the reason as note."""
    return null(K.LABELS.get(key, key), K.unit(key), why)


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
