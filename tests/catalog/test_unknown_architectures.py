"""An unknown architecture is refused, or read as a visible approximation, never guessed silently.

A config whose ``model_type`` no reader knows is read with the generic keys as a Llama-style block
only when nothing in it says that reading is wrong; expert, state-space / linear-attention,
hybrid-layer and tower keys make the importer refuse it (CLI exit 2 with one line naming the keys)
unless the user asks for the approximation, and then every estimate warns.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from workbench.catalog.architectures.generic import unreadable_keys
from workbench.catalog.hf_config import UnknownArchitectureError, import_hf_config, import_hf_path

BASE: dict[str, Any] = {
    "model_type": "made_up_moe",
    "num_hidden_layers": 4,
    "hidden_size": 256,
    "num_attention_heads": 4,
    "intermediate_size": 512,
    "vocab_size": 1000,
}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"num_local_experts": 8}, "num_local_experts"),
        ({"n_routed_experts": 64}, "n_routed_experts"),
        ({"num_experts": 128}, "num_experts"),
        ({"moe_intermediate_size": 768}, "moe_intermediate_size"),
        ({"ssm_state_size": 128}, "ssm_state_size"),
        ({"mamba_d_conv": 4}, "mamba_d_conv"),
        ({"linear_num_value_heads": 32}, "linear_num_value_heads"),
        ({"layer_types": ["linear_attention", "full_attention"] * 2}, "layer_types (non-attention layers)"),
        ({"layers_block_type": ["mamba", "attention"] * 2}, "layers_block_type (non-attention layers)"),
        ({"hybrid_override_pattern": "M-M*"}, "hybrid_override_pattern (non-attention layers)"),
        ({"vision_config": {"hidden_size": 64}}, "vision_config"),
        ({"audio_config": {"hidden_size": 64}}, "audio_config"),
        ({"text_config": {**{k: v for k, v in BASE.items() if k != "model_type"}, "num_experts": 16}},
         "text_config.num_experts"),
    ],
)
def test_keys_that_change_size_or_cost_refuse_an_unknown_type(extra: dict[str, Any], named: str) -> None:
    config = {**BASE, **extra}
    assert named in unreadable_keys(config)
    with pytest.raises(UnknownArchitectureError) as caught:
        import_hf_config(config, source="config.json")
    message = str(caught.value)
    assert "\n" not in message and "made_up_moe" in message and named.split(" ")[0] in message
    approx = import_hf_config(config, source="config.json", approximate=True)
    assert approx.approximate and named.split(" ")[0] in (approx.architecture.approximate or "")
    assert approx.reference_class is None


@pytest.mark.parametrize(
    "harmless",
    [
        {"num_local_experts": 0},
        {"num_experts": None},
        {"moe_layer_freq": False},
        {"layer_types": ["full_attention", "sliding_attention"] * 2},
        {"hybrid_override_pattern": "****"},
        {"vision_config": None},
    ],
)
def test_unused_or_attention_only_keys_do_not_refuse(harmless: dict[str, Any]) -> None:
    config = {**BASE, **harmless}
    assert unreadable_keys(config) == []
    result = import_hf_config(config)
    # Still a guess: marked approximate, so every estimate says so.
    assert result.approximate and "Llama-style" in (result.architecture.approximate or "")


def test_known_types_are_never_marked_approximate() -> None:
    configs = Path(__file__).resolve().parents[1] / "data" / "configs"
    for folder in sorted(configs.iterdir()):
        if (folder / "config.json").is_file():
            result = import_hf_path(folder / "config.json")
            assert not result.approximate, folder.name


def _write(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_cli_import_refuses_with_one_line_and_approximate_reads(tmp_path: Path) -> None:
    path = _write(tmp_path, {**BASE, "num_local_experts": 8, "num_experts_per_tok": 2})
    refused = _cli("import", str(path))
    assert refused.returncode == 2
    assert refused.stdout == "" and len(refused.stderr.strip().splitlines()) == 1
    assert "num_local_experts" in refused.stderr and "--approximate" in refused.stderr
    assert "Traceback" not in refused.stderr
    allowed = _cli("import", str(path), "--approximate", "--json")
    assert allowed.returncode == 0, allowed.stderr
    doc = json.loads(allowed.stdout)
    assert "num_local_experts" in doc["approximate"]
    text = _cli("import", str(path), "--approximate")
    assert "APPROXIMATE" in text.stdout


def test_estimates_from_an_approximation_warn_in_json_and_text(tmp_path: Path) -> None:
    path = _write(tmp_path, {**BASE, "num_local_experts": 8})
    refused = _cli("estimate", "--model-config", str(path), "--json")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    done = _cli("estimate", "--model-config", str(path), "--approximate", "--json")
    assert done.returncode == 0, done.stderr
    codes = [w["code"] for w in json.loads(done.stdout)["warnings"]]
    assert "approximate-architecture" in codes
    text = _cli("estimate", "--model-config", str(path), "--approximate")
    assert text.returncode == 0 and "approximate-architecture" in text.stdout


def test_the_report_says_the_architecture_is_approximate(tmp_path: Path) -> None:
    path = _write(tmp_path, {**BASE, "num_local_experts": 8})
    pdf = tmp_path / "r.pdf"
    done = _cli("report", "--model-config", str(path), "--approximate", "-o", str(pdf))
    assert done.returncode == 0, done.stderr
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "Approximate architecture" in text
    assert "is an approximation" in " ".join(text.split())  # the warning, in Warnings and fixes
