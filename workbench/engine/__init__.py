"""Estimation engine: estimator protocol, result types, pipeline, solvers, sweeps. No Qt."""
