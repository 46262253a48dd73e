"""Human evaluation as in the paper: blinded rating sheets for coherence and grammar (1-5), merged back
into a run with means, t CIs and inter-rater agreement (Krippendorff's alpha, ordinal).

The sheet hides which condition produced a text behind an item id; the key stays in the run directory
(``human_key.json``), so raters see only shuffled texts, originals mixed among generations.

Texts are written spreadsheet-safe (OWASP, CSV injection): a cell that would start with ``= + - @``, a tab
or a carriage return gets a leading ``'`` so a spreadsheet shows it as text instead of running it as a
formula; a text that itself starts with ``'`` gets one too, so import restores every text exactly.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from mlmh.errors import DataError, SpecError
from mlmh.storage.inputs import check_input_file
from mlmh.storage.outputs import check_output_file
from mlmh.storage.rundir import HUMAN_KEY as KEY_FILE, HUMAN_SHEET
from mlmh.storage.rundir import RunDir, write_atomic
from mlmh.types import GenerationRow, HumanRatings, HumanScore

CRITERIA = ("coherence", "grammar")
ORIGINAL = "original (human-written)"
#: Leading characters a spreadsheet may read as the start of a formula (OWASP CSV injection), and the
#: quote that marks a cell as text; a text starting with the quote itself is escaped the same way.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
TEXT_MARK = "'"
#: what a sheet needs of each generations.jsonl row
GENERATION_FIELDS = ("condition", "doc_id", "original", "text")


def spreadsheet_safe(text: str) -> str:
    """``text`` as a cell no spreadsheet runs as a formula; :func:`from_spreadsheet` undoes it exactly."""
    return TEXT_MARK + text if text.startswith((*FORMULA_STARTS, TEXT_MARK)) else text


def from_spreadsheet(cell: str) -> str:
    """The text :func:`spreadsheet_safe` was given (one leading quote removed, if there is one)."""
    return cell.removeprefix(TEXT_MARK)


def text_digest(text: str) -> str:
    """Fingerprint of a sheet text, blind to whitespace a spreadsheet may rewrite (line ends)."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]


