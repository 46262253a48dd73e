"""What gen-ppl's judge costs on the bundled paper run: the texts it scores, their tokens, its CPU seconds.

The paper preset (presets/paper.toml) scores gen-ppl on 16 seen and 16 unseen PAN documents cut to the MiniLM
models' 64-token window: the regenerations of 12 conditions (6 models x 2 maskings), the filler and deletion
baselines of each masking, and beside each the originals (scored once per process). This script rebuilds that
mix without training or generating anything: the originals and both baselines as a run makes them, and each
condition's regenerations by filling its masked words with words drawn from the documents (what a text costs
the judge is its length, not its words). It then scores the mix as a run does, one call per set and role, and
prints one JSON line (docs/PERFORMANCE.md records the figures):

    python scripts/judge_cost.py                                        # the judge as the presets score with it
    python scripts/judge_cost.py --spec gen-ppl:judge=gemma-3-270m,precision=float32
    python scripts/judge_cost.py --difference  # per text: bf16 against float32 on the originals and shuffled ones

Run it from the repository root with harness/ and plugins/ importable (an installed mlmh, or PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from typing import Any

MASKINGS = ("random:ratio=0.15", "random:ratio=0.5")
CONDITIONS_PER_MASKING = 6  # the paper preset's six models, each with its one fitting sampler
DOCUMENTS, WINDOW = 16, 64  # per role (seen, unseen); the MiniLM models' window in tokens
SPEC = "gen-ppl:judge=gemma-3-270m"


def documents() -> list[Any]:
    """The paper run's 16 seen and 16 unseen PAN documents, each cut after its last word inside MiniLM's window."""
    import dataclasses

    from transformers import AutoTokenizer

    from mlmh.data.selection import select_documents
    from mlmh.registry import get_registry
    from mlmh.words import split_words
    from mlmh_builtins.metrics_bertscore import minilm_path

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_path()))
    corpus = get_registry().build("dataset", "pan").load(None)
    out = []
    for split in ("train", "test"):
        for document in select_documents(corpus, DOCUMENTS, split):
            spans = split_words(document.text).spans
            keep = len(spans)
            while keep > 1 and len(tokenizer(document.text[:spans[keep - 1][1]])["input_ids"]) > WINDOW:
                keep -= 1
            out.append(dataclasses.replace(document, text=document.text[:spans[keep - 1][1]]))
    return out


def paper_mix() -> dict[str, list[str]]:
    """Set name -> its 32 texts (16 seen, then 16 unseen): the originals, each masking's baselines and conditions."""
    from mlmh.findings.memorization import baseline_words, filler_word
    from mlmh.generation import prepare_items
    from mlmh.registry import get_registry

    docs = documents()
    corpus = get_registry().build("dataset", "pan").load(None)
    words = [w for d in docs for w in d.text.split()]
    mix = {"originals": [d.text for d in docs]}
    for masking in MASKINGS:
        items = prepare_items(docs, get_registry().build("masking", masking), 0)
        for name, word in baseline_words(filler_word(corpus.split("train"))).items():
            mix[f"{name} {masking}"] = [i.words.replace({w: word for w in i.plan.word_indices}) for i in items]
        for condition in range(CONDITIONS_PER_MASKING):
            draw = random.Random(f"{masking}/{condition}")
            mix[f"condition {condition} {masking}"] = [
                i.words.replace({w: draw.choice(words) for w in i.plan.word_indices}) for i in items]
    return mix


def whole_cost(spec: str) -> dict[str, Any]:
    """The judge's load, then every set of the mix scored against the originals, per role, as a run calls it."""
    from mlmh.components import ScoringItem
    from mlmh.registry import get_registry

    mix = paper_mix()
    originals = mix.pop("originals")
    metric = get_registry().build("metric", spec)
    started, cpu = time.perf_counter(), time.process_time()
    metric.score([ScoringItem("The judge loads.", "The judge loads.")])
    load = {"load_seconds": time.perf_counter() - started, "load_cpu_seconds": time.process_time() - cpu}
    metric.forget_caches()
    tokens, texts, info = 0, 0, {}
    started, cpu = time.perf_counter(), time.process_time()
    for n, regenerated in enumerate(mix.values()):
        for role in (slice(0, DOCUMENTS), slice(DOCUMENTS, 2 * DOCUMENTS)):
            generated, original = metric.score([ScoringItem(p, r) for p, r in zip(regenerated[role], originals[role])])
            # the originals are scored on the first call only (a process scores a text once)
            tokens += generated.info["predicted_tokens"] + (original.info["predicted_tokens"] if n == 0 else 0)
            texts += DOCUMENTS * (2 if n == 0 else 1)
            info = generated.info
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    return {"spec": spec, "texts": texts, "tokens": tokens, "cpu_seconds": cpu_seconds, "seconds": seconds,
            "tokens_per_cpu_s": tokens / cpu_seconds, "precision": info["precision"], "threads": info["threads"],
            **load, "load_average": os.getloadavg()}


def shuffled(texts: list[str], seed: int) -> list[str]:
    """Each text with its words in a random order: what a fluent judge finds unlikely."""
    draw = random.Random(seed)
    return [" ".join(draw.sample(t.split(), len(t.split()))) for t in texts]


def difference(spec: str) -> dict[str, Any]:
    """Each text's perplexity in bf16 against float32: the originals and 16 of them shuffled."""
    from mlmh.components import ScoringItem
    from mlmh.registry import get_registry

    originals = paper_mix()["originals"]
    texts = originals + shuffled(originals[:16], seed=0)
    perplexity = {}
    for precision in ("float32", "bf16"):
        metric = get_registry().build("metric", f"{spec},precision={precision}")
        perplexity[precision] = metric.score([ScoringItem(t, t) for t in texts])[0].per_sample
    relative = [abs(b / a - 1) for a, b in zip(perplexity["float32"], perplexity["bf16"])]
    return {"texts": len(texts), "max_relative": max(relative), "max_relative_originals": max(relative[:len(originals)]),
            "max_relative_shuffled": max(relative[len(originals):]), "mean_relative": sum(relative) / len(relative),
            "median_perplexity_float32": sorted(perplexity["float32"])[len(texts) // 2]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", default=SPEC, help="the gen-ppl spec to cost (default: %(default)s)")
    parser.add_argument("--difference", action="store_true", help="compare bf16 with float32 per text instead")
    args = parser.parse_args()
    print(json.dumps(difference(args.spec) if args.difference else whole_cost(args.spec)))


if __name__ == "__main__":
    main()
