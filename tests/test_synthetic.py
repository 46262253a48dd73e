"""Synthetic corpora: entity spans follow the words through a generation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mlmh.data.synthetic import synthetic_corpus, synthetic_document
from mlmh.types import Corpus, Document, EntitySpan, Generation, Pair
from mlmh.words import split_words


def generate(document: Document, outputs: dict[int, str], text: str | None = None) -> Generation:
    """A Generation as samplers build it: the masked words replaced through the shared word spans."""
    words = split_words(document.text)
    return Generation(
        doc_id=document.id, model="m", model_kind="mlm", sampler="one-shot", masking="random", seed=1,
        original=document.text, masked_text="", text=text if text is not None else words.replace(outputs),
        masked_words=sorted(outputs), output_words=outputs,
    )


def entity(text: str, piece: str, label: str) -> EntitySpan:
    start = text.index(piece)
    return EntitySpan(start, start + len(piece), label, piece, ((start, start + len(piece)),))


TEXT = "Take Metoprolol tartrate 25 mg PO twice daily for hypertension."
#       words: 0 Take, 1 Metoprolol, 2 tartrate, 3 25, 4 mg, 5 PO, 6 twice, 7 daily, 8 for, 9 hypertension, 10 .


def doc_with_entities() -> Document:
    return Document("n1", TEXT, "train", entities=[
        entity(TEXT, "Metoprolol tartrate", "Drug"), entity(TEXT, "25 mg", "Strength"),
        entity(TEXT, "twice daily", "Frequency"), entity(TEXT, "hypertension", "Reason"),
    ])


def spans_of(document: Document) -> dict[str, str]:
    return {e.label: document.text[e.start : e.end] for e in document.entities}


def test_unmasked_entities_shift_and_masked_words_inside_an_entity_take_its_label():
    doc = doc_with_entities()
    rewritten, lost, aligned = synthetic_document(doc, generate(doc, {0: "Please take", 2: "succinate", 6: "three times"}))
    assert aligned and lost == 0
    assert rewritten.text == "Please take Metoprolol succinate 25 mg PO three times daily for hypertension."
    assert spans_of(rewritten) == {"Drug": "Metoprolol succinate", "Strength": "25 mg", "Frequency": "three times daily", "Reason": "hypertension"}
    assert all(e.text == rewritten.text[e.start : e.end] for e in rewritten.entities)


def test_a_fully_masked_entity_becomes_the_generated_words():
    doc = doc_with_entities()
    rewritten, _, _ = synthetic_document(doc, generate(doc, {9: "atrial fibrillation", 1: "Atenolol", 2: "tablets"}))
    assert spans_of(rewritten)["Reason"] == "atrial fibrillation"
    assert spans_of(rewritten)["Drug"] == "Atenolol tablets"


def test_discontinuous_fragments_are_realigned_each():
    text = "Vitamin D and B12 were low."
    doc = Document("v", text, "train", entities=[EntitySpan(0, 17, "Drug", "Vitamin B12", ((0, 7), (14, 17)))])
    rewritten, _, _ = synthetic_document(doc, generate(doc, {2: "plus", 1: "D3"}))
    assert rewritten.text == "Vitamin D3 plus B12 were low."
    (span,) = rewritten.entities
    assert [rewritten.text[s:e] for s, e in span.fragments] == ["Vitamin", "B12"] and span.text == "Vitamin B12"
    assert (span.start, span.end) == (0, 19)


def test_an_entity_generated_as_nothing_vanishes_and_is_counted():
    doc = doc_with_entities()
    rewritten, lost, _ = synthetic_document(doc, generate(doc, {9: ""}))
    assert "Reason" not in spans_of(rewritten) and lost == 1


def test_a_generation_that_does_not_match_its_alignment_keeps_its_text_and_drops_entities():
    doc = doc_with_entities()
    rewritten, lost, aligned = synthetic_document(doc, generate(doc, {0: "Take"}, text="Something else entirely."))
    assert not aligned and rewritten.text == "Something else entirely." and rewritten.entities == [] and lost == 4


def test_synthetic_corpus_keeps_pairs_labels_and_counts_real_documents():
    docs = [
        Document("a", "The storm came in fast.", "train", labels=["sea"], author="x"),
        Document("b", "Snow had covered the town.", "train", labels=["winter"], author="y"),
        Document("c", "A test text stays real.", "test", author="x"),
    ]
    corpus = Corpus("pan", docs, "src", pairs=[Pair("p", "a", "b", False, "train")], notes=["loaded"])
    gens = {"a": generate(docs[0], {1: "wind"}), "c": generate(docs[2], {0: "Another"})}
    synthetic = synthetic_corpus(corpus, gens)
    texts = {d.id: d.text for d in synthetic.documents}
    assert texts == {"a": "The wind came in fast.", "b": docs[1].text, "c": docs[2].text}
    first = synthetic.by_id()["a"]
    assert first.labels == ["sea"] and first.author == "x" and first.meta["synthetic"]["sampler"] == "one-shot"
    assert synthetic.pairs == corpus.pairs and synthetic.source == "synthetic from src"
    assert synthetic.notes[0] == "loaded" and any("1 train document(s) had no generation" in n for n in synthetic.notes)
    assert corpus.by_id()["a"].text == "The storm came in fast."  # the input corpus is not modified


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.integers(0, 10), st.text(alphabet="abcxyz -", min_size=0, max_size=12), max_size=6))
def test_realigned_entities_always_point_at_their_own_text(outputs):
    doc = doc_with_entities()
    rewritten, lost, aligned = synthetic_document(doc, generate(doc, outputs))
    assert aligned
    assert len(rewritten.entities) + lost == len(doc.entities)
    for span in rewritten.entities:
        assert 0 <= span.start < span.end <= len(rewritten.text)
        assert span.text == " ".join(rewritten.text[s:e] for s, e in span.fragments)
        assert span.text == span.text.strip()
    untouched = [e for e in doc.entities if not any(ws < e.end and we > e.start for i, (ws, we) in enumerate(split_words(TEXT).spans) if i in outputs)]
    assert {e.text for e in untouched} <= {e.text for e in rewritten.entities}


def test_property_tests_keep_no_example_database():
    """conftest's profile: no .hypothesis writes, no background writer thread left behind."""
    assert settings().database is None
