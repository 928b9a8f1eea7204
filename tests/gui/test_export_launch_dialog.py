"""File → Export Launch Configuration…: format choice, preview, copy and save."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtGui import QGuiApplication, QStandardItemModel
from PySide6.QtWidgets import QFileDialog

from workbench.core.scenario import Scenario
from workbench.gui.catalogs import Catalogs
from workbench.gui.dialogs.export_launch_dialog import ExportLaunchDialog


def _dialog(qtbot, catalogs: Catalogs, **fields) -> ExportLaunchDialog:  # type: ignore[no-untyped-def]
    resolved = catalogs.resolve(Scenario(**fields))
    dialog = ExportLaunchDialog(resolved, None)
    qtbot.addWidget(dialog)
    return dialog


def _tabs(dialog: ExportLaunchDialog) -> list[str]:
    return [dialog.tabs.tabText(i) for i in range(dialog.tabs.count())]


def test_a_serving_scenario_previews_the_server_command_and_its_benchmark(qtbot, catalogs: Catalogs) -> None:
    dialog = _dialog(qtbot, catalogs, model="llama-3.1-8b", gpu="h100-sxm", batch_size=16)
    assert dialog.format_id == "vllm"
    assert _tabs(dialog) == ["serve.sh", "bench.sh"]
    assert "vllm serve meta-llama/Llama-3.1-8B" in dialog.current_text()
    model = dialog.format_box.model()
    assert isinstance(model, QStandardItemModel)
    enabled = {dialog.format_box.itemData(i): model.item(i).isEnabled() for i in range(dialog.format_box.count())}
    assert enabled["deepspeed"] is False and enabled["kubernetes"] is True
    assert "finetune, pretrain" in model.item(dialog.format_box.findData("deepspeed")).toolTip()

    dialog.copy_current()
    assert QGuiApplication.clipboard().text() == dialog.files["serve.sh"]


def test_save_writes_every_file_into_the_chosen_folder(qtbot, catalogs: Catalogs, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    dialog = _dialog(qtbot, catalogs, model="llama-3.1-8b", gpu="h100-sxm", serving={"engine": "tensorrt-llm"})
    dialog.format_box.setCurrentIndex(dialog.format_box.findData("trtllm"))
    assert _tabs(dialog) == ["serve.sh", "extra_llm_api_options.yaml", "bench.sh"]
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(tmp_path / "launch"))
    with qtbot.waitSignal(dialog.saved) as blocker:
        dialog.save_button.click()
    assert [p.name for p in blocker.args[0]] == ["serve.sh", "extra_llm_api_options.yaml", "bench.sh"]
    assert (tmp_path / "launch" / "serve.sh").read_text() == dialog.files["serve.sh"]


def test_a_single_file_is_saved_under_the_name_given(qtbot, catalogs: Catalogs, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    dialog = _dialog(qtbot, catalogs, model="llama-3.1-8b", gpu="h100-sxm", workload="finetune",
                     num_gpus=8, parallel={"dp": 8, "zero_stage": 3})
    assert dialog.format_id == "deepspeed"  # the first format a training scenario can use
    dialog.format_box.setCurrentIndex(dialog.format_box.findData("torchtitan"))
    target = tmp_path / "job.toml"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    dialog.save_button.click()
    assert target.read_text() == dialog.files["train.toml"]
    assert "data_parallel_shard_degree = 8" in target.read_text()


def test_a_format_that_cannot_express_the_scenario_says_why(qtbot, catalogs: Catalogs) -> None:
    dialog = _dialog(qtbot, catalogs, model="llama-3.1-8b", gpu="tpu-v5e")
    dialog.format_box.setCurrentIndex(dialog.format_box.findData("kubernetes"))
    assert not dialog.problem.isHidden()
    assert "device plugin" in dialog.problem.text()
    assert dialog.tabs.count() == 0 and not dialog.save_button.isEnabled()
    dialog.format_box.setCurrentIndex(dialog.format_box.findData("sglang"))
    assert dialog.problem.isHidden() and dialog.save_button.isEnabled()


def test_the_file_menu_opens_it_for_the_current_scenario(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    assert window.launch_export_action in window.menuBar().actions()[0].menu().actions()
    window.launch_export_action.trigger()
    dialog = window.findChild(ExportLaunchDialog)
    assert dialog is not None and dialog.isVisible()
    assert dialog.resolved.scenario.name == window.controller.current
    assert "--max-model-len 1280" in dialog.files["serve.sh"]  # scenario A: a 1,024-token prompt + 256 out
    dialog.close()
