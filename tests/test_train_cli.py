"""``mlmh train`` end to end on a dataset plugin registered by the test, and its one-line errors."""

from __future__ import annotations

import json

import pytest
from cli_helpers import run_cli

from mlmh import hookimpl
from mlmh.components import Dataset
from mlmh.types import Corpus, Document

LINES = [
    "Mara locked the bakery at nine and walked home along the canal .",
    "Tomas fed the cat , read two pages , and fell asleep on the sofa .",
    "Rain kept falling on the old bridge while the market packed away .",
    "Nobody in the village remembered who had planted the pear trees .",
]


class MadeUpDataset(Dataset):
    name = "made-up"
    description = "a few sentences made in the test"

    def load(self, path):
        docs = [Document(id=f"d{i}", text=" ".join(LINES[i % 4:] + LINES[: i % 4]), split="test" if i % 5 == 0 else "train")
                for i in range(15)]
        return Corpus(dataset=self.name, documents=docs, source="test")


class _Plugin:
    @hookimpl
    def register_datasets(self, register):
        register(MadeUpDataset())


@pytest.fixture(autouse=True)
def made_up_dataset():
    from mlmh.plugins.plugin_manager import get_plugin_manager

    get_plugin_manager().register(_Plugin(), name="made-up-dataset")


@pytest.mark.parametrize("objective,auto", [("mlm", "AutoModelForMaskedLM"), ("clm", "AutoModelForCausalLM"),
                                            ("seq2seq", "AutoModelForSeq2SeqLM")])
def test_train_writes_a_loadable_model_and_prints_the_card(objective, auto, tmp_path, capsys):
    import transformers

    out = tmp_path / "model"
    code, stdout, err = run_cli(capsys, "train", "--dataset", "made-up", "--objective", objective, "--max-steps", "2",
                                "--threads", "1", "--out", str(out), "--json")
    assert code == 0, err
    card = json.loads(stdout)
    assert card["steps"] == 2 and card["objective"] == objective and card["path"] == str(out)
    assert card["heldout_source"].startswith("test split: 3 documents that neither chose") and card["dataset"] == "made-up"
    # 12 train documents (3 test), 11 after validation, holding 4 distinct texts: each is learned once
    assert card["validation_documents"] == 1 and card["train_documents"] == 4
    assert json.loads((out / "training_card.json").read_text())["data_hash"] == card["data_hash"]
    getattr(transformers, auto).from_pretrained(out)
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # no temporary directory left


def test_train_prints_a_card_table(tmp_path, capsys):
    code, stdout, _ = run_cli(capsys, "train", "--dataset", "made-up", "--objective", "clm", "--max-steps", "1",
                              "--threads", "1", "--out", str(tmp_path / "m"))
    assert code == 0 and "unigram baseline accuracy" in stdout and "tokens seen" in stdout


def test_help_has_examples(capsys):
    code, stdout, _ = run_cli(capsys, "train", "--help")
    assert code == 0 and "Examples:" in stdout and "--init" in stdout and "--epochs" in stdout


@pytest.mark.parametrize("args,message,code", [
    (["--objective", "xlm"], "Invalid value for '--objective'", 2),
    (["--objective", "mlm", "--max-steps", "2", "--epochs", "1"], "either --max-steps or --epochs", 2),
    (["--objective", "mlm", "--device", "cuda"], "--device=cuda: CUDA is not available on this machine", 2),
    (["--objective", "mlm", "--device", "tpu"], "--device=tpu: not a device", 2),
    (["--objective", "mlm", "--init", "NOTADIR"], "no such directory", 2),
    (["--objective", "clm", "--mask-schedule", "uniform"], "--mask-schedule applies to the mlm objective only", 2),
    (["--objective", "mlm", "--mask-schedule", "mdlm", "--mask-ratio", "0.5"], "uniform and mdlm draw it per sequence", 2),
    (["--objective", "mlm", "--budget", "flops"], "Invalid value for '--budget'", 2),
])
def test_bad_input_is_one_line(args, message, code, tmp_path, capsys):
    args = [a.replace("NOTADIR", str(tmp_path / "nope")) for a in args]
    got, _, err = run_cli(capsys, "train", "--dataset", "made-up", *args, "--out", str(tmp_path / "m"))
    errors = [line for line in err.splitlines() if line.startswith("Error")]
    assert got == code and len(errors) == 1 and message in errors[0] and "Traceback" not in err
    assert not (tmp_path / "m").exists()


