"""Builtin models ``trained-mlm``, ``trained-clm``, ``trained-seq2seq``: small models that mlmh trains
itself on the run's dataset the first time a run needs them, then reuses from the model cache.

This is the offline default: no pretrained weights can be downloaded, so each preset compares an MLM,
a CLM and a seq2seq denoiser of matched size and training budget (see :mod:`mlmh.training`). They learn
from the train split, keep the checkpoint that validation chooses (:mod:`mlmh.training.stopping`;
:func:`mlmh.data.splits.with_validation`) and never see the test split, whose documents stay unseen.
"""

from __future__ import annotations

from typing import Any, ClassVar

from mlmh import bounds
from mlmh import hookimpl
from mlmh.components import LoadContext, Model
from mlmh.config.sweep import MAX_EPOCHS
from mlmh.errors import SpecError
from mlmh.machine.devices import DEVICE_PARAM, PRECISIONS, resolve_device
from mlmh.params import Param
from mlmh.training.config import BUDGETS, KEEPS, MASK_SCHEDULES, MLM_MASK_RATIO, PATIENCE_TOKENS  # no torch
from mlmh.types import Corpus


class TrainedModel(Model):
    """A model of ``model_kind`` trained by :func:`mlmh.training.train`, cached by its recipe hash."""

    parameters: ClassVar[tuple[Param, ...]] = (
        Param("size", str, "tiny", "model size (matched across kinds): tiny ~1.2M, small ~6M, base ~27M parameters",
              choices=("tiny", "small", "base")),
        Param("dataset", str, "", "dataset to train on; empty = the run's dataset"),
        Param("seed", int, 0, "training seed (weights, data order, masking)", min=0, max=bounds.SEED),
        Param("max_steps", int, 0, "training steps; 0 = the size default (or epochs)", min=0, max=bounds.TRAINING_STEPS),
        Param("epochs", float, 0.0, "training steps as passes over the train blocks (over unique_tokens when set); "
              "0 = max_steps", min=0.0, max=MAX_EPOCHS),
        Param("unique_tokens", int, 0, "data budget U: train on the first train blocks (in their fixed order) that "
              "hold this many tokens; 0 = the whole train split", min=0, max=bounds.TOKENS),
        Param("keep", str, "best", "checkpoint kept: best (validation's choice: highest accuracy off the unigram plateau) or last (the weights after the "
              "whole budget, as data-constrained sweeps compare them)", choices=KEEPS),
        Param("init", str, "", "start from: empty = random init, 'minilm' = the bundled pretrained MiniLM-L6 "
              "encoder, a checkpoint directory or a hub name (cached, or downloaded while online); an encoder starts every kind (its MLM, the same weights as a "
              "causal decoder, an encoder-decoder warm-started from it on both sides)"),
        Param("positions", str, "rotary", "position encoding of the MLM and CLM: rotary (RoFormer / GPT-NeoX "
              "layers; learns context fast) or absolute (classic BERT / GPT-2); seq2seq is BART either way",
              choices=("rotary", "absolute")),
        Param("budget", str, "tokens", "what is matched across objectives: tokens (steps x batch x seq_len), "
              "targets (the MLM trains until it has supervised as many tokens as the CLM, at most 8x the steps) "
              "or compute (~6 x parameters x tokens)", choices=BUDGETS),
        Param("max_passes", float, 0.0, "cap on any budget: at most this many passes over the train split's "
              "supervised targets (the CLM's epochs; the MLM's at its masked share), so a small corpus is not "
              "trained into memory; 0 = no cap", min=0.0, max=MAX_EPOCHS),
        Param("freeze_embeddings", bool, False, "a pretrained start's word embeddings (and the output rows tied to "
              "them) stay as pretrained while the layers, the head and the output bias train; a small corpus then "
              "cannot pull the rows of its own words towards its documents"),
        Param("dropout", float, 0.0, "every dropout layer's rate while training (the embeddings', the attention's, "
              "the residual branches'); 0 = the model's own (0.1 for MiniLM and the sizes)", min=0.0, max=0.9),
        Param("patience_tokens", int, PATIENCE_TOKENS, "early stopping: training tokens without a better validation "
              "loss or accuracy before training stops (never while on the unigram plateau); 0 = train the whole budget", min=0, max=bounds.TOKENS),
        Param("eval_every", int, 0, "validation every N steps; 0 = the step budget / 50 (at least 5)", min=0, max=bounds.TRAINING_STEPS),
        Param("seq_len", int, 0, "token block length; 0 = the size's (128 for tiny; a pretrained start is "
              "capped by its position table)", min=0, max=bounds.SEQUENCE),
        Param("batch_size", int, 0, "training batch in blocks; 0 = the size's (16)", min=0, max=bounds.BATCH),
        DEVICE_PARAM,
        Param("precision", str, "auto", "training precision: auto (bf16 autocast on a CUDA GPU that has it, else "
              "float32), float32 or bf16", choices=PRECISIONS),
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.__post_configure__()

    def __post_configure__(self) -> None:
        self._prepared: dict[tuple[Any, ...], tuple[dict[str, Any], Corpus]] = {}
        if self.params != {p.name: p.default for p in self.parameters}:
            self._config(device="cpu")  # settings that cannot train together are refused with the spec, naming
            # the parameter; the device is checked where the model loads (a worker may have the GPU)

    def _config(self, device: str | None = None) -> Any:
        """The checked training config of this model's parameters (on ``device``, default: its own)."""
        from mlmh.training.config import make_config

        shape = {k: self.params[k] for k in ("seq_len", "batch_size") if self.params[k]}
        return make_config(self.model_kind, self.params["size"], seed=self.params["seed"],
                           max_steps=self.params["max_steps"], epochs=self.params["epochs"] or None,
                           unique_tokens=self.params["unique_tokens"], keep=self.params["keep"], init=self.params["init"],
                           max_passes=self.params["max_passes"],
                           freeze_embeddings=self.params["freeze_embeddings"], dropout=self.params["dropout"],
                           positions=self.params["positions"], budget=self.params["budget"],
                           patience_tokens=self.params["patience_tokens"], eval_every=self.params["eval_every"],
                           device=device or resolve_device(self.params["device"], f"{self.name}:device"),
                           precision=self.params["precision"], spelled=lambda key: f"{self.name}:{key}",
                           **self._objective_params(), **shape)

    def _objective_params(self) -> dict[str, Any]:
        """Training parameters only this kind declares (the MLM's masking schedule)."""
        return {}

    # -- what to train on ------------------------------------------------------------------------
    def _corpus(self, context: LoadContext) -> Corpus:
        """The corpus to train on, with its validation split set."""
        from mlmh.data.splits import with_validation

        return with_validation(self._dataset_corpus(context))

    def _dataset_corpus(self, context: LoadContext) -> Corpus:
        from mlmh.registry import get_registry

        wanted = self.params["dataset"] or context.dataset or (context.corpus.dataset if context.corpus else "")
        if not wanted:
            raise SpecError(f"model '{self.name}' needs a dataset: set {self.name}:dataset=NAME or run it with a dataset")
        if context.corpus is not None and wanted in (context.dataset, context.corpus.dataset):
            return context.corpus  # the run's own corpus, also when its dataset spec has parameters
        path = context.data_path if wanted == context.dataset else None
        return get_registry().build("dataset", wanted).load(path)

    def _prepare(self, context: LoadContext) -> tuple[dict[str, Any], Corpus]:
        """The recipe (everything the weights depend on) and the corpus; memoised per context."""
        memo = (self.params["dataset"], context.dataset, context.data_path, id(context.corpus))
        if memo in self._prepared:
            return self._prepared[memo]
        from mlmh.storage.modelcache import data_hash, library_versions
        from mlmh.training.config import RECIPE_VERSION
        from mlmh.training.models import init_fingerprint

        corpus = self._corpus(context)
        config = self._config()
        recipe = {
            "recipe_version": RECIPE_VERSION,
            "config": config.to_dict(),
            "dataset": corpus.dataset,
            "train_hash": data_hash(corpus.texts("train")),
            "validation_hash": data_hash(corpus.texts("validation")),
            "test_hash": data_hash(corpus.texts("test")),  # the card's held-out accuracy is measured on them
            "init_weights": init_fingerprint(config.init),
            "versions": library_versions(),
        }
        self._prepared[memo] = (recipe, corpus)
        return recipe, corpus

    def cache_name(self, context: LoadContext) -> str:
        """Directory name in the model cache: readable prefix + recipe hash."""
        from mlmh.storage.modelcache import cache_key

        recipe, corpus = self._prepare(context)
        return f"{corpus.dataset}-{self.model_kind}-{self.params['size']}-{cache_key(recipe)}"

    def checkpoints(self) -> tuple[str, ...]:
        init = self.params["init"]
        return (init,) if init and init != "minilm" else ()  # minilm: the bundled package (mlmh doctor)

    def identity(self, context: LoadContext) -> str:
        return f"{self.name}:{self.cache_name(context)}"

    def training_job(self, context: LoadContext) -> Any:
        """What training this model takes (:class:`mlmh.training.jobs.TrainingJob`), for a sequential load or a
        process that trains several models at once."""
        from mlmh.storage.modelcache import ModelCache
        from mlmh.training.jobs import TrainingJob

        recipe, corpus = self._prepare(context)
        from mlmh.data.splits import describe_validation

        return TrainingJob(self.cache_name(context), str(ModelCache().root.resolve()), corpus.texts("train"),
                           corpus.texts("validation"), self._config(), corpus.dataset,
                           recipe["train_hash"], corpus.texts("test"), label=self.short_spec,
                           validation_holds=describe_validation(corpus))

    def load(self, context: LoadContext) -> Any:
        """Train on first use (progress through ``context.progress``), then load the cached model."""
        from mlmh.adapters import load_adapter

        path, _ = self.training_job(context).ensure(context.progress)
        return load_adapter(self.model_kind, path, identity=self.identity(context),
                            device=resolve_device(self.params["device"], f"{self.name}:device"),
                            defer_weights=context.defer_weights)

    def training_card(self, context: LoadContext) -> dict[str, Any]:
        """The card :func:`mlmh.training.train` wrote beside the weights (empty before training)."""
        import json

        from mlmh.storage.modelcache import CARD_NAME, ModelCache

        path = ModelCache().lookup(self.cache_name(context))
        card = path / CARD_NAME if path else None
        return json.loads(card.read_text(encoding="utf-8")) if card and card.is_file() else {}


class TrainedMLM(TrainedModel):
    name = "trained-mlm"
    model_kind = "mlm"
    default = True  # the playground's MLM
    swept = True  # a data-constrained sweep trains it at each unique_tokens x epochs
    description = ("BERT-style masked LM (rotary positions by default) trained offline on the run's dataset "
                   "(cached after first use)")
    parameters: ClassVar[tuple[Param, ...]] = (
        *TrainedModel.parameters,
        Param("mask_schedule", str, "fixed", "training masks: fixed (BERT: mask_ratio of the tokens, 80/10/10), "
              "uniform (CMLM / Mask-Predict: 1..N tokens per sequence, all [MASK]) or mdlm (MDLM: rate "
              "t ~ U(0,1) per sequence, loss weighted 1/t)", choices=MASK_SCHEDULES),
        Param("mask_ratio", float, MLM_MASK_RATIO, "share of tokens masked by the fixed schedule (0.4: measured "
              "better than BERT's 0.15 on unseen real text, see README)", min=0.01, max=0.99),
    )

    def _objective_params(self) -> dict[str, Any]:
        schedule = self.params["mask_schedule"]
        if schedule != "fixed" and self.params["mask_ratio"] != MLM_MASK_RATIO:
            raise SpecError(f"{self.name}: mask_ratio applies to mask_schedule=fixed ({schedule} draws it per sequence)")
        return {"mask_schedule": schedule, "mask_ratio": self.params["mask_ratio"] if schedule == "fixed" else 0.0}


class TrainedCLM(TrainedModel):
    name = "trained-clm"
    model_kind = "clm"
    default = True
    swept = True
    description = ("GPT-2-style causal LM (rotary positions by default) trained offline on the run's dataset, "
                   "matched to trained-mlm")


class TrainedSeq2Seq(TrainedModel):
    name = "trained-seq2seq"
    model_kind = "seq2seq"
    description = "BART-style text-infilling seq2seq trained offline on the run's dataset, matched to trained-mlm"
    parameters: ClassVar[tuple[Param, ...]] = (
        *TrainedModel.parameters,
        Param("span_targets", bool, False, "T5's span corruption (Raffel et al. 2020): the decoder writes only the "
              "hidden spans, each after a sentinel <extra_id_N> (added to a tokenizer without them), instead of "
              "rebuilding the whole block as BART does"),
    )

    def _objective_params(self) -> dict[str, Any]:
        return {"span_targets": self.params["span_targets"]}


@hookimpl
def register_models(register):
    for cls in (TrainedMLM, TrainedCLM, TrainedSeq2Seq):
        register(cls())
