"""The mask stage: every document cut to the narrowest model window, then masked once per masking and seed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from mlmh.config.plan import RunPlan
from mlmh.data.selection import subcorpus
from mlmh.errors import RunCancelled
from mlmh.events import Progress, StageStarted
from mlmh.generation import fit_to_windows, prepare_items
from mlmh.run.context import RunContext
from mlmh.run.data import ROLES, RunData
from mlmh.run.models import LoadedModel
from mlmh.types import Corpus, Document, MaskedItem


@dataclass(frozen=True)
class Masked:
    """What the mask stage makes."""

    documents: Mapping[str, list[Document]]  # role -> the documents regenerated, cut to every model's window
    cut: Mapping[str, int]  # role -> how many of them were cut
    train: Corpus  # the real train documents (cut) that the synthetic corpora replace
    items: Mapping[tuple[str, int], list[MaskedItem]]  # (masking spec, seed) -> the masked documents, every role


def mask_documents(plan: RunPlan, data: RunData, models: Mapping[str, LoadedModel], ctx: RunContext) -> Masked:
    """Cut each set's documents to the windows of ``models``, then mask them with each masking and seed; a
    masking that fails fails its conditions of that seed, and the others go on."""
    documents: dict[str, list[Document]] = {}
    cut: dict[str, int] = {}
    for role in (r for r in ROLES if r in data.documents):
        fitted, cut[role] = fit_to_windows(data.documents[role], [m.adapter for m in models.values()])
        documents[role] = fitted
        if cut[role]:
            ctx.note(f"{cut[role]} of {len(fitted)} {role} documents were cut after the last word that fits every "
                     f"model's window{_window(models)}, so no masked word goes ungenerated and no unseen text "
                     "pads the scores")
    # the real-text baseline of the downstream tasks trains on the same (cut) documents as the synthetic corpora
    train = subcorpus(data.corpus, documents["seen"])
    every = [d for role in documents for d in documents[role]]
    pairs = [(m, seed) for m in plan.maskings for seed in plan.config.seeds]
    ctx.bus.emit(StageStarted(stage="mask", total=len(pairs), description="masking documents"))
    items: dict[tuple[str, int], list[MaskedItem]] = {}
    for done, (masking, seed) in enumerate(pairs):
        ctx.check_cancel()
        try:
            items[(masking.spec, seed)] = prepare_items(every, masking, seed)
        except (RunCancelled, KeyboardInterrupt):
            raise
        except Exception as exc:  # this masking's conditions (of this seed) fail; the others still run
            items[(masking.spec, seed)] = []
            ctx.fail(plan, [c for c in plan.conditions if c.masking.spec == masking.spec and c.seed == seed],
                     masking, f"masking with seed {seed}", exc)
        ctx.bus.emit(Progress(stage="mask", completed=done + 1, total=len(pairs), info={"masking": masking.short_spec}))
    return Masked(documents=documents, cut=cut, train=train, items=items)


def _window(models: Mapping[str, LoadedModel]) -> str:
    """The narrowest model window in tokens and how to widen it, for the note on cut documents."""
    windows = {m.component.short_spec: window for m in models.values()
               if isinstance(window := getattr(m.adapter, "max_length", None), int)}
    if not windows:
        return ""
    model, tokens = min(windows.items(), key=lambda kv: kv[1])
    return (f" ({tokens:,} tokens, the window of {model}; a trained-* model's grows with seq_len=N or a larger "
            "size=, a pretrained model's is its position table)")
