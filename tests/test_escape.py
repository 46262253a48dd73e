"""Every text that came from outside is escaped where it meets a sink (issue 60, item 2): the terminal (control
characters, Rich and Textual markup), report.md's tables and ``--show-config``'s TOML, one function per sink in
:mod:`mlmh.machine.escape`. Property tests feed each function, and each face that shows such text, with ESC, BEL,
C1 controls, OSC 8 links, OSC 52 clipboard writes, markup, newlines and ``|``, and check nothing reaches the output
raw."""

from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.text import Text

from mlmh.machine.escape import markdown_cell, markup, terminal, toml_string

#: what a terminal obeys (C0 but tab and newline, DEL, C1)
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
HOSTILE = ["\x1b[31m", "\x1b]8;;file:///home/you/.ssh/id_rsa\x07", "\x1b]8;;\x07", "\x1b]52;c;cm0gLXJmIH4=\x07",
           "\x07", "\x9b31m", "\x9d0;title\x9c", "\x1bc", "\r", "\n", "\t", "|", "||", "[red]", "[/]", "[link=x]",
           "\\", '"', "'", "#", "d1", "trained-mlm:size=tiny", " ", "é", "\u2028", "\x00", "\x7f"]
hostile = st.lists(st.sampled_from(HOSTILE) | st.text(max_size=4), max_size=8).map("".join)


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


@given(hostile)
def test_terminal_leaves_no_control_character_raw(text):
    shown = terminal(text)
    assert not RAW.search(shown)
    assert shown.count("\n") == text.count("\n")  # a plain message keeps its lines
    one_line = terminal(text, line=True)
    assert not RAW.search(one_line) and "\n" not in one_line and "\t" not in one_line
    assert terminal(text.replace("\x1b", "").replace("\x9b", "")) .count("\\x1b") == 0


@given(hostile)
@example("\\\\")  # a run of backslashes before the closing tag: it once escaped the tag
@example("x\\\\\\")
def test_markup_shows_the_text_as_written(text):
    """Rich reads the result as markup, inside a styled span as ``mlmh eval``'s summary writes it, and shows the text,
    control characters written out; no span or link comes from the text."""
    shown = Text.from_markup(f"[bold]{markup(text, line=True)}[/bold] after")
    assert shown.plain == terminal(text, line=True) + " after"
    assert [(span.start, span.end) for span in shown.spans] == [(0, len(terminal(text, line=True)))]


@given(hostile)
def test_a_markdown_cell_cannot_end_its_cell_or_row(text):
    cell = markdown_cell(text)
    assert unescaped_pipes(cell) == 0 and "\n" not in cell and not RAW.search(cell)


@given(hostile)
def test_a_toml_string_reads_back_and_holds_nothing_raw(text):
    written = toml_string(text)
    assert tomllib.loads(f"key = {written}")["key"] == text
    assert not RAW.search(written) and "\n" not in written


# -- the faces ------------------------------------------------------------------------------------------------------
FIXTURE = Path(__file__).parent / "fixtures" / "results_fixture_run.json"


def fixture_results():
    from mlmh.findings.comparisons import judged
    from mlmh.types import RunResults

    return judged(RunResults.from_dict(json.loads(FIXTURE.read_text(encoding="utf-8"))))


RESULTS = fixture_results()


def renamed(name: str, *, sampler: bool = False):
    """The fixture run, every condition's model (and ``sampler``) named with ``name`` in front."""
    results = copy.deepcopy(RESULTS)
    for row in results.conditions:
        row.model = f"{name}{row.model}"
        if sampler:
            row.sampler = f"{name}{row.sampler}"
    return results


@settings(max_examples=40, deadline=None)
@given(hostile, hostile)
def test_show_config_reads_back_and_holds_nothing_raw(description, source):
    from mlmh.types.runconfig import RunConfig

    config = RunConfig.from_dict({**RESULTS.config.to_dict(), "description": description, "source": source,
                                  "models": [description, "trained-mlm"], "data": description})
    written = config.to_toml()
    read = tomllib.loads(written)
    assert read["description"] == description and read["models"] == [description, "trained-mlm"]
    assert read["data"] == description
    assert not RAW.search(written)


