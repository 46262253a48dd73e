"""Widgets of the TUI: token and trace views, progress panel, results table, plots."""
