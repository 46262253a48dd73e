"""Output a log can hold and text Rich cannot eat: the models stage counts each model when it is ready, notes name
the dataset, the libraries' carriage-return bars are off where output is not a terminal, every doctor row keeps its
brackets (``pip install 'mlmh[judge]'``), ``mlmh ls presets`` and ``--help`` fit 80 columns without cutting a
column or a spec."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import threading

import pytest
from click.testing import CliRunner

import fault_fakes
from mlmh.cli import COMMANDS, cli
from mlmh.doctor import CheckResult, run_checks
from mlmh.events import EventBus, Message, Progress
from mlmh.run import models as models_module
from mlmh.run.context import RunContext
from mlmh.run.data import load_data
from mlmh.run.models import load_models, model_label, model_labels
from mlmh.run.progress import PlainListener, RichListener
from test_run_stages import TEXTS, corpus_of, tiny_plan


@pytest.fixture(autouse=True)
def fakes():
    fault_fakes.install()


def test_the_models_stage_counts_each_model_when_its_training_ends(monkeypatch):
    """Trainings side by side end one by one: "[models] 1/2" prints when the first ends, not both at the end."""
    plan = tiny_plan()
    events: list = []
    order: list[str] = []

    def trained_side_by_side(models, context_for):
        for step, model in enumerate(models):
            context_for(model).progress({"stage": "train", "state": "finished", "step": 10, "total": 10})
            order.append(f"trained {model.spec}")
        return [m.short_spec for m in models]

    monkeypatch.setattr(models_module, "train_missing", trained_side_by_side)
    ctx = RunContext(EventBus(lambda e: events.append(e) or order.append(_said(e)), plugins=False), threading.Event(), "")
    load_models(plan, corpus_of(TEXTS), ctx)
    out = io.StringIO()
    listen = PlainListener(out)
    for e in events:
        listen(e)
    assert "[models] 1/2 (50%)" in out.getvalue() and out.getvalue().count("mlm (fake-mlm)") >= 2  # named
    counts = [line for line in order if line.startswith(("models", "trained"))]
    assert counts == ["models 1/2", "trained fake-mlm", "models 2/2", "trained fake-clm"]
    train = [e for e in events if isinstance(e, Progress) and e.stage == "train"]
    assert train and all(e.info["label"] in ("mlm (fake-mlm)", "clm (fake-clm)") for e in train)


def test_a_training_in_this_process_that_stops_early_says_so(monkeypatch):
    """A model trained in the run's own process (one model to train, or one that takes every core) stops at step 4
    of 10: its last line reads 100 % and says it stopped early, as a spawned training's does."""
    import runner_fakes

    def load(self, context):
        for step in range(1, 5):
            context.progress({"stage": "train", "step": step, "total": 10, "loss": 1.0})
        return runner_fakes.FakeAdapter(self.model_kind)

    monkeypatch.setattr(runner_fakes.FakeMLM, "load", load)
    out = io.StringIO()
    ctx = RunContext(EventBus(PlainListener(out), plugins=False), threading.Event(), "")
    load_models(tiny_plan(), corpus_of(TEXTS), ctx)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("[train:mlm (fake-mlm)]")]
    assert lines[-1].startswith("[train:mlm (fake-mlm)] 4/4 (100%)") and "stopped early at 4 of 10 steps" in lines[-1]
    assert len([line for line in lines if "4/" in line]) == 2  # 4/10, then its end: no line twice


@pytest.mark.parametrize("face", ["plain", "rich"])
def test_a_studys_next_run_times_its_trainings_from_their_own_start(face):
    """A study's runs share one listener and their trainings one label (``train:mlm (minilm)``): the second run's
    training is timed from its models stage, not from the first run's training, on a log and on a terminal."""
    from rich.console import Console

    from mlmh.events import StageStarted

    now = [0.0]
    out = io.StringIO()
    listen = (PlainListener(out, clock=lambda: now[0]) if face == "plain" else
              RichListener(Console(file=out, width=200, force_terminal=False), clock=lambda: now[0]))
    train = lambda step: Progress(stage="train", completed=step, total=10, info={"label": "mlm (minilm)", "loss": 1.0})
    with listen:
        for start in (0.0, 3000.0):  # two runs, 50 minutes apart
            now[0] = start
            listen(StageStarted(stage="models", total=1))
            for step in (1, 10):
                now[0] = start + 6 * step
                listen(train(step))
    if face == "plain":
        ends = [line for line in out.getvalue().splitlines() if line.startswith("[train:mlm (minilm)] 10/10")]
        assert len(ends) == 2 and all("elapsed 54.0s" in line for line in ends)  # not 50 minutes, and not left out
    else:
        bars = listen.bars.tasks
        assert len([t for t in bars if t.description == "training mlm (minilm)"]) == 2  # a bar per run's training
        assert len([t for t in bars if t.description == "models"]) == 2


def _said(event) -> str:
    return f"{event.stage} {event.completed}/{event.total}" if isinstance(event, Progress) else ""


