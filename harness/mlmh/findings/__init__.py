"""Judgement, once: every verdict a run states, decided during the run into its typed results, so report.md, the
terminal summary, the TUI, notebooks and trackers say the same thing and none of them decides anything.

- :mod:`mlmh.findings.decide`: the claims of both seed papers, tested on the run's conditions (``findings``), with
  their rules in :mod:`~mlmh.findings.paper_claims`, :mod:`~mlmh.findings.fluency` and :mod:`~mlmh.findings.claims`,
  the CI and caveat rules in :mod:`~mlmh.findings.verdicts` and what an answer rests on in
  :mod:`~mlmh.findings.grounds`;
- :mod:`mlmh.findings.comparisons`: every other verdict report.md states (``comparisons``);
- :mod:`mlmh.findings.crossover`: where masked overtakes causal in a data-constrained sweep (``crossover``);
- :mod:`mlmh.findings.answer`: the answer and the comparisons as every face states them;
- the measurements the verdicts read, taken during the run: :mod:`~mlmh.findings.memorization` (verbatim recall,
  the seen - unseen gap, the filler and deletion baselines), :mod:`~mlmh.findings.correlation` (quality against
  downstream usefulness) and :mod:`~mlmh.findings.stutter` (one definition for the claims and the ``stutter``
  metric).
"""
