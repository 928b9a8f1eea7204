"""Prices of the shipped catalog: every accelerator has a rental and a purchase price, each dated
and sourced, or says why it has none; the accelerators on sale in 2025-2026 match their sheets."""

from __future__ import annotations

import datetime as dt
import textwrap
from pathlib import Path

import pytest

from workbench.catalog.accelerators import default_node_for, load_accelerators, load_node_shapes
from workbench.core.dtypes import DType
from workbench.core.errors import CatalogError
from workbench.core.hardware import PRICE_FIELDS, Accelerator

NEW_IDS = (
    "b300", "gb300", "rtx-pro-6000", "dgx-spark", "mi350x", "gaudi3-pcie", "tpu-v7", "trainium2", "trainium3",
)  # fmt: skip


def _peaks(acc: Accelerator, *dtypes: DType) -> tuple[float | None, ...]:
    return tuple(acc.peak_tflops(d) for d in dtypes)


@pytest.fixture(scope="module")
def catalog() -> dict[str, Accelerator]:
    return load_accelerators()


@pytest.mark.parametrize("field", ["list_price_usd", "cloud_usd_per_hour"])
def test_every_accelerator_has_the_price_or_says_why_not(catalog: dict[str, Accelerator], field: str) -> None:
    undocumented = [a.id for a in catalog.values() if getattr(a, field) is None and field not in a.price_gaps]
    assert undocumented == []
    for acc in catalog.values():
        reason = acc.price_gaps.get(field)
        if reason is not None:
            # A reason is a sentence a reader can act on, not a placeholder.
            assert len(reason) >= 30 and "2026" in reason, f"{acc.id}: {reason!r}"


def test_every_price_is_dated_sourced_and_approximate(catalog: dict[str, Accelerator]) -> None:
    for acc in catalog.values():
        for field in PRICE_FIELDS:
            if getattr(acc, field) is None:
                continue
            source = acc.provenance[field]
            assert source.title.strip() and source.url, f"{acc.id}:{field} needs a title and an address"
            assert isinstance(source.retrieved, dt.date) and source.retrieved >= dt.date(2026, 11, 22)
            assert "approximate" in (source.note or "").lower(), f"{acc.id}:{field}"


def test_every_purchase_price_says_what_kind_it_is(catalog: dict[str, Accelerator]) -> None:
    for acc in catalog.values():
        if acc.list_price_usd is not None:
            assert acc.purchase_price_kind in ("list", "street", "estimate"), acc.id
        if acc.purchase_price_kind == "estimate":
            # An estimate names what it was derived from.
            assert "estimate" in (acc.provenance["list_price_usd"].note or "").lower(), acc.id


def test_price_coverage_and_documented_gaps_add_up(catalog: dict[str, Accelerator]) -> None:
    rent = sum(a.cloud_usd_per_hour is not None for a in catalog.values())
    buy = sum(a.list_price_usd is not None for a in catalog.values())
    assert rent + sum("cloud_usd_per_hour" in a.price_gaps for a in catalog.values()) == len(catalog)
    assert buy + sum("list_price_usd" in a.price_gaps for a in catalog.values()) == len(catalog)
    # The issue counted 19 rented and 14 bought of 46; the catalog now prices far more of them.
    assert rent >= 33 and buy >= 23
    assert sum(a.cloud_spot_usd_per_hour is not None for a in catalog.values()) >= 10


def test_known_prices(catalog: dict[str, Accelerator]) -> None:
    # RunPod Secure Cloud, read 2026-09-25: H100 NVL $3.19; Hugging Face hardware MSRP: L40s $8.5k.
    assert catalog["h100-nvl"].cloud_usd_per_hour == 3.19
    assert (catalog["l40s"].list_price_usd, catalog["l40s"].purchase_price_kind) == (8500, "list")
    # GB300 is sold as racks: $3.5M / 72 GPUs, marked as an estimate.
    gb300 = catalog["gb300"]
    assert gb300.purchase_price_kind == "estimate"
    assert gb300.list_price_usd == pytest.approx(3.5e6 / 72, rel=0.01)
    assert catalog["rtx-pro-6000"].list_price_usd == 8565  # MSRP as reported April 2026
    # B300: a DGX B300 at $300-350K for 8 GPUs, per GPU an estimate.
    assert (catalog["b300"].list_price_usd, catalog["b300"].purchase_price_kind) == (40600, "estimate")
    # Spot is cheaper than on-demand where both come from the same provider's table (RunPod, March 2026).
    for acc_id in ("a100-80gb-pcie", "h100-sxm", "l40s", "rtx-4090", "rtx-pro-6000"):
        acc = catalog[acc_id]
        spot, on_demand = acc.cloud_spot_usd_per_hour, acc.cloud_usd_per_hour
        assert spot is not None and on_demand is not None and spot < on_demand, acc_id


# --- the accelerators added for what is on sale now ----------------------------------------------


def test_new_accelerators_load_with_their_own_node_shape(catalog: dict[str, Accelerator]) -> None:
    shapes = load_node_shapes()
    for acc_id in NEW_IDS:
        assert acc_id in catalog
        assert default_node_for(acc_id, shapes).id != "generic-pcie", acc_id


