"""Derive the kernel profiles (profiles.yaml) from the published kernel measurements.

The per-kernel cost model (:mod:`.cost`) has a handful of parameters per GPU architecture. This
module computes them from the kernel-level rows of ``data/kernels/*.yaml`` -- never from
end-to-end training or serving results, which are for validation -- and writes
``profiles.yaml`` naming what every figure came from::

    python -m workbench_performance.operators.derive          # print the profiles
    python -m workbench_performance.operators.derive --write  # rewrite profiles.yaml

A test re-derives them and checks the shipped file is what the data give.

Procedure, per architecture (efficiencies are fractions of the catalog's datasheet figures; per
shape the fastest library published counts):

* **GEMM efficiency** per dtype: with at least 8 distinct shapes (Hopper FP8: DeepGEMM's table),
  a grid search fits the cost model ``max(2mnk / (peak e thin), bytes / bandwidth) + t0`` with
  ``thin = K/(K + k_half) x N/(N + n_half)`` (least squares on log time). Otherwise ``e`` is the
  best published shape's efficiency divided by ``thin`` at that shape, with the half-widths of
  the fit of the same dtype (16-bit: none -- there is no shape-varied 16-bit table, so the best
  shape stands for every large GEMM, an optimistic reading the profile states). Accelerators with
  a best-shape row of their own (MI300X vs MI325X, GB200 vs B200) get their own figure.
* **Bandwidth**: the best streaming kernel (read or copy) of each catalog GPU over its datasheet
  bandwidth; the median over the architecture's GPUs.
* **Attention** (prefill, per full-square FLOP of a causal prompt, which the kernels halve by
  skipping masked blocks): causal forward rows at head dimension 128 fitted to
  ``e s / (s + s_half)``; rows that time forward and backward together become a forward figure
  through the backward/forward ratio FlashAttention-2 shows on Hopper (same library, both kinds of
  rows); "up to" claims set ``e`` where nothing else exists. 8-bit attention without rows of its
  own runs at the 16-bit rate.
* **Kernel latency**: the GEMM fit's ``t0``.

A field an architecture has no rows for takes the value pooled over the others, and the profile
lists it under ``partial`` (estimates then say their figures rest partly on other architectures'
data). Architectures without GEMM rows get no profile: the generic one applies, with its warning.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import yaml

from workbench.catalog.accelerators import load_accelerators
from workbench_performance.kernels.data import load_kernel_data

MIN_FIT_SHAPES = 8
TILE_M = 64.0
#: vLLM / TensorRT-LLM Llama block: fused add + RMSNorm (x2), rotary, SiLU-and-mul; GEMMs and
#: attention are counted apart (vllm-project/vllm model_executor/models/llama.py,
#: LlamaDecoderLayer: fused_add_rms_norm, get_rope, SiluAndMul).
ELEMENTWISE_KERNELS = 4.0
_E = np.round(np.arange(0.30, 1.0001, 0.005), 3)
_HALF = np.array([0.0, 32.0, 64.0, 128.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0])
_T0 = np.arange(0.0, 12.01, 0.5) * 1e-6
_SEQ_HALF = np.array([0.0, 64.0, 128.0, 192.0, 256.0, 320.0, 384.0, 512.0, 640.0, 768.0, 1024.0])
_OFF_CATALOG = {"h800-sxm": "h100-sxm"}  # same SMs, clocks and HBM (architectures.yaml)
PROFILES = "profiles.yaml"


@lru_cache(maxsize=1)
def _catalog() -> dict:
    return dict(load_accelerators())  # id -> Accelerator


def _acc(gpu: str | None):  # noqa: ANN202
    return _catalog().get(_OFF_CATALOG.get(gpu, gpu)) if gpu else None


def _peak(acc, dtype: str) -> float | None:  # noqa: ANN001
    for key, value in acc.dense_tflops.items():
        if getattr(key, "value", key) == dtype:
            return value * 1e12
    return None


def _dtype(row) -> str:  # noqa: ANN001
    value = getattr(row.dtype, "value", row.dtype)
    return "bf16" if value == "fp16" else value


def _gemm_shapes(arch: str, dtype: str, gpus: tuple[str, ...]) -> list[dict]:
    best: dict[tuple, dict] = {}
    for r in load_kernel_data().gemm:
        if r.arch != arch or _dtype(r) != dtype:
            continue
        acc = _acc(r.gpu) or _catalog().get(gpus[0])
        peak = r.source_peak_tflops * 1e12 if r.source_peak_tflops else _peak(acc, dtype)
        if peak is None:
            continue
        groups = r.groups if r.grouped else 1
        seconds = 2.0 * r.m * r.n * r.k * groups / (r.tflops * 1e12)
        key = (r.m, r.n, r.k, groups, r.gpu)
        if key not in best or seconds < best[key]["s"]:
            best[key] = dict(m=r.m, n=r.n, k=r.k, g=groups, s=seconds, peak=peak, gpu=r.gpu,
                             bw=acc.memory_bandwidth_gbps * 1e9, inb=1.0 if dtype == "fp8" else 2.0,
                             best_shape=bool(r.best_shape))
    return list(best.values())


def _fit_gemm(shapes: list[dict], bw_eff: float) -> dict:
    col = {k: np.array([s[k] for s in shapes], dtype=float) for k in ("m", "n", "k", "g", "s", "peak", "bw", "inb")}
    m, n, k, g = col["m"], col["n"], col["k"], col["g"]
    flops = 2 * m * n * k * g
    t_mem = (m * k * col["inb"] + k * n * col["inb"] + m * n * 2.0) * g / (col["bw"] * bw_eff)
    fill = np.minimum(m / TILE_M, 1.0)
    best = (math.inf,)
    for kh, nh, mh in ((kh, nh, mh) for kh in _HALF for nh in _HALF for mh in _HALF):
            per_group = np.where(g > 1, m / (m + mh), 1.0)  # grouped (expert) GEMMs only
            base = flops / (col["peak"] * fill * per_group * k / (k + kh) * n / (n + nh))
            core = np.maximum(base[None, :] / _E[:, None], t_mem[None, :])
            err = np.log((core[:, None, :] + _T0[None, :, None]) / col["s"][None, None, :])
            loss = (err**2).mean(axis=-1)
            i, j = np.unravel_index(np.argmin(loss), loss.shape)
            if loss[i, j] < best[0]:
                best = (float(loss[i, j]), float(_E[i]), float(kh), float(nh), float(_T0[j]), float(mh))
    loss, e, kh, nh, t0, mh = best
    return dict(e=e, k_half=kh, n_half=nh, m_half=mh, t0=t0, rms=math.sqrt(loss), shapes=len(shapes))


def _thin(s: dict, kh: float, nh: float, mh: float) -> float:
    per_group = s["m"] / (s["m"] + mh) if s["g"] > 1 else 1.0
    return min(s["m"] / TILE_M, 1.0) * per_group * s["k"] / (s["k"] + kh) * s["n"] / (s["n"] + nh)


def _bandwidth(gpus: tuple[str, ...]) -> tuple[float | None, list[str]]:
    best: dict[str, float] = {}
    for r in load_kernel_data().memory:
        if r.gpu in gpus and r.kind in ("read", "copy"):
            best[r.gpu] = max(best.get(r.gpu, 0.0), r.gbps / _catalog()[r.gpu].memory_bandwidth_gbps)
    if not best:
        return None, []
    return round(float(statistics.median(best.values())), 3), sorted(best)


def _fit_seq(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(e, s_half) of e s / (s + s_half) through (seqlen, efficiency) points (log least squares)."""
    s = np.array([p[0] for p in points])
    eff = np.array([p[1] for p in points])
    best = (math.inf, 0.0, 0.0)
    for half in _SEQ_HALF:
        shape = s / (s + half)
        e = float(np.exp(np.mean(np.log(eff / shape))))
        loss = float(np.mean(np.log(e * shape / eff) ** 2))
        if loss < best[0]:
            best = (loss, e, float(half))
    return round(best[1], 3), best[2]


