"""The accelerator / node-shape catalog: coverage, provenance, datasheet spot checks, user files."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workbench.catalog.accelerators import (
    default_node_for,
    get_accelerator,
    get_node_shape,
    load_accelerators,
    load_node_shapes,
)
from workbench.core.dtypes import DType
from workbench.core.errors import CatalogError
from workbench.core.hardware import Accelerator
from workbench.core.units import GiB

REQUIRED_IDS = {
    # NVIDIA datacenter
    "v100-sxm2-32gb", "v100-pcie", "a100-40gb-sxm", "a100-80gb-sxm", "a100-40gb-pcie",
    "a100-80gb-pcie", "a10", "a10g", "a30", "t4", "l4", "l40", "l40s", "h100-sxm", "h100-pcie",
    "h100-nvl", "h200-sxm", "h20", "gh200", "b200", "gb200",
    # workstation / consumer
    "rtx-3090", "rtx-4090", "rtx-5090", "rtx-a6000", "rtx-6000-ada",
    # AMD, Intel, Google, Apple
    "mi210", "mi250x", "mi300x", "mi325x", "mi355x", "gaudi2", "gaudi3",
    "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "m2-ultra", "m3-max", "m4-max",
    # on sale 2025-2026
    "b300", "gb300", "rtx-pro-6000", "dgx-spark", "mi350x", "gaudi3-pcie", "tpu-v7", "trainium2", "trainium3",
}  # fmt: skip

# Every scalar figure that must carry a source when it is not null (spelled out here, not taken
# from the loader, so that a field the loader forgets is caught).
SCALAR_FIGURES = (
    "memory_gib", "memory_type", "memory_bandwidth_gbps", "tdp_watts", "interconnect",
    "interconnect_gbps", "pcie_gen", "form_factor", "launch_year", "list_price_usd",
    "cloud_usd_per_hour", "cloud_spot_usd_per_hour",
)  # fmt: skip
NVIDIA_AMPERE_HOPPER_BLACKWELL = {
    "a100-40gb-sxm", "a100-80gb-sxm", "a100-40gb-pcie", "a100-80gb-pcie", "a10", "a10g", "a30", "a40",
    "rtx-3090", "rtx-a6000", "h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl", "h20",
    "gh200", "b200", "gb200", "rtx-5090",
}  # fmt: skip
TENSOR_DTYPES = {DType.TF32, DType.BF16, DType.FP16, DType.FP8, DType.INT8, DType.FP6, DType.FP4}


@pytest.fixture(scope="module")
def catalog() -> dict[str, Accelerator]:
    return load_accelerators()


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# --- coverage and provenance ---------------------------------------------------------------------


def test_catalog_has_at_least_55_accelerators(catalog: dict[str, Accelerator]) -> None:
    assert len(catalog) >= 55


def test_required_ids_are_present(catalog: dict[str, Accelerator]) -> None:
    assert REQUIRED_IDS - set(catalog) == set()


def test_shipped_entries_are_not_custom(catalog: dict[str, Accelerator]) -> None:
    assert not any(acc.custom for acc in catalog.values())


def test_every_figure_has_a_dated_source(catalog: dict[str, Accelerator]) -> None:
    missing = []
    for acc in catalog.values():
        keys = [name for name in SCALAR_FIGURES if getattr(acc, name) is not None]
        keys += [f"dense_tflops.{d.value}" for d in acc.dense_tflops]
        keys += [f"sparse_tflops.{d.value}" for d in acc.sparse_tflops]
        for key in keys:
            source = acc.provenance.get(key)
            if source is None or not source.title.strip() or not isinstance(source.retrieved, dt.date):
                missing.append(f"{acc.id}:{key}")
    assert missing == []


def test_prices_are_marked_approximate(catalog: dict[str, Accelerator]) -> None:
    for acc in catalog.values():
        for key in ("list_price_usd", "cloud_usd_per_hour", "cloud_spot_usd_per_hour"):
            if getattr(acc, key) is not None:
                note = (acc.provenance[key].note or "").lower()
                assert "approximate" in note, f"{acc.id}:{key} source note must say the price is approximate"


# --- physical plausibility -----------------------------------------------------------------------


def test_sparse_is_twice_dense(catalog: dict[str, Accelerator]) -> None:
    """2:4 sparsity doubles the Tensor/Matrix rate; anything else is a dense/sparse mix-up.

    Within 1% for NVIDIA Ampere/Hopper/Blackwell, whose datasheets derive one from the other.
    Elsewhere within 3%: the L40S sheet prints 362.05 dense but 733 sparse (two boost clocks).
    """
    checked = set()
    for acc in catalog.values():
        tolerance = 0.01 if acc.id in NVIDIA_AMPERE_HOPPER_BLACKWELL else 0.03
        for dtype, sparse in acc.sparse_tflops.items():
            assert dtype in TENSOR_DTYPES, f"{acc.id}: no sparse mode exists for {dtype.value}"
            dense = acc.dense_tflops[dtype]
            ratio = sparse / dense
            assert ratio == pytest.approx(2.0, rel=tolerance), f"{acc.id} {dtype.value}: {dense} vs {sparse}"
            checked.add(acc.id)
    assert NVIDIA_AMPERE_HOPPER_BLACKWELL - {"a10g", "h20"} <= checked


def test_nvidia_tensor_parts_since_ampere_publish_sparse_figures(catalog: dict[str, Accelerator]) -> None:
    for acc in catalog.values():
        if acc.vendor.value == "nvidia" and acc.supports(DType.BF16) and acc.id not in {"a10g", "h20"}:
            assert acc.sparse_tflops.get(DType.BF16), f"{acc.id}: NVIDIA prints 2:4-sparse bf16 figures"


def test_bf16_ops_per_byte_is_plausible(catalog: dict[str, Accelerator]) -> None:
    for acc in catalog.values():
        bf16 = acc.peak_tflops(DType.BF16)
        if bf16 is not None:
            ops_per_byte = bf16 * 1e12 / (acc.memory_bandwidth_gbps * 1e9)
            assert 20 <= ops_per_byte <= 1000, f"{acc.id}: {ops_per_byte:.0f} FLOP/byte"


def test_narrower_dtypes_are_not_slower(catalog: dict[str, Accelerator]) -> None:
    chain = (DType.FP4, DType.FP8, DType.BF16, DType.FP32)
    for acc in catalog.values():
        present = [(d, acc.dense_tflops[d]) for d in chain if d in acc.dense_tflops]
        for (narrow, fast), (wide, slow) in zip(present, present[1:]):
            assert fast >= slow, f"{acc.id}: {narrow.value} {fast} < {wide.value} {slow}"


def test_memory_is_binary_gib(catalog: dict[str, Accelerator]) -> None:
    # An "80GB" H100 is 80 GiB (nvidia-smi: 81559 MiB usable of 81920 MiB built).
    assert catalog["h100-sxm"].memory_bytes == 80 * GiB


# --- spot checks against the datasheets cited in the YAML ----------------------------------------


def test_h100_sxm_matches_hopper_whitepaper_and_datasheet(catalog: dict[str, Accelerator]) -> None:
    # NVIDIA H100 Tensor Core GPU Architecture whitepaper: SXM5 dense BF16 989.4 TFLOPS;
    # H100 datasheet: 80 GB HBM3, 3.35 TB/s, up to 700 W, NVLink 900 GB/s.
    h100 = catalog["h100-sxm"]
    assert h100.dense_tflops[DType.BF16] == pytest.approx(989, rel=0.005)
    assert h100.sparse_tflops[DType.BF16] == pytest.approx(1979, rel=0.005)
    assert h100.dense_tflops[DType.FP8] == pytest.approx(1979, rel=0.005)
    assert (h100.memory_gib, h100.memory_bandwidth_gbps, h100.tdp_watts) == (80, 3350, 700)
    assert h100.interconnect_gbps == 900


def test_a100_matches_datasheet_and_has_no_fp8(catalog: dict[str, Accelerator]) -> None:
    # NVIDIA A100 datasheet: BF16 312 | 624* TFLOPS; 80GB SXM 2,039 GB/s; 40GB 1,555 GB/s.
    a100 = catalog["a100-80gb-sxm"]
    assert a100.dense_tflops[DType.BF16] == 312
    assert a100.memory_bandwidth_gbps == 2039
    assert catalog["a100-40gb-sxm"].memory_bandwidth_gbps == 1555
    for acc_id in ("a100-40gb-sxm", "a100-80gb-sxm", "a100-40gb-pcie", "a100-80gb-pcie"):
        assert not catalog[acc_id].supports(DType.FP8), "Ampere has no FP8 Tensor Cores"


def test_mi300x_matches_amd_datasheet(catalog: dict[str, Accelerator]) -> None:
    # AMD Instinct MI300X data sheet: BF16 1,307.4 TFLOPS (2,614.9 sparse), 192 GB HBM3, 5.3 TB/s.
    mi300x = catalog["mi300x"]
    assert mi300x.dense_tflops[DType.BF16] == pytest.approx(1307.4)
    assert (mi300x.memory_gib, mi300x.memory_bandwidth_gbps) == (192, 5300)


def test_l40s_matches_datasheet(catalog: dict[str, Accelerator]) -> None:
    # NVIDIA L40S datasheet: BF16 362.05 | 733* TFLOPS, 48 GB GDDR6, 864 GB/s, 350 W.
    l40s = catalog["l40s"]
    assert l40s.dense_tflops[DType.BF16] == pytest.approx(362.05)
    assert (l40s.memory_gib, l40s.memory_bandwidth_gbps, l40s.tdp_watts) == (48, 864, 350)


def test_rtx_4090_uses_fp32_accumulate_rate(catalog: dict[str, Accelerator]) -> None:
    # Ada whitepaper: RTX 4090 FP16/BF16 Tensor with FP32 accumulate 165.2 (330.3 with FP16 accumulate).
    assert catalog["rtx-4090"].dense_tflops[DType.BF16] == pytest.approx(165.2)


def test_tpu_v5p_matches_cloud_docs(catalog: dict[str, Accelerator]) -> None:
    # Cloud TPU v5p docs: 459 bf16 TFLOPS, 95 GB HBM2e at 2,765 GBps, 1,200 GBps bidirectional ICI.
    v5p = catalog["tpu-v5p"]
    assert v5p.dense_tflops[DType.BF16] == 459
    assert (v5p.memory_bandwidth_gbps, v5p.interconnect_gbps) == (2765, 1200)


def test_gb200_is_per_gpu(catalog: dict[str, Accelerator]) -> None:
    # GB200 NVL72: 720 PF sparse FP8 for 72 GPUs -> 10 PF sparse, 5 PF dense per GPU.
    assert catalog["gb200"].dense_tflops[DType.FP8] == 5000
    assert "per" in catalog["gb200"].name.lower()


# --- lookups -------------------------------------------------------------------------------------


def test_get_accelerator_is_case_insensitive(catalog: dict[str, Accelerator]) -> None:
    assert get_accelerator(" H100-SXM ", catalog).id == "h100-sxm"


@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [("h100-smx", "'h100-sxm'"), ("rtx4090", "'rtx-4090'"), ("mi300", "'mi300x'")],
)
def test_unknown_id_suggests_the_closest(
    catalog: dict[str, Accelerator], typo: str, suggestion: str
) -> None:
    with pytest.raises(CatalogError) as info:
        get_accelerator(typo, catalog)
    message = str(info.value)
    assert message.startswith(f"unknown GPU id '{typo}'; known ids: ")
    assert "did you mean" in message and suggestion in message
    assert "\n" not in message


def test_unknown_node_shape_raises_catalog_error() -> None:
    with pytest.raises(CatalogError, match="did you mean 'hgx-h100-8'"):
        get_node_shape("hgx-h100")


def test_shipped_catalog_is_parsed_once() -> None:
    first = load_accelerators()["h100-sxm"]
    assert load_accelerators()["h100-sxm"] is first


# --- node shapes ---------------------------------------------------------------------------------


def test_node_shapes_are_sourced_and_refer_to_known_accelerators(catalog: dict[str, Accelerator]) -> None:
    shapes = load_node_shapes()
    assert {"hgx-h100-8", "hgx-a100-8", "hgx-h200-8", "hgx-b200-8", "gb200-nvl72", "pcie-gen4-8x",
            "mi300x-8-oam", "gaudi3-8", "tpu-v5p-slice", "workstation-pcie4", "apple-single",
            "generic-pcie"} <= set(shapes)  # fmt: skip
    listed: list[str] = []
    for shape in shapes.values():
        assert shape.source is not None and shape.source.title and isinstance(shape.source.retrieved, dt.date)
        listed.extend(shape.accelerators)
    assert set(listed) - set(catalog) == set()
    assert len(listed) == len(set(listed)), "each accelerator has one default shape"


def test_node_shape_figures() -> None:
    shapes = load_node_shapes()
    # DGX H100: NVLink 4 900 GB/s both ways = 450 per direction; 8x 400 Gb/s NDR = 50 GB/s per GPU.
    h100 = shapes["hgx-h100-8"]
    assert (h100.gpus_per_node, h100.intra_node_gbps, h100.inter_node_gbps) == (8, 450, 50)
    # DGX A100: NVLink 3 600 GB/s both ways = 300; 200 Gb/s HDR = 25 GB/s.
    assert (shapes["hgx-a100-8"].intra_node_gbps, shapes["hgx-a100-8"].inter_node_gbps) == (300, 25)
    assert shapes["hgx-b200-8"].intra_node_gbps == 900
    assert shapes["gb200-nvl72"].gpus_per_node == 72


def test_default_node_for(catalog: dict[str, Accelerator]) -> None:
    assert default_node_for(catalog["h100-sxm"]).id == "hgx-h100-8"
    assert default_node_for("l40s").id == "pcie-gen4-8x"
    assert default_node_for("mi250x").id == "generic-pcie"


# --- user files ----------------------------------------------------------------------------------


def test_user_file_replaces_and_adds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_USER_DIR", str(tmp_path))
    _write(
        tmp_path / "accelerators" / "mine.yaml",
        """
        accelerators:
          - id: h100-sxm
            name: Our H100 (power-capped)
            vendor: nvidia
            category: datacenter
            memory_gib: 80
            memory_type: HBM3
            memory_bandwidth_gbps: 3350
            dense_tflops: {bf16: 800}
            tdp_watts: 500
            form_factor: SXM5
            launch_year: 2022
          - id: my-npu
            name: In-house NPU
            vendor: other
            category: datacenter
            memory_gib: 64
            memory_type: HBM3
            memory_bandwidth_gbps: 2000
            dense_tflops: {bf16: 400, int8: 800}
            form_factor: PCIe
            launch_year: 2025
            cloud_usd_per_hour: 1.5
            sources:
              default_source: {title: Vendor sheet rev 3, retrieved: 2026-01-05}
              quote: {title: Reseller quote, retrieved: 2026-02-01, note: approximate}
            field_sources: {cloud_usd_per_hour: quote}
        """,
    )
    _write(
        tmp_path / "accelerators" / "other.json",
        json.dumps({"id": "json-gpu", "name": "JSON GPU", "vendor": "other", "category": "consumer",
                    "memory_gib": 8, "memory_type": "GDDR6", "memory_bandwidth_gbps": 400,
                    "dense_tflops": {"fp32": 10, "bf16": 20}, "form_factor": "PCIe",
                    "launch_year": 2024}),  # fmt: skip
    )
    catalog = load_accelerators()
    h100 = catalog["h100-sxm"]
    assert h100.custom and h100.name == "Our H100 (power-capped)" and h100.tdp_watts == 500
    assert h100.provenance["tdp_watts"].title == "User catalog file mine.yaml"
    npu = catalog["my-npu"]
    assert npu.custom and npu.provenance["dense_tflops.int8"].title == "Vendor sheet rev 3"
    assert npu.provenance["cloud_usd_per_hour"].title == "Reseller quote"
    assert catalog["json-gpu"].custom
    assert catalog["a100-80gb-sxm"].custom is False
    # The shipped entry is back as soon as the user file is gone (the cache holds shipped data only).
    (tmp_path / "accelerators" / "mine.yaml").unlink()
    assert load_accelerators()["h100-sxm"].tdp_watts == 700


def test_extra_paths_and_user_node_shapes(tmp_path: Path) -> None:
    extra = _write(
        tmp_path / "team.yml",
        """
        - id: rtx-4090
          name: RTX 4090 (our undervolted build)
          vendor: nvidia
          category: consumer
          memory_gib: 24
          memory_type: GDDR6X
          memory_bandwidth_gbps: 1008
          dense_tflops: {bf16: 150}
          tdp_watts: 350
          form_factor: PCIe
          launch_year: 2022
        """,
    )
    assert load_accelerators(extra_paths=[extra])["rtx-4090"].tdp_watts == 350
    nodes_file = _write(
        tmp_path / "nodes.yaml",
        """
        node_shapes:
          - id: our-4090-box
            name: Our 8x 4090 box
            gpus_per_node: 8
            intra_node: PCIe Gen4 x8
            intra_node_gbps: 16
            inter_node: 25 GbE
            inter_node_gbps: 0.4
            accelerators: [rtx-4090]
        """,
    )
    shapes = load_node_shapes(extra_paths=[nodes_file])
    assert default_node_for("rtx-4090", shapes).id == "our-4090-box"
    assert shapes["our-4090-box"].source is not None


GOOD_ENTRY = """
accelerators:
  - id: bad-gpu
    name: Bad GPU
    vendor: other
    category: datacenter
    memory_gib: {memory}
    memory_type: HBM3
    memory_bandwidth_gbps: 1000
    dense_tflops: {{{dense}}}
    sparse_tflops: {{{sparse}}}
    form_factor: PCIe
    launch_year: 2024
    cloud_usd_per_hour: 2.0
    sources:
      default_source: {{title: Sheet, retrieved: 2026-01-01}}
    field_sources: {{{field_sources}}}
