"""Shared pre-tokenization: one word segmentation for every model, so maskings are model-independent."""

from __future__ import annotations

import re

from mlmh.types import Words

# A word is a run of letters/digits with inner apostrophes or hyphens ("don't", "follow-up");
# every other non-space character is a word of its own (punctuation).
_WORD = re.compile(r"\w+(?:['’\-]\w+)*|[^\w\s]", re.UNICODE)


def split_words(text: str) -> Words:
    """Word spans (with character offsets) of ``text``."""
    return Words(text=text, spans=tuple((m.start(), m.end()) for m in _WORD.finditer(text)))


def is_punctuation(word: str) -> bool:
    return bool(word) and not any(ch.isalnum() for ch in word)


#: words after which a sentence starts
SENTENCE_ENDS = frozenset({".", "!", "?"})


def sentence_cased(words: Words, outputs: dict[int, str]) -> dict[int, str]:
    """``outputs`` (word index -> generated word) with the first letter capitalised where a sentence starts:
    the text's first word, or one after ``.``, ``!`` or ``?`` (the text's or a generated one).

    For a model whose tokenizer folds case (an uncased BERT or MiniLM): it writes every word in lowercase, so
    case-sensitive metrics would count a sentence's first word wrong however right the model was. This is the
    one casing rule that needs no corpus; names stay lowercase (restoring them would need a truecaser trained on
    cased text, Lita et al. 2003), which is why runs with an uncased start also report lowercased BLEU."""
    cased = dict(outputs)
    for i in sorted(cased):
        word = cased[i]
        starts = i == 0 or cased.get(i - 1, words[i - 1] if i <= len(words) else "") in SENTENCE_ENDS
        if starts and word[:1].islower():
            cased[i] = word[0].upper() + word[1:]
    return cased
