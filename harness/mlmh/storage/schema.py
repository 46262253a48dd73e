"""What a file mlmh reads back must look like, and the one check of it: every run file and human-rating file is
parsed and checked here before any reader types it (:class:`mlmh.storage.rundir.RunDir`,
:mod:`mlmh.storage.jsonl`), so a hand-edited or damaged file is one line naming the file and the key, never a
Python error from deep inside a reader.

The rules, for every file: strict JSON (no NaN or Infinity, no number too large for a float or an integer too long
to read), nested at most :data:`MAX_DEPTH` levels (no RecursionError), and each key of the right type: a verdict
from its closed set (:data:`mlmh.types.VERDICTS`), every number finite. A shape is a type (or tuple of types), or one
of :class:`Maybe`, :class:`ListOf`, :class:`MapOf`, :class:`Obj`, :class:`OneOf`; :func:`problem` says where a value
does not have its shape.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Iterable

from mlmh.errors import DataError
from mlmh.types import RESULTS_SCHEMA, VERDICTS
from mlmh.types.study import STUDY_SCHEMA
from mlmh.types.runconfig import run_options

#: how deep a file read back may nest objects and lists (results.json's deepest block is 6 levels)
MAX_DEPTH = 64


class Maybe:
    """``shape`` or null."""

    def __init__(self, shape: Any) -> None:
        self.shape = shape


class ListOf:
    """A list whose every item has ``shape``; ``unique``: a key no two items share (a condition's id: every reader
    keys its rows by it)."""

    def __init__(self, shape: Any, *, unique: str | None = None) -> None:
        self.shape = shape
        self.unique = unique


class MapOf:
    """An object whose every value has ``shape``; ``int_keys``: every key is an integer written as text."""

    def __init__(self, shape: Any, *, int_keys: bool = False) -> None:
        self.shape = shape
        self.int_keys = int_keys


class Obj:
    """An object with these keys (others are free); ``required`` ones must be there."""

    def __init__(self, keys: dict[str, Any], required: Iterable[str] = ()) -> None:
        self.keys = keys
        self.required = tuple(required)


class OneOf:
    """One value of a closed set (a verdict)."""

    def __init__(self, choices: Iterable[Any], hint: str = "") -> None:
        self.choices = tuple(choices)
        self.hint = hint  # what to do about a value outside the set


NUMBER = (int, float)
TYPE_NAMES = {dict: "an object", list: "a list", str: "text", int: "an integer", bool: "true or false",
              NUMBER: "a number", float: "a number"}
_INT_KEY = re.compile(r"-?\d+")


def problem(value: Any, shape: Any, where: str) -> str | None:
    """None when ``value`` has ``shape``; else ``"KEY: must be ..."`` for the first place it does not."""
    if isinstance(shape, Maybe):
        return None if value is None else problem(value, shape.shape, where)
    if isinstance(shape, OneOf):
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and value in shape.choices:
            return None
        return f"{where}: must be one of {', '.join(map(str, shape.choices))}, not {_shown(value)}{shape.hint}"
    if isinstance(shape, ListOf):
        if not isinstance(value, list):
            return f"{where}: must be a list, not {_kind(value)}"
        found = next((p for n, v in enumerate(value) if (p := problem(v, shape.shape, f"{where}[{n}]"))), None)
        return found or (_repeated(value, shape.unique, where) if shape.unique else None)
    if isinstance(shape, MapOf):
        if not isinstance(value, dict):
            return f"{where}: must be an object, not {_kind(value)}"
        if shape.int_keys:
            bad = next((k for k in value if not _INT_KEY.fullmatch(k)), None)
            if bad is not None:
                return f"{where}: keys must be integers, not {bad!r}"
        return next((p for k, v in value.items() if (p := problem(v, shape.shape, f"{where}.{k}"))), None)
    if isinstance(shape, Obj):
        if not isinstance(value, dict):
            return f"{where}: must be an object, not {_kind(value)}"
        missing = [k for k in shape.required if k not in value]
        if missing:
            return f"{where}: missing key(s) {', '.join(missing)}"
        return next((p for k, s in shape.keys.items() if k in value and (p := problem(value[k], s, f"{where}.{k}"))),
                    None)
    wrong = isinstance(value, bool) and shape is not bool and bool not in (shape if isinstance(shape, tuple) else ())
    if wrong or not isinstance(value, shape):
        return f"{where}: must be {TYPE_NAMES.get(shape, shape)}, not {_kind(value)}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{where}: must be a finite number, not {value}"
    return None


def _repeated(items: list, key: str, where: str) -> str | None:
    """Where two items of ``items`` share their ``key``, or None."""
    first: dict[Any, int] = {}
    for n, item in enumerate(items):
        if isinstance(item, dict) and key in item:
            if item[key] in first:
                earlier = f"{where.removeprefix('$.')}[{first[item[key]]}]"
                return f"{where}[{n}].{key}: {_shown(item[key])} repeats {earlier}'s; each {key} must be unique"
            first[item[key]] = n
    return None


def _kind(value: Any) -> str:
    return "null" if value is None else {dict: "an object", list: "a list", str: "text", bool: "true/false"}.get(
        type(value), type(value).__name__)


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else _kind(value)


def located(found: str) -> str:
    """``$.a.b: ...`` -> ``key a.b ...``: where in the file, in the words of the message."""
    where, _, what = found.partition(": ")
    return what if where == "$" else f"key {where.removeprefix('$.')} {what}"


def parse_json(text: str, *, finite: bool = True) -> Any:
    """Strict JSON of a file read back: no NaN or Infinity, no number that overflows (unless not ``finite``: a
    user's dataset may carry NaN in fields mlmh never reads), at most :data:`MAX_DEPTH` levels deep. Raises
    ValueError with the reason (a :class:`json.JSONDecodeError` for bad syntax)."""
    try:
        data = json.loads(text, parse_constant=float)  # NaN, Infinity: refused below, by key
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    found = _walk(data, finite)
    if found:
        raise ValueError(located(found))
    return data


def _walk(value: Any, finite: bool) -> str | None:
    """The first place, in file order, where ``value`` nests deeper than :data:`MAX_DEPTH` levels or (``finite``)
    holds a number that is not finite (NaN, Infinity, or 1e400, which reads as infinity); walked without recursion.
    A place too deep is named by its top key (the full path would be as long as the nesting)."""
    stack: list[tuple[Any, str, int]] = [(value, "$", 0)]
    while stack:
        item, at, depth = stack.pop()
        if finite and isinstance(item, float) and not math.isfinite(item):
            return f"{at}: must be a finite number, not {item}"
        if isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                top = re.match(r"\$(\.[^.\[]+|\[\d+\])?", at).group(0)  # type: ignore[union-attr]  # a path starts with $
                return f"{top}: nested deeper than {MAX_DEPTH} levels"
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            children = [(v, f"{at}.{k}" if isinstance(item, dict) else f"{at}[{k}]", depth + 1) for k, v in pairs]
            stack.extend(reversed(children))
    return None


def checked(path: Path, what: str, text: str, shape: Any, wrap: Any = None) -> Any:
    """``text`` (the content of ``path``) as JSON of ``shape``; a DataError naming the file and the key when it is
    not. ``wrap`` turns an older layout of the file's object into the current one before the check."""
    try:
        data = parse_json(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not a readable {what} (invalid JSON at line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:
        raise DataError(f"{path}: not a readable {what}: {exc}") from None
    if wrap is not None and isinstance(data, dict):
        data = wrap(data)
    found = problem(data, shape, "$")
    if found:
        raise DataError(f"{path}: not a readable {what}: {located(found)}")
    return data


def check_row(path: Path, number: int, row: dict[str, Any], shape: Any) -> dict[str, Any]:
    """One line of a JSON-lines file checked against ``shape``: a DataError naming the file, the line and the key."""
    found = problem(row, shape, "$")
    if found:
        raise DataError(f"{path}:{number}: {located(found)}")
    return row


# -- the shapes of the files mlmh reads back (docs/RESULTS.md) ------------------------------------------
SCORE = Obj({"value": Maybe(NUMBER), "ci_low": Maybe(NUMBER), "ci_high": Maybe(NUMBER),
             "higher_is_better": bool, "info": dict, "error": Maybe(str)}, required=("value",))
SCORE_MAP = MapOf(Maybe(SCORE))
SCORES = Maybe(SCORE_MAP)
ROLE_QUALITY = Maybe(Obj({"documents": int, "scored": int, "metrics": SCORES, "verbatim_recall": Maybe(SCORE),
                          "filler": SCORES, "deletion": SCORES, "above_filler": SCORES,
                          "above_deletion": SCORES, "nothing_masked": int, "truncated_documents": int}))
NUMBERS = MapOf(Maybe(NUMBER))
#: a paired difference over a downstream task's test items (mlmh.types.result_blocks.Contrast)
CONTRAST = Obj({"value": Maybe(NUMBER), "ci_low": Maybe(NUMBER), "ci_high": Maybe(NUMBER), "items": int})
CONDITION = Obj({"id": str, "model": str, "model_kind": str, "masking": str, "sampler": str, "seed": int,
                 "masking_ratio": Maybe(NUMBER), "steps": Maybe(int), "seen": ROLE_QUALITY,
                 "unseen": ROLE_QUALITY, "control": ROLE_QUALITY, "gap": SCORES, "gap_above_filler": SCORES,
                 "control_gap": SCORES, "metrics": SCORES,
                 "downstream": Maybe(MapOf(NUMBERS)), "downstream_augmented": Maybe(MapOf(NUMBERS)),
                 # mode -> task -> score -> against -> a paired contrast (mlmh.types.result_blocks.Contrast)
                 "downstream_contrasts": Maybe(MapOf(MapOf(MapOf(MapOf(CONTRAST))))),
                 "generation": Maybe(Obj({
                     **{k: int for k in ("samples", "forward_passes", "generated_tokens", "tokens_processed",
                                         "truncated_tokens", "truncated_documents")},
                     "seconds": NUMBER, "tokens_per_s": Maybe(NUMBER)})), "failed": Maybe(str)},
                required=("id", "model", "model_kind", "masking", "sampler", "seed"))
#: a finding's verdict: one of the closed set; "skipped" is how results written before schema 3 said "not tested"
VERDICT = OneOf((*VERDICTS, "skipped"))
FINDING_PART = Obj({"label": str, "statistic": Maybe(NUMBER), "ci_low": Maybe(NUMBER), "ci_high": Maybe(NUMBER),
                    "verdict": VERDICT, "documents": int})
FINDING = Obj({"claim": str, "source": str, "text": str, "verdict": VERDICT, "statement": str,
               "statistic": Maybe(NUMBER), "ci_low": Maybe(NUMBER), "ci_high": Maybe(NUMBER), "unit": str,
               "documents": int, "conditions": ListOf(str), "caveats": ListOf(str), "parts": ListOf(FINDING_PART),
               # what every face reads of a finding's extra: its grounds and next step (mlmh.findings.grounds)
               "extra": Obj({"rests_on": ListOf(str), "next_step": Obj({"command": str, "why": str}),
                             "reason": str})}, required=("claim", "verdict"))
#: what the report and the figures read of a trained model's card (mlmh.types.result_blocks.TRAINING_FACTS)
CURVE = ListOf(Obj({"step": NUMBER, "loss": Maybe(NUMBER)}, required=("step", "loss")))  # null: a loss that was NaN
TRAINING = Obj({**{k: Maybe(NUMBER) for k in (
    "tokens_seen", "supervised_targets", "steps_run", "step_kept", "validation_loss", "final_loss", "heldout_accuracy",
    "best_constant_accuracy", "unigram_baseline_accuracy", "train_seconds", "approx_train_flops", "parameters",
    "unique_tokens", "heldout_targets", "mask_ratio", "head_warmup_steps", "output_vocabulary")},
    **{k: Maybe(str) for k in ("objective", "init", "mask_schedule", "budget", "stop_reason", "device",
                                 "validation_holds")},
    "beats_constant": Maybe(bool), "stopped_early": Maybe(bool), "train_curve": Maybe(CURVE),
    "validation_curve": Maybe(CURVE), "validation_block_losses": Maybe(ListOf(ListOf(Maybe(NUMBER)))),
    "accuracy_at_ratio": Maybe(MapOf(Maybe(Obj({"accuracy": Maybe(NUMBER), "best_constant_accuracy": Maybe(NUMBER),
                                                   "unigram_baseline_accuracy": Maybe(NUMBER),
                                                   "beats_constant": Maybe(bool)}))))})
MODEL = Obj({"identity": str, "model_kind": str, "label": str, "training": TRAINING})
CORRELATION = Obj({"metric": str, "task": str, "score": str, "n": int, "summary": str,
                   **{k: Maybe(NUMBER) for k in ("spearman", "spearman_p", "pearson", "pearson_p")},
                   "spearman_ci": Maybe(ListOf(NUMBER)), "pearson_ci": Maybe(ListOf(NUMBER))})
RUN_ERROR = Obj({"component": str, "during": str, "error": str})
HUMAN_SCORE = Obj({"value": Maybe(NUMBER), "ci_low": Maybe(NUMBER), "ci_high": Maybe(NUMBER), "n": int,
                   "higher_is_better": bool}, required=("value",))
HUMAN = Obj({"criteria": ListOf(str), "n_raters": int, "raters": ListOf(str), "n_items": int,
             "conditions": MapOf(MapOf(HUMAN_SCORE)), "agreement": MapOf(Maybe(NUMBER)), "agreement_method": str})
SWEEP_POINT = Obj({"unique_tokens": NUMBER, "epochs": NUMBER, "objective": str, "model": Maybe(str),
                   "validation_loss": Maybe(NUMBER), "approx_train_flops": Maybe(NUMBER),
                   "train_seconds": Maybe(NUMBER), "unseen": SCORE_MAP, "filler": SCORE_MAP, "deletion": SCORE_MAP},
                  required=("unique_tokens", "epochs", "objective", "unseen", "filler", "deletion"))
SWEEP_CROSSOVER = Obj({"unique_tokens": NUMBER, "measure": str, "epochs": Maybe(NUMBER), "ahead_from": Maybe(NUMBER),
                       "swept_epochs": ListOf(NUMBER),
                       "approx_train_flops": Maybe(NUMBER), "per_epoch": ListOf(Obj(
                           {"epochs": NUMBER, "difference": Maybe(NUMBER), "ci_low": Maybe(NUMBER),
                            "ci_high": Maybe(NUMBER)}, required=("epochs",))),
                       "epochs_ci": ListOf(Maybe(NUMBER)), "statement": str},
                      required=("unique_tokens", "measure", "epochs", "swept_epochs", "per_epoch", "statement"))
CROSSOVER = Obj({"points": ListOf(SWEEP_POINT), "metrics": ListOf(str), "crossovers": ListOf(SWEEP_CROSSOVER),
                 "answer": str, "comparability": str})
#: the run's comparisons (mlmh.types.result_blocks.Comparisons): every item's sentence, and what the faces read beside it
PAIR = ListOf(int)
COMPARISONS = Obj({
    "kinds": ListOf(Obj({"role": str, "metric": str, "kinds": ListOf(str), "verdict": str, "settings": int,
                         "wins": PAIR, "sure": PAIR, "caveats": ListOf(str), "detail": str, "statement": str},
                        required=("metric", "verdict", "statement"))),
    "disagreements": ListOf(Obj({"metric": str, "unseen": str, "seen": str, "statement": str},
                                required=("metric", "statement"))),
    "memorisation": ListOf(Obj({"model": str, "metric": str, "verdict": str, "flagged": int, "conditions": int,
                                "largest": str, "gap": Maybe(SCORE), "statement": str},
                               required=("model", "verdict", "statement"))),
    "baselines": ListOf(Obj({"role": str, "metric": str, "masking": str, "condition": str, "value": Maybe(NUMBER),
                             "filler": Maybe(NUMBER), "deletion": Maybe(NUMBER), "beats_filler": bool,
                             "beats_deletion": Maybe(bool), "statement": str}, required=("metric", "statement"))),
    "ratio_trends": ListOf(Obj({"role": Maybe(str), "metric": str, "statement": str, "series": ListOf(Obj(
        {"series": str, "direction": str, "rho": Maybe(NUMBER), "ratios": ListOf(NUMBER), "values": ListOf(NUMBER)}))},
        required=("metric", "statement"))),
    "correlations": ListOf(Obj({"metric": str, "task": str, "score": str, "statement": str}, required=("statement",))),
    "plateaus": ListOf(Obj({"model": str, "statement": str}, required=("model", "statement")))})
#: the components' declarations a run's verdicts read, as it recorded them (mlmh.types.result_blocks.Declared)
DECLARED = Obj({"headlines": ListOf(Obj({"result": str, "rank": int, "label": str, "unit": str, "findings": bool,
                                         "sweep": bool, "baselines": bool, "rewards_deletion": bool},
                                        required=("result",)), unique="result"),
                "swept_models": MapOf(str), "fluency": Maybe(ListOf(str))})
#: results.json as the report, the CLI summary and the TUI read it (docs/RESULTS.md); null means absent
#: where RunResults.from_dict treats it so, except for ``config``, which every reader looks into (its typed keys:
#: mlmh.types.result_blocks.ConfigRecord)
RESULTS = Obj({
    "schema_version": OneOf(range(1, RESULTS_SCHEMA + 1), " (a newer mlmh wrote it? upgrade mlmh)"), "run_id": Maybe(str),
    "config": Obj({"preset": str, "dataset": str, "data": Maybe(str), "seeds": ListOf(int)}),
    "conditions": ListOf(CONDITION, unique="id"),  # every reader keys a condition's row by its id (the TUI's tables)
    "versions": Maybe(Obj({"plugins": MapOf(Maybe(str))})),
    "dataset": Maybe(Obj({"name": str, "source": str, "train_documents": int, "validation_documents": int,
                          "test_documents": int, "validation_groups": int, "grouped": bool})),
    "documents": Maybe(MapOf(Obj({"split": str, "documents": int, "ids": ListOf(str), "groups": int, "cut": int}))),
    "headline": Maybe(str), "filler_word": Maybe(str), "n_samples": Maybe(int),
    "baseline": Maybe(MapOf(NUMBERS)), "correlations": Maybe(ListOf(CORRELATION)),
    # each a mlmh.types.result_blocks.DownstreamTest
    "downstream_tests": Maybe(ListOf(Obj({
        "task": str, "score": str, "items": int, "learns": Maybe(bool), "reason": str, "training_sets": int,
        "varies": Maybe(bool), "sd": Maybe(NUMBER), "sd_of": str, "mdd": Maybe(NUMBER), "power": NUMBER,
        "confidence": NUMBER,
        **{k: Maybe(CONTRAST) for k in ("real_vs_none", "real_vs_constant")}}))),
    "models": Maybe(MapOf(MODEL)), "findings": Maybe(ListOf(FINDING)), "comparisons": Maybe(COMPARISONS),
    "notes": Maybe(ListOf(str)),
    "errors": Maybe(ListOf(RUN_ERROR)), "started_at": Maybe(str), "timings": Maybe(MapOf(NUMBER)),
    "human": Maybe(HUMAN), "crossover": Maybe(CROSSOVER), "declared": Maybe(DECLARED)}, required=("conditions",))
#: the JSON shape of a run option's value, by how the option is written (mlmh.types.runconfig.SHAPES)
OPTION_SHAPES = {"spec": str, "path": Maybe(str), "text": str, "specs": ListOf(str), "seeds": ListOf(int),
                 "limit": NUMBER, "share": NUMBER, "count": int, "flag": bool}


def run_config_shape() -> Obj:
    """The resolved configuration as config.json holds it, made from the one declaration of the run options
    (:func:`mlmh.types.runconfig.run_options`), so an option added there is checked here too: the preset's name and
    source, then every option shaped as it is written; those a preset must set are required."""
    declared = run_options()
    return Obj({"preset": str, "source": str, **{key: OPTION_SHAPES[option.shape] for key, option in declared.items()}},
               required=("preset", "source", *(key for key, option in declared.items() if option.required)))


#: config.json: the resolved configuration (mlmh.types.runconfig.RunConfig) a run saved for ``--resume``
CONFIG = Obj({"config": run_config_shape()}, required=("config",))
HUMAN_KEY = Obj({"seed": int, "criteria": ListOf(str), "items": MapOf(Obj(
    {"condition": str, "doc_id": str, "text_digest": str}, required=("condition", "doc_id")))}, required=("items",))
#: one line of samples.jsonl: a generation with its step trace (mlmh.types.Generation) and per-sample scores
STEP = Obj({"tokens": ListOf(str), "changed": ListOf(int), "confidences": MapOf(NUMBER, int_keys=True),
            "masked": ListOf(int)}, required=("tokens", "changed"))
GENERATION = Obj({
    **{k: str for k in ("doc_id", "model", "model_kind", "sampler", "masking", "original", "masked_text", "text")},
    "seed": int, "masked_words": ListOf(int), "output_words": MapOf(str, int_keys=True), "steps": ListOf(STEP),
    **{k: int for k in ("forward_passes", "tokens_processed", "generated_tokens", "truncated_tokens")},
    "seconds": NUMBER, "info": dict},
    required=("doc_id", "model", "model_kind", "sampler", "masking", "seed", "original", "masked_text", "text",
              "masked_words", "output_words"))
SAMPLE = Obj({"condition": str, "role": Maybe(str), "generation": GENERATION, "metrics": Maybe(NUMBERS)},
             required=("condition", "generation"))


#: a study's study.json (mlmh.types.study.StudyResults, written by mlmh.api.study)
STUDY_CELL = Obj({"row": str, "dataset": str, "value": Maybe(NUMBER), "low": Maybe(NUMBER), "high": Maybe(NUMBER),
                  "unit": str, "task": str}, required=("row", "dataset"))
STUDY = Obj({
    "schema_version": OneOf((STUDY_SCHEMA,), " (another mlmh wrote it: run the study again)"), "preset": str,
    "datasets": ListOf(Obj({"label": str, "dataset": str, "data": Maybe(str), "run": str, "documents": int,
                            "seconds": NUMBER}, required=("label", "dataset", "run")), unique="label"),
    "claims": ListOf(Obj({
        "claim": str, "text": str, "across": str, "statement": str, "pooled": Maybe(MapOf(NUMBER)), "pooled_what": str,
        "datasets": MapOf(Obj({"verdict": VERDICT, "value": Maybe(NUMBER), "low": Maybe(NUMBER), "high": Maybe(NUMBER),
                               "estimate": Maybe(Obj({"what": str, "value": Maybe(NUMBER), "se": Maybe(NUMBER),
                                                      "df": Maybe(NUMBER)}))}, required=("verdict",)))},
        required=("claim", "text", "datasets", "across", "statement"))),
    "quality": ListOf(STUDY_CELL), "downstream": ListOf(STUDY_CELL), "failed": MapOf(str)},
    required=("schema_version", "preset", "datasets", "claims"))
