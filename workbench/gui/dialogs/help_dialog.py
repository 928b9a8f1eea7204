"""The bundled guide (resources/help/index.html), shown offline: its contents on the left (filtered
by the search box), the page on the right; opened at the section of the panel in use (F1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import unescape
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QSplitter,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.paths import resources_dir

_HEADING = re.compile(r"<h([23])(?:\s+id=\"([^\"]+)\")?[^>]*>(.*?)</h\1>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"<[^>]+>")


def help_index() -> Path:
    return resources_dir() / "help" / "index.html"


@dataclass(frozen=True)
class Section:
    level: int  # 2: a chapter, 3: a part of one
    anchor: str  # the heading's id ("" for most parts: found by their title)
    title: str
    text: str  # the section's words, for the search


def sections(html: str) -> list[Section]:
    """The guide's h2/h3 headings in order, each with the text up to the next heading."""
    found = list(_HEADING.finditer(html))
    out = []
    for n, match in enumerate(found):
        end = found[n + 1].start() if n + 1 < len(found) else len(html)
        title = unescape(_TAGS.sub("", match[3])).strip()
        body = unescape(_TAGS.sub(" ", html[match.end():end]))
        out.append(Section(int(match[1]), match[2] or "", title, " ".join(body.split())))
    return out


class HelpDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("help_dialog")
        self.setWindowTitle("GPU Planning Workbench — Guide")
        self.resize(920, 660)
        self.browser = QTextBrowser(self)
        self.browser.setOpenExternalLinks(False)  # offline: links inside the guide only
        self.browser.setOpenLinks(True)
        self.search = QLineEdit(self)
        self.search.setObjectName("help_search")
        self.search.setPlaceholderText("Search the guide")
        self.search.setClearButtonEnabled(True)
        self.search.setToolTip("Shows the sections that mention every word; Enter finds the next place in the page")
        self.contents = QTreeWidget(self)
        self.contents.setObjectName("help_contents")
        self.contents.setHeaderHidden(True)
        self.no_match = QLabel("No section mentions that.", self)
        self.no_match.setVisible(False)
        self.sections: list[Section] = []
        index = help_index()
        if index.is_file():
            html = index.read_text(encoding="utf-8")
            self.sections = sections(html)
            self.browser.setSearchPaths([str(index.parent)])
            self.browser.setSource(QUrl.fromLocalFile(str(index)))
        else:
            self.browser.setHtml(f"<p>The guide is missing from this installation ({index}).</p>")
        self._items: list[tuple[QTreeWidgetItem, Section]] = []
        chapter: QTreeWidgetItem | None = None
        for section in self.sections:
            if section.level == 2 or chapter is None:
                item = QTreeWidgetItem(self.contents, [section.title])
                chapter = item
            else:
                item = QTreeWidgetItem(chapter, [section.title])
            self._items.append((item, section))
        self.contents.expandAll()
        self.contents.itemClicked.connect(lambda item, _column: self._go(item))
        self.contents.itemActivated.connect(lambda item, _column: self._go(item))
        self.search.textChanged.connect(self._filter)
        self.search.returnPressed.connect(self.find_next)
        side = QWidget(self)
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(self.search)
        side_layout.addWidget(self.contents, 1)
        side_layout.addWidget(self.no_match)
        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.addWidget(side)
        splitter.addWidget(self.browser)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([230, 690])
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(splitter, 1)
        layout.addWidget(buttons)

    # --- navigation ---------------------------------------------------------------------------

    def show_section(self, anchor: str) -> bool:
        """Scroll to the chapter with this id (and select it in the contents); False if none."""
        for item, section in self._items:
            if section.anchor == anchor:
                self._go(item)
                return True
        return False

    def _go(self, item: QTreeWidgetItem) -> None:
        section = next(s for i, s in self._items if i is item)
        self.contents.setCurrentItem(item)
        if section.anchor:
            self.browser.scrollToAnchor(section.anchor)
            return
        # A part without an id: find its title from the top of the page.
        cursor = self.browser.textCursor()
        cursor.movePosition(cursor.MoveOperation.Start)
        self.browser.setTextCursor(cursor)
        self.browser.find(section.title, QTextDocument.FindFlag.FindCaseSensitively)

    def current_section(self) -> str:
        item = self.contents.currentItem()
        return next((s.title for i, s in self._items if i is item), "")

    # --- search -------------------------------------------------------------------------------

    def matching(self, query: str) -> list[Section]:
        words = query.lower().split()
        return [s for s in self.sections if all(w in f"{s.title} {s.text}".lower() for w in words)]

    def _filter(self, query: str) -> None:
        shown = {id(s) for s in self.matching(query)}
        for item, section in self._items:
            item.setHidden(bool(query.strip()) and id(section) not in shown
                           and not any(id(s) in shown for i, s in self._items if i.parent() is item))
        self.no_match.setVisible(bool(query.strip()) and not shown)
        first = next((item for item, s in self._items if id(s) in shown), None)
        if first is not None and query.strip():
            self._go(first)
            self.find_next()

    def find_next(self) -> bool:
        """Select the next place the first search word occurs (from the top after the last one)."""
        words = self.search.text().split()
        if not words:
            return False
        if self.browser.find(words[0]):
            return True
        cursor = self.browser.textCursor()
        cursor.movePosition(cursor.MoveOperation.Start)
        self.browser.setTextCursor(cursor)
        return self.browser.find(words[0])
