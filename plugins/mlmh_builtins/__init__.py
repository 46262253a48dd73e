"""The builtin plugins of mlmh, one module per concern. Each is an entry point of group ``mlmh`` in
pyproject.toml, registered through the same hooks a third party uses; the plugin manager loads them
first, sorted by entry-point name."""
