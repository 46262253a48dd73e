"""Presets: the shipped files parse and plan; bad keys and values fail in one line naming file and key."""

from __future__ import annotations

import pytest

from mlmh.cli import main
from mlmh.config.plan import build_plan
from mlmh.config.presets import from_table, resolve
from mlmh.errors import SpecError
from mlmh_builtins.presets import preset_files

SHIPPED = [p.name[:-5] for p in preset_files()]


def test_the_four_presets_ship():
    assert {"pan", "mpst", "mimic", "quick"} <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_preset_resolves_against_the_real_registry(name):
    config = build_plan(resolve(name)).config  # builds every component: unknown names or parameters would raise
    assert config.models and config.maskings and config.samplers
    assert config.preset == name


def test_pan_preset_covers_the_paper_grid():
    config = resolve("pan")
    assert {"random:ratio=0.15", "random:ratio=0.3", "random:ratio=0.5", "random:ratio=0.8", "stopwords",
            "punctuation", "ner"} <= set(config.maskings)
    assert {"one-shot", "mask-predict:steps=4", "mask-predict:steps=10", "gibbs", "clm-infill",
            "seq2seq-infill"} <= set(config.samplers)
    assert {"trained-mlm", "trained-clm", "trained-seq2seq"} == {m.split(":")[0] for m in config.models}


@pytest.mark.parametrize(("dataset", "task"), [("pan", "authorship-verification"), ("mpst", "text-classification"),
                                               ("mimic", "ner")])
def test_the_paper_preset_runs_each_datasets_own_downstream_task(dataset, task):
    plan = build_plan(resolve("paper", {"dataset": dataset}))
    plan.check(plan.load_corpus())
    assert [t.name for t in plan.tasks] == [task]
    assert any(f"not the downstream task of dataset {dataset} ({task})" in note for note in plan.notes)


def test_a_task_the_user_names_runs_though_the_dataset_declares_another():
    plan = build_plan(resolve("paper", {"dataset": "mpst", "tasks": ["ner"]}))
    plan.check(plan.load_corpus())  # the bundled MPST sample carries character and place spans
    assert [t.name for t in plan.tasks] == ["ner"]


def test_the_paper_preset_masks_as_the_paper_did_on_each_dataset():
    """Random ratios, stopwords and punctuation everywhere; named entities on the clinical notes only
    ([datasets.mimic]); a --masking the user names replaces both."""
    shared = ["random:ratio=0.15", "random:ratio=0.3", "random:ratio=0.5", "stopwords", "punctuation"]
    assert resolve("paper").maskings == shared == resolve("paper", {"dataset": "mpst"}).maskings
    assert resolve("paper", {"dataset": "mimic"}).maskings == [*shared, "ner"]
    assert resolve("paper", {"dataset": "mimic", "maskings": ["stopwords"]}).maskings == ["stopwords"]
    plan = build_plan(resolve("paper", {"dataset": "mimic"}))
    assert len(plan.models) * len(plan.maskings) >= 30  # claim (4): conditions enough for rho's CI


def test_per_dataset_settings_apply_to_their_dataset_and_are_checked_on_every_one(tmp_path):
    table = GOOD + '[datasets.mpst]\nmaskings = ["stopwords"]\nlimit = 3\n'
    assert resolve(write(tmp_path, table)).maskings == ["random:ratio=0.3"]
    mpst = resolve(write(tmp_path, table), {"dataset": "mpst"})
    assert mpst.maskings == ["stopwords"] and mpst.limit == 3
    with pytest.raises(SpecError, match=r"\[datasets.mpst\]: unknown key 'data'"):
        resolve(write(tmp_path, GOOD + '[datasets.mpst]\ndata = "/x"\n'))
    with pytest.raises(SpecError, match=r"\[datasets.mpts\]: unknown dataset 'mpts'; did you mean 'mpst'"):
        resolve(write(tmp_path, GOOD + '[datasets.mpts]\nlimit = 3\n'))
    with pytest.raises(SpecError, match=r"exp.toml: key 'datasets' must hold one table per dataset"):
        resolve(write(tmp_path, GOOD + 'datasets = 3\n'))


