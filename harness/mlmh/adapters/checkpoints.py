"""Loading a model checkpoint the user names (a directory, or a hub name already cached): the one rule
for every ``from_pretrained`` path (``hf-*`` models, ``mlmh train --init``, ``gen-ppl:path=``,
``bertscore:model=``, tokenizers of metrics).

- Checkpoint code never runs: every load passes ``trust_remote_code`` explicitly (False unless the
  user set a model's own ``trust_remote_code`` parameter), and a directory whose ``config.json`` or
  ``tokenizer_config.json`` names code (``auto_map``) is refused before transformers sees it, so no
  prompt ever asks whether to run it and no path through a library that cannot be told (bert-score)
  runs it either.
- A failure is one :class:`~mlmh.errors.ModelError` line naming the checkpoint and what is wrong with
  it (no such directory, no tokenizer files, a truncated weights file, a config that does not match
  the weights, a device this machine lacks), never a library's error about something else.
- No message advises turning a safety check off.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from mlmh.errors import MlmhError, ModelError

#: files one of which a saved tokenizer has; without any, transformers guesses a tokenizer class from
#: the config and fails on something unrelated (a RoFormer config asks for the rjieba package)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "spiece.model",
                   "sentencepiece.bpe.model", "tokenizer.model", "merges.txt")
#: the files of a checkpoint whose ``auto_map`` names Python code shipped with it
CODE_MAPS = ("config.json", "tokenizer_config.json")


def is_path(name: str) -> bool:
    """Whether ``name`` can only be a filesystem path (not a hub name such as ``gpt2`` or ``org/model``)."""
    return name.startswith(("/", "./", "../", "~", ".\\")) or name.count("/") > 1 or (os.sep != "/" and os.sep in name)


def local_checkpoint(name: str, what: str, *, model: bool = True, tokenizer: bool = True,
                     param: str = "path") -> Path | None:
    """The directory ``name`` is, checked (a config where ``model``, tokenizer files where ``tokenizer``,
    no shipped code); None for a hub name. ``what`` says who loads it (``gen-ppl``, ``--init``), ``param``
    where the user gives the directory."""
    local = Path(name).expanduser()
    if not local.exists():
        if is_path(name):
            raise ModelError(f"{what}: model directory {name} does not exist")
        cached = hub_snapshot(name)
        if cached is not None:
            refuse_custom_code(cached, what)
        elif offline():
            raise ModelError(f"{what}: {name} is not a directory here, and as a hub name it is not cached locally "
                             f"and no network is reachable; pass a local directory with {param}=DIR")
        return None
    if not local.is_dir():
        raise ModelError(f"{what}: {name} is not a directory")
    if model and not (local / "config.json").is_file():
        raise ModelError(f"{what}: {name} is not a model directory (no config.json); pass a directory saved "
                         "with save_pretrained")
    refuse_custom_code(local, what)
    if tokenizer and not any((local / f).is_file() for f in TOKENIZER_FILES):
        raise ModelError(f"{what}: {name} holds no tokenizer files ({', '.join(TOKENIZER_FILES[:3])}, ...); "
                         "save the tokenizer with the model (tokenizer.save_pretrained)")
    return local


def offline() -> bool:
    """Whether the hub may not be asked (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``)."""
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def hub_snapshot(name: str) -> Path | None:
    """The locally cached snapshot directory of hub model ``name`` (no network), or None."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name, "config.json")
    except Exception:  # not a valid repo id
        return None
    return Path(found).parent if isinstance(found, str) else None


def uncached(names: Iterable[str]) -> list[str]:
    """The hub names among ``names`` this machine cannot load while the hub is offline: neither a directory
    here (a directory named like a checkpoint stands for it) nor a cached snapshot; none while online, where
    they download."""
    if not offline():
        return []
    return sorted({name for name in names if not Path(name).expanduser().exists() and not is_path(name)
                   and hub_snapshot(name) is None})


def hub_directory(name: str, what: str) -> Path:
    """The local snapshot of hub checkpoint ``name``: the cached one, else downloaded (its configs, tokenizer
    files and safetensors weights) unless the hub is offline, which is refused in one line naming ``what``."""
    cached = hub_snapshot(name)
    if cached is None and offline():
        raise ModelError(f"{what}: no such directory, and no cached hub checkpoint of that name (the hub is "
                         "offline); give a saved model directory, or a hub name with network access")
    if cached is None:
        try:
            from huggingface_hub import snapshot_download

            cached = Path(snapshot_download(name, allow_patterns=["*.json", "*.txt", "*.model", "*.safetensors"]))
        except Exception as exc:
            raise ModelError(f"{what}: cannot download {name} from the hub: {explain(exc)}") from None
    refuse_custom_code(cached, what)
    return cached


