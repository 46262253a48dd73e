"""Experiment presets: TOML data files only, shipped as package data."""
