"""Reading a finished run back: ``results.json``, and its samples as the runner wrote them: ``samples.jsonl``
(every step trace, when the run logged samples) or else ``generations.jsonl`` (every run's regenerated texts)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlmh.errors import DataError
from mlmh.rundir import RunDir
from mlmh.types import ConditionResult, Generation, RunResults, SampleRow


#: one regenerated document as the results screen shows it: its condition, generation (with its step trace when
#: samples.jsonl has it), per-sample scores and document set; samples.jsonl's rows are exactly that
Sample = SampleRow


@dataclass
class RunFiles:
    path: Path  # the results file
    results: RunResults
    samples: list[Sample]
    traced: bool = True  # the samples carry their step traces (samples.jsonl), not only their texts

    @property
    def conditions(self) -> list[ConditionResult]:
        return list(self.results.conditions)

    def samples_of(self, condition: str) -> list[Sample]:
        return [s for s in self.samples if s.condition == condition]


def load_run(path: str | Path) -> RunFiles:
    """Load a run from its directory or its results file, with its samples: samples.jsonl's when the run wrote
    one, else generations.jsonl's texts (a run that has neither shows none)."""
    run = RunDir.of(path)
    results = run.read_results()
    if run.samples.is_file():
        return RunFiles(path=run.results, results=results, samples=run.read_samples())
    samples = _generation_samples(run, results) if run.generations.is_file() else []
    return RunFiles(path=run.results, results=results, samples=samples, traced=False)


def _generation_samples(run: RunDir, results: RunResults) -> list[Sample]:
    """generations.jsonl's rows as samples without a trace: the model, sampler and masking are their condition's."""
    conditions = {c.id: c for c in results.conditions}
    samples = []
    for row in run.read_generations():
        condition = conditions.get(row.checked("condition"))
        if condition is None:
            raise DataError(f"{run.generations}: sample {row.sample} names condition {row.condition!r}, "
                            f"which {run.results.name} does not hold")
        generation = Generation(doc_id=row.checked("doc_id"), model=condition.model, model_kind=condition.model_kind,
                                sampler=condition.sampler, masking=condition.masking, seed=condition.seed,
                                original=row.checked("original"), masked_text=row.checked("masked_text"),
                                text=row.checked("text"),
                                masked_words=[], output_words={})
        samples.append(Sample(condition.id, generation, role=row.role))
    return samples
