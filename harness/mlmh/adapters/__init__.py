"""Uniform adapters around a Hugging Face model + fast tokenizer, one per model kind.

Samplers (builtin and third-party) talk only to these: they turn masked *words* into model tokens the
same way for every kind, batch with padding, and count forward passes and tokens processed.

Word-to-token mapping: the text is cut at the boundaries of every masked word (the whitespace before
a masked word travels with it, so byte-level BPE keeps its ``Ġword`` tokens) and the pieces are
tokenized in one batched call; the fast tokenizer's offset mapping then names the word of every token.
Cutting guarantees that no token straddles a masked and an unmasked word (byte-level BPE merges runs
of punctuation), so generation can never change an unmasked word.

Texts longer than the model window are truncated at a word boundary: the masked words beyond the
window are not generated, and the count of dropped tokens is kept in :attr:`Encoding.truncated_tokens`
and said in ``Generation.info``; :func:`mlmh.generation.check_filled` then fails the batch (runs and
``mlmh generate`` cut texts to the window before masking, so that none are left beyond it).

This module loads a checkpoint as the adapter of its kind and names the weights it loaded (for cache keys); the
adapters themselves, and what loading reads, are modules of their own:

- :mod:`mlmh.adapters.base`: what every kind shares (encodings, the window, banned tokens, decoding), and the
  masked LM's adapter;
- :mod:`mlmh.adapters.decoding`: the causal and seq2seq adapters (prefix decoding with a KV cache);
- :mod:`mlmh.adapters.readout`: a masked LM's logits at chosen positions only;
- :mod:`mlmh.adapters.sentinels`: T5's sentinels, and masked spans merged to fit them;
- :mod:`mlmh.adapters.checkpoints`: the one rule of every ``from_pretrained`` (no checkpoint code, one error line);
- :mod:`mlmh.adapters.checkpoint_kinds`: what kind a checkpoint was built for, and loading it as another.
"""

from __future__ import annotations

import hashlib
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from mlmh.adapters.base import _DTYPES, MODEL_KINDS, BaseAdapter, DeferredWeights, MaskedLMAdapter
from mlmh.adapters.checkpoint_kinds import kind_note
from mlmh.adapters.checkpoints import check_device, check_vocabulary, from_pretrained, local_checkpoint, offline
from mlmh.adapters.decoding import CausalLMAdapter, Seq2SeqAdapter
from mlmh.errors import ModelError

__all__ = ["ADAPTERS", "load_adapter", "checkpoint_identity", "model_files_identity", "weights_fingerprint"]

ADAPTERS: dict[str, type[BaseAdapter]] = {"mlm": MaskedLMAdapter, "clm": CausalLMAdapter, "seq2seq": Seq2SeqAdapter}


_AUTO = {"mlm": "AutoModelForMaskedLM", "clm": "AutoModelForCausalLM", "seq2seq": "AutoModelForSeq2SeqLM"}
_SUGGEST = {"mlm": "hf-mlm", "clm": "hf-clm", "seq2seq": "hf-seq2seq"}


def load_adapter(
    kind: str,
    path: str | os.PathLike,
    *,
    device: str = "cpu",
    dtype: str = "float32",
    threads: int | None = None,
    identity: str | None = None,
    trust_remote_code: bool = False,
    revision: str | None = None,
    defer_weights: bool = False,
) -> BaseAdapter:
    """Load a transformers checkpoint (hub name or local directory) as the adapter of ``kind``.

    With ``defer_weights`` the tokenizer and config are read now and the weights at the adapter's first
    forward pass or :meth:`~mlmh.adapters.base.BaseAdapter.load_weights` (a run calls it where it has work).
    Every failure is a one-line :class:`ModelError` naming the path and what to do.
    """
    import torch
    import transformers
    from transformers.utils import logging as hf_logging

    if kind not in ADAPTERS:
        raise ModelError(f"unknown model kind '{kind}' (valid: {', '.join(MODEL_KINDS)})")
    if dtype not in _DTYPES:
        raise ModelError(f"dtype '{dtype}' not supported (valid: {', '.join(_DTYPES)})")
    if threads:
        torch.set_num_threads(int(threads))
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    name = str(path)
    what = f"{kind} model"
    local = local_checkpoint(name, what)
    is_local = local is not None
    if is_local:
        name = str(local)
    check_device(device, f"{what} {name}")
    common: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    if revision and not is_local:
        common["revision"] = revision
    if not is_local and offline():
        common["local_files_only"] = True  # read now: huggingface_hub reads its env only at import
    auto = getattr(transformers, _AUTO[kind])

    def read_weights(config: Any = None) -> Any:
        with _model_errors(kind, name, local):
            model = from_pretrained(auto, name, what=what, dtype=getattr(torch, dtype),
                                    use_safetensors=_has_safetensors(local) if local is not None else None,
                                    **({"config": config} if config is not None else {}), **common)
        model.to(device)
        return model

    with _model_errors(kind, name, local):
        tokenizer = from_pretrained(transformers.AutoTokenizer, name, what=what, use_fast=True, **common)
        config = from_pretrained(transformers.AutoConfig, name, what=what, **common)
    note = kind_note(kind, config, f"model '{name}'")  # before any weights: a refusal costs no load
    check_vocabulary(config, tokenizer, f"{what} {name}")  # before the weights: an id past the embeddings fails late
    model = DeferredWeights(config, lambda: read_weights(config)) if defer_weights else read_weights(config)
    adapter = ADAPTERS[kind](model, tokenizer, identity=identity or name, device=device)
    if note:
        adapter.notes.append(note)
    return adapter


