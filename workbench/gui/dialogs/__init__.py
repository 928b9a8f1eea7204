"""Dialogs: custom accelerator, errors, help, plugins, PDF report export, scenario diff."""
