"""Regenerate one sample of a finished run from its directory and sample id, and say whether it matches.

A sample id is ``CONDITION:DOC_ID``: the condition's 1-based position in the run's results and the
document id, as generations.jsonl lists them (its ``sample`` field). The run's saved configuration is
resolved into the same plan (:func:`mlmh.config.plan.build_plan`), so the sample gets the same model, masking,
sampler, seed and masked words as in the run: the mask and the sampler's random stream come from
(seed, masking spec, document id) alone (:func:`mlmh.generation.mask_texts`; the document is the one the run
cut to the windows of all its models, which this model's window holds whole).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlmh.errors import DataError, SpecError
from mlmh.storage.rundir import RunDir
from mlmh.types import GENERATION_FIELDS, Generation, GenerationRow


def sample_id(condition_index: int, doc_id: str) -> str:
    """The id of one sample in a run: ``CONDITION:DOC_ID`` with the condition's 1-based position."""
    return f"{condition_index + 1}:{doc_id}"


@dataclass
class Reproduction:
    sample: str
    condition: str
    recorded: GenerationRow
    generation: Generation

    @property
    def identical(self) -> bool:
        return self.generation.text == self.recorded.text and self.generation.masked_text == self.recorded.masked_text


def recorded_sample(run_dir: Path | RunDir, sample: str) -> GenerationRow:
    """The generations.jsonl row of ``sample``; a SpecError naming the run when there is none."""
    run = run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)
    if not run.generations.is_file():
        raise SpecError(f"--run {run.path}: no {run.generations.name} (not a finished mlmh eval run)")
    rows = run.read_generations(fields=("sample",))  # every line is read and checked; the one used in full
    found = next((row for row in rows if row.sample == sample), None)
    if found is None:
        raise SpecError(f"--sample {sample}: no such sample in {run.generations} (ids are CONDITION:DOC_ID, e.g. "
                        f"{rows[0].sample if rows else '?'})")
    missing = [f for f in GENERATION_FIELDS if getattr(found, f) is None]
    if missing:
        raise DataError(f"{run.generations}: sample {sample} lacks the text field(s) {', '.join(missing)}")
    return found


def reproduce(run_dir: str | Path, sample: str) -> Reproduction:
    """Rebuild the run's plan, mask the sample's document as the run did, and generate it again
    (:func:`mlmh.generation.regenerate`, as every regeneration outside a run)."""
    from mlmh.config.plan import build_plan, load_context
    from mlmh.config.presets import saved
    from mlmh.generation import mask_texts, regenerate

    run = RunDir(run_dir)
    recorded = recorded_sample(run, sample)
    config = saved(run)
    plan = build_plan(config)
    corpus = plan.load_corpus()
    plan.check(corpus)
    condition = next((c for c in plan.conditions if c.id == recorded.condition), None)
    if condition is None:
        raise SpecError(f"--sample {sample}: condition {recorded.condition!r} is not in the plan this mlmh builds "
                        f"from {run.config} (were plugins removed?)")
    document = next((d for d in corpus.documents if d.id == recorded.doc_id), None)
    if document is None:
        raise SpecError(f"--sample {sample}: document {recorded.doc_id!r} is not in dataset {config.dataset} "
                        f"({corpus.source})")
    document = _as_generated(document, recorded.checked("original"))
    adapter = condition.model.load(load_context(config, corpus))
    masked = mask_texts([document], condition.masking, condition.seed, [adapter])
    ((generation,),) = regenerate([(adapter, condition.sampler)], masked, batch_size=1)
    return Reproduction(sample=sample, condition=condition.id, recorded=recorded, generation=generation)


def _as_generated(document: Any, original: str) -> Any:
    """``document`` cut as the run cut it to fit every model's window (the recorded original is that cut)."""
    if document.text == original:
        return document
    if not document.text.startswith(original):
        raise SpecError(f"document {document.id!r} no longer matches the text the run generated from (the dataset "
                        "files changed)")
    end = len(original)
    return dataclasses.replace(document, text=original, entities=[e for e in document.entities if e.end <= end])
