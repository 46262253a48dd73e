"""A run as a pipeline of stages, one module each, every stage a function whose arguments are what it needs and
whose value is what it makes: :mod:`~mlmh.run.data` -> :mod:`~mlmh.run.models` -> :mod:`~mlmh.run.mask` ->
:mod:`~mlmh.run.generate` -> :mod:`~mlmh.run.score` -> :mod:`~mlmh.run.downstream` -> :mod:`~mlmh.run.correlate`,
then :func:`~mlmh.run.results.build_results` (pure) and :func:`~mlmh.run.files.write_run`. What every stage shares
(the event bus, the cancel event, the run's log) is :class:`~mlmh.run.context.RunContext`; the
:class:`~mlmh.run.runner.Runner` calls the stages in order in the run's directory.
"""
