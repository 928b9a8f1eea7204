"""A private price list: negotiated per-GPU prices, one MIG-slice accelerator, and an estimator that
prices the scenario's accelerator from the list.

The first-party cost plugin prices a scenario from ``scenario.pricing`` or the catalog's typical
figures (``cloud_usd_per_hour``, ``list_price_usd``). A company's own contract is neither: this
estimator adds ``private_price.*`` keys beside the catalog-based ``cost.*`` ones, so a report
shows both, and says so when the accelerator is not on the list.

The figures in :data:`PRICES` are placeholders for your own contract's.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from workbench.core.dtypes import DType
from workbench.core.hardware import Accelerator, Source, Vendor
from workbench.engine.estimator import EstimateContext, EstimatorInfo
from workbench.engine.quantity import Outputs, Quantity, Warning, q

VERSION = "1.0.0"


@dataclass(frozen=True, slots=True)
class Price:
    """One line of the price list, per GPU."""

    cloud_usd_per_hour: float
    list_price_usd: float | None
    contract: str


_CONTRACT = "Example Corp. cloud agreement 2026 (placeholder figures)"

#: accelerator id -> negotiated price. Ids are the catalog's (`gpu-workbench catalog gpus`).
PRICES: dict[str, Price] = {
    "h100-sxm": Price(2.10, 24_000.0, _CONTRACT),
    "h200-sxm": Price(2.90, 31_000.0, _CONTRACT),
    "a100-80gb-sxm": Price(1.05, 12_500.0, _CONTRACT),
    "l40s": Price(0.72, 8_000.0, _CONTRACT),
    "h100-sxm-mig-3g.40gb": Price(0.95, None, _CONTRACT),
}

_MIG_GUIDE = Source(
    title="NVIDIA Multi-Instance GPU User Guide, Supported MIG Profiles (H100 80GB: MIG 3g.40gb)",
    url="https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html",
    retrieved=dt.date(2026, 11, 1),
    note="3g.40gb: 4/8 of the memory, 3/7 of the SMs; two such instances per GPU",
)
_H100_DATASHEET = Source(
    title="NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column)",
    url="https://www.nvidia.com/en-us/data-center/h100/",
    retrieved=dt.date(2026, 11, 1),
    note="scaled by the MIG slice's share: 3/7 of the dense TFLOPS, 4/8 of the 3,350 GB/s",
)
_CONTRACT_SOURCE = Source(title=_CONTRACT, retrieved=dt.date(2026, 11, 1), note="placeholder figure")

#: A custom accelerator: one 3g.40gb slice of an H100 SXM, as a private cloud rents it out.
MIG_SLICE = Accelerator(
    id="h100-sxm-mig-3g.40gb",
    name="NVIDIA H100 SXM5 80 GB, MIG 3g.40gb slice",
    vendor=Vendor.NVIDIA,
    category="datacenter",
    memory_gib=40,
    memory_type="HBM3",
    memory_bandwidth_gbps=3350 * 4 / 8,
    dense_tflops={DType.BF16: round(989.4 * 3 / 7, 1), DType.FP8: round(1978.9 * 3 / 7, 1)},
    pcie_gen=5,
    form_factor="MIG slice",
    launch_year=2022,
    cloud_usd_per_hour=PRICES["h100-sxm-mig-3g.40gb"].cloud_usd_per_hour,
    provenance={
        "memory_gib": _MIG_GUIDE,
        "memory_type": _H100_DATASHEET,
        "memory_bandwidth_gbps": _H100_DATASHEET,
        "dense_tflops.bf16": _H100_DATASHEET,
        "dense_tflops.fp8": _H100_DATASHEET,
        "pcie_gen": _H100_DATASHEET,
        "form_factor": _MIG_GUIDE,
        "launch_year": _H100_DATASHEET,
        "cloud_usd_per_hour": _CONTRACT_SOURCE,
    },
    custom=True,
)

KEYS = (
    "private_price.usd_per_gpu_hour",
    "private_price.usd_per_hour",
    "private_price.usd_per_million_tokens",
    "private_price.purchase_usd",
    "private_price.saving_vs_catalog",
)


def _usd(x: float) -> str:
    return f"${x:,.2f}"


class PrivatePriceEstimator:
    """Prices the scenario's accelerator from :data:`PRICES`."""

    info = EstimatorInfo(
        id="example.private-prices",
        title="Private price list",
        version=VERSION,
        produces=KEYS,
        needs=("performance.tokens_per_s", "performance.gpus"),
        description="Rental and purchase cost at the negotiated prices of a private price list, "
        "beside the catalog's typical prices.",
    )

    def __init__(self, prices: dict[str, Price] | None = None) -> None:
        self.prices = PRICES if prices is None else prices

    def estimate(self, ctx: EstimateContext) -> Outputs:
        gpu = ctx.gpu
        price = self.prices.get(gpu.id)
        if price is None:
            why = f"{gpu.id} is not on the private price list"
            missing = Warning("private-price-missing", f"No private price for {gpu.name}", severity="info",
                              fix="add it to PRICES in workbench_example_prices")
            return Outputs({key: q(None, note=why, formula=why) for key in KEYS}, [missing])

        gpus = max(int(ctx.number("performance.gpus")), ctx.scenario.num_gpus)
        rate = price.cloud_usd_per_hour
        hourly = gpus * rate
        tokens_per_s = ctx.number("performance.tokens_per_s")
        values: dict[str, Quantity] = {
            "private_price.usd_per_gpu_hour": q(rate, "USD/GPU-h", "Private price per GPU-hour",
                                                lambda: f"{_usd(rate)} ({price.contract})"),
            "private_price.usd_per_hour": q(hourly, "USD/h", "Private price per hour",
                                            lambda: f"{gpus} GPUs x {_usd(rate)}"),
        }
        per_million = hourly / (tokens_per_s * 3600) * 1e6 if tokens_per_s > 0 else None
        values["private_price.usd_per_million_tokens"] = q(
            per_million, "USD/Mtoken", "Private price per million tokens",
            lambda: f"{_usd(hourly)}/h / ({tokens_per_s:,.0f} tokens/s x 3600 s) x 1e6",
        )
        purchase = None if price.list_price_usd is None else gpus * price.list_price_usd
        values["private_price.purchase_usd"] = q(
            purchase, "USD", "Purchase at the private price",
            lambda: f"{gpus} GPUs x {_usd(price.list_price_usd)}" if price.list_price_usd else "not for sale",
        )
        catalog = gpu.cloud_usd_per_hour
        saving = None if catalog is None else 1 - rate / catalog
        values["private_price.saving_vs_catalog"] = q(
            saving, "fraction", "Saving against the catalog price",
            lambda: f"1 - {_usd(rate)} / {_usd(catalog)}" if catalog else "the catalog has no price",
        )
        return Outputs(values)
