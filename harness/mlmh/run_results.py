"""The last stages of a run: its typed results built from what the stages handed on (each condition's quality,
gap, downstream scores and costs; the findings; the crossover), then results.json, report.md, the plots and the
JSON Lines files written through :class:`~mlmh.rundir.RunDir`.

:class:`ResultsStage` is the part of :class:`mlmh.runner.Runner` that does this; it reads the runner's state
(:mod:`mlmh.run_state`) and plan, and reports failures by name through the runner's log like every stage.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from mlmh.events import Progress, StageStarted
from mlmh.findings.comparisons import compare
from mlmh.run_state import ROLES, SPLIT_OF_ROLE, RunLog, RunState
from mlmh.splits import group_key
from mlmh.types import (RESULTS_SCHEMA, ConditionResult, ConfigRecord, Crossover, DatasetInfo, DocumentSet, Finding,
                        Generation, GenerationCosts, GenerationRow, MetricResult, ModelRecord, RunResults, SampleRow,
                        Score, Versions)

if TYPE_CHECKING:
    from mlmh.plots import FigureStore

#: result fields that measure time, not outcome: resume and batch-size checks ignore them
TIMING_KEYS = frozenset({"seconds", "tokens_per_s", "started_at", "finished_at", "timings"})


class ResultsStage:
    """Building and writing a run's results; mixed into :class:`mlmh.runner.Runner`, whose attributes it reads."""

    state: RunState
    log: RunLog
    out: Path
    config: Any  # mlmh.runconfig.RunConfig
    run_dir: Any  # mlmh.rundir.RunDir
    bus: Any  # mlmh.events.EventBus

    @property
    def conditions(self) -> list[Any]:
        raise NotImplementedError

    @property
    def running(self) -> list[Any]:
        raise NotImplementedError

    def _note(self, text: str, level: str = "info", emit: bool = True) -> None:
        raise NotImplementedError

    def _error(self, component: str, what: str, exc: BaseException | str) -> None:
        raise NotImplementedError

    # -- results -------------------------------------------------------------------------------
    def _results(self, started: float) -> RunResults:
        """The run's typed results, built from what the stages handed on: results.json is their ``to_dict``."""
        headline = self.state.headline
        conditions = []
        for condition in self.conditions:
            row = self._condition_result(condition, headline)
            conditions.append(row)
            truncated = row.generation.truncated_documents
            if truncated:  # fit_to_windows estimates per word; a model may still cut a few unmasked tokens
                self._note(f"{condition.id}: {truncated} document(s) still exceeded the model window by a few "
                           "tokens; no masked word was among them (generation.truncated_tokens)",
                           "warning", emit=False)
        corpus, test = self.state.corpus, self.state.test
        results = RunResults(
            run_id=self.out.name,
            config=ConfigRecord.of(self.config),
            conditions=conditions,
            schema_version=RESULTS_SCHEMA,
            versions=versions(),
            dataset=DatasetInfo(name=self.config.dataset, source=corpus.source if corpus else "",
                                train_documents=len(corpus.split("train")) if corpus else 0,
                                validation_documents=len(corpus.split("validation")) if corpus else 0,
                                test_documents=len(test.documents) if test else 0,
                                validation_groups=len({group_key(d) for d in corpus.split("validation")}) if corpus else 0),
            documents={role: DocumentSet(split=SPLIT_OF_ROLE[role], documents=len(self.state.documents.get(role, [])),
                                         ids=[d.id for d in self.state.documents.get(role, [])],
                                         groups=len({group_key(d) for d in self.state.documents.get(role, [])}),
                                         cut=self.state.cut.get(role, 0)) for role in ROLES},
            headline=headline,
            filler_word=self.state.filler_word,
            n_samples=sum(len(docs) for docs in self.state.documents.values()),  # per condition, seen + unseen
            baseline=self.state.baseline,
            correlations=list(self.state.correlations),
            models={spec: ModelRecord.of(m.identity, m.component.model_kind, m.training, m.component.short_spec)
                    for spec, m in self.state.models.items()},
            notes=list(self.log.notes),
            errors=list(self.log.errors),
            started_at=datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
            timings=dict(self.log.timings),  # as written: the report stage that writes it is timed after
        )
        results.findings = self._findings(results)
        results = self._finite(results)
        results.comparisons = compare(results)  # on the finite results, as report.md states them
        results.crossover = self._crossover(results, headline)
        return results

    def _condition_result(self, condition: Any, headline: str) -> ConditionResult:
        """One condition's quality per document set, its seen - unseen gap, downstream scores and generation
        costs; a failed one says why it has none."""
        from mlmh.memorization import gap

        quality = self.state.quality.get(condition.id, {})
        gaps: dict[str, Score] = {}
        if "seen" in quality and "unseen" in quality:
            seen, unseen = quality["seen"], quality["unseen"]
            pairs: list[tuple[str, Score | None, Score | None]] = [
                (name, score, unseen.metrics.get(name)) for name, score in seen.metrics.items()]
            pairs.append(("verbatim_recall", seen.verbatim_recall, unseen.verbatim_recall))
            for name, a, b in pairs:
                found = gap(a, b)
                if found is not None:
                    gaps[name] = found
        row = condition.row()
        return ConditionResult(
            **row, seen=quality.get("seen"), unseen=quality.get("unseen"), gap=gaps,
            metrics=quality[headline].metrics if headline in quality else {},
            downstream=self.state.downstream.get(condition.id, {}),
            generation=GenerationCosts.of(self.state.generations.get(condition.id, [])),
            failed=self.log.failed.get(condition.id))

    def _crossover(self, results: RunResults, headline: str) -> Crossover | None:
        """The data-constrained crossover when the run is a sweep (:mod:`mlmh.findings.crossover`), paired over the unseen
        documents' per-document scores; a failure is reported by name and the rest of the results stand."""
        from mlmh.findings.crossover import summarise

        per_document = self._unseen_per_document() if headline == "unseen" else {}
        try:
            from mlmh.contracts import finite_only

            summary = summarise(results, per_document, seed=self.config.seeds[0])
            return finite_only(summary)[0]  # results.json is strict JSON
        except Exception as exc:  # noqa: BLE001 - the run's other results are written regardless
            self._error("crossover", "results", exc)
            results.errors = list(self.log.errors)
            return None

    def _unseen_per_document(self) -> dict[str, dict[str, dict[str, Any]]]:
        """condition -> metric -> unseen document -> its score (the metrics' per-sample values); the filler and
        deletion baselines of each masking and seed under :func:`mlmh.findings.paper_claims.baseline_arm`'s names."""
        from mlmh.findings.paper_claims import baseline_arm

        arms = [(c.id, self.state.metric_results.get(c.id, []), self.state.generations.get(c.id, []))
                for c in self.conditions]
        arms += [(baseline_arm(name, masking, seed), results, generations)
                 for (name, masking, seed), (results, generations) in self.state.baseline_results.items()]
        per_document: dict[str, dict[str, dict[str, Any]]] = {}
        for arm, results, generations in arms:
            scored = [g for g in generations if g.masked_words and self.state.role_of.get(g.doc_id) == "unseen"]
            per_document[arm] = {}
            for doc, values in _per_sample(results, scored).items():
                for metric, value in values.items():
                    per_document[arm].setdefault(metric, {})[doc] = value
        return per_document

    def _findings(self, results: RunResults) -> list[Finding]:
        """Both papers' claims tested on this run (:mod:`mlmh.findings`); a failure is reported by name and the
        rest of the results stand."""
        from mlmh.findings.claims import run_cells
        from mlmh.findings.decide import run_findings

        try:
            per_document = self._unseen_per_document() if results.headline == "unseen" else {}
            cells = run_cells(self.running, self.state.generations, self.state.role_of)
            return run_findings(results, per_document, self.state.task_items, cells, self.config.seeds[0])
        except Exception as exc:  # noqa: BLE001 - the run's other results are written regardless
            self._error("findings", "results", exc)
            results.errors = list(self.log.errors)
            return []

    def _finite(self, results: RunResults) -> RunResults:
        """``results`` with any NaN or infinity that slipped past the components' checks written as null,
        and a note saying where (results.json is strict JSON); as built when every number is finite."""
        from mlmh.contracts import finite_only

        cleaned, where = finite_only(results)
        if not where:
            return results
        note = (f"results: {len(where)} value(s) were not finite numbers and are written as null: "
                f"{', '.join(where[:5])}{' ...' if len(where) > 5 else ''}")
        self._note(note, "warning")
        cleaned.notes = list(self.log.notes)
        return cleaned

    def _write(self, results: RunResults, figures: FigureStore | None = None) -> None:
        from mlmh.report import write_report
        from mlmh.reproduce import sample_id

        self.bus.emit(StageStarted(stage="report", total=1, description="writing results, report and plots"))
        run = self.run_dir
        run.write_generations(
            GenerationRow(sample=sample_id(index, g.doc_id), condition=condition.id, doc_id=g.doc_id,
                          role=self.state.role_of.get(g.doc_id), original=g.original, masked_text=g.masked_text, text=g.text)
            for index, condition in enumerate(self.conditions) for g in self.state.generations.get(condition.id, []))
        if self.config.log_samples:
            run.write_samples(self._sample_rows(results.headline))
        write_report(results, run, figures)  # figures drawn before from the same data come from the run cache
        run.write_results(results)  # last: a run with results.json is finished
        self.bus.emit(Progress(stage="report", completed=1, total=1))

    def _sample_rows(self, headline: str) -> Iterator[SampleRow]:
        """samples.jsonl's rows: each generation with its step trace and per-sample scores."""
        for condition in self.conditions:
            by_doc = _per_sample(self.state.metric_results.get(condition.id, []),
                                 [g for g in self.state.generations.get(condition.id, []) if g.masked_words
                                  and self.state.role_of.get(g.doc_id) == headline])
            for g in self.state.generations.get(condition.id, []):
                yield SampleRow(condition=condition.id, generation=g, metrics=by_doc.get(g.doc_id, {}),
                                role=self.state.role_of.get(g.doc_id))


def _per_sample(results: list[MetricResult], gens: list[Generation]) -> dict[str, dict[str, Any]]:
    """Per-document metric values of the scored generations (the metrics' per-sample lists follow their order)."""
    out: dict[str, dict[str, Any]] = {}
    for n, g in enumerate(gens):
        out[g.doc_id] = {r.name: (r.per_sample[n] if n < len(r.per_sample) else None) for r in results}
    return out


def versions() -> Versions:
    """Versions of mlmh, the model and metric libraries, and every loaded plugin."""
    from mlmh import __version__
    from mlmh.implementation import library_versions
    from mlmh.plugin_manager import describe_plugins

    return Versions(libraries={"mlmh": __version__, **dict(library_versions())},
                    plugins={p["name"]: p.get("version") for p in describe_plugins()})


def strip_timings(results: Any) -> Any:
    """``results`` without the fields that measure time (for comparing two runs of one configuration)."""
    if isinstance(results, dict):
        return {k: strip_timings(v) for k, v in results.items() if k not in TIMING_KEYS}
    if isinstance(results, list):
        return [strip_timings(v) for v in results]
    return results