def _attention_rows(arch: str) -> dict[str, list]:
    rows = defaultdict(list)
    for r in load_kernel_data().attention:
        if r.arch == arch and r.phase == "prefill" and r.tflops:
            rows[(r.family, r.passes, bool(r.causal), r.head_dim, bool(r.peak_claim))].append(r)
    return rows


def _hopper_fa2_backward_ratio() -> float:
    """Backward / forward efficiency of FlashAttention-2 on H100 (causal, head dim 128): from its
    forward-only and forward+backward rows at the same sequence lengths (backward = 2.5x the
    forward's FLOPs, as the FlashAttention papers count)."""
    rows = _attention_rows("hopper")
    fwd = {r.seqlen: r.tflops for r in rows[("fa2", "fwd", True, 128, False)]}
    both = {r.seqlen: r.tflops for r in rows[("fa2", "fwd_bwd", True, 128, False)]}
    ratios = [2.5 / (3.5 / both[s] - 1.0 / fwd[s]) / fwd[s] for s in sorted(set(fwd) & set(both))]
    return round(float(statistics.median(ratios)), 3)


def _attention(arch: str, peak_acc) -> tuple[dict, str] | None:  # noqa: ANN001
    rows = _attention_rows(arch)
    peak = _peak(peak_acc, "bf16")
    per_seq: dict[int, float] = {}
    for (family, passes, causal, head_dim, claim), group in rows.items():
        if passes == "fwd" and causal and head_dim == 128 and not claim:
            for r in group:
                per_seq[r.seqlen] = max(per_seq.get(r.seqlen, 0.0), r.tflops)
    ratio = _hopper_fa2_backward_ratio()
    if per_seq:
        e, half = _fit_seq([(s, t * 1e12 / peak) for s, t in per_seq.items()])
        return dict(e=e, half=half, ratio=ratio), (
            f"data/kernels/attention.yaml: causal forward rows at head dim 128, fastest library per length, "
            f"fitted to e s/(s+{half:g}) over {len(per_seq)} lengths; backward ratio from FlashAttention-2 on H100"
        )
    both = {}
    for (family, passes, causal, head_dim, claim), group in rows.items():
        if passes == "fwd_bwd" and causal and head_dim == 128 and not claim:
            for r in group:
                both[r.seqlen] = max(both.get(r.seqlen, 0.0), r.tflops)
    if both:
        fwd_factor = (1.0 + 2.5 / ratio) / 3.5
        e, half = _fit_seq([(s, t * 1e12 / peak * fwd_factor) for s, t in both.items()])
        return dict(e=e, half=half, ratio=ratio), (
            "data/kernels/attention.yaml: causal forward+backward rows at head dim 128 turned into forward "
            f"with FlashAttention-2's H100 backward ratio {ratio:g}, fitted over {len(both)} lengths"
        )
    claims = [r for key, group in rows.items() if key[4] for r in group]
    fwd = [r for r in claims if r.passes == "fwd" and r.gpu]
    if fwd:
        best = max(fwd, key=lambda r: r.tflops)
        e = round(best.tflops * 1e12 / _peak(_acc(best.gpu), "bf16"), 3)
        bwd = [r for r in claims if r.passes == "bwd" and r.gpu == best.gpu]
        ratio_here = round(max(r.tflops for r in bwd) / best.tflops, 3) if bwd else ratio
        return dict(e=e, half=None, ratio=ratio_here), (
            f"data/kernels/attention.yaml: 'up to' claims of {best.family} on {best.gpu} (forward {best.tflops:g}"
            + (f", backward {max(r.tflops for r in bwd):g}" if bwd else "") + " TFLOP/s)"
        )
    return None


