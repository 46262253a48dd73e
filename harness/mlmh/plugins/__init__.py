"""The plugin system below the registry (:mod:`mlmh.registry`), which builds components from what it loads:

- :mod:`mlmh.plugins.hookspecs`: the hooks a plugin can implement;
- :mod:`mlmh.plugins.plugin_manager`: the pluggy manager, loading the entry points of group ``mlmh``;
- :mod:`mlmh.plugins.contracts`: what a plugin's output must be, a breach turned into that component's error;
- :mod:`mlmh.plugins.samplers_common`: deprecated, the sampler helpers' path of an earlier release, pointing to
  :mod:`mlmh.toolkit` (the builtin plugins themselves live in the ``mlmh_builtins`` package).
"""
