"""The ``gpu-workbench`` command line: one module per command group, the same engine as the window.

``main`` parses the arguments and runs a command (no command opens the window); ``scenario_flags``
turns the shared scenario flags and files into a validated scenario; ``compare``, ``report`` and
``project`` add their command groups; ``output`` writes strict JSON and escaped text; ``guard``
keeps third-party plugins from ending, hanging or corrupting a command.
"""

from workbench.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