def write(tmp_path, text, name="exp.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


GOOD = 'dataset = "pan"\nmodels = ["trained-mlm"]\nmaskings = ["random:ratio=0.3"]\nsamplers = ["one-shot"]\n'


def test_unknown_key_names_the_key_and_the_file(tmp_path):
    path = write(tmp_path, GOOD + "modles = []\n")
    with pytest.raises(SpecError) as err:
        resolve(path)
    message = str(err.value)
    assert "modles" in message and path in message and "did you mean 'models'" in message


@pytest.mark.parametrize("line, key", [
    ("limit = -3", "limit"),
    ("limit = 1.5", "limit"),
    ('limit = "lots"', "limit"),
    ('seeds = ["x"]', "seeds"),
    ("seeds = []", "seeds"),
    ("batch_size = 0", "batch_size"),
    ('log_samples = "yes"', "log_samples"),
    ("metrics = [3]", "metrics"),
])
def test_bad_values_name_the_key(tmp_path, line, key):
    path = write(tmp_path, GOOD + line + "\n")
    with pytest.raises(SpecError) as err:
        resolve(path)
    assert f"'{key}'" in str(err.value) and path in str(err.value)


def test_missing_required_keys(tmp_path):
    with pytest.raises(SpecError, match="'dataset' is required"):
        resolve(write(tmp_path, 'models = ["x"]\n'))
    with pytest.raises(SpecError, match="'samplers' must list"):
        resolve(write(tmp_path, 'dataset = "pan"\nmodels = ["a"]\nmaskings = ["b"]\n'))


def test_invalid_toml_is_one_line(tmp_path):
    path = write(tmp_path, "dataset = \n")
    with pytest.raises(SpecError, match="invalid TOML"):
        resolve(path)


def test_unknown_component_and_bad_parameter_name_the_key(tmp_path):
    with pytest.raises(SpecError, match=r"key 'samplers'.*mask-predikt"):
        build_plan(resolve(write(tmp_path, GOOD.replace('"one-shot"', '"mask-predikt"'))))
    with pytest.raises(SpecError, match=r"key 'maskings'.*ratio"):
        build_plan(resolve(write(tmp_path, GOOD.replace("ratio=0.3", "ratio=1.7"))))


def test_overrides_replace_preset_values():
    config = resolve("pan", {"limit": "0.25", "seeds": [3, 4], "models": ["trained-mlm"], "tasks": [],
                             "batch_size": 2, "data": "/tmp/x"})
    assert config.limit == 0.25 and config.seeds == [3, 4] and config.models == ["trained-mlm"]
    assert config.tasks == [] and config.batch_size == 2 and config.data == "/tmp/x"
    assert resolve("pan", {"limit": "5"}).limit == 5


def test_inline_tables_become_specs():
    config = from_table({"dataset": "pan", "models": [{"name": "trained-mlm", "size": "tiny"}],
                         "maskings": [{"name": "random", "ratio": 0.5}], "samplers": ["one-shot"]},
                        name="t", source="t.toml")
    assert config.models == ["trained-mlm:size=tiny"] and config.maskings == ["random:ratio=0.5"]


def test_show_config_round_trips(tmp_path, capsys):
    main(["eval", "--preset", "pan", "--limit", "7", "--show-config"])
    text = capsys.readouterr().out
    path = write(tmp_path, text, "shown.toml")
    again = resolve(path)
    assert again.limit == 7 and again.experiment() | {"preset": "pan"} == resolve("pan", {"limit": 7}).experiment()


@pytest.mark.parametrize("args, needle", [
    (["--preset", "nope"], "unknown preset 'nope'"),
    (["--preset", "pan", "--limit", "-1"], "--limit -1"),
    (["--preset", "pan", "--sampler", "gibs"], "gibs"),
    (["--preset", "pan", "--batch-size", "0"], "--batch-size 0: expected an integer >= 1"),
])
def test_cli_bad_input_exits_2_with_one_line(capsys, args, needle):
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err and "Traceback" not in err


def test_cli_bad_preset_file_exits_2(tmp_path, capsys):
    path = write(tmp_path, GOOD + "sed = 1\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--preset", path])
    assert exit_info.value.code == 2
    assert "unknown key 'sed'" in capsys.readouterr().err


# -- what a preset costs and runs, said before it runs -------------------------------------------------
def test_ls_presets_shows_each_declared_cold_and_warm_cost():
    import json as json_module

    from click.testing import CliRunner

    from mlmh.cli import cli

    rows = {r["name"]: r for r in json_module.loads(CliRunner().invoke(cli, ["ls", "presets", "--json"]).output)}
    assert rows["pan"]["cost"].startswith("cold 402 CPU-s, warm 10 CPU-s (measured: mlmh bench --preset pan")
    assert rows["quick"]["cost"].startswith("cold 41 CPU-s, warm 8.5 CPU-s")
    assert rows["paper"]["cost"].startswith("cold 2631 CPU-s, warm 22 CPU-s") and rows["mpst"]["cost"] == "not measured"
    table = CliRunner().invoke(cli, ["ls", "presets"], terminal_width=200).output
    assert "cost (CPU seconds)" in table and "cold 402 CPU-s" in table


def test_eval_help_after_a_preset_says_what_it_runs_and_costs():
    from click.testing import CliRunner

    from mlmh.cli import cli

    shown = CliRunner().invoke(cli, ["eval", "--preset", "pan", "--help"], terminal_width=200)
    assert shown.exit_code == 0
    section = shown.output[shown.output.index("Preset pan:"):]
    for spec in ("trained-mlm:size=tiny", "trained-seq2seq:size=tiny", "random:ratio=0.8", "mask-predict",
                 "bertscore", "authorship-verification", "cold 402 CPU-s"):
        assert spec in section, spec
    assert "\nPreset " not in CliRunner().invoke(cli, ["eval", "--help"]).output  # no preset, the generic help
    unknown = CliRunner().invoke(cli, ["eval", "--preset=nope", "--help"])
    assert unknown.exit_code == 0 and "unknown preset 'nope'" in unknown.output and "Traceback" not in unknown.output


def test_a_malformed_cost_is_refused_naming_the_key(tmp_path):
    from mlmh.config.presets import resolve

    path = tmp_path / "mine.toml"
    base = 'dataset = "pan"\nmodels = ["trained-mlm"]\nmaskings = ["stopwords"]\nsamplers = ["one-shot"]\n'
    path.write_text(base + 'cost = { cold_cpu_s = "a while" }\n', encoding="utf-8")
    with pytest.raises(SpecError, match="cost key 'cold_cpu_s' must be a finite number of CPU seconds"):
        resolve(str(path))
    path.write_text(base + 'cost = { cold = 3 }\n', encoding="utf-8")
    with pytest.raises(SpecError, match="key 'cost' must be a table of cold_cpu_s, warm_cpu_s, measured"):
        resolve(str(path))