@contextmanager
def _model_errors(kind: str, name: str, local: Path | None) -> Iterator[None]:
    """A load's ModelError said as what to do: another model kind, or a local directory when offline."""
    is_local = local is not None
    try:
        yield
    except ModelError as exc:
        text = str(exc)
        if "Unrecognized configuration class" in text or "Unrecognized model" in text:
            model_type = _model_type(local) if local is not None else "?"
            others = [k for k in MODEL_KINDS if k != kind]
            raise ModelError(
                f"model '{name}' (type {model_type}) does not support the {kind} objective; "
                f"try {' or '.join(_SUGGEST[k] for k in others)}"
            ) from None
        if not is_local and "OSError" in text:
            raise ModelError(
                f"model '{name}' is not cached locally and no network is reachable; pass a local directory with path=..."
            ) from None
        raise


def _has_safetensors(directory: Path) -> bool | None:
    return True if any(directory.glob("*.safetensors")) else None


def _model_type(directory: Path) -> str:
    import json

    try:
        return str(json.loads((directory / "config.json").read_text(encoding="utf-8")).get("model_type", "?"))
    except (OSError, ValueError):
        return "?"


_FINGERPRINTS: dict[tuple[str, float, int], str] = {}


def checkpoint_identity(path: str, revision: str | None = None) -> str | None:
    """Which weights ``path`` names, for cache keys: a local directory's resolved path and weight-content
    hash (computed once per process and files' mtime and size), or a hub name's locally cached snapshot
    commit (``name@revision#commit``); None when a hub name is not cached here (no network is asked)."""
    local = Path(path).expanduser()
    if local.is_dir():
        weights = sorted(p for p in local.iterdir() if p.suffix in (".safetensors", ".bin"))
        stamp = (str(local.resolve()), max((p.stat().st_mtime for p in weights), default=0.0),
                 sum(p.stat().st_size for p in weights))
        if stamp not in _FINGERPRINTS:
            _FINGERPRINTS[stamp] = weights_fingerprint(local)
        return f"{stamp[0]}@{_FINGERPRINTS[stamp]}"
    try:
        from huggingface_hub import snapshot_download

        commit = Path(snapshot_download(path, revision=revision or None, local_files_only=True)).name
    except Exception:  # not cached, or not a valid repo id
        return None
    return f"{path}@{revision or 'main'}#{commit}"


def model_files_identity(path: str) -> str | None:
    """Every file of a scoring model, for the keys of the scores it gives: a local directory's files
    (name, size, modification time: its tokenizer decides a score as much as its weights), or a hub
    name's cached snapshot commit; None when neither is here."""
    from mlmh.implementation import files_identity

    local = Path(path).expanduser()
    if local.exists():
        return f"{local.resolve()}#{files_identity(local)}"
    return checkpoint_identity(path)


def weights_fingerprint(directory: str | os.PathLike) -> str:
    """A short hash of a local model directory's weight files (content), for cache identities."""
    root = Path(directory)
    digest = hashlib.blake2b(digest_size=8)
    files = sorted(p for p in root.iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file())
    for path in files:
        digest.update(path.name.encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