def test_a_model_is_labelled_by_its_kind_and_start_and_a_sweep_by_what_differs():
    from mlmh.registry import get_registry

    build = get_registry().build
    minilm = build("model", "trained-mlm:init=minilm,batch_size=8,budget=targets,seq_len=64")
    assert model_label(minilm) == "mlm (minilm)" and model_label(build("model", "trained-clm")) == "clm (scratch)"
    assert model_label(build("model", "hf-clm:path=/data/models/gpt2/")) == "clm (gpt2)"
    sweep = [build("model", f"trained-mlm:epochs={e}") for e in (1, 4)]
    assert list(model_labels(sweep).values()) == ["mlm (scratch) epochs=1", "mlm (scratch) epochs=4"]
    rates = [build("model", f"trained-clm:init=minilm,dropout={d}") for d in ("0.3", "0.25")]
    assert list(model_labels(rates).values()) == ["clm (minilm) dropout=0.3", "clm (minilm) dropout=0.25"]


def test_notes_name_the_dataset_not_its_spec():
    plan = tiny_plan()
    plan.config.dataset = "fake-data:group_field=author,id_field=id,text_field=body"  # a spec as a user writes one
    ctx = RunContext(EventBus(plugins=False), threading.Event(), "")
    load_data(plan, ctx)
    notes = [n for n in ctx.log.notes if n.startswith("dataset ")]
    assert notes and all(n.startswith("dataset fake-data: ") for n in notes)


def test_where_output_is_not_a_terminal_no_library_writes_a_carriage_return_bar(tmp_path):
    """The judge's first use once wrote a tqdm bar into the log (transformers converting its GGUF file)."""
    script = ("import io, sys\n"
              "from mlmh.run.progress import progress_listener\n"
              "progress_listener(io.StringIO())\n"
              "from tqdm.auto import tqdm\n"
              "from huggingface_hub.utils import are_progress_bars_disabled\n"
              "for _ in tqdm(range(3), desc='Converting and de-quantizing GGUF tensors...'): pass\n"
              "print(are_progress_bars_disabled())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in __import__("os").environ.items()
                               if k not in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS")})
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr and "GGUF" not in done.stderr and done.stdout.strip() == "True"


def test_a_message_with_brackets_is_printed_as_written_on_a_terminal():
    from rich.console import Console

    out = io.StringIO()
    listen = RichListener(Console(file=out, width=200, force_terminal=False))
    listen(Message(level="warning", text="gen-ppl needs its judge: pip install 'mlmh[judge]'"))
    assert "pip install 'mlmh[judge]'" in out.getvalue()


def test_every_doctor_row_is_rendered_with_its_brackets(monkeypatch):
    """make setup, make demo, make test-fast and mlmh doctor showed "pip install 'mlmh'": Rich ate [judge]."""
    from mlmh import doctor as doctor_module

    monkeypatch.setenv("COLUMNS", "400")  # a row on one line, so each cell is found whole
    rows = run_checks() + [CheckResult("gen-ppl judge [test]", False, "missing [gguf]", "pip install 'mlmh[judge]'",
                                       optional=True)]
    monkeypatch.setattr(doctor_module, "run_checks", lambda: rows)
    shown = CliRunner().invoke(cli, ["doctor"], terminal_width=400).output
    for row in rows:
        assert row.name in shown and row.detail in shown and row.fix in shown, row.name
    assert "pip install 'mlmh[judge]'" in shown
    problems = CliRunner().invoke(cli, ["doctor", "--problems"], terminal_width=400).output
    assert "pip install 'mlmh[judge]'" in problems  # what the make targets print


def test_ls_presets_fits_80_columns_with_short_cells_and_no_column_cut(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    shown = CliRunner().invoke(cli, ["ls", "presets"], terminal_width=80).output
    lines = shown.splitlines()
    table = [line for line in lines if line.startswith(("│", "┃"))]
    assert table and all(len(line) <= 80 and line.rstrip().endswith(("│", "┃")) for line in table)  # nothing cut
    cells, current = [], 0
    for line in table[1:]:  # the rows' heights: a row starts where its name cell is not blank
        if line[1:].split("│")[0].strip():
            cells.append(current)
            current = 0
        current += 1
    assert max(cells + [current]) <= 12  # was 20 lines for crossover
    assert "mlmh_builtins.presets" in shown  # the plugin, every row's, in the title
    for kind in ("metrics", "samplers", "models"):
        rows = CliRunner().invoke(cli, ["ls", kind], terminal_width=80).output.splitlines()
        assert all(len(line) <= 80 for line in rows)
        assert all(line.rstrip().endswith(("│", "┃", "┓", "┩", "┛", "┘")) for line in rows if line.startswith(("│", "┃")))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_never_breaks_a_spec_or_word_at_its_hyphen(command):
    shown = CliRunner().invoke(cli, [command, "--help"], terminal_width=80).output
    assert not [line for line in shown.splitlines() if re.search(r"\w-$", line)]


def test_ls_names_its_kinds_whole_in_its_help():
    """The usage line once folded its choices mid-word ("...|tasks|trac" then "kers|presets]")."""
    from mlmh.commands.ls import KIND_CHOICES

    shown = CliRunner().invoke(cli, ["ls", "--help"], terminal_width=80).output
    assert shown.splitlines()[0].endswith(" ls [OPTIONS] [KIND]")
    assert all(re.search(rf"\b{kind}\b", shown) for kind in KIND_CHOICES)
