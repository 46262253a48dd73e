"""README's Trained-models table, from a finished run's training cards: each trained model's held-out accuracy (on the
blocks its card names: the test split's, which chose nothing), the best constant predictor's on the same targets,
the steps it ran and the tokens it saw. README's table is this script's output on a `make demo` run:

    python scripts/trained_models_table.py runs/<id>

Run it from the repository root with mlmh importable (an installed mlmh, or PYTHONPATH=harness:plugins).
"""

from __future__ import annotations

import argparse
from typing import Any

#: how README names each kind's model and what its accuracy counts
KINDS = {"mlm": "MLM (RoFormer, {ratio:.0%} masking), masked tokens", "clm": "CLM (GPT-NeoX layout), next token",
         "seq2seq": "seq2seq (BART), hidden-span tokens"}


def table(results: Any) -> list[str]:
    """The Markdown table of ``results``' trained models, in the run's order."""
    lines = ["| model | held-out accuracy | best constant | steps run | tokens seen |", "|---|---:|---:|---:|---:|"]
    for record in results.models.values():
        card = record.training
        if not card or card.get("heldout_accuracy") is None:
            continue
        label = KINDS.get(record.model_kind, record.model_kind).format(ratio=card.get("mask_ratio") or 0.15)
        steps = f"{card['steps_run']:,}" + (" (stopped early)" if card.get("stopped_early") else "")
        constant = card.get("best_constant_accuracy", card.get("unigram_baseline_accuracy"))
        lines.append(f"| {label} | {card['heldout_accuracy']:.3f} | {constant:.3f} | {steps} | "
                     f"{card.get('tokens_seen', 0):,} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a run directory or its results.json")
    from mlmh.api import load

    print("\n".join(table(load(parser.parse_args(argv).run).results)))


if __name__ == "__main__":
    main()
