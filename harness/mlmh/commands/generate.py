"""``mlmh generate``: mask a text (or some dataset documents), regenerate it with one model and sampler,
and show the masked input, every refinement step and the result."""

from __future__ import annotations

from typing import Any

import click

from mlmh.config import options

EPILOG = """\b
Examples:
  mlmh generate --model trained-mlm --masking random:ratio=0.3 --sampler mask-predict:steps=4 \\
                --text "The bells rang out over the village in the rain." --trace
  mlmh generate --model hf-mlm:path=./bert-tiny --masking random:ratio=0.3 \\
                --sampler mask-predict:steps=4 --text "The cat sat on the mat." --trace
  mlmh generate --model trained-clm --masking stopwords --sampler clm-infill --dataset pan --limit 3
  mlmh generate --model hf-seq2seq:path=./bart --masking span:ratio=0.3 --sampler seq2seq-infill \\
                --text "A quick brown fox jumps over the lazy dog." --json
  mlmh generate --run runs/X --sample 1:pan-0003 --trace   # regenerate a sample of an eval run exactly
"""


def _sampler_help(base: str) -> str:
    """``--sampler``'s help, naming the sampler each model kind gets by default (as the samplers declare it)."""
    from mlmh.config.declared import default_samplers

    return f"{base} (default by model kind: " + ", ".join(f"{k}: {v}" for k, v in default_samplers().items()) + ")."


def _text_help(base: str) -> str:
    """``--text``'s help, naming the dataset a trained-* model then learns from (as the datasets declare it)."""
    from mlmh.config.declared import default_dataset

    return f"{base} (a trained-* model then trains on the '{default_dataset()}' sample unless its spec names dataset=NAME)."


@click.command(epilog=EPILOG)
@click.option("--model", "model_spec", default=None, help="Model spec, e.g. hf-mlm:path=DIR or trained-mlm.")
@click.option("--masking", "masking_spec", default="random:ratio=0.15", show_default=True, help="Masking spec.")
@click.option("--sampler", "sampler_spec", default=None, cls=options.LateHelpOption, late_help=_sampler_help,
              help="Sampler spec")
@click.option("--text", default=None, cls=options.LateHelpOption, late_help=_text_help,
              help="The text to mask and regenerate")
@click.option("--dataset", default=None, help="Take documents from this dataset instead (test split first).")
@click.option("--data", "data_path", default=None, type=click.Path(), callback=options.data_path, help="Dataset files (default: the bundled sample).")
@click.option("--limit", default=1, show_default=True, type=options.COUNT, help="Documents to take from --dataset.")
@click.option("--seed", default=0, show_default=True, type=options.SEED, help="Run seed: fixes the masks and the sampling.")
@click.option("--batch-size", default=8, show_default=True, type=options.BATCH_SIZE, help="Items per batch.")
@click.option("--json", "as_json", is_flag=True, help="Print the Generation(s) as JSON.")
@click.option("--trace", is_flag=True,
              help="Show every refinement step with the changed tokens highlighted, and the sampler's diagnostics.")
@click.option("--run", "run_dir", default=None, type=click.Path(file_okay=False),
              help="A finished `mlmh eval` run directory: regenerate its --sample with the run's model, masking, "
                   "sampler and seed, and check it matches.")
@click.option("--sample", default=None, metavar="CONDITION:DOC_ID",
              help="With --run: the sample id, as generations.jsonl lists it.")
def generate(model_spec: str | None, masking_spec: str, sampler_spec: str | None, text: str | None, dataset: str | None,
             data_path: str | None, limit: int, seed: int, batch_size: int, as_json: bool, trace: bool,
             run_dir: str | None, sample: str | None) -> None:
    """Mask a text, regenerate the masked words with one model and sampler, and show how."""
    import json

    if run_dir or sample:
        _reproduce(run_dir, sample, as_json, trace, given=model_spec or text or dataset)
        return
    from mlmh import api
    from mlmh.errors import SpecError
    from mlmh.types import to_dict

    if model_spec is None:
        raise SpecError("give --model (or --run DIR --sample ID to regenerate a sample of an eval run)")
    if (text is None) == (dataset is None):
        raise SpecError("give exactly one of --text or --dataset")
    if data_path and not dataset:
        raise SpecError("--data goes with --dataset")
    if dataset is not None:
        generations = api.generate_from_dataset(dataset, data=data_path, limit=limit, model=model_spec,
                                                masking=masking_spec, sampler=sampler_spec, seed=seed,
                                                batch_size=batch_size, progress=_progress_printer())
    else:
        generations = [api.generate(text or "", model=model_spec, masking=masking_spec, sampler=sampler_spec, seed=seed,
                                    progress=_progress_printer())]
    if as_json:
        payload: Any = [to_dict(g) for g in generations]
        click.echo(json.dumps(payload[0] if len(payload) == 1 else payload, indent=2, ensure_ascii=False))
        return
    _show(generations, trace)


