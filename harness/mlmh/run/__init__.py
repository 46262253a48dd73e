"""A run as a pipeline of stages, one module each, every stage a function whose arguments are what it needs and
whose value is what it makes: :mod:`~mlmh.run.data` -> :mod:`~mlmh.run.models` -> :mod:`~mlmh.run.mask` ->
:mod:`~mlmh.run.generate` -> :mod:`~mlmh.run.score` -> :mod:`~mlmh.run.downstream` -> :mod:`~mlmh.run.correlate`,
then :func:`~mlmh.run.results.build_results` (pure) and :func:`~mlmh.run.files.write_run`. What every stage shares
(the event bus, the cancel event, the run's log) is :class:`~mlmh.run.context.RunContext`; the
:class:`~mlmh.run.runner.Runner` calls the stages in order in the run's directory.

Beside the stages, the machinery that runs them and follows them:

- :mod:`mlmh.run.executors`: where work units are generated (in-process, local workers, Ray);
- :mod:`mlmh.run.progress` and :mod:`mlmh.run.eta`: a run's events as progress bars or plain lines, and the one
  estimate of the time a stage has left;
- :mod:`mlmh.run.reproduce`: one sample of a finished run regenerated;
- :mod:`mlmh.run.score_files`: texts of files scored by metric plugins outside a run (``mlmh score``).
"""
