"""The live charts: memory stack, roofline, sweep, tornado and the comparison bars (pyqtgraph items made once, updated with setData)."""