def _read_utf8(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(f"{path}:{line}: not valid UTF-8 (byte {exc.start}); save it as CSV UTF-8") from None


def _generations(run: RunDir) -> list[GenerationRow]:
    rows = run.read_generations(GENERATION_FIELDS)
    if not rows:
        raise DataError(f"{run.generations}: no generations to rate")
    return rows


def _is_blank_sheet(path: Path) -> bool:
    """Whether ``path`` is a sheet ``mlmh human export`` wrote and nobody rated yet (safe to replace)."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    return bool(rows) and rows[0] == ["item", "text", *CRITERIA, "comment"] and all(
        not any(cell.strip() for cell in row[2:]) for row in rows[1:])


def export_sheet(run_dir: str | Path, n: int = 50, *, seed: int = 0, out: str | Path | None = None) -> Path:
    """Write a shuffled, blinded sheet of ``n`` texts drawn evenly across conditions plus the originals."""
    run = RunDir(run_dir)
    if n < 1:
        raise SpecError(f"--n must be >= 1, got {n}")
    if seed < 0:
        raise SpecError(f"--seed must be >= 0, got {seed}")
    run.check_no_writer()  # the key goes into the run: not while another process writes it
    if out is not None:  # an existing file that is not an unrated sheet of ours is refused before any work
        out = check_output_file(out, "--out", is_own=_is_blank_sheet, kind="an unrated rating sheet",
                                allow=(HUMAN_SHEET,) if Path(out).expanduser().parent.resolve() == run.path.resolve() else ())
    rows = _generations(run)
    by_condition: dict[str, list[GenerationRow]] = defaultdict(list)
    originals: dict[str, str] = {}
    for row in rows:
        by_condition[row.checked("condition")].append(row)
        originals.setdefault(row.checked("doc_id"), row.checked("original"))
    pools = {ORIGINAL: [{"doc_id": d, "text": t} for d, t in sorted(originals.items())]}
    pools.update({c: [{"doc_id": r.checked("doc_id"), "text": r.checked("text")} for r in rs]
                  for c, rs in by_condition.items()})
    rng = np.random.default_rng(seed)
    queues = {c: [pool[i] for i in rng.permutation(len(pool))] for c, pool in pools.items()}
    chosen: list[tuple[str, dict[str, Any]]] = []
    while len(chosen) < n and any(queues.values()):
        for condition in list(queues):
            if queues[condition] and len(chosen) < n:
                chosen.append((condition, queues[condition].pop()))
    order = rng.permutation(len(chosen))
    key: dict[str, dict[str, str]] = {}
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(["item", "text", *CRITERIA, "comment"])
    for position, index in enumerate(order, 1):
        condition, sample = chosen[index]
        item = f"h{position:04d}"
        key[item] = {"condition": condition, "doc_id": sample["doc_id"], "text_digest": text_digest(sample["text"])}
        writer.writerow([item, spreadsheet_safe(sample["text"]), "", "", ""])
    sheet = write_atomic(out, lambda fh: fh.write(text.getvalue().encode("utf-8"))) if out else \
        run.write_text(run.human_sheet, text.getvalue())
    run.write_json(run.human_key, {"seed": seed, "criteria": list(CRITERIA), "items": key})
    return sheet


def read_sheet(path: str | Path, key: dict[str, dict[str, str]]) -> tuple[str, dict[str, dict[str, int]], dict[str, str]]:
    """(rater name, {item: {criterion: rating}}, {item: text}) from one filled sheet; blank ratings are skipped.

    Texts come back as exported (spreadsheet quoting undone); a text that differs from the exported one
    (a sheet from another export, or edited) is an error naming the row, so ratings never land on the
    wrong item. A spreadsheet that dropped the quoting (it shows the quote as a text marker) still matches.
    """
    path = check_input_file(path, "rating sheet")
    ratings: dict[str, dict[str, int]] = {}
    texts: dict[str, str] = {}
    rows: dict[str, int] = {}  # the row each item is on: a sheet holds each item once
    rater = path.stem
    reader = csv.DictReader(io.StringIO(_read_utf8(path), newline=""))
    missing = [c for c in ("item", *CRITERIA) if c not in (reader.fieldnames or [])]
    if missing:
        raise DataError(f"{path}: missing column(s) {', '.join(missing)}; expected item,text,coherence,grammar")
    for number, row in enumerate(reader, 2):
        item = (row.get("item") or "").strip()
        if item not in key:
            raise DataError(f"{path}:{number}: item '{item}' is not in this run's key ({KEY_FILE})")
        if item in rows:
            raise DataError(f"{path}: item {item} is on rows {rows[item]} and {number}; a sheet rates each item once "
                            "(which rating counts?): keep one of the rows")
        rows[item] = number
        cell = row.get("text")
        if cell is not None:
            texts[item] = from_spreadsheet(cell)
            wanted = key[item].get("text_digest")
            if wanted and wanted not in (text_digest(texts[item]), text_digest(cell)):
                raise DataError(f"{path}:{number}: the text of item {item} differs from the exported one; "
                                f"is this sheet from another export (run or --seed)?")
        if row.get("rater"):
            rater = row["rater"].strip()
        for criterion in CRITERIA:
            raw = (row.get(criterion) or "").strip()
            if not raw:
                continue
            if raw not in {"1", "2", "3", "4", "5"}:
                raise DataError(f"{path}:{number}: {criterion} must be an integer 1-5, got {raw!r}")
            ratings.setdefault(item, {})[criterion] = int(raw)
    return rater, ratings, texts


def import_sheets(run_dir: str | Path, sheets: list[str | Path]) -> HumanRatings:
    """Merge raters' sheets: per-condition means with Student's t CIs, and ordinal Krippendorff's alpha."""
    import krippendorff

    from mlmh.api import load
    from mlmh.stats import mean_ci

    run = RunDir(run_dir)
    key = run.read_human_key()
    results = load(run.path).results if run.results.is_file() else None  # checked before anything is written
    raters: dict[str, dict[str, dict[str, int]]] = {}
    for sheet in sheets:
        name, ratings, _ = read_sheet(sheet, key)
        while name in raters:
            name += "'"
        raters[name] = ratings
    items = sorted(key)
    conditions: dict[str, dict[str, HumanScore]] = {}
    per_condition: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for ratings in raters.values():
        for item, scores in ratings.items():
            for criterion, value in scores.items():
                per_condition[key[item]["condition"]][criterion].append(value)
    for condition, by_criterion in sorted(per_condition.items()):
        conditions[condition] = {}
        for criterion in CRITERIA:
            mean, low, high = mean_ci(by_criterion.get(criterion, []))
            conditions[condition][criterion] = HumanScore(value=mean, ci_low=low, ci_high=high,
                                                          n=len(by_criterion.get(criterion, [])), higher_is_better=True)
    agreement: dict[str, float | None] = {}
    for criterion in CRITERIA:
        matrix = np.array([[raters[r].get(i, {}).get(criterion, np.nan) for i in items] for r in raters], dtype=float)
        rated_twice = np.sum(~np.isnan(matrix), axis=0) >= 2
        values = matrix[:, rated_twice]
        if len(raters) < 2 or values.shape[1] == 0 or len(np.unique(values[~np.isnan(values)])) < 2:
            agreement[criterion] = None
        else:
            agreement[criterion] = float(krippendorff.alpha(reliability_data=values, level_of_measurement="ordinal"))
    human = HumanRatings(criteria=list(CRITERIA), n_raters=len(raters), raters=sorted(raters), n_items=len(items),
                         conditions=conditions, agreement=agreement,
                         agreement_method="Krippendorff's alpha, ordinal (krippendorff package); None with fewer than 2 "
                                          "raters")
    run.write_json(run.human, human.to_dict())
    if results is not None:  # the typed results, their human block set, written back whole through RunDir
        from mlmh.report.markdown import write_report

        results.human = human
        run.write_results(results)
        write_report(results, run)
    return human
