"""The data stage: the run's corpus, the documents each set regenerates, and the set the comparison leads with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from mlmh.config.plan import RunPlan
from mlmh.data.selection import select_documents, subcorpus
from mlmh.errors import MlmhError
from mlmh.events import Progress, StageStarted
from mlmh.plugins.contracts import describe_error
from mlmh.run.context import RunContext
from mlmh.types import Corpus, Document

#: the document sets of a run: regenerations of train documents (the synthetic corpus of the paper's protocol), of
#: test documents that no model trained on or was selected on, and, where the run holds one (``control``), of the
#: train authors' texts no model learned (mlmh.data.splits.with_control), which memorisation is judged against
ROLES = ("seen", "unseen", "control")
SPLIT_OF_ROLE = {"seen": "train", "unseen": "test", "control": "control"}


@dataclass(frozen=True)
class RunData:
    """What the data stage makes."""

    corpus: Corpus
    documents: Mapping[str, list[Document]]  # role -> the documents regenerated (before the mask stage cuts them)
    role_of: Mapping[str, str]  # document id -> role
    headline: str  # the set the comparison leads with: unseen when there is a test split
    test: Corpus  # the real test split the downstream tasks test on


def load_data(plan: RunPlan, ctx: RunContext) -> RunData:
    """Load the plan's dataset, pick each set's documents and check every component against the corpus
    (:meth:`~mlmh.config.plan.RunPlan.check`, which may drop a preset's default that cannot run on it)."""
    config = plan.config
    name = plan.dataset.name  # notes name the dataset; its spec is in the configuration
    ctx.bus.emit(StageStarted(stage="data", total=1, description=f"loading dataset {name}"))
    try:
        corpus = plan.load_corpus()
    except MlmhError:
        raise
    except Exception as exc:  # the run's one dataset: nothing can run without it, but say whose fault
        raise MlmhError(f"{plan.describe(plan.dataset)} failed to load "
                        f"{config.data or 'its bundled sample'}: {describe_error(exc)}") from None
    if config.data is None:
        ctx.note(f"dataset {name}: using its {corpus.source} (pass --data PATH for the real files)")
    for note in corpus.notes:
        ctx.note(f"dataset {name}: {note}")
    repeated = len(corpus.split("train")) - len(corpus.texts("train"))
    if repeated:
        ctx.note(f"dataset {name}: {repeated} train document(s) repeat the text of another (a text in "
                 "several pairs); trained models learn each text once")
    documents = {role: select_documents(corpus, config.limit, SPLIT_OF_ROLE[role]) for role in ROLES}
    if not documents["seen"]:
        raise MlmhError(f"dataset {config.dataset} has no train documents to generate from ({corpus.source})")
    if not documents["unseen"]:
        ctx.note(f"dataset {name} has no test split: quality is measured on seen (train) "
                 "documents only, and cannot separate generation from memorization", "warning")
    data = RunData(corpus=corpus, documents=documents,
                   role_of={d.id: role for role in ROLES for d in documents[role]},
                   headline="unseen" if documents["unseen"] else "seen",
                   test=subcorpus(corpus, corpus.split("test")))
    if any(not m.name.startswith("trained-") for m in plan.models):
        ctx.note("seen / unseen are the dataset's train / test splits; mlmh does not know what a user "
                 "checkpoint (hf-*) was trained on")
    plan.check(corpus)
    for note in plan.notes:
        ctx.note(note)
    ctx.bus.emit(Progress(stage="data", completed=1, total=1,
                          info={role: len(docs) for role, docs in documents.items()}))
    return data
