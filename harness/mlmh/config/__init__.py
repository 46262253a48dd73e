"""Building a run: a configuration read and checked, then built once into the plan every face runs.

- :mod:`mlmh.config.presets`: a preset (TOML) with overrides read into a :class:`~mlmh.types.runconfig.RunConfig`,
  each key as its run option declares;
- :mod:`mlmh.config.options`: the commands' options and the Python API's arguments, checked by one rule each;
- :mod:`mlmh.config.declared`: what the registered components declare of themselves (main results, defaults);
- :mod:`mlmh.config.plan`: the :class:`~mlmh.config.plan.RunPlan`, every component built once (building it is the
  check), its conditions and work units.
"""
