"""What mlmh keeps on disk, and the one rule of every file it reads or writes:

- :mod:`mlmh.storage.rundir`: a run directory's files (:class:`~mlmh.storage.rundir.RunDir`), atomic, no-follow;
- :mod:`mlmh.storage.schema`: what a file read back must look like (strict JSON, finite numbers, closed sets);
- :mod:`mlmh.storage.jsonl`: the one JSON Lines reader (a run's files, the datasets', ``mlmh score``'s);
- :mod:`mlmh.storage.inputs` and :mod:`mlmh.storage.outputs`: the paths a user names, read or written;
- :mod:`mlmh.storage.cache`: the run cache in SQLite (generations per sample, metric and task results);
- :mod:`mlmh.storage.modelcache`: trained models and tokenizers (``models/``), built atomically.
"""
