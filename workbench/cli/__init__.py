"""The ``gpu-workbench`` command line: one module per command group, the same engine as the window.

``main`` parses the arguments and runs a command (no command opens the window); ``scenario_flags``
turns the shared scenario flags and files into a validated scenario; ``compare``, ``report`` and
``project`` add their command groups; ``output`` writes strict JSON and escaped text; ``guard``
keeps third-party plugins from ending, hanging or corrupting a command.
"""

import gc
import os

# numpy's OpenBLAS starts a thread per core at import, and its threads spin after each call; the
# engine's arithmetic is elementwise (no BLAS-sized products), so on a 2-core machine they only
# took CPU from the main thread (a 10,000-point sweep: 0.6 s of CPU instead of 0.5). A value the
# user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# A command is a short process that builds thousands of objects and frees few cycles: with
# CPython's default threshold (700 allocations) the collector walks the growing heap dozens of
# times during start-up and a sweep (about 5% of a 10,000-point sweep). The window raises it the
# same way once it is up (workbench.gui.app.GC_THRESHOLDS).
gc.set_threshold(20_000, 20, 100)

from workbench.cli.main import build_parser, main  # noqa: E402 - after the collector is tuned

__all__ = ["build_parser", "main"]
