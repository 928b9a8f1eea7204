"""Sizing reports: PDF, CSV, JSON and HTML writers."""