def derive() -> dict:
    data = load_kernel_data()
    shapes = {(a.id, dt): _gemm_shapes(a.id, dt, tuple(a.gpus)) for a in data.architectures.values() for dt in ("bf16", "fp8")}
    bandwidths = {a.id: _bandwidth(tuple(a.gpus)) for a in data.architectures.values()}
    fits = {}
    for (arch, dt), rows in shapes.items():
        if len({(s["m"], s["n"], s["k"]) for s in rows}) >= MIN_FIT_SHAPES and not all(s["best_shape"] for s in rows):
            fits[arch, dt] = _fit_gemm(rows, bandwidths[arch][0] or 0.9)
    pooled_t0 = statistics.median(f["t0"] for f in fits.values())
    # Rows per expert of a grouped GEMM: the one dependence the shape-varied table shows that no
    # best-shape row can (a grouped GEMM of 256 rows per expert runs at 2/3 of the rate of 4,096
    # rows per expert); carried over to the architectures and dtypes without such a table.
    m_half = statistics.median(f["m_half"] for f in fits.values())
    group_rows_min = float(min(s["m"] for rows in shapes.values() for s in rows if s["g"] > 1))
    pooled_bw = statistics.median(b for b, _ in bandwidths.values() if b is not None)
    profiles = []
    attention_done = {}
    for a in data.architectures.values():
        gemm, per_gpu, notes = {}, defaultdict(dict), []
        for dt in ("bf16", "fp8"):
            fit = fits.get((a.id, dt))
            rows = shapes[a.id, dt]
            if fit:
                gemm[dt] = fit["e"]
                notes.append(f"{dt}: cost model fitted to {fit['shapes']} shapes (rms log error {fit['rms']:.2f}; "
                             f"half-widths K {fit['k_half']:g}, N {fit['n_half']:g}; latency {fit['t0'] * 1e6:g} us)")
            elif rows:
                kh, nh = 0.0, 0.0
                by_gpu: dict[str, float] = {}
                for s in rows:
                    eff = min(2 * s["m"] * s["n"] * s["k"] * s["g"] / s["s"] / s["peak"] / _thin(s, kh, nh, m_half), 1.0)
                    key = s["gpu"] or a.gpus[0]
                    by_gpu[key] = max(by_gpu.get(key, 0.0), round(eff, 3))
                gemm[dt] = round(float(statistics.median(by_gpu.values())), 3)
                for gpu, eff in by_gpu.items():
                    if gpu in a.gpus and eff != gemm[dt]:
                        per_gpu[gpu][dt] = eff
                notes.append(f"{dt}: best published shape per accelerator ({', '.join(f'{g} {e:g}' for g, e in sorted(by_gpu.items()))}; "
                             "the architecture's figure is their median), divided by the rows factor at that shape; no K/N "
                             "factor (no shape-varied table)")
        bw, bw_gpus = bandwidths[a.id]
        if "bf16" not in gemm and bw is None:
            continue  # no kernel data at all: the generic profile applies, with its warning
        partial = []
        if "bf16" not in gemm:
            partial.append("gemm_efficiency")
            notes.append("no GEMM rows for this architecture: the median of the measured architectures")
        if bw is None:
            bw = pooled_bw
            partial.append("bandwidth_efficiency")
        att = _attention(a.id, _catalog()[a.gpus[0]])
        if att is None:
            partial.append("attention_efficiency")
        attention_done[a.id] = att
        fit = fits.get((a.id, "fp8")) or fits.get((a.id, "bf16"))
        profiles.append(dict(
            id=a.id, title=a.name, gpus=list(a.gpus), gemm=gemm, per_gpu=dict(per_gpu),
            gemm_note="data/kernels/gemm.yaml: " + "; ".join(notes),
            halves={dt: (fits[a.id, dt]["k_half"], fits[a.id, dt]["n_half"]) if (a.id, dt) in fits else (0.0, 0.0)
                    for dt in ("bf16", "fp8")},
            bw=bw, bw_note=(f"data/kernels/memory.yaml: best read/copy stream kernel / datasheet bandwidth, median over {', '.join(bw_gpus)}"
                            if bw_gpus else f"no stream-kernel rows for this architecture: median of the others ({pooled_bw:g})"),
            t0=fit["t0"] if fit else pooled_t0, t0_note=("GEMM fit of this architecture" if fit else "GEMM fits of other architectures") + " (data/kernels/gemm.yaml)",
            att=att, partial=partial,
        ))
    pooled_gemm = {dt: round(statistics.median(p["gemm"][dt] for p in profiles if dt in p["gemm"] and "gemm_efficiency" not in p["partial"]), 3)
                   for dt in ("bf16", "fp8")}
    for p in profiles:
        if "gemm_efficiency" in p["partial"]:
            p["gemm"] = dict(pooled_gemm)
    # attention: pooled fallback
    fitted_att = [v[0] for v in attention_done.values() if v and v[0]["half"] is not None]
    pooled_att_e = round(statistics.median(v["e"] for v in fitted_att), 3)
    pooled_half = statistics.median(v["half"] for v in fitted_att)
    out = []
    for p in profiles:
        att = p["att"]
        if att is None:
            att_vals, att_note = dict(e=pooled_att_e, half=pooled_half, ratio=_hopper_fa2_backward_ratio()), \
                f"no attention kernel rows for this architecture: median of the others ({pooled_att_e:g})"
        else:
            att_vals, att_note = att
            if att_vals["half"] is None:
                att_vals = {**att_vals, "half": pooled_half}
                att_note += f"; length dependence of the fitted architectures (half at {pooled_half:g})"
        acc = _catalog()[p["gpus"][0]]
        fp8_ratio = (_peak(acc, "bf16") / _peak(acc, "fp8")) if _peak(acc, "fp8") else 1.0
        out.append({
            "id": p["id"],
            "title": p["title"],
            "gpus": p["gpus"],
            "gemm_efficiency": p["gemm"],
            **({"gpu_gemm_efficiency": p["per_gpu"]} if p["per_gpu"] else {}),
            "tile_m": TILE_M,
            "gemm_half_m": m_half,
            "gemm_group_rows_min": group_rows_min,
            "gemm_half_k": {dt: h[0] for dt, h in p["halves"].items()},
            "gemm_half_n": {dt: h[1] for dt, h in p["halves"].items()},
            "bandwidth_efficiency": p["bw"],
            "min_kernel_s": p["t0"],
            "attention_efficiency": {"bf16": att_vals["e"], "fp8": round(att_vals["e"] * fp8_ratio, 3)},
            "attention_half_seq": att_vals["half"],
            "attention_backward_ratio": att_vals["ratio"],
            "elementwise_kernels_per_layer": ELEMENTWISE_KERNELS,
            "partial": p["partial"],
            "sources": {
                "gemm_efficiency": p["gemm_note"],
                "tile_m": "modelling choice: the smallest M-tile of Hopper/CDNA GEMM kernels (64 rows); DeepGEMM's 64-row shapes are its smallest",
                "gemm_half_m": "rows per expert at which a grouped (MoE) GEMM runs at half efficiency: the Hopper FP8 fit "
                               "(DeepGEMM's grouped shapes, data/kernels/gemm.yaml), the only grouped table; carried over",
                "gemm_group_rows_min": "the fewest rows per expert among those grouped shapes; below it the factor "
                                       "is held (no extrapolation) and the tile fill charges the empty rows",
                "gemm_half_k": "the GEMM fit of this architecture and dtype; 0 (no thin-matrix factor) where it has none",
                "gemm_half_n": "see gemm_half_k",
                "bandwidth_efficiency": p["bw_note"],
                "min_kernel_s": p["t0_note"],
                "attention_efficiency": att_note + "; fp8: no 8-bit attention rows, runs at the 16-bit rate",
                "attention_half_seq": "see attention_efficiency",
                "attention_backward_ratio": "see attention_efficiency",
                "elementwise_kernels_per_layer": "vllm-project/vllm model_executor/models/llama.py LlamaDecoderLayer: fused add+RMSNorm x2, rotary, SiLU-and-mul",
            },
        })
    return {"profiles": out, "fits": fits}