def test_init_that_is_not_a_model_or_has_the_wrong_architecture(tmp_path, tiny_seq2seq, capsys):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "readme.txt").write_text("not a model")
    code, _, err = run_cli(capsys, "train", "--dataset", "made-up", "--objective", "mlm", "--init", str(plain), "--out",
                           str(tmp_path / "a"))
    assert code == 2 and "not a model directory (no config.json)" in err
    code, _, err = run_cli(capsys, "train", "--dataset", "made-up", "--objective", "clm", "--init", str(tiny_seq2seq),
                           "--out", str(tmp_path / "b"))
    assert code == 2 and "cannot be trained with objective 'clm'; train it with objective seq2seq" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_unknown_dataset_and_existing_out(tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", "--dataset", "nope", "--objective", "mlm", "--out", str(tmp_path / "m"))
    assert code == 2 and "unknown dataset 'nope'" in err
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    code, _, err = run_cli(capsys, "train", "--dataset", "made-up", "--objective", "mlm", "--out", str(busy))
    assert code == 2 and "already exists" in err and (busy / "keep.txt").read_text() == "mine"


def test_failure_during_training_leaves_no_output(tmp_path, capsys, monkeypatch):
    from mlmh.training import validation

    def broken_step(*args, **kwargs):
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(validation, "evaluate", broken_step)  # after the training steps, before saving
    code, _, err = run_cli(capsys, "train", "--dataset", "made-up", "--objective", "clm", "--max-steps", "1",
                           "--threads", "1", "--out", str(tmp_path / "m"))
    assert code == 1 and "simulated crash" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("schedule,extra", [("uniform", []), ("mdlm", []), ("fixed", ["--mask-ratio", "0.5"])])
def test_each_mask_schedule_trains_on_pan_and_loads_as_a_masked_lm(schedule, extra, tmp_path, capsys):
    import transformers

    out = tmp_path / "model"
    code, stdout, err = run_cli(capsys, "train", "--dataset", "pan", "--objective", "mlm", "--mask-schedule", schedule,
                                *extra, "--size", "tiny", "--max-steps", "30", "--out", str(out), "--json")
    assert code == 0, err
    card = json.loads(stdout)
    assert card["mask_schedule"] == schedule and card["mask_ratio"] == (0.5 if extra else None)
    assert card["steps"] == 30 and 1 <= card["step_kept"] <= card["steps_run"] <= 30
    assert card["validation_curve"] and set(card["accuracy_at_ratio"]) == {"0.15", "0.5", "0.8"}
    transformers.AutoModelForMaskedLM.from_pretrained(out)


def test_train_never_sees_test_documents(tmp_path, capsys, monkeypatch):
    from mlmh.registry import get_registry
    from mlmh.training import loop

    seen = {}

    def capture(texts, config, out_dir, *, validation_texts=None, **kwargs):
        seen.update(train=list(texts), validation=list(validation_texts or []))
        raise RuntimeError("captured")

    monkeypatch.setattr(loop, "train", capture)
    code, _, err = run_cli(capsys, "train", "--dataset", "pan", "--objective", "clm", "--out", str(tmp_path / "m"))
    assert code == 1 and "captured" in err
    test_texts = {d.text for d in get_registry().build("dataset", "pan").load(None).split("test")}
    assert seen["validation"] and not test_texts & set(seen["validation"]) and not test_texts & set(seen["train"])
    assert not set(seen["train"]) & set(seen["validation"])


@pytest.mark.parametrize("objective,auto", [("clm", "AutoModelForCausalLM"), ("seq2seq", "AutoModelForSeq2SeqLM")])
def test_a_masked_lm_checkpoint_trains_with_the_other_objectives(objective, auto, tmp_path, tiny_mlm, capsys):
    import transformers

    out = tmp_path / objective
    code, stdout, err = run_cli(capsys, "train", "--dataset", "made-up", "--objective", objective, "--init",
                                str(tiny_mlm), "--max-steps", "2", "--device", "auto", "--out", str(out), "--json")
    assert code == 0, err
    card = json.loads(stdout)
    from mlmh.machine.devices import cpu_bf16

    assert card["init"] == str(tiny_mlm) and card["device"] == "cpu"
    assert card["precision"] == ("bf16" if cpu_bf16() else "float32")  # auto: bf16 where the CPU has bf16 units
    assert card["stop_reason"] and card["validation_holds"]
    getattr(transformers, auto).from_pretrained(out)
