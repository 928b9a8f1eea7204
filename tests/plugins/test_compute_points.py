"""The compute estimator over point groups: what a run for a few keys computes, per-point types, and
the array forms of the counting helpers against their one-number forms.

Every point of a group equalling its single estimate is ``tests/engine/test_point_groups.py``; the
values equalling those of the scalar code before the array protocol, ``test_speedup_equivalence``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from workbench_compute import ComputeEstimator
from workbench_compute.estimator import PRODUCES
from workbench_compute.flops import causal_pairs, nonzero, when
from workbench_compute.recurrent import scan_backward_flops, scan_flops

from workbench.api import make_scenario, resolve
from workbench.core.model import RecurrentKind, RecurrentMixer
from workbench.engine.pipeline import Engine
from workbench.engine.points import is_array_estimator
from workbench.engine.points_estimate import GroupEstimate

ENGINE = Engine([ComputeEstimator()])
POINTS = {
    "batch_size": [1, 3, 64, 1024, 1, 256],
    "seq_len": [1, 7, 2048, 4096, 131072, 16],
    "gen_len": [0, 1, 256, 4096, 64, 0],
}
#: One scenario per way the estimator picks its phases: decoder inference, encoder-only (no decode),
#: encoder-decoder, images, LoRA training with recompute, MoE pretraining with experts split.
SCENARIOS = (
    {"model": "llama-3.1-8b", "gpu": "h100-sxm"},
    {"model": "bert-base-uncased", "gpu": "l40s", "attention": "eager"},
    {"model": "t5-base", "gpu": "a100-80gb-sxm", "dtype": "fp8"},
    {"model": "qwen3-vl-8b", "gpu": "h100-sxm", "images_per_request": 2},
    {"model": "llama-3.1-8b", "gpu": "h100-sxm", "workload": "finetune", "method": "lora",
     "recompute": "full"},
    {"model": "mixtral-8x7b", "gpu": "h100-sxm", "workload": "pretrain", "num_gpus": 16,
     "parallel": {"tp": 4, "dp": 4, "ep": 4}, "recompute": "selective"},
)  # fmt: skip


@functools.cache
def _full(index: int) -> GroupEstimate:
    return ENGINE.run_points(resolve(make_scenario(**SCENARIOS[index])), POINTS)


def test_the_estimator_is_an_array_estimator() -> None:
    assert is_array_estimator(ComputeEstimator())


@pytest.mark.parametrize("index", range(len(SCENARIOS)))
def test_a_run_for_one_key_gives_the_full_runs_values(index: int) -> None:
    """Phases are computed only when a wanted key needs them; each key alone still gets its values
    (the main phase's phase-less keys included, which repeat a phase nobody else asked for)."""
    full = _full(index)
    resolved = resolve(make_scenario(**SCENARIOS[index]))
    for key in PRODUCES:
        alone = ENGINE.run_points(resolved, POINTS, wanted=(key,))
        for i in range(len(POINTS["batch_size"])):
            want, got = full.estimate(i).values[key], alone.estimate(i).values[key]
            assert type(got.value) is type(want.value) and got.value == want.value, (key, i)
            explained = (got.formula, got.unit, got.label, got.note)
            assert explained == (want.formula, want.unit, want.label, want.note), (key, i)


@pytest.mark.parametrize("index", range(len(SCENARIOS)))
def test_each_point_reads_plain_python_values(index: int) -> None:
    full = _full(index)
    for i in range(len(POINTS["batch_size"])):
        values = full.estimate(i).values
        assert type(values["roofline.bound"].value) is str
        assert type(values["roofline.phase"].value) is str
        assert type(values["roofline.compute_dtype"].value) is str
        assert type(values["flops.forward"].value) is float
        for key in PRODUCES:
            assert type(values[key].value) in (float, str, type(None)), key


def test_one_group_holds_both_bounds() -> None:
    """Decode at one sequence reads every weight for a token (memory-bound); at 4,096 sequences it
    does thousands of FLOPs per byte (compute-bound): the per-point bound follows each point."""
    group = ENGINE.run_points(resolve(make_scenario(model="llama-3.1-8b", gpu="h100-sxm")),
                              {"batch_size": [1, 4096], "seq_len": [128, 128]})  # fmt: skip
    bounds = [group.estimate(i).values["roofline.decode.bound"].value for i in range(2)]
    assert bounds == ["memory", "compute"]
    assert "intensity" in group.estimate(1).values["roofline.bound"].formula


def _mixer(kind: RecurrentKind) -> RecurrentMixer:
    return RecurrentMixer(kind=kind, projections=((64, 256), (128, 64)), heads=4, head_dim=32, state_size=16,
                          conv_channels=160, conv_kernel=4, chunk_size=64, conv_state_elements=640,
                          ssm_state_elements=2048)  # fmt: skip


@pytest.mark.parametrize("kind", list(RecurrentKind))
def test_scan_flops_over_an_array_equal_them_point_by_point(kind: RecurrentKind) -> None:
    m = _mixer(kind)
    tokens = [0, 1, 63, 64, 65, 4096, 16_777_216]
    for function in (scan_flops, scan_backward_flops):
        arrays = function(m, np.array(tokens, dtype=np.int64))
        assert arrays.dtype == np.float64
        assert arrays.tolist() == [function(m, t) for t in tokens], function.__name__


def test_causal_pairs_over_an_array_equal_them_point_by_point() -> None:
    lengths = [1, 2, 4095, 4096, 4097, 16_777_216]
    for window in (None, 1, 4096):
        got = causal_pairs(np.array(lengths, dtype=np.int64), window)
        assert got.tolist() == [causal_pairs(s, window) for s in lengths]


def test_nonzero_and_when_pick_per_point_only_when_the_points_disagree() -> None:
    assert nonzero(np.array([1.0, 2.0])) is True
    assert nonzero(np.array([0.0, 0.0])) is False
    mask = nonzero(np.array([0.0, 3.0]))
    assert isinstance(mask, np.ndarray) and mask.tolist() == [False, True]
    assert when(mask, np.array([1.0, 2.0]), 9.0).tolist() == [9.0, 2.0]
    assert when(True, 1.0, 2.0) == 1.0 and when(False, 1.0, 2.0) == 2.0
    assert nonzero(0) is False and nonzero(2.5) is True
