"""The desktop window: the only package that imports QtWidgets and pyqtgraph."""
