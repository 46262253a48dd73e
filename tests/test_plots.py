"""The plotted data a reader sees: swept maskings on a ratio axis, fixed maskings in their own panel,
one colour family per model kind, CIs carried to the error bars; and the PNGs are written."""

from __future__ import annotations

import pytest

from mlmh.report.plots import downstream_data, plot_data, steps_data, swept_families, write_plots
from mlmh.types import RunResults

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
KINDS = {"trained-mlm": "mlm", "trained-clm": "clm", "trained-seq2seq": "seq2seq"}
SAMPLERS = {"mlm": ["one-shot", "mask-predict:steps=4", "mask-predict:steps=10", "confidence:steps=8", "gibbs"],
            "clm": ["clm-infill", "clm-infill:temperature=1.0"], "seq2seq": ["seq2seq-infill"]}


def entry(value, half=2.0, higher=True):
    return {"value": value, "ci_low": value - half, "ci_high": value + half, "higher_is_better": higher}


def row(model, masking, sampler, ratio, bleu, seed=0, unseen=None):
    kind = KINDS[model]
    out = {"id": f"{model} | {masking} | {sampler} | seed={seed}", "model": model, "model_kind": kind, "masking": masking,
           "sampler": sampler, "seed": seed, "masking_ratio": ratio,
           "metrics": {"bleu": entry(bleu), "stutter_word": entry(bleu / 1000, 0.005, higher=False)},
           "downstream": {"av": {"auc": 0.5 + bleu / 200}}}
    if "steps=" in sampler:
        out["steps"] = int(sampler.split("steps=")[1])
    if unseen is not None:
        out["seen"] = {"metrics": dict(out["metrics"])}
        out["unseen"] = {"metrics": {"bleu": entry(unseen)}, "filler": {"bleu": entry(30 - 20 * ratio)},
                         "deletion": {"bleu": entry(20 - 20 * ratio)}}
    return out


@pytest.fixture
def data():
    """Three kinds, eight samplers, random swept over four ratios, span at one ratio, three fixed maskings."""
    rows = []
    for model, kind in KINDS.items():
        for n, sampler in enumerate(SAMPLERS[kind]):
            for ratio in (0.15, 0.3, 0.5, 0.8):
                rows.append(row(model, f"random:ratio={ratio}", sampler, ratio, 70 - 60 * ratio - 3 * n, unseen=50 - n))
            rows.append(row(model, "span:ratio=0.3", sampler, 0.3, 40 - n))
            for masking, value in (("stopwords", 55), ("punctuation", 80), ("ner", 30)):
                rows.append(row(model, masking, sampler, 1.0, value - 4 * n))
    return {"conditions": rows, "baseline": {"av": {"auc": 0.8}}, "headline": "unseen", "schema_version": 2}


@pytest.fixture
def results(data):
    return RunResults.from_dict(data)


def panel(panels, metric, axis):
    return next(p for p in panels if p.metric == metric and p.axis == axis)


def test_only_maskings_swept_over_several_ratios_get_a_ratio_axis(results):
    assert swept_families(results) == {"random"}
    panels = plot_data(results)
    by_ratio = panel(panels, "bleu", "masking ratio")
    assert all({p.x for p in s.points} == {0.15, 0.3, 0.5, 0.8} for s in by_ratio.series)
    fixed = panel(panels, "bleu", "masking")
    assert {p.x for s in fixed.series for p in s.points} == {"span:ratio=0.3", "stopwords", "punctuation", "ner"}
    assert not any(p.x == 1.0 for s in by_ratio.series for p in s.points)


def test_points_carry_their_ci_and_direction(results):
    panels = plot_data(results, ["bleu", "stutter_word"])
    series = next(s for s in panel(panels, "bleu", "masking").series if s.label == "trained-clm / clm-infill")
    stopwords = next(p for p in series.points if p.x == "stopwords")
    assert (stopwords.value, stopwords.ci_low, stopwords.ci_high) == (55.0, 53.0, 57.0)
    assert panel(panels, "stutter_word", "masking ratio").higher_is_better is False
    assert "lower is better" in panel(panels, "stutter_word", "masking ratio").ylabel


def test_each_kind_has_its_own_colour_family_and_each_series_its_own_style(results):
    series = panel(plot_data(results), "bleu", "masking ratio").series
    styles = [(s.color, s.marker) for s in series]
    assert len(set(styles)) == len(styles) == 8
    by_kind = {kind: {max(range(3), key=lambda i: s.color[i]) for s in series if s.model_kind == kind}
               for kind in ("mlm", "clm", "seq2seq")}
    assert by_kind == {"mlm": {2}, "clm": {0}, "seq2seq": {1}}  # blue, orange (red channel), green


