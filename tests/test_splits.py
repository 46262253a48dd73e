"""Document roles: validation carved from train by a hash of the ids, pairs kept whole, test untouched."""

from __future__ import annotations

import dataclasses

import pytest

from mlmh.data import splits
from mlmh.data.splits import check_roles, describe_validation, hold_out, with_control, with_validation
from mlmh.errors import DataError
from mlmh.types import Corpus, Document, Pair


def _corpus(n_train=40, n_test=10, pairs=False) -> Corpus:
    docs = [Document(id=f"tr{i}", text=f"train text {i}") for i in range(n_train)]
    docs += [Document(id=f"te{i}", text=f"test text {i}", split="test") for i in range(n_test)]
    pair_list = []
    if pairs:
        pair_list = [Pair(id=f"p{i}", a=f"tr{2 * i}", b=f"tr{2 * i + 1}", same=i % 2 == 0) for i in range(n_train // 2)]
        pair_list += [Pair(id=f"q{i}", a=f"te{2 * i}", b=f"te{2 * i + 1}", same=True, split="test")
                      for i in range(n_test // 2)]
    return Corpus(dataset="made-up", documents=docs, source="test", pairs=pair_list)


def _ids(corpus, split):
    return {d.id for d in corpus.split(split)}


def test_a_tenth_of_train_moves_to_validation_and_test_never_moves():
    before = _corpus()
    after = with_validation(before)
    assert len(_ids(after, "validation")) == 4 and len(_ids(after, "train")) == 36
    assert _ids(after, "test") == _ids(before, "test")
    assert _ids(after, "validation") <= _ids(before, "train")
    assert [d.text for d in after.documents] == [d.text for d in before.documents]  # same order, same texts
    assert before.split("validation") == []  # the input is not changed
    assert any("validation split: 4 of 40" in note for note in after.notes)
    check_roles(after)


def test_the_choice_is_deterministic_and_follows_ids_not_order():
    corpus = _corpus()
    first = _ids(with_validation(corpus), "validation")
    assert _ids(with_validation(_corpus()), "validation") == first
    shuffled = dataclasses.replace(corpus, documents=corpus.documents[::-1])
    assert _ids(with_validation(shuffled), "validation") == first
    assert first != {"tr0", "tr1", "tr2", "tr3"}  # hashed, not the first ids


def test_it_is_idempotent_and_keeps_a_dataset_validation_split():
    once = with_validation(_corpus())
    assert with_validation(once) is once
    shipped = _corpus()
    shipped.documents[0] = dataclasses.replace(shipped.documents[0], split="validation")
    assert with_validation(shipped) is shipped and _ids(shipped, "validation") == {"tr0"}


@pytest.mark.parametrize("n_train,expected", [(2, 1), (3, 1), (14, 1), (15, 2)])
def test_small_train_splits_give_at_least_one_validation_document(n_train, expected):
    after = with_validation(_corpus(n_train=n_train))
    assert len(_ids(after, "validation")) == expected and after.split("train")


def test_a_single_train_document_stays_in_train():
    corpus = _corpus(n_train=1)
    assert with_validation(corpus) is corpus


def test_verification_pairs_move_whole():
    before = _corpus(n_train=40, pairs=True)
    after = with_validation(before)
    validation = _ids(after, "validation")
    moved_pairs = [p for p in after.pairs if p.split == "validation"]
    assert len(validation) == 4 and len(moved_pairs) == 2
    assert {x for p in moved_pairs for x in (p.a, p.b)} == validation
    assert all(p.a not in validation and p.b not in validation for p in after.pairs if p.split != "validation")
    assert [p.split for p in after.pairs if p.id.startswith("q")] == ["test"] * 5
    check_roles(after)


def test_check_roles_names_the_offending_document():
    corpus = _corpus(n_train=3, n_test=1)
    corpus.documents.append(Document(id="tr0", text="again", split="test"))
    with pytest.raises(DataError, match="document 'tr0' is in both 'train' and 'test'"):
        check_roles(corpus)
    with pytest.raises(DataError, match="document 'x' has split 'dev'"):
        check_roles(Corpus("made-up", [Document(id="x", text="t", split="dev")], "test"))
    split_pair = _corpus(n_train=2, pairs=True)
    split_pair.documents[0] = dataclasses.replace(split_pair.documents[0], split="test")
    with pytest.raises(DataError, match="pair 'p0' \\(train\\) joins documents of splits"):
        check_roles(split_pair)


def test_bad_fraction_is_one_clear_error():
    with pytest.raises(DataError, match="validation fraction must be between 0 and 1; got 1.5"):
        with_validation(_corpus(), 1.5)


def test_bundled_pan_sample_gets_author_disjoint_validation():
    from mlmh.registry import get_registry

    corpus = with_validation(get_registry().build("dataset", "pan").load(None))
    check_roles(corpus)
    validation, test = _ids(corpus, "validation"), _ids(corpus, "test")
    assert 30 <= len(validation) <= 72 and not validation & test
    authors = {split: {d.author for d in corpus.split(split)} for split in ("train", "validation", "test")}
    assert authors["validation"] and not authors["validation"] & (authors["train"] | authors["test"])
    assert {x for p in corpus.pairs if p.split == "validation" for x in (p.a, p.b)} <= validation
    assert describe_validation(corpus).endswith("group(s) that no model trains on")


def _grouped(n_groups=12, per_group=5, linked=False) -> Corpus:
    docs = [Document(id=f"g{g}d{i}", text=f"text {g} {i}", group=f"author{g}") for g in range(n_groups) for i in range(per_group)]
    pairs = []
    if linked:  # every author joined to the next one: one component, as in real PAN releases
        pairs = [Pair(id=f"p{g}", a=f"g{g}d0", b=f"g{g + 1}d1", same=False) for g in range(n_groups - 1)]
        pairs += [Pair(id=f"s{g}", a=f"g{g}d2", b=f"g{g}d3", same=True) for g in range(n_groups)]
    return Corpus(dataset="made-up", documents=docs, source="test", pairs=pairs)


@pytest.mark.parametrize("linked", [False, True])
def test_validation_holds_whole_groups_even_when_pairs_link_them_all(linked):
    after = with_validation(_grouped(linked=linked))
    check_roles(after)
    groups = {split: {d.group for d in after.split(split)} for split in ("train", "validation")}
    assert groups["validation"] and not groups["validation"] & groups["train"]
    assert len(after.split("validation")) == 5  # one whole group of five: a tenth of 60 documents, rounded to groups
    if linked:
        assert any("pair(s) joining train and validation groups left out" in note for note in after.notes)


def test_hold_out_takes_whole_groups_seeded_and_near_the_fraction():
    documents = _grouped(n_groups=20, per_group=3).documents
    held = hold_out(documents, 0.3, seed=0, salt="made-up")
    assert len(held) == 18 and held == hold_out(documents[::-1], 0.3, seed=0, salt="made-up")
    assert held != hold_out(documents, 0.3, seed=1, salt="made-up")
    assert all({f"g{g}d{i}" for i in range(3)} <= held or not {f"g{g}d{i}" for i in range(3)} & held for g in range(20))
    assert hold_out(documents[:3], 0.3, seed=0, salt="x") == set()  # one group: nothing can be held out


# -- the control split: train authors' texts no model learns ---------------------------------------------------------
@pytest.fixture
def small_controls(monkeypatch):
    """Control sets of any size, for corpora of a few documents (a run holds none under CONTROL_MIN)."""
    monkeypatch.setattr(splits, "CONTROL_MIN", 1)


def _authored(per_author=(6, 6, 4, 1), pairs=False) -> Corpus:
    docs = [Document(id=f"a{a}-{i}", text=f"author {a} text {i}", author=f"a{a}", group=f"a{a}")
            for a, n in enumerate(per_author) for i in range(n)]
    docs += [Document(id="te0", text="a test text", split="test", group="new")]
    pair_list = []
    if pairs:  # same-author pairs of each author's consecutive texts
        pair_list = [Pair(id=f"p{a}-{i}", a=f"a{a}-{i}", b=f"a{a}-{i + 1}", same=True)
                     for a, n in enumerate(per_author) for i in range(0, n - 1, 2)]
    return Corpus(dataset="made-up", documents=docs, source="test", pairs=pair_list)


def test_control_holds_out_train_texts_of_train_authors_leaving_each_author_most_of_theirs(small_controls):
    before = _authored()
    after = with_control(before, 5)
    control = after.split("control")
    assert len(control) == 5 and _ids(after, "test") == _ids(before, "test")
    for author in {d.group for d in control}:
        held = sum(d.group == author for d in control)
        kept = sum(d.group == author for d in after.split("train"))
        assert held <= kept  # at most half of an author's texts move: the model still learns how they write
    assert "a3" not in {d.group for d in control}  # an author with one text keeps it
    assert after.texts("train") == [t for t in before.texts("train") if t not in {d.text for d in control}]
    assert with_control(after, 5) is after and with_control(before, 0) is before
    assert any("control split: 5 of 17 train documents" in note for note in after.notes)
    check_roles(after)


def test_control_is_chosen_by_the_ids_alone_and_a_fraction_counts_train(small_controls):
    assert _ids(with_control(_authored(), 0.3), "control") == _ids(with_control(_authored(), 5), "control")
    assert _ids(with_control(_authored(), 0.3), "control") == _ids(with_control(_authored(), 0.3), "control")


def test_control_takes_whole_pairs_and_never_a_text_a_train_document_repeats(small_controls):
    after = with_control(_authored(pairs=True), 4)
    control = _ids(after, "control")
    assert len(control) == 4
    moved = [p for p in after.pairs if p.split == "control"]
    assert {d for p in moved for d in (p.a, p.b)} == control  # the pairs moved with their documents
    check_roles(after)
    shared = _authored(pairs=True)  # a document in a second pair: that pair is left out, never split across roles
    shared = dataclasses.replace(shared, pairs=[*shared.pairs, *(Pair(id=f"x{i}", a=p.a, b="a2-3", same=False)
                                                                 for i, p in enumerate(shared.pairs))])
    crossed = with_control(shared, 4)
    check_roles(crossed)
    assert any("train pair(s) joining train and control documents left out" in n for n in crossed.notes)
    repeated = _authored()
    repeated = dataclasses.replace(repeated, documents=[dataclasses.replace(d, text="shared text") if d.id in ("a0-0", "a0-1")
                                                        else d for d in repeated.documents])
    assert not {"a0-0", "a0-1"} & _ids(with_control(repeated, 8), "control")


def test_control_under_its_minimum_is_not_held_out_and_the_notes_say_so():
    few = with_control(_authored(per_author=(1, 1, 1)), 2)
    assert not few.split("control") and any("control split: none held out; 2 train document(s) asked, 0 could be held "
                                            "out" in n for n in few.notes)
    ungrouped = Corpus("made-up", [Document(id=f"d{i}", text=f"text {i}") for i in range(200)], "test")
    assert len(with_control(ungrouped, 0.1).split("control")) == 20  # no groups declared: any document may move
    small = with_control(ungrouped, splits.CONTROL_MIN - 1)
    assert not small.split("control") and f"under {splits.CONTROL_MIN} documents" in small.notes[-1]
    assert f"{splits.CONTROL_MIN - 1} train document(s) asked, {splits.CONTROL_MIN - 1} could be held out" in \
        small.notes[-1]  # what was asked first, then what could move: never "2 of the 1 asked"
    assert "reported as a group gap" in small.notes[-1]  # never the seen - unseen comparison in its place
    assert len(with_control(ungrouped, 6).split("control")) == 6  # a small set is kept: its wide CI reads as no evidence
