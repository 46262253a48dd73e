"""``mlmh train``: train one small MLM, CLM or seq2seq model on a dataset and save it as a HF directory."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from mlmh import bounds
from mlmh.config import options

OBJECTIVE_CHOICES = ("mlm", "clm", "seq2seq")
MASK_SCHEDULE_CHOICES = ("fixed", "uniform", "mdlm")
BUDGET_CHOICES = ("tokens", "targets", "compute")
SIZE_CHOICES = ("tiny", "small", "base")
CARD_ROWS = (
    ("objective", "objective"), ("architecture", "architecture"), ("positions", "positions"), ("size", "size"),
    ("init", "init"),
    ("dataset", "dataset"), ("parameters", "parameters"), ("vocab_size", "vocabulary"),
    ("mask_schedule", "mask schedule"), ("mask_ratio", "mask ratio"), ("budget", "budget"),
    ("budget_note", "budget rule"), ("steps", "step budget"), ("steps_run", "steps run"),
    ("step_kept", "step kept (best validation)"), ("stopped_early", "stopped early"), ("stop_reason", "why it stopped"),
    ("tokens_seen", "tokens seen"), ("supervised_targets", "supervised targets"),
    ("approx_train_flops", "approx. training FLOPs"), ("final_loss", "final train loss"),
    ("selection", "checkpoint chosen by"), ("validation_loss", "validation loss (kept)"),
    ("validation_accuracy", "validation accuracy (kept, training masks)"),
    ("heldout_accuracy", "held-out accuracy (all-[MASK], as generation)"), ("heldout_source", "held out"),
    ("best_constant_accuracy", "best constant predictor's accuracy (same targets)"),
    ("beats_constant", "beat the best constant predictor (off the unigram plateau)"),
    ("unigram_baseline_accuracy", "unigram baseline accuracy"), ("validation_holds", "validation data"),
    ("device", "device"), ("precision", "precision"), ("wall_seconds", "wall time (s)"), ("seconds_per_step", "s / step"),
    ("threads", "threads"), ("seed", "seed"), ("data_hash", "data sha256"),
)


@click.command(name="train")
@click.option("--dataset", required=True, help="Dataset to train on (see: mlmh ls datasets).")
@click.option("--data", "data_path", type=click.Path(exists=True), default=None, callback=options.data_path,
              help="Path to the dataset in its official format; default: the bundled sample.")
@click.option("--objective", type=click.Choice(OBJECTIVE_CHOICES), required=True,
              help="mlm = BERT-style masked LM, clm = GPT-2-style causal LM, seq2seq = BART text infilling.")
@click.option("--positions", type=click.Choice(("rotary", "absolute")), default="rotary", show_default=True,
              help="Position encoding of mlm/clm: rotary = RoFormer MLM / GPT-NeoX CLM (the MLM learns context "
                   "within a few hundred steps); absolute = classic BERT / GPT-2 (a small BERT stays near the "
                   "unigram baseline for thousands of steps).")
@click.option("--size", type=click.Choice(SIZE_CHOICES), default="tiny", show_default=True,
              help="Matched sizes: tiny ~1.2M, small ~6M, base ~27M parameters (with a full vocabulary).")
@click.option("--init", default="", metavar="CHECKPOINT",
              help="Fine-tune a pretrained start: a saved model directory (keeps its tokenizer), a hub name (cached, or "
                   "downloaded while online) or 'minilm' (the bundled MiniLM-L6 encoder). An encoder starts every "
                   "objective: mlm (its MLM head; fresh for MiniLM), clm (the same weights as a causal decoder), "
                   "seq2seq (an encoder-decoder warm-started from it on both sides, Rothe et al. 2020); a "
                   "decoder-only or encoder-decoder checkpoint its own (T5: span corruption through its sentinels).")
@click.option("--max-steps", type=options.TRAINING_STEPS, default=None, help="Training steps (default: the size's default).")
@click.option("--mask-schedule", type=click.Choice(MASK_SCHEDULE_CHOICES), default=None,
              help="MLM training masks: fixed = BERT (--mask-ratio of the tokens, 80/10/10; the default), "
                   "uniform = CMLM / Mask-Predict (1..N tokens per sequence, all [MASK]), mdlm = MDLM "
                   "(rate t ~ U(0,1) per sequence, loss weighted 1/t).")
@click.option("--mask-ratio", type=options.Number(float, min=0, max=1, open=True), default=None, help="Share of tokens the fixed schedule masks (default 0.4; BERT's is 0.15).")
@click.option("--budget", type=click.Choice(BUDGET_CHOICES), default="tokens", show_default=True,
              help="What is matched across objectives: tokens (steps x batch x seq_len); targets (the MLM gets "
                   "the steps to supervise as many tokens as the CLM, at most 8x); compute (~6 x params x tokens).")
@click.option("--eval-every", type=options.TRAINING_STEPS, default=None,
              help="Validation loss every N steps (default: the size's step budget / 20).")
@click.option("--patience-tokens", type=options.Number(int, min=0, max=bounds.TOKENS, meaning="0 = never stop early"), default=None,
              help="Stop once this many training tokens pass without a better validation loss, never while the "
                   "model is still on the unigram plateau (default 100000; 0 = train the whole budget).")
@click.option("--device", default="auto", show_default=True,
              help="Where to train: auto (CUDA when available, else the CPU), cpu, cuda or cuda:N.")
@click.option("--precision", type=click.Choice(("auto", "float32", "bf16")), default="auto", show_default=True,
              help="auto = bf16 autocast on a CUDA GPU that supports it, float32 elsewhere.")
@click.option("--epochs", type=options.Number(float, min=0, max=bounds.EPOCHS, open=True), default=None, help="Train for this many passes over the data instead.")
@click.option("--seed", type=options.SEED, default=0, show_default=True, help="Seed of weights, data order and masking.")
@click.option("--threads", type=options.THREADS, default=None, help="CPU threads for torch (default: 1 for tiny models, which run faster on one thread; else all cores).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Directory to save the model in.")
@click.option("--overwrite", is_flag=True, help="Replace --out if it holds a model mlmh wrote (never a folder with other files).")
@click.option("--json", "as_json", is_flag=True, help="Print the training card as JSON.")
def train(dataset: str, data_path: str | None, objective: str, positions: str, size: str, init: str,
          max_steps: int | None, mask_schedule: str | None, mask_ratio: float | None, budget: str,
          eval_every: int | None, patience_tokens: int | None, device: str, precision: str, epochs: float | None,
          seed: int, threads: int | None, out_dir: str, overwrite: bool, as_json: bool) -> None:
    """Train a tokenizer and a small MLM, CLM or seq2seq model on a dataset's train split.

    All objectives share one cased WordPiece vocabulary and see the same token blocks, so models of
    one size have matched parameter counts and a declared training budget (--budget). The checkpoint
    kept is chosen on the validation split (whole groups of the dataset, e.g. PAN authors, that no model
    trains on): the highest validation accuracy once the model beats the best constant predictor (the
    single token right most often on the same targets); the test split is never read. The model is written to a temporary directory and
    moved to --out only when complete; it loads with
    AutoModelForMaskedLM / AutoModelForCausalLM / AutoModelForSeq2SeqLM.from_pretrained(DIR), and
    training_card.json records data hash, budget, steps run and kept, training and validation curves,
    validation accuracy vs. the unigram baseline (for the MLM at masking ratios 0.15, 0.5 and 0.8),
    wall time and library versions.

    \b
    Examples:
      mlmh train --dataset pan --objective mlm --size tiny --out models/pan-mlm
      mlmh train --dataset pan --objective clm --max-steps 30 --out /tmp/clm
      mlmh train --dataset pan --objective mlm --positions absolute --out models/pan-bert
      mlmh train --dataset mpst --data ~/mpst.csv --objective seq2seq --epochs 2 --out models/mpst-bart
      mlmh train --dataset pan --objective mlm --init minilm --max-steps 200 --out models/pan-minilm
      mlmh train --dataset pan --objective seq2seq --init models/pan-minilm --max-steps 50 --out models/pan-bert2bert
      mlmh train --dataset pan --objective mlm --mask-schedule mdlm --budget targets --out models/pan-mdlm
    """
    from mlmh.data.splits import describe_validation, with_validation
    from mlmh.errors import DataError
    from mlmh.machine.devices import resolve_device
    from mlmh.registry import get_registry
    from mlmh.storage.modelcache import atomic_directory, ensure_free_space
    from mlmh.storage.outputs import check_output_folder
    from mlmh.training.config import PATIENCE_TOKENS, make_config
    from mlmh.training.loop import estimated_bytes
    from mlmh.training.loop import train as train_model
    from mlmh.training.models import init_source

    # None = not given; make_config reads 0 as "the default", which the options above never let through
    config = make_config(objective, size, seed=seed, max_steps=max_steps or 0, epochs=epochs, init=init,
                         positions=positions, mask_schedule=mask_schedule or "", mask_ratio=mask_ratio or 0.0,
                         budget=budget, eval_every=eval_every or 0,
                         patience_tokens=PATIENCE_TOKENS if patience_tokens is None else patience_tokens,
                         device=resolve_device(device, "--device"), precision=precision)
    if init:
        init_source(init)  # fail on a bad --init before loading any data
    out = check_output_folder(out_dir, "--out", overwrite=overwrite)
    replace = overwrite or out.is_dir()  # checked just now; a model another run puts there meanwhile stays
    corpus = with_validation(get_registry().build("dataset", dataset).load(data_path))
    train_texts = corpus.texts("train")
    if not train_texts:
        raise DataError(f"dataset '{dataset}' ({corpus.source}) has no documents in its train split")
    ensure_free_space(out.parent, estimated_bytes(config))
    with atomic_directory(out, overwrite=replace) as tmp:
        with _ProgressBar(f"training {objective} ({size})") as bar:
            card = train_model(train_texts, config, tmp, validation_texts=corpus.texts("validation"),
                               dataset=corpus.dataset, progress=bar.update, threads=threads,
                               validation_holds=describe_validation(corpus), test_texts=corpus.texts("test"))
    card = {"path": str(out), **card}
    if as_json:
        click.echo(json.dumps(card, indent=2))
    else:
        _print_card(card)


class _ProgressBar:
    """A Rich progress bar on stderr fed by the training progress callback (step, loss, ETA)."""

    def __init__(self, title: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        from mlmh.run.eta import Eta

        self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("loss {task.fields[loss]}"), TextColumn("{task.fields[eta]}"),
                                 console=Console(stderr=True), transient=False)
        self.task = self.progress.add_task(title, total=None, loss="-", eta="")
        self.eta = Eta()

    def __enter__(self) -> "_ProgressBar":
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.stop()

    def update(self, event: dict[str, Any]) -> None:
        from mlmh.run.eta import eta_text

        self.eta.observe(event["step"], event["total"], time.monotonic())
        self.progress.update(self.task, completed=event["step"], total=event["total"], loss=f"{event['loss']:.3f}",
                             eta=eta_text(self.eta.remaining()))


def _print_card(card: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from mlmh.machine.terminal import literal

    table = Table(title=literal(f"training card — {card['path']}"), show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    for key, label in CARD_ROWS:
        value = card.get(key)
        if value is None or value == "":
            continue
        if isinstance(value, float):
            value = f"{value:.4f}"
        elif key == "approx_train_flops":
            value = f"{value:.3g}"
        table.add_row(label, literal(value))  # a path or a spec, as written
    for ratio, at in (card.get("accuracy_at_ratio") or {}).items():
        constant = at.get("best_constant_accuracy")
        table.add_row(f"accuracy at mask ratio {ratio}",
                      f"{at['accuracy'] or 0:.4f} (unigram baseline {at['unigram_baseline_accuracy'] or 0:.4f}"
                      + (f", best constant {constant:.4f}{'' if at.get('beats_constant') else ': not beaten'}"
                         if constant is not None else "") + ")")
    Console().print(table)
