"""A sample of a finished eval run regenerates exactly from the run directory and its sample id."""

from __future__ import annotations

import json

import pytest

from mlmh.config.plan import build_plan
from mlmh.config.presets import resolve
from mlmh.errors import SpecError
from mlmh.run.reproduce import reproduce
from mlmh.run.runner import run_experiment


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, tiny_mlm, tiny_clm):
    out = tmp_path_factory.mktemp("reproduce") / "run"
    config = resolve("quick", {"models": [f"hf-mlm:path={tiny_mlm}", f"hf-clm:path={tiny_clm}"],
                               "maskings": ["random:ratio=0.5"], "samplers": ["gibbs:steps=3", "clm-infill"],
                               "metrics": ["bleu"], "tasks": [], "limit": 3})
    run_experiment(build_plan(config), output_path=out)
    return out


def samples(run):
    return [json.loads(line) for line in (run / "generations.jsonl").open(encoding="utf-8")]


def test_every_sample_of_a_run_regenerates_exactly(finished_run):
    rows = samples(finished_run)
    assert {r["sample"].split(":")[0] for r in rows} == {"1", "2"}
    stochastic = [r for r in rows if "gibbs" in r["condition"]]
    for row in stochastic[:2] + [r for r in rows if "clm-infill" in r["condition"]][:1]:
        again = reproduce(finished_run, row["sample"])
        assert again.identical, (row["text"], again.generation.text)
        assert again.generation.text != again.generation.masked_text


def test_an_unknown_sample_names_the_ids_there_are(finished_run):
    with pytest.raises(SpecError, match=r"no such sample .* e\.g\. 1:"):
        reproduce(finished_run, "9:nope")


def test_generate_run_sample_says_it_reproduced_and_refuses_half_the_flags(finished_run, capsys):
    from mlmh.cli import main

    sample = samples(finished_run)[0]["sample"]
    main(["generate", "--run", str(finished_run), "--sample", sample])
    captured = capsys.readouterr()
    assert f"sample {sample}" in captured.err and "reproduced exactly" in captured.err and "generated:" in captured.out
    for args in (["--run", str(finished_run)], ["--run", str(finished_run), "--sample", sample, "--text", "x"]):
        with pytest.raises(SystemExit) as exit_info:
            main(["generate", *args])
        assert exit_info.value.code == 2


def test_a_sample_that_no_longer_matches_fails(finished_run, tmp_path, capsys):
    import shutil

    from mlmh.cli import main

    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy)
    rows = samples(copy)
    rows[0]["text"] = "something else entirely"
    (copy / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["generate", "--run", str(copy), "--sample", rows[0]["sample"]])
    assert exit_info.value.code == 1 and "regenerated differently" in capsys.readouterr().err