def _reproduce(run_dir: str | None, sample: str | None, as_json: bool, trace: bool, given: Any) -> None:
    """Regenerate one sample of a run (mlmh.run.reproduce) and say whether it is the one the run recorded."""
    import json

    from mlmh.errors import MlmhError, SpecError
    from mlmh.run.reproduce import reproduce
    from mlmh.types import to_dict

    if not (run_dir and sample):
        raise SpecError("--run and --sample go together: mlmh generate --run RUN_DIR --sample CONDITION:DOC_ID")
    if given:
        raise SpecError("--run takes the model, masking, sampler and document from the run; drop --model/--text/--dataset")
    again = reproduce(run_dir, sample)
    if as_json:
        click.echo(json.dumps(to_dict(again.generation), indent=2, ensure_ascii=False))
    else:
        _show([again.generation], trace)
    if not again.identical:
        raise MlmhError(f"sample {sample} of {run_dir} regenerated differently: the run recorded "
                        f"{again.recorded.text!r}")
    click.echo(f"sample {sample} ({again.condition}) reproduced exactly", err=True)


def _progress_printer():
    """A LoadContext progress callback that prints notes and training progress (for trained-* models) to stderr."""
    def report(event: dict[str, Any]) -> None:
        if "note" in event:
            click.echo(f"note: {event['note']}", err=True)
            return
        step, total = event.get("step"), event.get("total")
        if step is not None and total:
            loss = event.get("loss")
            suffix = f" loss {loss:.3f}" if isinstance(loss, (int, float)) else ""
            click.echo(f"\rtraining {step}/{total}{suffix}", err=True, nl=step >= total)

    return report


def _show(generations: list[Any], trace: bool) -> None:
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False)
    for generation in generations:
        console.rule(f"[bold]{generation.doc_id}[/] · {generation.model_kind} · {generation.sampler.split(':')[0]}")
        console.print(Text("masked:    ") + Text(generation.masked_text, style="yellow"))
        if trace:
            for number, step in enumerate(generation.steps, 1):
                console.print(Text(f"step {number:>3}: ", style="dim") + _step_text(step))
        console.print(Text("generated: ") + _result_text(generation))
        facts = [f"{len(generation.masked_words)} masked words", f"{generation.generated_tokens} tokens",
                 f"{generation.forward_passes} forward passes", f"{generation.tokens_processed} tokens processed",
                 f"{generation.seconds * 1000:.1f} ms"]
        console.print(Text(" · ".join(facts), style="dim"))
        for key, value in generation.info.items():
            if trace or key in NOTES:
                console.print(Text(f"{key}: {_info_text(value)}", style="dim"))


#: what a sampler recorded that is shown even without --trace: why the output is not what one would expect;
#: --trace shows every diagnostic (e.g. a diffusion sampler's unmasked_per_step, steps_without_pass, blocks,
#: llada_steps_raised, gibbs_pick)
NOTES = ("cut_to_window", "truncated", "masking_note", "gibbs_start", "gibbs_steps_raised",
         "llada_steps_raised")


def _info_text(value: Any) -> str:
    """A diagnostic value on one line: lists and dicts compact (``[2, 1, 0]``), the rest as written."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_info_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_info_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def _step_text(step: Any):
    """The step's tokens with changed ones highlighted and still-masked ones dimmed; padding left out."""
    from rich.text import Text

    changed, masked = set(step.changed), set(step.masked)
    out = Text()
    for pos, token in enumerate(step.tokens):
        style = "bold green" if pos in changed else ("dim" if pos in masked else "")
        out.append(token, style=style)
        out.append(" ")
    return out


def _result_text(generation: Any):
    """The generated text with the regenerated words highlighted."""
    from rich.text import Text

    from mlmh.words import split_words

    words = split_words(generation.original)
    out = Text()
    cursor = 0
    for index, (start, end) in enumerate(words.spans):
        if index in generation.output_words:
            out.append(generation.original[cursor:start])
            out.append(generation.output_words[index], style="bold green")
            cursor = end
    out.append(generation.original[cursor:])
    return out
