"""README's Trained-models table is what scripts/trained_models_table.py prints from a run's training cards: the
script runs on the results fixture's cards, and README's table has its header and one row per kind in its format."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from mlmh.types import RunResults

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("trained_models_table", ROOT / "scripts" / "trained_models_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_prints_the_cards_of_a_run_and_readme_holds_its_table():
    script = _script()
    data = json.loads((ROOT / "tests" / "fixtures" / "results_fixture_run.json").read_text(encoding="utf-8"))
    results = RunResults.from_dict(data)
    lines = script.table(results)
    cards = [m.training for m in results.models.values() if m.training]
    assert len(lines) == 2 + len(cards)
    for line, card in zip(lines[2:], cards):
        assert f"| {card['heldout_accuracy']:.3f} |" in line and f"{card['tokens_seen']:,}" in line
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Trained models"):readme.index("## Seen and unseen")]
    assert lines[0] in section and "scripts/trained_models_table.py" in section
    rows = [row for row in section.splitlines() if re.match(r"^\| (MLM|CLM|seq2seq) ", row)]
    pattern = re.compile(r"^\| .+ \| 0\.\d{3} \| 0\.\d{3} \| [\d,]+( \(stopped early\))? \| [\d,]+ \|$")
    assert len(rows) == 3 and all(pattern.match(row) for row in rows), rows
