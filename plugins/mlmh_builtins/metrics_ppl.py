"""Generative perplexity: how likely a reference causal LM finds the generations.

The reference model is a named judge (``gen-ppl:judge=gemma-3-270m``, :mod:`mlmh_builtins.judge`: a
pretrained LM no contestant trained with, installed by the ``judge`` extra), or a transformers causal LM
given by ``gen-ppl:path=DIR`` (a local directory or a hub name already in the local cache), or by the
``MLMH_GENPPL_MODEL`` environment variable when the spec names neither. A separate param (not a nested
model spec) keeps the ``name:k=v,k=v`` spec syntax unambiguous.

Beside the generations' perplexity every call reports the same judge's perplexity of the originals
(``gen-ppl_original``): the floor a perfect regeneration reaches. Texts are scored in length-sorted
batches, right-padded with an attention mask, so a text's perplexity does not depend on its batch; the
output layer (most of a large-vocabulary LM's work) runs only at the positions that predict a token; each
distinct text is scored once per process (the originals repeat across every condition of a run).

The cost (docs/PERFORMANCE.md): ``precision=auto`` multiplies in bf16 where the CPU has bf16 units (AVX512-BF16,
AMX; :mod:`mlmh_builtins.bf16_products`), half float32's CPU-seconds for Gemma 3 270M with each text's perplexity
within :data:`BF16_TOLERANCE` of float32's; float32 elsewhere (emulated bf16 is slower) or when asked for.
Scoring runs on one torch thread by default: on a busy machine a second thread spins while it waits.
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from mlmh import bounds
from mlmh import hookimpl
from mlmh.components import Metric, ScoringItem
from mlmh.errors import ModelError, SpecError
from mlmh.machine.devices import PRECISIONS, cores, cpu_bf16, torch_threads
from mlmh.params import Param
from mlmh.stats import method_info, resample_ci
from mlmh.types import MetricResult
from mlmh_builtins.judge import JUDGES, get_judge, judge_check, judge_dir
from mlmh_builtins.metrics_common import base_info, mean_result

ENV_MODEL = "MLMH_GENPPL_MODEL"
#: declared: a text's perplexity in bf16 differs from float32's by at most this fraction, whatever its batch
#: (measured on Gemma 3 270M over the bundled PAN sample's originals and shuffled texts: 0.85% at most, 0.9% by
#: batch; tests hold the tiny judge to it)
BF16_TOLERANCE = 0.03
#: rows of logits turned into float32 at a time to take their log-softmax (bounds the float copy's memory)
NLL_ROWS = 128
#: (model path, precision) -> (tokenizer, model)
_MODELS: dict[tuple[str, str], tuple[Any, Any]] = {}
_MODELS_LOCK = threading.Lock()
#: (model path, precision, max_tokens, text) -> (summed NLL, predicted tokens, tokens cut off), most recent last
_SCORED: "OrderedDict[tuple[str, str, int, str], tuple[float, int, int]]" = OrderedDict()
_SCORED_MAX = 200_000
_SCORED_LOCK = threading.Lock()


def resolve_precision(precision: str) -> str:
    """``float32`` or ``bf16`` for scoring on this CPU: ``auto`` is bf16 where the CPU multiplies bf16 in hardware and
    oneDNN is not capped below its bf16 kernels (the same rule as training's, :func:`mlmh.machine.devices.cpu_bf16`)."""
    if precision != "auto":
        return precision
    return "bf16" if cpu_bf16() else "float32"


def check_reference_lm(path: str, *, download: bool = True, what: str = "gen-ppl") -> Any:
    """The config of the reference LM at ``path``, checked without its weights: a model folder (or a hub name) of a
    causal LM, else one ModelError line (no such folder, not a model folder, a masked LM or a T5: the check
    ``hf-clm`` makes, :func:`mlmh.adapters.checkpoint_kinds.require_causal`). None where ``download`` is off and
    ``path`` is a hub name not cached here (it is checked when it downloads)."""
    from transformers import AutoConfig

    from mlmh.adapters.checkpoint_kinds import require_causal
    from mlmh.adapters.checkpoints import from_pretrained, hub_snapshot, local_checkpoint

    if local_checkpoint(path, what) is None and not download and hub_snapshot(path) is None:
        return None
    config = from_pretrained(AutoConfig, path, what=what)
    require_causal(config, f"{what}: {path}")
    return config


def load_reference_lm(path: str, precision: str = "float32") -> tuple[Any, Any]:
    """(tokenizer, model) of a causal LM (:func:`check_reference_lm`), loaded once per process, path and precision,
    in eval mode."""
    with _MODELS_LOCK:
        if (path, precision) not in _MODELS:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            from mlmh.adapters.checkpoints import from_pretrained

            config = check_reference_lm(path)
            tokenizer = from_pretrained(AutoTokenizer, path, what="gen-ppl")
            model = from_pretrained(AutoModelForCausalLM, path, what="gen-ppl", config=config)
            model.eval()
            if precision == "bf16":
                from mlmh_builtins.bf16_products import use_bf16_products

                use_bf16_products(model)
            _MODELS[(path, precision)] = (tokenizer, model)
        return _MODELS[(path, precision)]


def token_ids(tokenizer: Any, text: str, max_tokens: int) -> tuple[list[int], int]:
    """(ids scored, tokens cut off) of ``text``: a BOS token, when the tokenizer has one, is prepended
    so the first word is predicted too."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    bos = tokenizer.bos_token_id
    if bos is None:
        bos = tokenizer.cls_token_id
    if bos is not None:
        ids = [bos, *ids]
    return ids[:max_tokens], max(0, len(ids) - max_tokens)


def batch_nll(model: Any, sequences: Sequence[Sequence[int]]) -> list[tuple[float, int]]:
    """(summed NLL in nats, predicted tokens) of each sequence, in one forward pass. Right padding and
    an attention mask: a causal LM's prediction at a real position never sees the padding after it,
    and positions count from each sequence's start, so the values do not depend on the batch (in bf16,
    whose kernels round differently for another number of rows, within :data:`BF16_TOLERANCE`). Every
    sequence has at least two tokens (one predicted).

    The output layer sees only the positions that predict a token (neither padding nor a sequence's
    last token): its input is cut to those rows on the way in, so the model's own logit processing
    still applies. The log-softmax is taken in float32 whatever the model's precision."""
    import torch

    longest = max(len(s) for s in sequences)
    ids = torch.zeros((len(sequences), longest), dtype=torch.long)
    mask = torch.zeros((len(sequences), longest), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.tensor(list(sequence), dtype=torch.long)
        mask[row, : len(sequence)] = 1
    predicting = mask.bool()
    predicting[torch.arange(len(sequences)), mask.sum(dim=1) - 1] = False  # a sequence's last token predicts nothing
    targets = ids.roll(-1, dims=1)[predicting]
    head = model.get_output_embeddings()
    hook = head.register_forward_pre_hook(lambda _, args: (args[0][predicting], *args[1:])) if head is not None else None
    try:
        with torch.inference_mode():
            logits = model(input_ids=ids, attention_mask=mask).logits
            if hook is None:  # a model without an output layer to cut: every position's logits, read at the real ones
                logits = logits[predicting]
            nll = torch.cat([torch.nn.functional.cross_entropy(logits[start:start + NLL_ROWS].float(),
                                                               targets[start:start + NLL_ROWS], reduction="none")
                             for start in range(0, len(targets), NLL_ROWS)])
    finally:
        if hook is not None:
            hook.remove()
    counts = [len(s) - 1 for s in sequences]
    return [(float(part.double().sum()), n) for part, n in zip(nll.split(counts), counts)]


def batches(lengths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """Indices grouped longest first so that a batch's padded size stays within ``batch_tokens`` (the
    logits of a large vocabulary are what fills memory); a longer text goes alone."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups: list[list[int]] = []
    for index in order:
        if groups and (len(groups[-1]) + 1) * lengths[groups[-1][0]] <= batch_tokens:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def score_texts(path: str, texts: Sequence[str], max_tokens: int, batch_tokens: int,
                precision: str = "float32") -> list[tuple[float, int, int]]:
    """(summed NLL, predicted tokens, tokens cut off) of each text under the model at ``path`` in ``precision``;
    texts this process scored before are not scored again."""
    tokenizer, model = load_reference_lm(path, precision)
    keys = [(path, precision, max_tokens, text) for text in texts]
    with _SCORED_LOCK:
        todo, encoded = [], []
        for key in sorted({k for k in keys if k not in _SCORED}):
            ids, cut = token_ids(tokenizer, key[3], max_tokens)
            if len(ids) < 2:  # nothing to predict
                _SCORED[key] = (0.0, 0, cut)
            else:
                todo.append(key)
                encoded.append((ids, cut))
        for group in batches([len(ids) for ids, _ in encoded], batch_tokens):
            for index, (nll, count) in zip(group, batch_nll(model, [encoded[i][0] for i in group])):
                _SCORED[todo[index]] = (nll, count, encoded[index][1])
        found = []
        for key in keys:
            _SCORED.move_to_end(key)
            found.append(_SCORED[key])
        while len(_SCORED) > _SCORED_MAX:
            _SCORED.popitem(last=False)
        return found


class GenPerplexityMetric(Metric):
    """Generative perplexity under a reference causal LM (as in Lou et al. 2024 / Li et al. 2024 for
    non-autoregressive text generation); lower = the reference LM finds the text more fluent."""

    name = "gen-ppl"
    description = ("perplexity of the generations (and of the originals) under a reference causal LM: a named judge "
                   "(judge=gemma-3-270m), path=DIR or $MLMH_GENPPL_MODEL")
    higher_is_better = False
    fluency = ("gen-ppl", "gen-ppl_original")  # the regenerations' perplexity, and the originals' beside it
    parameters = (
        Param("judge", str, "", f"a pretrained judge by name ({', '.join(JUDGES)}); installed by the judge extra"),
        Param("path", str, "", f"causal LM dir or cached hub name; empty = ${ENV_MODEL}"),
        Param("aggregation", str, "token", "corpus value: token-weighted exp(mean NLL) or mean of per-sample ppl", choices=("token", "sample")),
        Param("max_tokens", int, 0, "truncate each text to this many tokens; 0 = the model's window", min=0, max=bounds.SEQUENCE),
        Param("batch_tokens", int, 512, "padded tokens per forward pass (bounds the logits' memory)", min=1,
              max=bounds.SEQUENCE),
        Param("precision", str, "auto", "the reference LM's matrix products: auto (bf16 where the CPU has bf16 "
              f"units, else float32), float32, bf16 (each text's perplexity within {BF16_TOLERANCE:.0%} of float32's)",
              choices=PRECISIONS),
        Param("threads", int, 1, "torch threads while scoring; 0 = every core", min=0, max=bounds.THREADS),
    )

    def __post_configure__(self) -> None:
        if self.params["judge"]:
            get_judge(self.params["judge"])
            if self.params["path"]:
                raise SpecError("gen-ppl: give judge= or path=, not both")
        if self.params["max_tokens"] == 1:
            raise SpecError("gen-ppl: max_tokens=1 leaves no word to score (a text's first token is only what the "
                            "next is predicted from); give 2 or more, or 0 for the judge's window")

    def preflight(self) -> None:
        """The judge a run names by path= (or $MLMH_GENPPL_MODEL), checked before any work: it exists, is a model
        folder and is a causal LM (a named judge is one; :meth:`unavailable` says when it is not installed)."""
        if not self.params["judge"]:
            check_reference_lm(self._reference_path(), download=False, what="its judge")

    def unavailable(self, corpus: Any = None) -> str | None:
        """A named judge that is not installed: the run plan drops gen-ppl from a preset with this one line."""
        return get_judge(self.params["judge"]).unavailable() if self.params["judge"] else None

    def _reference_path(self) -> str:
        if self.params["judge"]:
            return str(judge_dir(get_judge(self.params["judge"])))
        path = self.params["path"] or os.environ.get(ENV_MODEL, "")
        if not path:
            raise SpecError(f"gen-ppl needs a reference causal LM: gen-ppl:judge=NAME, gen-ppl:path=DIR or set {ENV_MODEL}")
        return path

    def precision(self) -> str:
        """The precision this machine scores in (``auto`` resolved)."""
        return resolve_precision(self.params["precision"])

    def cache_identity(self) -> str | None:
        """The judge's GGUF digest and converting libraries, or the reference LM's files (the spec may leave
        its path to the environment); and the precision it scores in (``auto`` differs between CPUs)."""
        if self.params["judge"]:
            judge = get_judge(self.params["judge"])
            return None if judge.unavailable() else f"{judge.identity()}|precision={self.precision()}"
        from mlmh.adapters import model_files_identity

        try:
            return f"{model_files_identity(self._reference_path())}|precision={self.precision()}"
        except SpecError:
            return None

    def forget_caches(self) -> None:
        """Forget every scored text: the next call scores every text anew (the model stays loaded)."""
        _SCORED.clear()

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        reason = self.unavailable()
        if reason:
            raise ModelError(f"gen-ppl: {reason}")
        path, precision = self._reference_path(), self.precision()
        _, model = load_reference_lm(path, precision)
        window = int(getattr(model.config, "max_position_embeddings", 0) or getattr(model.config, "n_positions", 0) or 1024)
        max_tokens = min(self.params["max_tokens"] or window, window)
        model_name = f"judge {self.params['judge']} (converted to {path})" if self.params["judge"] else path
        threads = self.params["threads"] or cores()
        with torch_threads(threads):
            measured = {name: score_texts(path, texts, max_tokens, self.params["batch_tokens"], precision)
                        for name, texts in (("gen-ppl", [i.prediction for i in items]),
                                            ("gen-ppl_original", [i.reference for i in items]))}
        results = []
        for name, scored in measured.items():
            info = base_info(
                self, "transformers AutoModelForCausalLM, cross-entropy in nats", "transformers",
                model=model_name, tokenizer=f"the reference model's own ({model_name})", max_tokens=max_tokens,
                precision=precision, threads=threads,
                truncated_tokens=int(sum(m[2] for m in scored)), predicted_tokens=int(sum(m[1] for m in scored)),
                scored="the originals (the floor a perfect regeneration reaches)" if name != "gen-ppl" else "the generations",
            )
            results.append(self._result(name, scored, info, seed))
        return results

    def _result(self, name: str, measured: list[tuple[float, int, int]], info: dict[str, Any], seed: int) -> MetricResult:
        nll = np.asarray([m[0] for m in measured])
        counts = np.asarray([m[1] for m in measured])
        if not counts.sum():  # every text a token or shorter: said, rather than a value left out without a word
            return MetricResult(name, None, False, [None] * len(measured), info=info, error=(
                f"no text had a token to predict within max_tokens={info.get('max_tokens')} (each text's first token "
                "is only context), so there is no perplexity"))
        per_sample = [math.exp(s / c) if c else None for s, c in zip(nll, counts)]
        if self.params["aggregation"] == "sample":
            return mean_result(name, per_sample, higher_is_better=False, info=info)

        def token_weighted(indices: np.ndarray) -> float:
            n = counts[indices].sum()
            return math.exp(nll[indices].sum() / n) if n else float("nan")

        value = token_weighted(np.arange(len(measured)))
        low, high = resample_ci(len(measured), token_weighted, seed=seed)
        info.update(aggregation="exp(sum of NLL / sum of predicted tokens), token-weighted", **method_info("resample", seed=seed))
        return MetricResult(name, value, False, per_sample, low, high, info)


@hookimpl
def register_metrics(register):
    register(GenPerplexityMetric())


@hookimpl
def register_checks(register):
    for name in JUDGES:
        register(f"gen-ppl judge {name}", lambda name=name: judge_check(name))
