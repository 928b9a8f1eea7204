"""The one error a measurement file can cause."""

from workbench.core.errors import InputError


class MeasurementError(InputError):
    """A result file cannot be imported; the message names the file and says why (one line)."""
