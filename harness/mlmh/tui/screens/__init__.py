"""Screens of the TUI: playground, run, results and the keys help."""
