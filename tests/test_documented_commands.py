"""Every command the docs show is a command that works: the fenced ``sh`` blocks of README.md and of
every docs/*.md, the "Examples:" blocks of ``mlmh --help`` and of each ``mlmh COMMAND --help``, and the
``mlmh ...`` code spans of docs/PLUGINS.md are extracted and run in-process through Click's CliRunner;
the fenced ``python`` blocks of README.md and docs/API.md (the Python API) run as one script per file.

Placeholders (``runs/<id>``, ``gen.txt``, ``./my-bert``) are mapped to files prepared here; the official
PAN and MPST files (``~/pan20``, ``~/mpst``) are built from real prose by tests/realdata.py. Runs that would
train models for minutes run on the same data and grid with every trained-* model capped at a few
training steps and a shorter window, two documents per condition (``--limit 2``) and bootstrap CIs from
fewer resamples, and ``mlmh score`` scores in-process: the commands' parsing, presets, components and
output paths are what the docs promise, not the models' quality. All examples share one cache, so a model
trained for one is reused by the next. An example that cannot run in a test is listed in NOT_RUN with the
reason, and checked another way."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from paper_families import HUB_NAMES

from mlmh.cli import COMMANDS, cli

ROOT = Path(__file__).resolve().parents[1]
#: training steps of every trained-* model in these runs (instead of the size default of 500)
TRAIN_STEPS = 3
#: the window of every trained-* model in these runs (instead of the tiny size's 128 tokens): documents are
#: cut to it before masking (mlmh.generation.fit_to_windows), so Gibbs and mask-predict take half the passes
SEQ_LEN = 64
#: bootstrap resamples of every confidence interval in these runs (instead of mlmh.stats.DEFAULT_RESAMPLES)
RESAMPLES = 100

#: examples that are not run, with why, and the check made instead
NOT_RUN = {
    "mlmh tui": "interactive; `mlmh tui --help` is run instead (tests/test_tui_*.py drive the app headless)",
    "mlmh tui --preset quick": "interactive; the preset resolves in `mlmh eval --preset quick --show-config`",
    "mlmh tui --run": "interactive; the run directory is read by `mlmh report` on the same placeholder",
    "mlmh tui --model": "interactive; the model specs are built by `mlmh generate` examples",
    "mlmh bench --preset": "runs a preset cold and warm for minutes; tests/test_bench_preset.py runs it on a "
    "preset of the same shape with models trained a few steps",
    "mlmh bench --training": "trains each kind from MiniLM and from scratch for minutes; tests/test_bench_training.py "
    "runs it on micro models",
    "mlmh bench": "times every sampler for minutes; tests/test_bench.py runs it on micro models",
    "mlmh eval --preset mimic --data": "needs MIMIC-III notes (credentialed); the preset resolves with --show-config",
    "mlmh study": "the paper preset on three datasets, minutes even with training capped; tests/test_study.py runs "
    "the command on official-format PAN files and the bundled MPST and MIMIC samples with a preset of the same shape "
    "and models trained two steps, continues it and refuses another experiment in its folder",
    "mlmh train": "trains for minutes; tests/test_train_cli.py runs it with --max-steps",
    "mlmh hello-example": "a command of the example plugin; tests/test_entry_points.py installs and runs it",
    "mlmh eval --preset quick --workers 2": "these runs cap training by patching this process, which worker "
    "processes do not see; tests/test_executors.py runs it with the cap in the model specs",
    "mlmh eval --preset quick --backend ray": "as --workers; tests/test_executors.py runs it on a local Ray",
    "mlmh eval --preset pan --no-cache --workers 2": "as --workers; tests/test_executors.py runs local workers, "
    "tests/test_resume.py with --workers 2 and a kill -9",
}


def _examples_from_text(text: str) -> list[str]:
    """``mlmh ...`` command lines, with backslash continuations joined and ``# comments`` dropped."""
    out, pending = [], ""
    for raw in text.splitlines():
        line = pending + " " + raw.strip() if pending else raw.strip()
        if line.endswith("\\"):
            pending = line[:-1].strip()
            continue
        pending = ""
        command = re.sub(r"\s+#.*$", "", line).strip()
        if re.match(r"^(\w+=\S* )?mlmh\b", command):
            out.append(re.sub(r"\s+", " ", command))
    return out