def test_several_seeds_are_separate_series(data):
    data["conditions"] += [dict(r, seed=1, id=r["id"] + "+") for r in data["conditions"]]
    results = RunResults.from_dict(data)
    labels = [s.label for s in panel(plot_data(results), "bleu", "masking ratio").series]
    assert len(labels) == 16 and "trained-mlm / one-shot / seed=1" in labels


def test_another_metric_set_draws_the_same_figure(results):
    unseen = plot_data(results, ["bleu"], "unseen")
    assert [p.axis for p in unseen] == ["masking ratio"]
    assert {p.value for s in unseen[0].series for p in s.points} == {50.0 - n for n in range(5)}


def test_steps_and_downstream_data(results):
    steps = steps_data(results, "bleu")
    assert {s.label.split(" / ")[1] for s in steps.series} == {"mask-predict"}
    assert all([p.x for p in s.points] == [4, 10] for s in steps.series)
    panel_, name, baseline = downstream_data(results, "bleu")
    assert name == "av auc" and baseline == 0.8 and panel_.higher_is_better is None
    assert sum(len(s.points) for s in panel_.series) == len(results.conditions)


def test_write_plots_writes_pngs_for_every_figure(results, tmp_path):
    paths = write_plots(results, tmp_path)
    assert [p.name for p in paths] == ["quality_by_masking.png", "quality_by_masking_seen.png", "quality_vs_steps.png",
                                       "quality_vs_downstream.png"]
    assert all(p.read_bytes()[:8] == PNG_MAGIC for p in paths)


def test_figures_drawn_before_from_the_same_data_come_from_the_run_cache(results, data, tmp_path, monkeypatch):
    import mlmh.report.plots as plots
    from mlmh.storage.cache import SampleCache

    cache = SampleCache(tmp_path / "cache" / "samples.sqlite")
    fresh = {p.name: p.read_bytes() for p in write_plots(results, tmp_path / "fresh")}  # no store: drawn
    drawn = []
    draw = plots.draw_panels
    monkeypatch.setattr(plots, "draw_panels", lambda panels, out, *a: drawn.append(panels[0].metric) or draw(panels, out, *a))
    first = {p.name: p.read_bytes() for p in write_plots(results, tmp_path / "first", cache)}
    assert len(drawn) == 4 and first == fresh  # drawn once, byte for byte what an uncached report draws
    second = {p.name: p.read_bytes() for p in write_plots(results, tmp_path / "second", cache)}
    assert len(drawn) == 4 and second == fresh  # copied, nothing drawn again
    data["conditions"][0]["metrics"]["bleu"] = entry(55.5)  # other data: other figures, drawn again
    write_plots(RunResults.from_dict(data), tmp_path / "third", cache)
    assert len(drawn) > 4
    import mlmh.implementation as implementation

    monkeypatch.setattr(implementation, "source_hash", lambda name: "changed code")
    before = len(drawn)
    write_plots(results, tmp_path / "fourth", cache)
    assert len(drawn) == before + 4  # changed plotting code draws every figure again
    cache.close()


def test_a_figure_entry_that_is_not_a_png_is_drawn_again(results, tmp_path):
    from mlmh.report.plots import figure_key, plot_data
    from mlmh.results import main_metrics
    from mlmh.storage.cache import SampleCache

    cache = SampleCache(tmp_path / "samples.sqlite")
    panels = plot_data(results, main_metrics(results), baselines=True)
    cache.put_figure(figure_key(panels, f"on {results.headline} documents"), b"not a png")
    (path, *_) = write_plots(results, tmp_path / "run", cache)
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert any("is not a PNG" in note for note in cache.notes)
    cache.close()


def test_a_run_with_one_ratio_puts_it_with_the_fixed_maskings(data, tmp_path):
    data["conditions"] = [r for r in data["conditions"] if r["masking"] in ("random:ratio=0.3", "stopwords")]
    panels = plot_data(RunResults.from_dict(data))
    assert {p.axis for p in panels} == {"masking"}
    assert {p.x for s in panels[0].series for p in s.points} == {"random:ratio=0.3", "stopwords"}


def test_baselines_are_drawn_beside_the_models_when_the_role_is_given(results):
    (ratio,) = plot_data(results, ["bleu"], "unseen", baselines=True)
    baselines = {s.label: s for s in ratio.series if s.model_kind == "baseline"}
    assert set(baselines) == {'filler "None"', "deletion"}
    assert [(p.x, p.value) for p in baselines["deletion"].points] == [(r, 20 - 20 * r) for r in (0.15, 0.3, 0.5, 0.8)]
    assert all(s.linestyle == ":" for s in baselines.values())
    assert not any(s.model_kind == "baseline" for p in plot_data(results, ["bleu"], "unseen") for s in p.series)
