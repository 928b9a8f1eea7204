"""Accelerators, node shapes and clusters, with the provenance of every datasheet figure.

Figures are plain fields so the engine reads them without indirection; where each came from is
kept beside them in :attr:`Accelerator.provenance`, keyed by field name (``"memory_gib"``,
``"dense_tflops.bf16"``, ...). The catalog loader fills it and a test checks that every figure
has an entry.
"""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workbench.core.dtypes import DType
from workbench.core.units import GiB

_FROZEN = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)  # NaN passes every range check


class Source(BaseModel):
    """Where a figure was taken from, and when."""

    model_config = _FROZEN

    title: str = Field(min_length=1, description="Datasheet, vendor page or price list title.")
    url: str | None = Field(None, description="Address of the document, for the reader to check.")
    retrieved: dt.date = Field(description="Date the figure was taken from the document.")
    note: str | None = Field(None, description="How the figure was read or derived.")


class Vendor(str, Enum):
    NVIDIA = "nvidia"
    AMD = "amd"
    INTEL = "intel"
    GOOGLE = "google"
    APPLE = "apple"
    AMAZON = "amazon"
    OTHER = "other"


PurchasePriceKind = Literal["list", "street", "estimate"]
#: The price fields of an accelerator; a null one may say why in ``price_gaps``.
PriceField = Literal["list_price_usd", "cloud_usd_per_hour", "cloud_spot_usd_per_hour"]
PRICE_FIELDS: tuple[str, ...] = ("list_price_usd", "cloud_usd_per_hour", "cloud_spot_usd_per_hour")


class Accelerator(BaseModel):
    """One accelerator as its vendor specifies it. All FLOP rates are dense unless named sparse."""

    model_config = _FROZEN

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$", description="Short id used on the command line.")
    name: str = Field(min_length=1, description="Full product name.")
    vendor: Vendor = Field(description="Manufacturer.")
    category: str = Field(
        description="datacenter, workstation, consumer, tpu or soc (unified-memory laptop/desktop chip)."
    )
    memory_gib: float = Field(gt=0, description="Device memory in GiB (vendors' 'GB' of HBM/GDDR is binary).")
    memory_type: str = Field(description="HBM3e, HBM3, HBM2e, GDDR7, GDDR6X, LPDDR5X, ...")
    memory_bandwidth_gbps: float = Field(gt=0, description="Peak memory bandwidth in GB/s (decimal).")
    dense_tflops: dict[DType, float] = Field(
        description="Peak dense TFLOPS (or TOPS for int8) per dtype, without 2:4 sparsity."
    )
    sparse_tflops: dict[DType, float] = Field(
        default_factory=dict, description="Peak TFLOPS with 2:4 structured sparsity, where published."
    )
    tdp_watts: float | None = Field(
        None,
        gt=0,
        description="Board / module power limit in watts; None where the vendor publishes none.",
    )
    interconnect: str | None = Field(None, description="Scale-up link: NVLink 4, Infinity Fabric, ICI, ...")
    interconnect_gbps: float | None = Field(
        None, ge=0, description="Scale-up bandwidth per device in GB/s, both directions summed."
    )
    pcie_gen: int | None = Field(None, ge=1, description="Host interface PCIe generation.")
    form_factor: str = Field(description="SXM, OAM, PCIe, NVL, superchip, board, SoC, ...")
    launch_year: int = Field(ge=2010, le=2035, description="Year the product shipped.")
    list_price_usd: float | None = Field(
        None,
        gt=0,
        description=(
            "Approximate purchase price per device, USD; purchase_price_kind says whether it is a "
            "vendor list price, a street price or an estimate."
        ),
    )
    purchase_price_kind: PurchasePriceKind | None = Field(
        None,
        description=(
            "What list_price_usd is: 'list' (vendor or reseller list price / MSRP), 'street' "
            "(typical price paid, as reported) or 'estimate' (derived from a published system, "
            "rack or analyst figure; the source note says how)."
        ),
    )
    cloud_usd_per_hour: float | None = Field(
        None, gt=0, description="Typical on-demand cloud price per device-hour, USD."
    )
    cloud_spot_usd_per_hour: float | None = Field(
        None,
        gt=0,
        description="Spot / preemptible cloud price per device-hour, USD, where a provider publishes one.",
    )
    price_gaps: dict[PriceField, str] = Field(
        default_factory=dict,
        description=(
            "Why a price is null: price field -> reason (nothing published, not rented, ...). "
            "Only for fields that are null."
        ),
    )
    provenance: dict[str, Source] = Field(
        default_factory=dict, description="Source of each figure, keyed by field name."
    )
    custom: bool = Field(False, description="Added or overridden by the user, not from the shipped catalog.")

    @model_validator(mode="after")
    def _check(self) -> Accelerator:
        for dtype, sparse in self.sparse_tflops.items():
            dense = self.dense_tflops.get(dtype)
            if dense is not None and sparse < dense:
                raise ValueError(
                    f"sparse_tflops.{dtype.value} ({sparse}) is below dense ({dense}): "
                    "dense and sparse figures are swapped"
                )
        if not self.dense_tflops:
            raise ValueError("dense_tflops: at least one dtype is needed")
        if self.purchase_price_kind is not None and self.list_price_usd is None:
            raise ValueError("purchase_price_kind: given without list_price_usd")
        for name, reason in self.price_gaps.items():
            if getattr(self, name) is not None:
                raise ValueError(f"price_gaps.{name}: the price is given, so it has no gap to explain")
            if not reason.strip():
                raise ValueError(f"price_gaps.{name}: the reason is empty")
        if self.cloud_spot_usd_per_hour is not None and self.cloud_usd_per_hour is None:
            raise ValueError("cloud_spot_usd_per_hour: given without the on-demand cloud_usd_per_hour")
        return self

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GiB

    def peak_tflops(self, dtype: DType) -> float | None:
        """Dense peak for ``dtype``; None when the device has no native support for it."""
        return self.dense_tflops.get(dtype)

    def supports(self, dtype: DType) -> bool:
        return dtype in self.dense_tflops


class NodeShape(BaseModel):
    """A server: how many accelerators it holds and how they talk inside and across nodes."""

    model_config = _FROZEN

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$", description="Short id used on the command line.")
    name: str = Field(description="Display name, e.g. '8x H100 SXM (HGX, NVSwitch)'.")
    gpus_per_node: int = Field(gt=0, description="Accelerators in one node.")
    intra_node: str = Field(description="Link between accelerators inside a node (NVSwitch, PCIe, ...).")
    intra_node_gbps: float = Field(
        gt=0, description="Per-accelerator bandwidth to its peers inside the node, GB/s, one direction."
    )
    inter_node: str = Field(description="Network between nodes (InfiniBand NDR, RoCE, ...).")
    inter_node_gbps: float = Field(
        gt=0, description="Per-accelerator network bandwidth to other nodes, GB/s, one direction."
    )
    accelerators: tuple[str, ...] = Field(
        (), description="Accelerator ids this shape is built for (empty: any)."
    )
    source: Source | None = Field(None, description="Where the shape's figures come from.")


class Cluster(BaseModel):
    """The hardware a scenario runs on: an accelerator, a node shape and a GPU count."""

    model_config = _FROZEN

    accelerator: Accelerator = Field(description="The accelerator every rank uses.")
    node: NodeShape = Field(description="How accelerators are packed and connected.")
    num_gpus: int = Field(gt=0, description="Accelerators in the whole job.")

    @property
    def num_nodes(self) -> int:
        return -(-self.num_gpus // self.node.gpus_per_node)
