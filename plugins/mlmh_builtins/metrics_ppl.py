"""Generative perplexity: how likely a reference causal LM finds the generations.

The reference model is a transformers causal LM given by ``gen-ppl:path=DIR`` (a local directory or a
hub name already in the local cache), or by the ``MLMH_GENPPL_MODEL`` environment variable when the
spec leaves ``path`` empty. A separate param (not a nested model spec) keeps the ``name:k=v,k=v`` spec
syntax unambiguous.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any, Sequence

import numpy as np

from mlmh import bounds
from mlmh import hookimpl
from mlmh.components import Metric, ScoringItem
from mlmh.errors import ModelError, SpecError
from mlmh.params import Param
from mlmh.stats import method_info, resample_ci
from mlmh.types import MetricResult
from mlmh_builtins.metrics_common import base_info, mean_result

ENV_MODEL = "MLMH_GENPPL_MODEL"
_MODELS: dict[str, tuple[Any, Any]] = {}
_MODELS_LOCK = threading.Lock()


def load_reference_lm(path: str) -> tuple[Any, Any]:
    """(tokenizer, model) of a causal LM, loaded once per process and path, in eval mode."""
    with _MODELS_LOCK:
        if path not in _MODELS:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            from mlmh.checkpoints import from_pretrained, local_checkpoint

            local_checkpoint(path, "gen-ppl")
            tokenizer = from_pretrained(AutoTokenizer, path, what="gen-ppl")
            model = from_pretrained(AutoModelForCausalLM, path, what="gen-ppl")
            model.eval()
            _MODELS[path] = (tokenizer, model)
        return _MODELS[path]


def sequence_nll(tokenizer: Any, model: Any, text: str, max_tokens: int) -> tuple[float, int, int]:
    """(summed NLL in nats, predicted tokens, tokens cut off) of ``text``; a BOS token, when the
    tokenizer has one, is prepended so the first word is predicted too."""
    import torch

    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    bos = tokenizer.bos_token_id
    if bos is None:
        bos = tokenizer.cls_token_id
    if bos is not None:
        ids = [bos, *ids]
    cut = max(0, len(ids) - max_tokens)
    ids = ids[:max_tokens]
    if len(ids) < 2:
        return 0.0, 0, cut
    input_ids = torch.tensor([ids])
    with torch.no_grad():
        logits = model(input_ids=input_ids).logits[0, :-1].float()
    nll = torch.nn.functional.cross_entropy(logits, input_ids[0, 1:], reduction="sum")
    return float(nll), len(ids) - 1, cut


class GenPerplexityMetric(Metric):
    """Generative perplexity under a reference causal LM (as in Lou et al. 2024 / Li et al. 2024 for
    non-autoregressive text generation); lower = the reference LM finds the text more fluent."""

    name = "gen-ppl"
    description = "perplexity of the generations under a reference causal LM (path=DIR or $MLMH_GENPPL_MODEL)"
    higher_is_better = False
    parameters = (
        Param("path", str, "", f"causal LM dir or cached hub name; empty = ${ENV_MODEL}"),
        Param("aggregation", str, "token", "corpus value: token-weighted exp(mean NLL) or mean of per-sample ppl", choices=("token", "sample")),
        Param("max_tokens", int, 0, "truncate each text to this many tokens; 0 = the model's window", min=0, max=bounds.SEQUENCE),
    )

    def _reference_path(self) -> str:
        path = self.params["path"] or os.environ.get(ENV_MODEL, "")
        if not path:
            raise SpecError(f"gen-ppl needs a reference causal LM: gen-ppl:path=DIR or set {ENV_MODEL}")
        return path

    def cache_identity(self) -> str | None:
        """The reference LM's files (the spec may leave its path to the environment)."""
        from mlmh.adapters import model_files_identity

        try:
            return model_files_identity(self._reference_path())
        except SpecError:
            return None

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        path = self._reference_path()
        tokenizer, model = load_reference_lm(path)
        window = int(getattr(model.config, "max_position_embeddings", 0) or getattr(model.config, "n_positions", 0) or 1024)
        max_tokens = min(self.params["max_tokens"] or window, window)
        measured = [sequence_nll(tokenizer, model, item.prediction, max_tokens) for item in items]
        nll = np.asarray([m[0] for m in measured])
        counts = np.asarray([m[1] for m in measured])
        per_sample = [math.exp(s / c) if c else None for s, c in zip(nll, counts)]
        info = base_info(
            self, "transformers AutoModelForCausalLM, cross-entropy in nats", "transformers",
            model=path, tokenizer=f"the reference model's own ({path})", max_tokens=max_tokens,
            truncated_tokens=int(sum(m[2] for m in measured)),
        )
        if self.params["aggregation"] == "sample":
            return [mean_result("gen-ppl", per_sample, higher_is_better=False, seed=seed, info=info)]

        def token_weighted(indices: np.ndarray) -> float:
            n = counts[indices].sum()
            return math.exp(nll[indices].sum() / n) if n else float("nan")

        value = token_weighted(np.arange(len(items))) if counts.sum() else None
        low, high = resample_ci(len(items), token_weighted, seed=seed)
        info.update(aggregation="exp(sum of NLL / sum of predicted tokens), token-weighted", **method_info("resample", seed=seed))
        return [MetricResult("gen-ppl", value, False, per_sample, low, high, info)]


@hookimpl
def register_metrics(register):
    register(GenPerplexityMetric())
