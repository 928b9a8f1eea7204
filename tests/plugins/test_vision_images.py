"""Images per request through the whole engine: prompt tokens, KV cache, prefill FLOPs, TTFT.

A Qwen2.5-VL-7B config (tests/data/configs) with 1920 x 1080 images: each is resized to
1932 x 1092 (multiples of 28), 69 x 39 merged tokens = 2,691 image tokens + 2 markers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.catalog.hf_config import import_hf_path
from workbench.catalog.resolve import resolve_scenario
from workbench.cli import main
from workbench.core import Scenario
from workbench.core.vision import encoder_flops, image_layout
from workbench.engine.pipeline import Engine
from workbench.pluginhost.host import PluginHost

HOST = PluginHost(
    first_party=("workbench_memory", "workbench_compute", "workbench_performance", "workbench_cost"),
    entry_point_group=None,
)
ENGINE = Engine(HOST.registry.estimators)
CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
QWEN = str(CONFIGS / "qwen2.5-vl-7b-instruct" / "config.json")
TOWER = import_hf_path(QWEN).architecture.vision_tower
BASE = {"model": QWEN, "gpu": "h100-sxm", "seq_len": 1000, "gen_len": 200, "batch_size": 2}


def run(**fields: object):  # type: ignore[no-untyped-def]
    return ENGINE.run(resolve_scenario(Scenario(**(BASE | fields))))


def test_images_join_the_prompt_everywhere() -> None:
    assert TOWER is not None
    per_image = image_layout(TOWER, 1920, 1080).prompt_tokens
    assert per_image == 2693
    with_images = run(images_per_request=2, image_width=1920, image_height=1080)
    as_text = run(seq_len=1000 + 2 * per_image)  # the same prompt length, in text tokens
    assert not with_images.failures
    # KV cache, activations and decode see exactly the longer prompt
    for key in ("kv_cache.bytes", "memory.per_gpu.activations", "flops.decode_step", "kv_cache.max_concurrency"):
        assert with_images.get(key) == as_text.get(key), key
    # prefill: the language model over the longer prompt plus the encoder once per image per sequence
    encoder = 2 * 2 * encoder_flops(TOWER, 1920, 1080).total
    assert with_images.get("flops.prefill") == pytest.approx(as_text.get("flops.prefill") + encoder, rel=1e-12)
    # per GPU (one H100 here) the prefill roofline carries the encoder too, and so does TTFT
    assert with_images.get("roofline.prefill.flops") == pytest.approx(
        as_text.get("roofline.prefill.flops") + encoder, rel=1e-12
    )
    assert with_images.get("performance.ttft_s") > as_text.get("performance.ttft_s")
    note = next(w for w in with_images.warnings if w.code == "image-tokens")
    assert "2 image(s) of 1920x1080 x 2,693 tokens" in note.message and note.severity == "info"


def test_no_images_changes_nothing() -> None:
    plain = run()
    zero = run(images_per_request=0, image_width=640, image_height=480)
    assert plain.get("flops.prefill") == zero.get("flops.prefill")
    assert not [w for w in zero.warnings if w.code.startswith("image")]


def test_more_pixels_cost_more_up_to_the_processor_cap() -> None:
    small, large = (run(images_per_request=1, image_width=s, image_height=s) for s in (448, 2048))
    assert large.get("flops.prefill") > small.get("flops.prefill")
    assert large.get("kv_cache.bytes") > small.get("kv_cache.bytes")


def test_a_text_model_with_images_warns() -> None:
    est = ENGINE.run(resolve_scenario(Scenario(model="llama-3.1-8b", gpu="h100-sxm", images_per_request=3)))
    codes = {w.code: w for w in est.warnings}
    assert "images-without-vision-tower" in codes
    assert "3 image(s) per request are not costed" in codes["images-without-vision-tower"].message


def test_cli_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["estimate", "--model-config", QWEN, "--images", "2", "--image-size", "1920x1080", "--json"])
    out = capsys.readouterr().out
    assert code == 0 and "image-tokens" in out and "2,693 tokens" in out
    for bad in (["--image-size", "1920"], ["--image-size", "axb"], ["--images", "-1"],
                ["--image-size", "99999x10"]):
        try:
            code = main(["estimate", "--model-config", QWEN, *bad])
        except SystemExit as exc:  # argparse's own errors
            code = exc.code
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1, (bad, err)


def test_max_context_is_the_text_beside_the_images(capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.engine import solvers

    base = resolve_scenario(Scenario(**(BASE | {"gpu": "l4", "batch_size": 8})))
    with_images = resolve_scenario(Scenario(**(BASE | {"gpu": "l4", "batch_size": 8, "images_per_request": 1,
                                                       "image_width": 640, "image_height": 480})))
    text_only = solvers.largest_fitting(ENGINE, base, "seq_len")
    beside = solvers.largest_fitting(ENGINE, with_images, "seq_len")
    assert text_only is not None and beside is not None
    assert TOWER is not None
    tokens = image_layout(TOWER, 640, 480).prompt_tokens  # 644 x 476: 46 x 34 patches, 391 + 2 tokens
    assert tokens == 393
    assert abs(text_only[0] - beside[0] - tokens) <= 16  # the search ends on a KV page boundary
    code = main(["solve", "max-context", "--model-config", QWEN, "--gpu", "l4", "--batch", "8",
                 "--images", "1", "--image-size", "640x480"])
    assert code == 0 and "beside 1 image(s) of 640x480" in capsys.readouterr().out


def test_training_samples_carry_image_tokens_and_say_what_is_left_out() -> None:
    est = run(workload="finetune", method="lora", images_per_request=1, global_batch_size=None)
    text = run(workload="finetune", method="lora", seq_len=1000 + 1371)  # 1024 x 1024: 1,369 + 2 tokens
    assert est.get("flops.forward") == text.get("flops.forward")
    assert est.get("memory.per_gpu.activations") == text.get("memory.per_gpu.activations")
    note = next(w for w in est.warnings if w.code == "image-tokens")
    assert "training compute and activations are not counted" in note.message