def test_trainium_matches_aws_neuron_docs(catalog: dict[str, Accelerator]) -> None:
    # AWS Neuron docs, Trainium2: 1,299 FP8 / 667 BF16 / 181 FP32 TFLOPS, 96 GiB at 2.9 TB/s.
    trn2 = catalog["trainium2"]
    assert _peaks(trn2, DType.FP8, DType.BF16, DType.FP32) == (1299, 667, 181)
    assert (trn2.memory_gib, trn2.memory_bandwidth_gbps) == (96, 2900)
    # Trainium3: 2,517 MXFP8/MXFP4, 671 BF16, 144 GiB at 4.9 TB/s, NeuronLink-v4 2.56 TB/s.
    trn3 = catalog["trainium3"]
    assert _peaks(trn3, DType.FP8, DType.FP4, DType.BF16) == (2517, 2517, 671)
    assert (trn3.memory_gib, trn3.memory_bandwidth_gbps, trn3.interconnect_gbps) == (144, 4900, 2560)
    assert trn2.vendor.value == trn3.vendor.value == "amazon"


def test_tpu7x_matches_cloud_docs(catalog: dict[str, Accelerator]) -> None:
    # Cloud TPU docs, TPU7x table: 2307 BF16 / 4614 FP8 TFLOPs per chip, 192 GiB HBM.
    tpu = catalog["tpu-v7"]
    assert (*_peaks(tpu, DType.BF16, DType.FP8), tpu.memory_gib) == (2307, 4614, 192)


def test_blackwell_ultra_and_rtx_pro_figures(catalog: dict[str, Accelerator]) -> None:
    # Verda's per-GPU table (dense): GB300 FP4 15 PF, FP8 5 PF, BF16 2.5 PF; B300 FP4 14 PF.
    gb300, b300 = catalog["gb300"], catalog["b300"]
    assert _peaks(gb300, DType.FP4, DType.FP8, DType.BF16) == (15000, 5000, 2500)
    assert b300.peak_tflops(DType.FP4) == 14000 and gb300.memory_gib == 288
    # RTX PRO 6000 Blackwell: 96 GB GDDR7 at 1,792 GB/s, BF16 503.8 dense, FP4 4.03 PF sparse.
    pro = catalog["rtx-pro-6000"]
    assert (pro.memory_gib, pro.memory_bandwidth_gbps, pro.peak_tflops(DType.BF16)) == (96, 1792, 503.8)
    assert pro.sparse_tflops[DType.FP4] == 4030
    # MI350X: the MI355X rates scaled by the peak clocks, 2.2 / 2.4 GHz (bf16 2,516.6 -> 2,306.9).
    mi355x_bf16 = catalog["mi355x"].peak_tflops(DType.BF16)
    assert mi355x_bf16 is not None
    assert catalog["mi350x"].peak_tflops(DType.BF16) == pytest.approx(mi355x_bf16 * 2.2 / 2.4, rel=1e-4)
    # DGX Spark: 1 PFLOP FP4 with sparsity, no published bf16 rate (left out, not guessed).
    spark = catalog["dgx-spark"]
    assert spark.sparse_tflops[DType.FP4] == 1000 and not spark.supports(DType.BF16)


# --- schema ----------------------------------------------------------------------------------------


def _entry(extra: str) -> str:
    return textwrap.dedent(
        """
        id: priced-gpu
        name: Priced GPU
        vendor: other
        category: datacenter
        memory_gib: 48
        memory_type: GDDR6
        memory_bandwidth_gbps: 900
        dense_tflops: {bf16: 200}
        form_factor: PCIe
        launch_year: 2025
        """
    ) + textwrap.dedent(extra)


def _load(tmp_path: Path, text: str) -> Accelerator:
    path = tmp_path / "one.yaml"
    path.write_text(text, encoding="utf-8")
    return load_accelerators([path])["priced-gpu"]


def test_old_style_user_entry_stays_valid(tmp_path: Path) -> None:
    acc = _load(tmp_path, _entry("list_price_usd: 9000\ncloud_usd_per_hour: 1.1\n"))
    assert acc.purchase_price_kind is None and acc.cloud_spot_usd_per_hour is None and acc.price_gaps == {}


def test_new_price_fields_load_with_provenance(tmp_path: Path) -> None:
    acc = _load(
        tmp_path,
        _entry(
            """
            list_price_usd: 9000
            purchase_price_kind: street
            cloud_usd_per_hour: 1.1
            cloud_spot_usd_per_hour: 0.6
            """
        ),
    )
    assert (acc.purchase_price_kind, acc.cloud_spot_usd_per_hour) == ("street", 0.6)
    assert acc.provenance["cloud_spot_usd_per_hour"].title == "User catalog file one.yaml"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("purchase_price_kind: list\n", "purchase_price_kind: given without list_price_usd"),
        ("list_price_usd: 9000\nprice_gaps: {list_price_usd: not sold anywhere}\n", "the price is given"),
        ("cloud_spot_usd_per_hour: 0.5\n", "without the on-demand"),
        ("price_gaps: {tdp_watts: unknown}\n", "price_gaps"),
        ("list_price_usd: 9000\npurchase_price_kind: rumour\n", "purchase_price_kind"),
    ],
)
def test_inconsistent_prices_are_one_line_errors(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(CatalogError) as err:
        _load(tmp_path, _entry(extra))
    assert message in str(err.value) and "\n" not in str(err.value)