"""


def _entry(memory: str = "80", dense: str = "bf16: 100", sparse: str = "", field_sources: str = "") -> str:
    return GOOD_ENTRY.format(memory=memory, dense=dense, sparse=sparse, field_sources=field_sources)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("syntax.yaml", "accelerators:\n  - id: x\n    dense_tflops: {bf16: [1, 2\n",
         "YAML syntax error at line"),
        ("negative.yaml", _entry(memory="-80"),
         "accelerator 'bad-gpu': memory_gib: Input should be greater than 0"),
        ("dtype.yaml", _entry(dense="bf16: 100, fp12: 5"),
         "accelerator 'bad-gpu': dense_tflops.fp12: unknown dtype"),
        ("swap.yaml", _entry(sparse="bf16: 50"), "sparse_tflops.bf16 (50.0) is below dense (100.0)"),
        ("source.yaml", _entry(field_sources="cloud_usd_per_hour: lambda"),
         "field_sources.cloud_usd_per_hour: unknown source key 'lambda'"),
        ("field.yaml", _entry(field_sources="tdp_watts: default_source"),
         "field_sources.tdp_watts: this entry has no such figure"),
        ("dup.yaml", _entry() + _entry().split("accelerators:")[1], "id: duplicate id 'bad-gpu'"),
        ("syntax.json", '{"id": "x", "name": ', "JSON syntax error at line 1"),
    ],
)  # fmt: skip
def test_malformed_user_file_names_file_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str, expected: str
) -> None:
    monkeypatch.setenv("WORKBENCH_USER_DIR", str(tmp_path))
    path = tmp_path / "accelerators" / name
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        load_accelerators()
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert expected in message, message
    assert "\n" not in message and "Traceback" not in message


def test_the_good_entry_used_above_is_valid(tmp_path: Path) -> None:
    path = _write(tmp_path / "good.yaml", _entry(sparse="bf16: 200"))
    assert load_accelerators(extra_paths=[path])["bad-gpu"].sparse_tflops[DType.BF16] == 200


def test_missing_extra_path_is_a_catalog_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="no such catalog file"):
        load_accelerators(extra_paths=[tmp_path / "nope.yaml"])


# --- layering ------------------------------------------------------------------------------------


def test_loader_does_not_import_qt() -> None:
    code = (
        "import sys, workbench.catalog.accelerators as m; m.load_accelerators(); m.load_node_shapes(); "
        "bad = [n for n in sys.modules if n.split('.')[0] in ('PySide6', 'pyqtgraph')]; "
        "sys.exit(1 if bad else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
