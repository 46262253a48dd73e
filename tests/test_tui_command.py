"""``mlmh tui``: bad arguments fail in one line before the screen opens; good ones reach create_app."""

from __future__ import annotations

import pytest
from test_tui_data import write_run

from mlmh.cli import main


@pytest.mark.parametrize("args, code, message", [
    (["--preset", "nosuch"], 2, "unknown preset 'nosuch'"),
    (["--model", "hf-mlmm:path=x"], 2, "unknown model 'hf-mlmm'; did you mean 'hf-mlm'?"),
    (["--model", "trained-mlm", "--model", "trained-clm", "--model", "trained-mlm"], 2, "at most twice"),
    (["--run", "no/such/run"], 2, "no/such/run does not exist"),
])
def test_bad_arguments_are_one_line_errors(capsys, args, code, message):
    with pytest.raises(SystemExit) as info:
        main(["tui", *args])
    err = capsys.readouterr().err
    assert info.value.code == code
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_good_arguments_reach_the_app(monkeypatch, tmp_path):
    started = {}

    def fake_run(self):
        started.update(preset=self.options.preset, run_dir=self.options.run_dir, models=self.options.models, text=self.options.text)

    monkeypatch.setattr("mlmh.tui.app.MlmhApp.run", fake_run)
    run = write_run(tmp_path / "run")
    main(["tui", "--run", str(run), "--model", "hf-mlm:path=a", "--text", "A cat."])
    assert started == {"preset": None, "run_dir": str(run), "models": ("hf-mlm:path=a", "trained-clm"), "text": "A cat."}