def refuse_custom_code(directory: Path, what: str) -> None:
    """Refuse a checkpoint that ships Python code: mlmh loads weights, never code."""
    for name in CODE_MAPS:
        path = directory / name
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ModelError(f"{what}: {path} is not valid JSON: {exc}") from None
        if isinstance(data, dict) and data.get("auto_map"):
            raise ModelError(f"{what}: {directory} ships its own Python code (auto_map in {name}); mlmh loads "
                             "checkpoints of the architectures transformers provides and does not run checkpoint code")


def check_device(device: str, what: str) -> None:
    """A device this machine has, or one line saying it lacks it."""
    import torch

    kind = device.split(":", 1)[0]
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise ModelError(f"{what}: device={device}, but CUDA is not available on this machine; use device=cpu")
        index = device.split(":", 1)[1] if ":" in device else "0"
        if index.isdigit() and int(index) >= torch.cuda.device_count():
            raise ModelError(f"{what}: device={device}, but this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif kind == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise ModelError(f"{what}: device={device}, but MPS is not available on this machine; use device=cpu")


def check_vocabulary(config: Any, tokenizer: Any, what: str) -> None:
    """A checkpoint whose tokenizer gives ids its embeddings do not have (config.json's ``vocab_size`` smaller than
    the tokenizer's vocabulary, or a special token mlmh uses beyond it) is refused in one line naming it, before the
    weights load, instead of an IndexError in the middle of sampling."""
    size = getattr(config, "vocab_size", None)
    if not isinstance(size, int) or size <= 0:
        return  # an encoder-decoder of two configs, or a config without one: the weights decide
    ids = {f"its vocabulary ({tokenizer.vocab_size} tokens)": tokenizer.vocab_size - 1}
    ids |= {f"the special token {token!r}": index for token, index in
            zip(tokenizer.all_special_tokens, tokenizer.all_special_ids) if isinstance(index, int)}
    beyond = {words: index for words, index in ids.items() if index >= size}
    if beyond:
        words, index = max(beyond.items(), key=lambda item: item[1])
        raise ModelError(f"{what}: config.json's vocab_size is {size}, but the tokenizer gives ids up to {index} "
                         f"({words}): the model has no embedding for them; resize its embeddings to the tokenizer "
                         "(model.resize_token_embeddings(len(tokenizer))) and save it again")


def explain(exc: BaseException) -> str:
    """What a library's loading error says about the checkpoint, in a few words and one line."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    low = text.lower()
    if type(exc).__name__ == "SafetensorError" or "deserializing header" in low or "incomplete metadata" in low:
        return f"a weights file is truncated or corrupt ({first})"
    if "ignore_mismatched_sizes" in low:  # the shapes are in a log report, not in the exception
        return "config.json does not match the weights (tensor shapes differ from what the config describes)"
    if "size mismatch" in low or "shape mismatch" in low or "mismatched sizes" in low:
        detail = next((line.strip() for line in text.splitlines() if "size mismatch" in line.lower()), first)
        return f"config.json does not match the weights ({detail})"
    if "trust_remote_code" in low or "custom code" in low:
        return "it ships its own Python code, which mlmh does not run"
    if "weights only" in low or "weights_only" in low or "unpickl" in low:
        return "its weights file holds pickled objects that torch's safe loader refuses (mlmh loads tensors only)"
    if "does not appear to have a file named" in low or "no file named" in low:
        return "no weights file (model.safetensors or pytorch_model.bin)"
    return f"{type(exc).__name__}: {first}"


@contextmanager
def loading(what: str, name: str) -> Iterator[None]:
    """Turn any library error while loading ``name`` into one ModelError line naming it."""
    try:
        yield
    except MlmhError:
        raise
    except Exception as exc:
        raise ModelError(f"{what}: cannot load {name}: {explain(exc)}") from None


def from_pretrained(cls: Any, name: str | os.PathLike, *, what: str, trust_remote_code: bool = False,
                    **kwargs: Any) -> Any:
    """``cls.from_pretrained(name, ...)`` with checkpoint code off (unless the user asked for it) and
    library errors turned into one line naming ``name``."""
    with loading(what, str(name)):
        return cls.from_pretrained(name, trust_remote_code=trust_remote_code, **kwargs)
