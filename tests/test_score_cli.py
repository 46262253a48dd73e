"""``mlmh score``: metric specs with commas, files read line by line, errors naming file and line."""

from __future__ import annotations

import json

import pytest
from cli_helpers import run_cli

from mlmh.cli import main
from mlmh.run.score_files import read_pairs


def write(path, content: bytes | str):
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return str(path)


def test_score_prints_json_with_every_result(tmp_path, capsys):
    pred = write(tmp_path / "pred.txt", "the cat sat on the mat\nhello world\n")
    ref = write(tmp_path / "ref.txt", "the cat sat on a mat\nhello there world\n")
    main(["score", "--metric", "bleu,rouge:use_stemmer=true", "-m", "distinct-n:n=1", "--pred", pred, "--ref", ref, "--json"])
    data = json.loads(capsys.readouterr().out)
    names = [r["name"] for r in data["results"]]
    assert names == ["bleu", "rouge1", "rouge2", "rougeL", "rougeLsum", "distinct-1"]
    assert data["pairs"] == 2 and len(data["results"][0]["per_sample"]) == 2
    assert data["results"][1]["info"]["use_stemmer"] is True


def test_score_table_and_jsonl_input(tmp_path, capsys):
    pred = write(tmp_path / "pred.jsonl", '{"text": "a b c d"}\n{"text": "e f g"}\n')
    ref = write(tmp_path / "ref.jsonl", '{"text": "a b c d"}\n{"text": "e f h"}\n')
    main(["score", "-m", "bleu", "--pred", pred, "--ref", ref])
    out = capsys.readouterr().out
    assert "bleu" in out and "95% CI" in out


@pytest.mark.parametrize(
    "pred_content, message",
    [
        ("one\n\nthree\n", "pred.txt:2: empty line"),
        (b"one\ntw\xff o\nthree\n", "pred.txt:2: not valid UTF-8 (byte 0xff at column 3)"),
        ("one\ntwo\n", "has 2 lines but"),
        ("", "pred.txt: the file is empty"),
    ],
)
def test_score_input_errors_name_file_and_line(tmp_path, capsys, pred_content, message):
    pred = write(tmp_path / "pred.txt", pred_content)
    ref = write(tmp_path / "ref.txt", "one\ntwo\nthree\n")
    code, _, err = run_cli(capsys, "score", "-m", "bleu", "--pred", pred, "--ref", ref)
    assert code == 1
    assert message in err and len(err.strip().splitlines()) == 1


def test_line_count_error_names_the_unpaired_line(tmp_path):
    from mlmh.errors import DataError

    pred = write(tmp_path / "p.txt", "a\nb\n")
    ref = write(tmp_path / "r.txt", "a\nb\nc\n")
    with pytest.raises(DataError, match=r"line 3 of .*r.txt has no partner in .*p.txt"):
        read_pairs(pred, ref)


def test_jsonl_errors_name_the_line(tmp_path):
    from mlmh.errors import DataError

    ref = write(tmp_path / "r.jsonl", '{"text": "a"}\n{"text": "b"}\n')
    bad = write(tmp_path / "p.jsonl", '{"text": "a"}\n{"body": "b"}\n')
    with pytest.raises(DataError, match=r"p.jsonl:2: expected a JSON object with a string field 'text'"):
        read_pairs(bad, ref)
    broken = write(tmp_path / "q.jsonl", '{"text": "a"}\n{"text": \n')
    with pytest.raises(DataError, match=r"q.jsonl:2: invalid JSON"):
        read_pairs(broken, ref)


def test_unknown_metric_is_a_usage_error(tmp_path, capsys):
    pred = write(tmp_path / "p.txt", "a\n")
    code, _, err = run_cli(capsys, "score", "-m", "blue", "--pred", pred, "--ref", pred)
    assert code == 2 and "did you mean 'bleu'" in err


def test_score_help_has_examples(capsys):
    code, out, _ = run_cli(capsys, "score", "--help")
    assert code == 0 and "Examples:" in out and "--metric" in out


def test_metrics_in_worker_processes_give_identical_results():
    from mlmh.run.score_files import score_texts
    from mlmh.types import to_dict

    preds, refs = ["the cat sat on the mat", "a b c d e"], ["the cat sat on a mat", "a b c x e"]
    alone = score_texts(["bleu", "rouge", "distinct-n:n=2"], preds, refs, seed=3, workers=1)
    side_by_side = score_texts(["bleu", "rouge", "distinct-n:n=2"], preds, refs, seed=3, workers=2)
    assert [to_dict(r) for r in side_by_side] == [to_dict(r) for r in alone]
