"""Blinded human rating sheets: export hides conditions; import computes means, CIs and Krippendorff's alpha."""

from __future__ import annotations

import csv
import json

import krippendorff
import numpy as np
import pytest

from mlmh.cli import main
from mlmh.errors import DataError, SpecError
from mlmh.human import KEY_FILE, ORIGINAL, export_sheet, import_sheets


@pytest.fixture
def run_dir(tmp_path):
    lines = []
    for condition in ("mlm | random | one-shot", "clm | random | clm-infill"):
        for d in range(6):
            lines.append({"condition": condition, "doc_id": f"d{d}", "original": f"original text {d}.",
                          "masked_text": "x", "text": f"{condition.split()[0]} text {d}."})
    (tmp_path / "generations.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (tmp_path / "results.json").write_text(json.dumps({"run_id": "r", "config": {"preset": "t", "seeds": [0]},
                                                       "conditions": [], "notes": []}))
    return tmp_path


def read(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_export_is_blinded_balanced_and_keyed(run_dir):
    sheet = export_sheet(run_dir, 9, seed=1)
    rows = read(sheet)
    assert len(rows) == 9 and list(rows[0]) == ["item", "text", "coherence", "grammar", "comment"]
    assert not any("random" in r["text"] or "clm-infill" in (r.get("condition") or "") for r in rows)
    key = json.loads((run_dir / KEY_FILE).read_text())["items"]
    conditions = [key[r["item"]]["condition"] for r in rows]
    assert {conditions.count(c) for c in set(conditions)} == {3}  # round robin over 2 conditions + originals
    assert ORIGINAL in conditions
    assert export_sheet(run_dir, 9, seed=1).read_text() == sheet.read_text()  # seeded


def fill(sheet, out, rate):
    rows = read(sheet)
    with open(out, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:
            r["coherence"], r["grammar"] = rate(r)
            writer.writerow(r)
    return out


def test_import_merges_raters_with_means_and_alpha(run_dir, tmp_path):
    sheet = export_sheet(run_dir, 12, seed=0)
    key = json.loads((run_dir / KEY_FILE).read_text())["items"]
    score = {ORIGINAL: 5, "mlm | random | one-shot": 4, "clm | random | clm-infill": 2}
    a = fill(sheet, tmp_path / "alice.csv", lambda r: (score[key[r["item"]]["condition"]], 4))
    b = fill(sheet, tmp_path / "bob.csv",
             lambda r: (max(1, score[key[r["item"]]["condition"]] - (int(r["item"][1:]) % 2)), ""))
    human = import_sheets(run_dir, [a, b])
    assert human.n_raters == 2 and human.raters == ["alice", "bob"]
    assert human.conditions[ORIGINAL]["coherence"].value == pytest.approx(np.mean(
        [5] * 4 + [5 - (int(i[1:]) % 2) for i, k in key.items() if k["condition"] == ORIGINAL]))
    assert human.conditions["clm | random | clm-infill"]["grammar"].n == 4  # bob left grammar blank
    items = sorted(key)
    alice = [score[key[i]["condition"]] for i in items]
    bob = [max(1, score[key[i]["condition"]] - (int(i[1:]) % 2)) for i in items]
    expected = krippendorff.alpha(reliability_data=np.array([alice, bob], float), level_of_measurement="ordinal")
    assert human.agreement["coherence"] == pytest.approx(expected)
    assert human.agreement["grammar"] is None  # one rater only rated grammar
    merged = json.loads((run_dir / "results.json").read_text())
    assert merged["human"]["n_items"] == 12 and "Human evaluation" in (run_dir / "report.md").read_text()


def test_bad_rating_names_file_and_row(run_dir, tmp_path):
    sheet = export_sheet(run_dir, 4)
    bad = fill(sheet, tmp_path / "carol.csv", lambda r: ("7", "3"))
    with pytest.raises(DataError, match=r"carol.csv:2: coherence must be an integer 1-5"):
        import_sheets(run_dir, [bad])


def test_cli_export_and_import(run_dir, tmp_path, capsys):
    main(["human", "export", str(run_dir), "--n", "6"])
    sheet = run_dir / "human_sheet.csv"
    filled = fill(sheet, tmp_path / "dave.csv", lambda r: ("3", "4"))
    main(["human", "import", str(run_dir), str(filled)])
    out = capsys.readouterr().out
    assert "coherence 3.00" in out and "Krippendorff" in out


def test_export_without_generations_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["human", "export", str(tmp_path)])
    assert exit_info.value.code == 2 and "generations.jsonl" in capsys.readouterr().err


TRICKY = ["=HYPERLINK(\"http://x\",\"click\")", "+1 more", "- a list item", "@SUM(A1)", "\tindented", "\rreturn",
          "'quoted' already", "''two quotes", "plain text", "a = b - c", ""]


def test_spreadsheet_safe_neutralises_formula_starts_and_round_trips_exactly():
    from mlmh.human import from_spreadsheet, spreadsheet_safe

    for text in TRICKY:
        cell = spreadsheet_safe(text)
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
        assert from_spreadsheet(cell) == text
    assert spreadsheet_safe("- item") == "'- item" and spreadsheet_safe("'x") == "''x"
    assert spreadsheet_safe("plain") == "plain" and spreadsheet_safe("a = b") == "a = b"


@pytest.fixture
def tricky_run(tmp_path):
    lines = [{"condition": "mlm | random | one-shot", "doc_id": f"d{i}", "original": f"original {i}.", "masked_text": "x",
              "text": text} for i, text in enumerate(TRICKY)]
    (tmp_path / "generations.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return tmp_path


def test_export_writes_no_formula_cells_and_import_restores_every_text(tricky_run, tmp_path):
    from mlmh.human import read_sheet

    sheet = export_sheet(tricky_run, 40, seed=3)
    cells = [r["text"] for r in read(sheet)]
    assert not any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells)
    assert "'- a list item" in cells and "'''two quotes" in cells
    key = json.loads((tricky_run / KEY_FILE).read_text())["items"]
    filled = fill(sheet, tmp_path / "erin.csv", lambda r: ("4", "5"))
    _, ratings, texts = read_sheet(filled, key)
    exported = {r["text"] for r in map(json.loads, (tricky_run / "generations.jsonl").read_text().splitlines())}
    assert {t for i, t in texts.items() if key[i]["condition"] != ORIGINAL} == exported
    assert len(ratings) == len(cells)


def test_sheet_saved_by_a_spreadsheet_without_the_quotes_still_imports(tricky_run, tmp_path):
    from mlmh.human import read_sheet

    sheet = export_sheet(tricky_run, 40, seed=3)
    key = json.loads((tricky_run / KEY_FILE).read_text())["items"]

    def unquote(row):  # a spreadsheet shows the quote as a text marker and saves the bare value
        row["text"] = row["text"].removeprefix("'")
        return ("3", "3")

    _, ratings, _ = read_sheet(fill(sheet, tmp_path / "frank.csv", unquote), key)
    assert len(ratings) == len(key)


def test_sheet_from_another_export_is_refused_naming_the_row(run_dir, tmp_path):
    first = fill(export_sheet(run_dir, 12, seed=0, out=tmp_path / "a.csv"), tmp_path / "gina.csv", lambda r: ("3", "3"))
    export_sheet(run_dir, 12, seed=1)  # a new key: the same item ids now hold other texts
    with pytest.raises(DataError, match=r"gina\.csv:\d+: the text of item h\d{4} differs from the exported one"):
        import_sheets(run_dir, [first])


def test_bad_sheet_and_generations_files_name_file_and_line(run_dir, tmp_path):
    sheet = export_sheet(run_dir, 4)
    raw = sheet.read_bytes().split(b"\n")
    raw[2] = b"\xff" + raw[2]
    (tmp_path / "hank.csv").write_bytes(b"\n".join(raw))
    with pytest.raises(DataError, match=r"hank\.csv:3: not valid UTF-8 \(byte \d+\)"):
        import_sheets(run_dir, [tmp_path / "hank.csv"])
    with pytest.raises(DataError, match=r"rating sheet .* is a directory; give a file"):
        import_sheets(run_dir, [tmp_path])
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "generations.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"generations\.jsonl: no generations to rate"):
        export_sheet(tmp_path / "empty")
    (tmp_path / "empty" / "generations.jsonl").write_text('{"condition": "c", "doc_id": "d"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"generations\.jsonl:1: missing or non-text field\(s\) original, text"):
        export_sheet(tmp_path / "empty")
    with pytest.raises(SpecError, match="--seed must be >= 0, got -1"):
        export_sheet(run_dir, 4, seed=-1)
