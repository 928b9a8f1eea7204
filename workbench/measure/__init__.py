"""Measurements of real runs: read result files, tie them to scenarios, calibrate assumptions. No Qt."""

from workbench.measure.errors import MeasurementError
from workbench.measure.model import METRICS, Measurement, Metric
from workbench.measure.readers import read_measurements

__all__ = ["METRICS", "Measurement", "MeasurementError", "Metric", "read_measurements"]
