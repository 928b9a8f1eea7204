"""Model panel: catalog search and filters, import (dialog and drag and drop), architecture editor."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QLineEdit

from workbench.core.model import ModelArchitecture
from workbench.core.params import count_parameters
from workbench.gui.controller import ProjectController
from workbench.gui.panels.model_panel import ModelPanel

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"


def _panel(qtbot, controller: ProjectController) -> ModelPanel:  # type: ignore[no-untyped-def]
    panel = ModelPanel(controller)
    qtbot.addWidget(panel)
    panel.resize(500, 800)
    panel.show()
    return panel


def test_lists_the_catalog_and_selects_the_scenario_model(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    assert panel.table.row_count == len(controller.catalogs.models) >= 30
    assert panel.table.selected_id == "llama-3.1-8b"
    assert "Llama" in panel.current_label.text()


def test_search_and_filters(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    table = panel.table
    table.filter_edit.setText("mixtral")
    assert table.visible_ids() and all("mixtral" in i for i in table.visible_ids())
    table.filter_edit.clear()
    table.kind_combo.setCurrentText("MoE")
    moe = table.visible_ids()
    assert "mixtral-8x7b" in moe and "llama-3.1-8b" not in moe
    table.kind_combo.setCurrentText("MLA")
    mla = {m for m, entry in controller.catalogs.models.items() if entry.architecture.mla is not None}
    assert "deepseek-v3" in mla and sorted(table.visible_ids()) == sorted(mla)
    table.kind_combo.setCurrentText("Encoder")
    assert "bert-base-uncased" in table.visible_ids()
    table.kind_combo.setCurrentText("All kinds")
    table.size_combo.setCurrentText("> 80B")
    big = table.visible_ids()
    assert "llama-3.1-405b" in big and "llama-3.1-8b" not in big
    table.size_combo.setCurrentText("All sizes")
    table.family_combo.setCurrentIndex(table.family_combo.findData("qwen3"))
    assert table.visible_ids() and all(i.startswith("qwen3") for i in table.visible_ids())
    # Filtering never counts as choosing a model.
    assert controller.scenario.model == "llama-3.1-8b"


def test_choosing_a_row_sets_the_scenario_model(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    assert panel.table.choose("gemma-2-9b")
    assert controller.scenario.model == "gemma-2-9b"
    assert panel.editor.fields["name"].widget.text() == controller.model_architecture().name


def test_editor_covers_every_architecture_field_with_descriptions(qtbot, controller: ProjectController) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    editor = panel.editor
    top = set(ModelArchitecture.model_fields)
    assert {p.split(".")[0] for p in editor.fields} | set(editor.sections) == top
    assert {"moe.num_experts", "mla.kv_lora_rank", "sliding_window.window", "vision.patch_size",
            "encoder_decoder.num_decoder_layers"} <= set(editor.fields)
    # The description, then the field name (to match a config.json key).
    assert editor.fields["num_kv_heads"].widget.toolTip() == (
        ModelArchitecture.model_fields["num_kv_heads"].description + "\nField: num_kv_heads")


def test_editing_updates_the_parameter_count_and_copies_a_catalog_model(qtbot, controller) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    editor = panel.editor
    editor.edit_text("num_layers", "16")
    arch = controller.model_architecture()
    assert arch.num_layers == 16
    assert controller.scenario.model == "llama-3.1-8b-custom"
    assert "llama-3.1-8b-custom" in controller.project.models
    assert f"{count_parameters(arch).total:,}" in editor.param_label.text()
    editor.edit_text("num_layers", "20")
    assert controller.project.models["llama-3.1-8b-custom"].num_layers == 20
    assert len(controller.project.models) == 1  # later edits change the copy, not a new one
    controller.undo_stack.undo()
    assert controller.scenario.model == "llama-3.1-8b"
    assert editor.fields["num_layers"].widget.text() == "32"


def test_invalid_values_are_marked_and_the_last_valid_model_stays(qtbot, controller) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    editor = panel.editor
    before = controller.project
    editor.edit_text("num_kv_heads", "5")  # 32 heads do not split into 5 groups
    assert "divisible" in editor.errors["num_kv_heads"]
    assert editor.fields["num_kv_heads"].widget.styleSheet()
    assert "divisible" in editor.fields["num_kv_heads"].widget.toolTip()
    assert editor.error_label.isVisible()
    editor.edit_text("hidden_size", "abc")
    assert "valid integer" in editor.errors["hidden_size"]
    editor.edit_text("rope_scaling", "{not json")
    assert "JSON" in editor.errors["rope_scaling"]
    assert controller.project is before
    editor.edit_text("rope_scaling", "")
    editor.edit_text("hidden_size", "4096")
    editor.edit_text("num_kv_heads", "4")
    assert not editor.errors and not editor.error_label.isVisible()
    assert controller.model_architecture().num_kv_heads == 4


def test_turning_on_a_section_starts_from_sensible_values(qtbot, controller) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    editor = panel.editor
    dense = count_parameters(controller.model_architecture()).total
    editor.sections["moe"].setChecked(True)
    arch = controller.model_architecture()
    assert arch.moe is not None and arch.moe.num_experts == 8
    assert count_parameters(arch).total > dense
    assert "active per token" in editor.param_label.text()
    editor.sections["moe"].setChecked(False)
    assert controller.model_architecture().moe is None


def test_import_by_drag_and_drop(qtbot, controller) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(CONFIGS / "mistral-7b-v0.1" / "config.json"))])
    enter = QDragEnterEvent(QPoint(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    panel.dragEnterEvent(enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    panel.dropEvent(drop)
    model_id = controller.scenario.model
    assert model_id in controller.project.models
    assert controller.project.models[model_id].sliding_window is not None
    assert panel.table.selected_id == model_id
    # Something that is not a config is refused at the door.
    other = QMimeData()
    other.setUrls([QUrl.fromLocalFile(str(CONFIGS / "README.txt"))])
    refused = QDragEnterEvent(QPoint(1, 1), Qt.DropAction.CopyAction, other, Qt.MouseButton.LeftButton,
                              Qt.KeyboardModifier.NoModifier)
    panel.dragEnterEvent(refused)
    assert not refused.isAccepted()


def test_import_folder_through_the_file_dialog(qtbot, controller, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QFileDialog

    panel = _panel(qtbot, controller)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(CONFIGS / "gpt2"))
    messages: list[str] = []
    panel.status_message.connect(messages.append)
    panel.import_folder_button.click()
    assert controller.model_architecture().vocab_size == 50257
    assert messages and "Imported" in messages[0]
    assert isinstance(panel.table.filter_edit, QLineEdit)


def test_the_editor_round_trips_every_catalog_model(qtbot, controller) -> None:  # type: ignore[no-untyped-def]
    """What the form shows reads back as the same architecture, for every shipped model."""
    panel = _panel(qtbot, controller)
    for model_id, entry in controller.catalogs.models.items():
        panel.editor.set_architecture(entry.architecture)
        assert panel.editor.validate() == entry.architecture, model_id
        assert not panel.editor.errors, model_id


def _unknown_moe_config(tmp_path: Path) -> Path:
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps({
        "model_type": "made_up_moe", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4,
        "intermediate_size": 512, "vocab_size": 1000, "num_local_experts": 8,
    }), encoding="utf-8")
    return path


def _answer_dialog(qtbot, button_text: str, seen: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Press ``button_text`` on the modal message box once it is up (it runs its own event loop)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    def press() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, press)
            return
        seen.append(box.text() + " " + box.informativeText())
        for button in box.buttons():
            if button.text().replace("&", "") == button_text:
                button.click()
                return
        raise AssertionError(f"no button {button_text!r}")

    QTimer.singleShot(20, press)


def test_an_unknown_architecture_is_refused_in_a_dialog_unless_approximated(qtbot, controller, tmp_path) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, controller)
    path = _unknown_moe_config(tmp_path)
    before = dict(controller.project.models)
    seen: list[str] = []
    _answer_dialog(qtbot, "Cancel", seen)
    assert panel.import_model(path) is False
    assert seen and "num_local_experts" in seen[0]
    assert controller.project.models == before  # nothing imported
    _answer_dialog(qtbot, "Import as Approximation", seen)
    assert panel.import_model(path) is True
    arch = controller.model_architecture()
    assert arch.approximate and "num_local_experts" in arch.approximate


def test_an_approximated_model_warns_in_the_results(qtbot, window, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = _unknown_moe_config(tmp_path)
    seen: list[str] = []
    _answer_dialog(qtbot, "Import as Approximation", seen)
    with qtbot.waitSignal(window.estimate_shown, timeout=5000):
        assert window.model_panel.import_model(path)
    assert "approximation" in window.results_panel.warnings.text()


def test_the_editor_round_trips_a_hybrid_architecture(qtbot, controller) -> None:  # type: ignore[no-untyped-def]
    """Per-layer mixers (enum values), FFN-free blocks and a recurrent mixer's projection pairs."""
    from workbench.core.model import LayerMixer, RecurrentKind, RecurrentMixer

    panel = _panel(qtbot, controller)
    base = controller.catalogs.models["llama-3.1-8b"].architecture
    mixer = RecurrentMixer(
        kind=RecurrentKind.MAMBA2, projections=((4096, 8448), (4096, 4096)), other_parameters=4096,
        heads=64, head_dim=64, state_size=128, conv_channels=4352, conv_kernel=4, chunk_size=256,
        conv_state_elements=4352 * 4, ssm_state_elements=64 * 64 * 128,
    )
    hybrid = base.model_copy(update={
        "recurrent": mixer,
        "layer_mixers": (LayerMixer.RECURRENT, LayerMixer.ATTENTION, LayerMixer.PARALLEL, LayerMixer.NONE) * 8,
        "ffn_free_layers": (0, 4),
        "attention_sinks": True,
    })
    hybrid = ModelArchitecture.model_validate(hybrid.model_dump())
    panel.editor.set_architecture(hybrid)
    assert panel.editor.validate() == hybrid
    assert not panel.editor.errors