def render(result: dict) -> str:
    generic = {
        "id": "generic",
        "title": "Generic (no kernel data for this architecture)",
        "generic": True,
        "gemm_efficiency": {"bf16": 0.6, "fp8": 0.6},
        "tile_m": TILE_M,
        "gemm_half_m": 128.0,
        "gemm_group_rows_min": 256.0,
        "gemm_half_k": {"bf16": 0.0, "fp8": 0.0},
        "gemm_half_n": {"bf16": 0.0, "fp8": 0.0},
        "bandwidth_efficiency": 0.8,
        "min_kernel_s": 5e-6,
        "attention_efficiency": {"bf16": 0.5, "fp8": 0.25},
        "attention_half_seq": 512.0,
        "attention_backward_ratio": 0.8,
        "elementwise_kernels_per_layer": ELEMENTWISE_KERNELS,
        "partial": [],
        "sources": {name: "no kernel data: a round figure below every measured architecture, flagged on every estimate"
                    for name in ("gemm_efficiency", "tile_m", "gemm_half_m", "gemm_group_rows_min", "gemm_half_k", "gemm_half_n", "bandwidth_efficiency",
                                 "min_kernel_s", "attention_efficiency", "attention_half_seq",
                                 "attention_backward_ratio", "elementwise_kernels_per_layer")},
    }
    doc = {
        "schema_version": 1,
        "description": "Kernel efficiency profiles per GPU architecture, derived from data/kernels/*.yaml by "
                       "operators/derive.py (do not edit by hand: run python -m workbench_performance.operators.derive --write).",
        "profiles": [*result["profiles"], generic],
    }
    return yaml.safe_dump(doc, sort_keys=False, width=120, allow_unicode=True)


def shipped_text() -> str:
    return resources.files("workbench_performance.operators").joinpath(PROFILES).read_text("utf-8")


if __name__ == "__main__":
    text = render(derive())
    if sys.argv[1:] == ["--write"]:
        Path(__file__).with_name(PROFILES).write_text(text, encoding="utf-8")
    else:
        print(text)
