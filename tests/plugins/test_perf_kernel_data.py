"""The kernel-efficiency data files: shipped with the plugin, valid, sourced, and true to their quotes."""

from __future__ import annotations

import fnmatch
import math
import re
import shutil
import tomllib
from importlib import resources
from pathlib import Path

import pytest
import yaml
from workbench_performance.kernels import (
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
from workbench_performance.kernels.coverage import coverage, coverage_table
from workbench_performance.kernels.data import POINT_FILES, data_dir
from workbench_performance.kernels.schema import (
    AttentionPoint,
    CollectivePoint,
    GemmPoint,
    LaunchPoint,
    MemoryPoint,
)

from workbench.catalog.accelerators import load_accelerators

ROOT = Path(__file__).resolve().parents[2]
DATA_FILES = ("architectures.yaml", *POINT_FILES, "README.md")

#: Figures of a row that its quote must print.
FIGURES = {
    GemmPoint: ("tflops", "gbps", "m", "n", "k"),
    AttentionPoint: ("tflops", "gbps"),
    MemoryPoint: ("gbps",),
    CollectivePoint: ("busbw_gbps", "algbw_gbps", "latency_us"),
    LaunchPoint: ("latency_us",),
}


def numbers_in(text: str) -> set[float]:
    """Every number printed in ``text`` (thousands separators dropped)."""
    return {float(n) for n in re.findall(r"\d+(?:\.\d+)?", re.sub(r"(?<=\d),(?=\d{3})", "", text))}


# --- shipping ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DATA_FILES)
def test_each_data_file_is_a_package_resource(name: str) -> None:
    assert resources.files("workbench_performance").joinpath("data", "kernels", name).is_file()


def test_package_data_patterns_ship_every_data_file() -> None:
    """The wheel carries what pyproject's package-data names; every file in the folder must match."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["workbench_performance"]
    package = ROOT / "plugins" / "workbench_performance"
    files = [p.relative_to(package).as_posix() for p in (package / "data").rglob("*") if p.is_file()]
    assert files
    assert [f for f in files if not any(fnmatch.fnmatch(f, pat) for pat in patterns)] == []


def test_the_loader_reads_the_package_folder() -> None:
    assert data_dir() == Path(str(resources.files("workbench_performance"))) / "data" / "kernels"


# --- content -------------------------------------------------------------------------------------


def test_the_shipped_files_load_with_rows_in_each_measured_kind() -> None:
    data = load_kernel_data()
    assert load_kernel_data() is data  # cached
    assert len(data.gemm) >= 20 and len(data.attention) >= 20 and len(data.collectives) >= 20
    assert data.memory and data.launch


def test_every_row_cites_a_source_with_an_exact_citation() -> None:
    data = load_kernel_data()
    for name, row in data.rows():
        source = data.sources[name][row.source]
        assert re.search(r"@[0-9a-f]{40}:|arXiv|doi|https?://", source.cite + " " + (source.url or "")), (
            source
        )
        assert row.quote.strip() and row.where.strip()


def test_every_figure_is_printed_in_its_quote() -> None:
    """A figure with no matching number in its quote was typed, not copied."""
    misses = []
    for name, row in load_kernel_data().rows():
        printed = numbers_in(row.quote)
        for field in FIGURES[type(row)]:
            value = getattr(row, field)
            if value is not None and float(value) not in printed:
                misses.append(f"{name}: {row.where}: {field}={value}")
    assert misses == []


def test_all_numbers_are_positive_and_finite() -> None:
    for _, row in load_kernel_data().rows():
        for field in FIGURES[type(row)]:
            value = getattr(row, field)
            assert value is None or (math.isfinite(value) and value > 0)


def test_deepgemm_rows_match_the_published_table() -> None:
    dense = {
        (r.m, r.n, r.k): r.tflops
        for r in gemm_points("hopper", "fp8", grouped=False)
        if r.library == "deepgemm"
    }
    assert dense[(4096, 7168, 16384)] == 1520
    assert dense[(64, 2112, 7168)] == 206
    masked = [r for r in gemm_points("hopper", "fp8", grouped=True) if r.layout == "masked" and r.groups == 4]
    assert {(r.n, r.tflops) for r in masked} == {(4096, 932), (7168, 815)}


def test_attention_rows_match_their_sources() -> None:
    fa3 = {(r.head_dim, r.causal, r.seqlen): r.tflops for r in attention_points("hopper", "fa3", "prefill")}
    assert fa3[(128, True, 16384)] == 616
    assert fa3[(256, False, 16384)] == 756
    assert (128, False, 1024) not in fa3  # that label hides behind the chart's legend: left out
    fa2_a100 = {(r.head_dim, r.causal, r.seqlen): r.tflops for r in attention_points("ampere", "fa2")}
    assert fa2_a100[(128, True, 16384)] == 189
    mla = [r for r in attention_points("hopper", "flashmla", "decode") if r.gbps]
    assert [r.gbps for r in mla] == [3000]


def test_deepep_rows_match_the_published_tables() -> None:
    low_latency = {
        (r.collective, r.ranks): (r.latency_us, r.busbw_gbps)
        for r in collective_points("ib", arch="hopper")
        if r.library == "deepep-low-latency"
    }
    assert low_latency[("moe_dispatch", 8)] == (77, 98)
    assert low_latency[("moe_combine", 256)] == (360, 40)
    intranode = collective_points("nvswitch", "moe_combine", arch="hopper")
    assert [r.busbw_gbps for r in intranode] == [158]


def test_mamf_and_hipkittens_gemm_rows_match_their_sources() -> None:
    mi300x = [r for r in gemm_points("cdna3", "bf16") if r.gpu == "mi300x"]
    assert [(r.m, r.n, r.k, r.tflops, r.source_peak_tflops, r.best_shape) for r in mi300x] == [
        (10240, 15360, 8192, 668.4, 1300, True)
    ]
    mi325x = {(r.m, r.library): r.tflops for r in gemm_points("cdna3", "bf16") if r.gpu == "mi325x"}
    assert mi325x[(8192, "torch.matmul")] == 785.3037036419687


def test_collective_sweeps_match_their_sources() -> None:
    a100 = {r.message_bytes: r for r in collective_points("nvswitch", "all_reduce", arch="ampere")}
    assert (a100[17_179_869_184].busbw_gbps, a100[17_179_869_184].latency_us) == (234.89, 127997)
    h200_8 = {
        r.algorithm: r.busbw_gbps
        for r in collective_points("nvswitch", "all_reduce", arch="hopper")
        if r.ranks == 8 and r.message_bytes == 8 * 2**30 and r.algorithm is not None
    }
    assert h200_8 == {"nvls": 473.1, "ring": 365.6}
    gqa = [r for r in attention_points("cdna4", "ck") if r.kv_heads == 8 and r.causal and r.seqlen == 16384]
    assert [(r.heads, r.tflops) for r in gqa] == [(64, 888.64)]


def test_no_row_beats_the_peak_it_is_measured_against() -> None:
    """An achieved figure above the peak means a unit, dtype or GPU mix-up in the row.

    Memory rows may pass the catalog figure by a little: datasheets round (H100 PCIe "2 TB/s" is
    5120 bits x 1593 MHz x 2 = 2039 GB/s, and gpu-stream measures 2016), hence the 3% margin.
    """
    catalog = load_accelerators()
    data = load_kernel_data()
    for row in data.gemm:
        if row.source_peak_tflops is not None:
            assert row.tflops <= row.source_peak_tflops, row.where
        if row.gpu in catalog and row.dtype in catalog[row.gpu].dense_tflops:
            assert row.tflops <= catalog[row.gpu].dense_tflops[row.dtype], row.where
    for row in data.attention:
        if row.tflops is not None and row.gpu in catalog and row.dtype in catalog[row.gpu].dense_tflops:
            assert row.tflops <= catalog[row.gpu].dense_tflops[row.dtype], row.where
    for row in data.memory:
        if row.gpu in catalog:
            assert row.gbps <= 1.03 * catalog[row.gpu].memory_bandwidth_gbps, row.where


# --- architectures -------------------------------------------------------------------------------


def test_every_catalog_accelerator_has_exactly_one_architecture() -> None:
    data = load_kernel_data()
    catalog = set(load_accelerators())
    listed = [gpu for arch in data.architectures.values() for gpu in arch.gpus]
    assert sorted(listed) == sorted(set(listed))
    assert set(listed) == catalog
    off_catalog = {gpu for arch in data.architectures.values() for gpu in arch.off_catalog}
    assert not off_catalog & catalog


def test_arch_of_maps_catalog_and_off_catalog_ids() -> None:
    assert arch_of("h100-sxm") == "hopper"
    assert arch_of(" H800-SXM ") == "hopper"
    assert arch_of("mi300x") == "cdna3"
    assert arch_of("no-such-gpu") is None


def test_the_required_architectures_have_gemm_or_attention_rows() -> None:
    """Issue 15: at least Ampere, Hopper, Blackwell and CDNA3 have kernel-level compute rows."""
    counts = coverage(load_kernel_data())
    for arch in ("ampere", "hopper", "blackwell", "cdna3"):
        compute = sum(
            counts[(arch, kind)] for kind in ("gemm", "grouped_gemm", "attention_prefill", "attention_decode")
        )
        assert compute > 0, arch


def test_the_readme_coverage_table_is_current() -> None:
    readme = (data_dir() / "README.md").read_text(encoding="utf-8")
    assert coverage_table(load_kernel_data()) in readme


# --- lookups -------------------------------------------------------------------------------------


def test_gemm_points_filter_by_dtype_and_grouping_and_sort_by_shape() -> None:
    rows = gemm_points("hopper", "fp8")
    assert rows and all(r.dtype.value == "fp8" and r.arch == "hopper" for r in rows)
    plain = gemm_points("hopper", "fp8", grouped=False)
    assert [(r.m, r.n, r.k) for r in plain] == sorted((r.m, r.n, r.k) for r in plain)
    assert all(r.grouped for r in gemm_points("hopper", "fp8", grouped=True))
    assert gemm_points("volta", "fp8") == ()


def test_collective_points_are_sorted_by_collective_ranks_and_size() -> None:
    rows = collective_points("ib")
    keys = [(r.collective, r.ranks, r.message_bytes or 0, r.tokens or 0) for r in rows]
    assert rows and keys == sorted(keys)


def test_achieved_bandwidth_is_the_best_row_of_a_gpu() -> None:
    data = load_kernel_data()
    gpu = data.memory[0].gpu
    assert gpu is not None
    assert achieved_bandwidth(gpu) == max(r.gbps for r in memory_points(gpu))
    assert achieved_bandwidth("no-such-gpu") is None
    ampere = memory_points(arch="ampere")
    assert ampere and all(r.arch == "ampere" for r in ampere)
    assert any(r.gpu is None for r in ampere)  # "A100 80GB, SXM or PCIe not stated"
    assert set(memory_points("a40", arch="ampere")) == {r for r in ampere if r.gpu == "a40"}


def test_launch_overhead_filters_by_arch_and_kind() -> None:
    rows = launch_overhead()
    assert rows
    first = rows[0]
    assert first in launch_overhead(first.arch, first.kind)
    assert all(r.arch == first.arch for r in launch_overhead(first.arch))


# --- validation of malformed files ---------------------------------------------------------------


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    for name in DATA_FILES:
        shutil.copy(data_dir() / name, tmp_path / name)
    return tmp_path


def _edit_first_gemm_row(folder: Path, **changes: object) -> None:
    path = folder / "gemm.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["points"][0].update(changes)
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")


def test_a_copy_of_the_shipped_files_reads_back_the_same(folder: Path) -> None:
    assert read_kernel_data(folder) == load_kernel_data()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"tflops": float("nan")}, "tflops"),
        ({"tflops": -1}, "tflops"),
        ({"m": 0}, "m"),
        ({"arch": "kepler"}, "unknown architecture 'kepler'"),
        ({"gpu": "mi300x"}, "'mi300x' is not a hopper accelerator"),
        ({"source": "nowhere"}, "source 'nowhere'"),
        ({"dtype": "fp7"}, "dtype"),
        ({"grouped": True}, "grouped GEMM"),
        ({"quote": ""}, "quote"),
    ],
)
def test_a_bad_row_is_refused_in_one_line_naming_file_and_row(
    folder: Path, changes: dict, message: str
) -> None:
    _edit_first_gemm_row(folder, **changes)
    with pytest.raises(KernelDataError) as err:
        read_kernel_data(folder)
    text = str(err.value)
    assert text.startswith("gemm.yaml: points[0]") and message in text and "\n" not in text


def test_a_source_no_row_cites_is_refused(folder: Path) -> None:
    path = folder / "launch.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["sources"]["orphan"] = {
        "cite": "someone/somewhere@HEAD:README.md",
        "title": "t",
        "retrieved": "2026-01-01",
    }
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(KernelDataError, match="orphan are cited by no row"):
        read_kernel_data(folder)


def test_an_accelerator_under_two_architectures_is_refused(folder: Path) -> None:
    path = folder / "architectures.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["architectures"][0]["gpus"].append("h100-sxm")
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(KernelDataError, match="'h100-sxm' is listed under both"):
        read_kernel_data(folder)


def test_unreadable_yaml_is_one_line(folder: Path) -> None:
    (folder / "memory.yaml").write_text("points: [\n", encoding="utf-8")
    with pytest.raises(KernelDataError) as err:
        read_kernel_data(folder)
    assert str(err.value).startswith("memory.yaml: not valid YAML") and "\n" not in str(err.value)
