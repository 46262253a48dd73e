"""Model plugins ``hf-mlm``, ``hf-clm``, ``hf-seq2seq``: any transformers checkpoint by hub name or local directory."""

from __future__ import annotations

from typing import Any, ClassVar

from mlmh import bounds
from mlmh import hookimpl
from mlmh.components import LoadContext, Model
from mlmh.errors import SpecError
from mlmh.machine.devices import DEVICE_PARAM, resolve_device
from mlmh.params import Param


class HuggingFaceModel(Model):
    """A checkpoint loaded with the Auto class of its kind; safetensors preferred, remote code off by default."""

    parameters: ClassVar[tuple[Param, ...]] = (
        Param("path", str, "", "hub name (must be cached offline) or local directory saved with save_pretrained"),
        Param("revision", str, "", "hub revision (branch, tag or commit); ignored for local directories"),
        DEVICE_PARAM,
        Param("dtype", str, "float32", "weights dtype", choices=("float32", "bfloat16", "float16")),
        Param("threads", int, 0, "torch CPU threads (0 = torch default)", min=0, max=bounds.THREADS),
        Param("trust_remote_code", bool, False, "run model code shipped with the checkpoint (off unless you trust it)"),
    )

    def _path(self) -> str:
        path = self.params["path"]
        if not path:
            raise SpecError(f"model '{self.name}' needs path=<hub name or local directory>, e.g. {self.name}:path=./my-model")
        return path

    def checkpoints(self) -> tuple[str, ...]:
        return (self._path(),)

    def identity(self, context: LoadContext) -> str:
        """Path + revision, plus a content hash of the weights (local) or the snapshot commit (hub cache)."""
        from mlmh.adapters import checkpoint_identity

        path, revision = self._path(), self.params["revision"]
        found = checkpoint_identity(path, revision) or f"{path}@{revision or 'main'}#uncached"
        return f"{self.name}:{found}"

    def load(self, context: LoadContext) -> Any:
        from mlmh.adapters import load_adapter

        return load_adapter(
            self.model_kind, self._path(), device=resolve_device(self.params["device"], f"{self.name}:device"), dtype=self.params["dtype"],
            threads=self.params["threads"] or None, identity=self.identity(context),
            trust_remote_code=self.params["trust_remote_code"], revision=self.params["revision"] or None,
            defer_weights=getattr(context, "defer_weights", False),  # a caller may give no context
        )


class HfMaskedLM(HuggingFaceModel):
    name = "hf-mlm"
    model_kind = "mlm"
    description = "A masked LM checkpoint (BERT/RoBERTa...) via AutoModelForMaskedLM."


class HfCausalLM(HuggingFaceModel):
    name = "hf-clm"
    model_kind = "clm"
    description = "A causal LM checkpoint (GPT-2...) via AutoModelForCausalLM."


class HfSeq2SeqLM(HuggingFaceModel):
    name = "hf-seq2seq"
    model_kind = "seq2seq"
    description = "A seq2seq denoiser (T5/BART...) via AutoModelForSeq2SeqLM."


@hookimpl
def register_models(register):
    for model in (HfMaskedLM, HfCausalLM, HfSeq2SeqLM):
        register(model())