def test_show_config_of_a_preset_whose_description_holds_escapes(tmp_path, capsys):
    from mlmh.cli import main

    preset = tmp_path / "hostile.toml"
    text = (Path(__file__).resolve().parents[1] / "presets" / "quick.toml").read_text(encoding="utf-8")
    described = "Mine \\u001b[31mred\\u0007 \\u001b]52;c;eA==\\u0007 \\\"q\\\" \\n next | cell"
    preset.write_text(re.sub(r'(?m)^description = .*$', lambda _: f'description = "{described}"', text), encoding="utf-8")
    main(["eval", "--preset", str(preset), "--show-config"])
    out = capsys.readouterr().out
    assert not RAW.search(out)
    assert tomllib.loads(out)["description"] == tomllib.loads(f'd = "{described}"')["d"]


@settings(max_examples=25, deadline=None)
@given(hostile)
def test_report_md_tables_keep_their_columns_whatever_a_model_is_called(name):
    from mlmh.report.markdown import render_markdown

    lines = render_markdown(renamed(name, sampler=True), []).splitlines()
    tables = [i for i, line in enumerate(lines) if re.fullmatch(r"\|(---\|)+", line)]
    assert tables
    for at in tables:
        columns = unescaped_pipes(lines[at])
        body = lines[at - 1:]
        for line in body[:next((i for i, t in enumerate(body) if not t.startswith("|")), len(body))]:
            assert unescaped_pipes(line) == columns and not RAW.search(line), line


def sample(doc_id: str, model: str):
    from mlmh.types import Generation, SampleRow

    generation = Generation(doc_id=doc_id, model=model, model_kind="mlm", sampler="one-shot", masking="random",
                            seed=0, original=f"a {doc_id} b", masked_text="a [M] b", text=f"a {doc_id} b",
                            masked_words=[1], output_words={1: doc_id})
    return SampleRow(condition=f"{model} | random | one-shot | seed=0", generation=generation, metrics={"bleu": 1.0},
                     role="unseen")


@settings(max_examples=40, deadline=None)
@given(hostile, hostile)
def test_the_tui_shows_corpus_ids_and_model_names_as_written(doc_id, model):
    """The sample panel's title, the sample list, the run screen's feed and the results
    table's names: nothing raw, nothing read as markup, one line where the widget has one."""
    from mlmh.events import SampleGenerated
    from mlmh.tui.screens.results import trace_title
    from mlmh.tui.screens.run import sample_line
    from mlmh.tui.widgets.sample_list import sample_label

    row = sample(doc_id, model)
    title = trace_title(row).plain
    assert not RAW.search(title) and "\n" not in title
    assert title.startswith(terminal(doc_id, line=True))
    label = sample_label(row, 400).plain
    assert not RAW.search(label) and label.split("\n")[0] == terminal(doc_id, line=True)
    feed = sample_line(SampleGenerated(condition=row.condition, generation=row.generation)).plain
    assert not RAW.search(feed) and "\n" not in feed


@settings(max_examples=10, deadline=None)
@given(hostile)
def test_the_tui_findings_and_table_show_model_names_as_written(name):
    from mlmh.tui.screens.results import findings_text

    assert not RAW.search(findings_text(renamed(name)).plain)


def test_the_results_table_cells_hold_nothing_raw():
    """The results table draws its model column through the terminal sink (a DataTable of Rich Text cells)."""
    import asyncio

    from textual.app import App

    from mlmh.tui.widgets.results_table import ResultsTable

    results = renamed("\x1b]8;;file:///etc/passwd\x07\n|x")

    class Host(App):
        def compose(self):
            yield ResultsTable(id="t")

    async def cells() -> list[str]:
        async with Host().run_test(size=(200, 40)) as pilot:
            table = pilot.app.query_one(ResultsTable)
            table.show_conditions(results.conditions, "unseen")
            await pilot.pause()
            return [cell.plain for key in table.rows for cell in table.get_row(key) if isinstance(cell, Text)]

    shown = asyncio.run(cells())
    assert shown and not any(RAW.search(cell) or "\n" in cell for cell in shown)
    assert any("\\x1b]8;;file:///etc/passwd\\x07" in cell for cell in shown)


@settings(max_examples=15, deadline=None)
@given(hostile)
def test_the_cli_summary_shows_model_names_as_written(name):
    """``mlmh eval``'s closing table and findings: the names and sentences reach the terminal with nothing raw."""
    import io

    from rich.console import Console

    from mlmh.commands.eval import summary_table

    out = io.StringIO()
    table = summary_table(renamed(f"[link=file:///etc/passwd]{name}"), 200)
    Console(file=out, width=200, color_system=None).print(table)
    assert not RAW.search(out.getvalue()) and "[link=file:" in out.getvalue()  # shown, not read as a link
