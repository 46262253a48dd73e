"""Writing a finished run's files through its :class:`~mlmh.storage.rundir.RunDir`: generations.jsonl, samples.jsonl
(a run that logs samples), report.md with its figures, and results.json last (a run with results.json is
finished)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Mapping, Sequence

from mlmh.config.plan import Condition
from mlmh.report.markdown import write_report
from mlmh.run.reproduce import sample_id
from mlmh.run.score import per_sample
from mlmh.storage.rundir import RunDir
from mlmh.types import Generation, GenerationRow, MetricResult, RunResults, SampleRow

if TYPE_CHECKING:
    from mlmh.report.plots import FigureStore


def write_run(run_dir: RunDir, results: RunResults, conditions: Sequence[Condition],
              generations: Mapping[str, list[Generation]], role_of: Mapping[str, str],
              headline_results: Mapping[str, list[MetricResult]], *, log_samples: bool,
              figures: FigureStore | None = None) -> None:
    """Write the run's files; ``headline_results`` (condition -> the headline set's metric results) give
    samples.jsonl its per-sample scores, and ``figures`` keeps figures drawn before (the run cache)."""
    run_dir.write_generations(
        GenerationRow(sample=sample_id(index, g.doc_id), condition=condition.id, doc_id=g.doc_id,
                      role=role_of.get(g.doc_id), original=g.original, masked_text=g.masked_text, text=g.text)
        for index, condition in enumerate(conditions) for g in generations.get(condition.id, []))
    if log_samples:
        run_dir.write_samples(_sample_rows(results.headline, conditions, generations, role_of, headline_results))
    write_report(results, run_dir, figures)  # figures drawn before from the same data come from the run cache
    run_dir.write_results(results)  # last: a run with results.json is finished


def _sample_rows(headline: str, conditions: Sequence[Condition], generations: Mapping[str, list[Generation]],
                 role_of: Mapping[str, str], headline_results: Mapping[str, list[MetricResult]]) -> Iterator[SampleRow]:
    """samples.jsonl's rows: each generation with its step trace and per-sample scores."""
    for condition in conditions:
        gens = generations.get(condition.id, [])
        by_doc = per_sample(headline_results.get(condition.id, []),
                            [g for g in gens if g.masked_words and role_of.get(g.doc_id) == headline])
        for g in gens:
            yield SampleRow(condition=condition.id, generation=g, metrics=by_doc.get(g.doc_id, {}),
                            role=role_of.get(g.doc_id))
