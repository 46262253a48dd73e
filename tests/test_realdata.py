"""The real-prose builders (tests/realdata.py) themselves: no near-duplicate texts, and PAN files with the authors asked for."""

from __future__ import annotations

import json

import pytest

from realdata import pan_dir, real_prose, word_runs

def test_no_two_texts_share_a_long_run_or_a_source_package():
    """libfoo and libfoo-dev repeat one description: kept both, a model would train on it twice and be scored as
    memorising it."""
    prose = real_prose()
    families = [p.family for p in prose if p.family]
    assert len(families) == len(set(families))
    seen: set[tuple[str, ...]] = set()
    for item in prose:
        runs = word_runs(item.text)
        assert not runs & seen, item.name
        seen |= runs


@pytest.mark.parametrize("n_authors", [8, 60])  # 60: the size, where single-text authors fill in
def test_pan_files_hold_the_authors_asked_for(tmp_path, n_authors):
    try:
        out = pan_dir(tmp_path, n_authors=n_authors)
    except RuntimeError as exc:  # a machine with few packages installed
        pytest.skip(str(exc))
    truth = [json.loads(line) for line in (out / "truth.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len({a for row in truth for a in row["authors"]}) == n_authors
    assert {row["same"] for row in truth} == {True, False}
