"""The F1 guide: contents from its headings, a search that narrows them, and opening at the
chapter of the panel in use."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from workbench.gui.dialogs.help_dialog import HelpDialog, help_index, sections
from workbench.gui.main_window import MainWindow


def test_the_contents_list_every_chapter_and_the_search_narrows_them(qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = HelpDialog()
    qtbot.addWidget(dialog)
    chapters = [s for s in sections(help_index().read_text(encoding="utf-8")) if s.level == 2]
    top = [dialog.contents.topLevelItem(i).text(0) for i in range(dialog.contents.topLevelItemCount())]
    assert top == [s.title for s in chapters] and "Compare accelerators" in top
    dialog.search.setText("roofline")
    shown = [item.text(0) for item, _ in dialog._items if not item.isHidden()]
    assert "Roofline" in shown and "Plugins" not in shown
    assert dialog.browser.textCursor().selectedText().lower() == "roofline"  # the first place is selected
    dialog.search.setText("no such words anywhere")
    assert dialog.no_match.isVisible() or not dialog.isVisible()
    assert all(item.isHidden() for item, _ in dialog._items)
    dialog.search.clear()
    assert not any(item.isHidden() for item, _ in dialog._items)


def test_f1_opens_at_the_chapter_of_the_panel_in_use(qtbot, window: MainWindow, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    window.tabs.show_page("compare")
    window.tabs.setFocus()
    dialog = window.show_help()
    qtbot.addWidget(dialog)
    assert dialog.current_section() == "Compare accelerators"
    dialog.close()
    # The panel with the keyboard focus wins over the tab.
    monkeypatch.setattr(QApplication, "focusWidget", staticmethod(lambda: window.results_panel.gpus_needed))
    assert window.help_section() == "results"
    monkeypatch.setattr(QApplication, "focusWidget", staticmethod(lambda: window.scenario_panel.knobs["batch_size"].widget))
    assert window.help_section() == "editing"
    monkeypatch.setattr(QApplication, "focusWidget", staticmethod(lambda: window.compare_view.table))
    assert window.help_section() == "compare"
    assert window.show_help("sensitivity").current_section() == "Sensitivity"