def test_the_editor_round_trips_vision_towers(qtbot, controller) -> None:  # type: ignore[no-untyped-def]
    """Each kind of vision tower (windowed, deep-stack, SigLIP, Pixtral, tiles) reads back unchanged."""
    from workbench.catalog.hf_config import import_hf_path

    panel = _panel(qtbot, controller)
    configs = Path(__file__).resolve().parents[1] / "data" / "configs"
    for name in ("qwen2.5-vl-7b-instruct", "qwen3-vl-30b-a3b-instruct", "gemma-3-27b-it",
                 "mistral-small-3.1-24b-instruct-2503", "llama-4-scout-17b-16e-instruct"):
        arch = import_hf_path(configs / name).architecture
        assert arch.vision_tower is not None
        panel.editor.set_architecture(arch)
        assert panel.editor.sections["vision_tower"].isChecked(), name
        assert panel.editor.validate() == arch, name
        assert not panel.editor.errors, name


def test_the_model_editor_labels_read_as_words_with_units_and_name_the_field_on_hover(qtbot) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QFormLayout, QLabel

    from workbench.gui.panels.model_editor import ModelEditor

    editor = ModelEditor()
    qtbot.addWidget(editor)
    labels = {}
    for form in editor.widget().findChildren(QFormLayout):
        for row in range(form.rowCount()):
            label = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
            field = form.itemAt(row, QFormLayout.ItemRole.FieldRole)
            if label is not None and field is not None and isinstance(label.widget(), QLabel):
                labels[field.widget().objectName().removeprefix("field:")] = label.widget()
    assert labels["num_layers"].text() == "Layers"
    assert labels["hf_model_type"].text() == "Hugging Face model type"
    assert labels["max_position_embeddings"].text() == "Longest context (tokens)"
    assert labels["moe.num_experts"].text() == "Experts"
    # No label is a raw field name; every one names its field in the tooltip.
    for path, label in labels.items():
        assert "_" not in label.text() and label.text()[:1].isupper(), path
        assert f"Field: {path}" in label.toolTip() and f"Field: {path}" in editor.fields[path].widget.toolTip()