def documented_commands() -> list[tuple[str, str]]:
    """(where, command) for every documented example."""
    found: list[tuple[str, str]] = []
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"```sh\n(.*?)```", readme, re.S):
        found += [("README.md", c) for c in _examples_from_text(block)]
    runner = CliRunner()
    for args in [[]] + [[name] for name in sorted(COMMANDS)]:
        help_text = runner.invoke(cli, [*args, "--help"], terminal_width=200).output
        examples = help_text.split("Examples:", 1)[1] if "Examples:" in help_text else ""
        examples = re.split(r"\n\S", examples, maxsplit=1)[0]  # up to the next unindented section
        found += [(f"mlmh {' '.join(args)} --help".replace("  ", " "), c) for c in _examples_from_text(examples)]
    plugins_doc = (ROOT / "docs" / "PLUGINS.md").read_text(encoding="utf-8")
    found += [("docs/PLUGINS.md", c) for c in re.findall(r"`((?:\w+=\S* )?mlmh [^`]*)`", plugins_doc)]
    for doc in sorted((ROOT / "docs").glob("*.md")):
        for block in re.findall(r"```sh\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            found += [(f"docs/{doc.name}", c) for c in _examples_from_text(block)]
    first: dict[str, str] = {}
    for where, command in found:
        first.setdefault(command, where)
    return [(where, command) for command, where in first.items()]


COMMANDS_FOUND = documented_commands()


def _skip_reason(command: str) -> str | None:
    for prefix, reason in NOT_RUN.items():
        if command == prefix or command.startswith(prefix + " "):
            return reason
    return None


@pytest.fixture(scope="session")
def real_data(tmp_path_factory):
    """Official-format PAN and MPST files from real prose, and the offline entity tagger their ``ner``
    masking needs (installed into the shared cache by :func:`shared_cache`)."""
    from realdata import mpst_csv, pan_dir, text_corpus, trained_entity_tagger

    root = tmp_path_factory.mktemp("realdata")
    return {"~/pan20": pan_dir(root, n_authors=4), "~/mpst": mpst_csv(root, n=12).parent,
            "reviews.jsonl": text_corpus(root, "jsonl", 40), "tagger": trained_entity_tagger(root / "tagger")}


@pytest.fixture(scope="session")
def prepared(tmp_path_factory, tiny_mlm, tiny_clm, tiny_seq2seq, real_data, paper_families):
    """Files the placeholders stand for, and a finished run for `mlmh report` / `mlmh human`; the paper's
    checkpoints (tiny ones) saved under their hub names in the working folder, as `--preset paper-hub` is
    documented to run offline."""
    work = tmp_path_factory.mktemp("documented")
    for family, name in HUB_NAMES.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).symlink_to(paper_families[family], target_is_directory=True)
    (work / "gen.txt").write_text("the cat sat on a mat\nhello there world\n", encoding="utf-8")
    (work / "orig.txt").write_text("the cat sat on the mat\nhello world\n", encoding="utf-8")
    for name in ("gen", "orig"):
        lines = (work / f"{name}.txt").read_text(encoding="utf-8").splitlines()
        (work / f"{name}.jsonl").write_text("".join(f'{{"text": "{line}"}}\n' for line in lines), encoding="utf-8")
    (work / "reviews.jsonl").write_bytes(real_data["reviews.jsonl"].read_bytes())  # for the Python examples
    return {"work": work, "mlm": tiny_mlm, "clm": tiny_clm, "seq2seq": tiny_seq2seq, "run": work / "runs" / "quick",
            "data": {key: real_data[key] for key in ("~/pan20", "~/mpst", "reviews.jsonl")}}


def concrete(command: str, prepared: dict) -> tuple[dict[str, str], list[str]]:
    """The environment and argv a documented command runs as here: placeholders mapped to prepared
    paths, and runs limited to two documents per condition."""
    env = {}
    words = shlex.split(command)
    while words and re.match(r"^\w+=", words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    assert words[0] == "mlmh"
    run = str(prepared["run"])
    if words[1:] == ["ls", "..."]:  # "mlmh ls ..." in prose: any kind
        words[2] = "models"
    paths = {"./bert-tiny": prepared["mlm"], "./my-bert": prepared["mlm"], "./my-gpt2": prepared["clm"],
             "./bart": prepared["seq2seq"]}
    out = []
    for word in words[1:]:
        word = re.sub(r"^runs/(<id>|X|\d{8}-\d{6}-\w+)", run, word)
        word = str(prepared["data"].get(word, word))
        name, eq, given = word.partition("=")  # mlmh study's --data DATASET=DIR
        if eq and given in prepared["data"]:
            word = f"{name}={prepared['data'][given]}"
        for placeholder, path in paths.items():
            word = word.replace(f"path={placeholder}", f"path={path}")
        if word in ("gen.txt", "orig.txt", "gen.jsonl", "orig.jsonl", "rater1.csv", "rater2.csv", "alice.csv", "bob.csv"):
            word = str(prepared["work"] / word)
        out.append(word)
    if out[0] == "study" and "--limit" not in out:
        out += ["--limit", "2"]
    if out[0] == "eval" and "--preset" not in out:  # --resume of a run directory, which keeps its own configuration
        return env, out
    if out[0] == "eval" and "--show-config" not in out:  # a run directory per example; --resume continues the plain one
        preset = out[out.index("--preset") + 1]
        plain = [w for w in out if w != "--resume"] == ["eval", "--preset", preset]
        name = preset if plain else f"{preset}-{abs(hash(command)) % 10**8}"
        out += ["--limit", "2", "--output-path", str(prepared["work"] / "runs" / name)]
    return env, out


@pytest.fixture
def few_training_steps(monkeypatch):
    """Every trained-* model trains TRAIN_STEPS steps with a SEQ_LEN window: the same code path, seconds
    instead of minutes."""
    from mlmh.training import config

    make_config = config.make_config

    def capped(*args, **kwargs):
        kwargs["max_steps"] = TRAIN_STEPS
        kwargs["seq_len"] = SEQ_LEN
        kwargs.pop("epochs", None)
        return make_config(*args, **kwargs)

    monkeypatch.setattr(config, "make_config", capped)


@pytest.fixture
def scoring_in_process(monkeypatch):
    """``mlmh score`` without --workers scores in this process: its default of two spawned processes would
    load torch and WordNet afresh for every example (tests/test_score_cli.py checks both give the same results)."""
    from mlmh.commands.score import score

    (workers,) = [param for param in score.params if param.name == "workers"]
    monkeypatch.setattr(workers, "default", 1)


@pytest.fixture
def fewer_resamples(monkeypatch):
    """Bootstrap CIs from RESAMPLES resamples, recorded as such: the same code, a fraction of its time."""
    from mlmh import stats

    monkeypatch.setitem(stats.resample_ci.__kwdefaults__, "n_resamples", RESAMPLES)
    kind, _, seed = stats.method_info.__defaults__
    monkeypatch.setattr(stats.method_info, "__defaults__", (kind, RESAMPLES, seed))


@pytest.fixture
def shared_cache(tmp_path_factory, monkeypatch, real_data):
    """One cache for all examples, so models trained for one are reused by the next; it holds the
    entity tagger the real-data runs' ``ner`` masking uses and WordNet as ``mlmh doctor --fix`` leaves it
    (assembled from the Debian files, so METEOR's first use does not load and verify it twice)."""
    from realdata import install_entity_tagger

    from mlmh.data.wordnet import assemble_from_debian, debian_files_present

    path = tmp_path_factory.getbasetemp() / "documented-cache"
    if not path.is_dir():
        path.mkdir()
        install_entity_tagger(real_data["tagger"], path)
        if debian_files_present():
            assemble_from_debian(data_dir=path / "nltk_data")
    monkeypatch.setenv("MLMH_CACHE_DIR", str(path))


def test_the_docs_have_examples_to_run():
    sources = {where for where, _ in COMMANDS_FOUND}
    assert {"README.md", "docs/PLUGINS.md", "docs/PERFORMANCE.md", "mlmh --help", "mlmh generate --help",
            "mlmh eval --help"} <= sources
    assert any(c.startswith("mlmh generate --model trained-mlm") for _, c in COMMANDS_FOUND)


def test_not_run_examples_still_parse():
    """An example left out of the runs still names a real command whose --help works."""
    for _, command in COMMANDS_FOUND:
        if _skip_reason(command) is None:
            continue
        name = shlex.split(command)[1]
        if name == "hello-example":
            continue
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0, (command, result.output)


ORDERED = sorted(COMMANDS_FOUND, key=lambda wc: (not wc[1].startswith("mlmh eval"), "--resume" in wc[1]))


@pytest.mark.slow
@pytest.mark.parametrize("where, command", ORDERED, ids=[f"{w}: {c}"[:90] for w, c in ORDERED])
def test_documented_command_runs(where, command, prepared, few_training_steps, fewer_resamples, scoring_in_process,
                                 shared_cache, monkeypatch):
    reason = _skip_reason(command)
    if reason:
        pytest.skip(f"not run: {reason}")
    env, args = concrete(command, prepared)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(prepared["work"])
    from mlmh.plugins import plugin_manager

    plugin_manager.reset()
    if args[0] == "human" and args[1] == "import":
        _rate(prepared)
    continues_prepared = args[0] == "eval" and "--preset" not in args  # `mlmh eval --resume --output-path runs/X`
    reads_run = args[0] in ("report", "human") or "--run" in args
    if (reads_run or continues_prepared) and not (prepared["run"] / "results.json").exists():
        _run(["eval", "--preset", "quick", "--limit", "2", "--output-path", str(prepared["run"]), "--log-samples"])
    if "--sample" in args:  # the documented id stands for one of the prepared run's samples
        first = (prepared["run"] / "generations.jsonl").open(encoding="utf-8").readline()
        args[args.index("--sample") + 1] = json.loads(first)["sample"]
    if "--resume" in args and not continues_prepared:  # continues the plain run of its preset (maybe run on another worker)
        output = Path(args[args.index("--output-path") + 1])
        if not (output / "config.json").exists():
            _run([a for a in args if a != "--resume"])
    output = _run(args, where=where, command=command)
    if "--tracker" in args:  # a tracker that fails is only said (the run completes): every one must have logged
        assert "tracker '" not in output, output
    if args[0] == "study" and "--output-path" in args:  # one run folder per dataset, and the study of them
        study = json.loads((Path(args[args.index("--output-path") + 1]) / "study.json").read_text(encoding="utf-8"))
        assert [d["label"] for d in study["datasets"]] == [a.split("=")[0] for a in args[2::2] if a != "--limit"][:3]
    elif "--data" in args and args[0] == "eval":  # the official files were read, and every condition generated
        assert "bundled sample" not in output
        results = json.loads((Path(args[args.index("--output-path") + 1]) / "results.json").read_text(encoding="utf-8"))
        assert results["n_samples"] > 0 and results["conditions"]
        assert all(row["generation"]["samples"] == results["n_samples"] for row in results["conditions"])


#: documents whose ``python`` blocks are examples of the Python API, run in order as one script each
PYTHON_DOCS = ("README.md", "docs/API.md")


def python_examples(doc: str) -> str:
    return "\n".join(re.findall(r"```python\n(.*?)```", (ROOT / doc).read_text(encoding="utf-8"), re.S))


@pytest.mark.slow
@pytest.mark.parametrize("doc", PYTHON_DOCS)
def test_documented_python_runs(doc, prepared, few_training_steps, fewer_resamples, shared_cache, monkeypatch, capsys):
    """The Python examples run as written (reviews.jsonl is the real prose of tests/realdata.py), with the
    runs' training capped as for the commands; each run they start writes its results.json."""
    code = python_examples(doc)
    assert "mlmh.evaluate(" in code and "mlmh.generate(" in code
    monkeypatch.chdir(prepared["work"])
    from mlmh.plugins import plugin_manager

    plugin_manager.reset()
    for path in re.findall(r'output_path="([^"]+)"', code):
        shutil.rmtree(prepared["work"] / path, ignore_errors=True)
    exec(compile(code, doc, "exec"), {"__name__": "__documented__"})
    printed = capsys.readouterr().out
    assert "->" in printed or "[MASK]" in printed
    for path in re.findall(r'output_path="([^"]+)"', code):
        if path.startswith("studies/"):  # a study: its own file, and a run folder per dataset
            study = json.loads((prepared["work"] / path / "study.json").read_text(encoding="utf-8"))
            assert len(study["datasets"]) >= 2 and not study["failed"]
            continue
        results = json.loads((prepared["work"] / path / "results.json").read_text(encoding="utf-8"))
        assert results["conditions"] and not results["errors"]


def _run(args: list[str], where: str = "", command: str = "") -> str:
    result = CliRunner().invoke(cli, args, catch_exceptions=True)
    assert result.exit_code == 0, (f"{where}: `{command}` ran as `mlmh {shlex.join(args)}` and failed:\n"
                                   f"{result.output}\n{result.exception!r}")
    return result.output


def _rate(prepared: dict) -> None:
    """Two raters' filled-in sheets from the exported one, for `mlmh human import`."""
    import csv

    run = prepared["run"]
    sheets = sorted(run.glob("**/*.csv"))
    assert sheets, "`mlmh human export` should have written a rating sheet first"
    rows = list(csv.DictReader(sheets[0].open(encoding="utf-8")))
    for rater, shift in (("rater1", 0), ("rater2", 1), ("alice", 0), ("bob", 2)):
        with (prepared["work"] / f"{rater}.csv").open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            for number, row in enumerate(rows):
                filled = dict(row)
                for key in filled:
                    if key in ("coherence", "grammar"):
                        filled[key] = str(1 + (number + shift) % 5)
                writer.writerow(filled)
