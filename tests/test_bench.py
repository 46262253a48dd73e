"""Bookkeeping of ``mlmh bench``: forward-pass counts, ratio arithmetic, medians, JSON shape. No timings."""

from __future__ import annotations

import json
import random
import warnings

import pytest
from click.testing import CliRunner

from mlmh.bench import bare, goals, memory, metrics, models, ratios, render, run, samplers, timing
from mlmh.bench.run import BenchOptions
from mlmh.bench.samplers import sampler_cases
from tiny_models import output_rows


@pytest.fixture(autouse=True)
def _one_thread():
    """One torch thread: tiny models gain nothing from two, and tests run in parallel (pytest -n 2)."""
    with timing.pinned_threads(1):
        yield


@pytest.fixture(scope="module")
def bench_adapters(tmp_path_factory):
    from mlmh.adapters import load_adapter

    paths = models.save_bench_models("tiny", tmp_path_factory.mktemp("bench-models"), window=64)
    return {kind: load_adapter(kind, path) for kind, path in paths.items()}


@pytest.fixture(scope="module")
def vocabulary():
    from mlmh.training.config import SIZES

    return models.bench_vocabulary(SIZES["tiny"].vocab_size)


# -- arithmetic --------------------------------------------------------------------------------------


def test_median_ignores_one_outlier_and_rejects_empty():
    assert ratios.median([1.0, 1.2, 50.0, 0.9, 1.1]) == 1.1
    assert ratios.median([2.0, 4.0]) == 3.0
    with pytest.raises(ValueError):
        ratios.median([])


def test_ratios():
    assert ratios.overhead_ratio(1.15, 1.0) == pytest.approx(1.15)
    assert ratios.overhead_ratio(1.0, 0.0) is None
    assert ratios.speedup_ratio(6.0, 0.5) == pytest.approx(12.0)
    # harness: 1 s at batch 1, 8 s at batch 32 -> gain 4; bare: 0.5 s and 2 s -> gain 8; kept 4/8
    assert ratios.batching_ratio(1.0, 8.0, 0.5, 2.0, 1, 32) == pytest.approx(0.5)
    assert ratios.batching_ratio(1.0, 4.0, 1.0, 4.0, 1, 32) == pytest.approx(1.0)
    assert ratios.crossover_batch({1: 1.0, 8: 5.0, 32: 20.0}, {1: 3.0, 8: 6.0, 32: 7.0}) == 32
    assert ratios.crossover_batch({1: 4.0, 8: 5.0}, {1: 3.0, 8: 6.0}) == 1
    assert ratios.crossover_batch({1: 1.0}, {1: 3.0}) is None


def test_goals_compare_in_the_right_direction():
    assert goals.meets("overhead tiny", 1.20) is True and goals.meets("overhead tiny", 1.21) is False
    assert goals.meets("overhead small", 1.10) is True and goals.meets("overhead small", 1.11) is False
    assert goals.meets("speedup kept", 0.95) is True and goals.meets("speedup kept", 0.94) is False
    assert goals.meets("batching", 0.89) is False and goals.meets("batching", 0.9) is True
    assert goals.meets("bertscore", 199.0) is False and goals.meets("bertscore", 200.0) is True
    assert goals.meets("startup", 0.16) is False and goals.meets("scaling", 2.1) is True
    assert goals.meets("crossover", 8) is None and goals.meets("speedup", 3.0) is None
    assert goals.meets("overhead tiny", None) is None


def _cell(sampler, length, batch, harness, bare, rate=None, bare_rate=None):
    return {"sampler": sampler, "length": length, "batch": batch, "harness_seconds": harness, "bare_seconds": bare,
            "overhead": harness / bare, "samples_per_s": rate if rate is not None else batch / harness,
            "bare_samples_per_s": bare_rate if bare_rate is not None else batch / bare, "masked_tokens": length // 2}


def test_summaries_from_cells():
    mp, clm = samplers.masked_case(), samplers.causal_case()
    cells = [
        _cell(mp, 16, 1, 0.2, 0.1), _cell(mp, 16, 4, 0.4, 0.2),
        _cell(clm, 16, 1, 1.6, 1.5), _cell(clm, 16, 4, 1.0, 1.0),
    ]
    summary = goals.summarize_size(cells, [1, 4], speedup_length=16)
    assert summary["speedup"]["value"] == pytest.approx(8.0)
    assert summary["speedup"]["bare"] == pytest.approx(15.0)
    assert summary["overhead"][mp]["median"] == pytest.approx(2.0)
    assert summary["overhead"][clm]["worst"] == pytest.approx(1.6 / 1.5)
    # mask-predict: harness gain 2, bare gain 2 -> 1.0; clm: harness gain 6.4, bare gain 6 -> 1.0667
    assert summary["batching"]["by_sampler"][mp]["16"] == pytest.approx(1.0)
    assert summary["batching"]["by_sampler"][clm]["16"] == pytest.approx(6.4 / 6.0)
    # samples/s at batch 4: clm 4.0 > mask-predict 10.0? no; at batch 1 neither -> no crossover
    assert summary["crossover"]["batch"] is None
    report = {"sizes": {"tiny": {"ratios": run.as_json_ready(summary)}}, "startup": {"seconds": 0.1},
              "scaling": {"ratio": 2.5}}
    report["metrics"] = {"bertscore": {"pairs_per_s": 20.0, "pairs_per_s_references_cached": 210.0,
                                       "encoder_pairs_per_s": 250.0}}
    rows = {row["name"]: row for row in goals.goal_rows(report)}
    assert rows[f"overhead {mp} [tiny]"]["passed"] is False
    assert rows[f"overhead {clm} [tiny]"]["value"] == pytest.approx(1.6 / 1.5, rel=1e-4)  # judged on the worst cell
    assert rows[f"overhead {clm} [tiny]"]["passed"] is True  # 1.067 <= 1.20 at size tiny
    assert rows["speedup clm-infill/mask-predict T=4 [tiny]"]["passed"] is None  # reported; the goal is its share
    assert rows["speedup kept (harness/bare) [tiny]"]["value"] == pytest.approx(8.0 / 15.0, rel=1e-4)
    assert rows["speedup kept (harness/bare) [tiny]"]["passed"] is False
    assert rows["startup: mlmh --help (s)"]["passed"] is True
    assert rows["scaling: eval 2x docs / 1x"]["passed"] is False
    assert rows["bertscore pairs/s, references cached"]["passed"] is True
    assert "encoder alone 250" in rows["bertscore pairs/s, references cached"]["detail"]


def test_exact_choice_figures_from_cells():
    mp = samplers.masked_case()
    cells = [dict(_cell(mp, 16, 1, 0.12, 0.10), bare_lean_seconds=0.105),
             dict(_cell(mp, 16, 4, 0.30, 0.20), bare_lean_seconds=0.25)]
    for cell in cells:
        cell["lean_cost"] = cell["bare_lean_seconds"] / cell["bare_seconds"]
        cell["overhead_over_lean"] = cell["harness_seconds"] / cell["bare_lean_seconds"]
    summary = goals.summarize_size(cells, [1, 4], speedup_length=16)
    over = summary["overhead"][mp]
    assert over["worst"] == pytest.approx(1.5) and over["worst_cell"] == {"length": 16, "batch": 4}
    assert over["worst_lean_cost"] == pytest.approx(1.25) and over["worst_over_lean"] == pytest.approx(1.2)
    # the lean side keeps (4 / 0.25) / (1 / 0.105) of the bare gain (4 / 0.2) / (1 / 0.1)
    assert summary["batching"]["lean_by_sampler"][mp]["16"] == pytest.approx((16 * 0.105) / (20 * 0.1))
    rows = {row["name"]: row for row in goals.goal_rows({"sizes": {"tiny": {"ratios": run.as_json_ready(summary)}}})}
    assert "worst cell (L=16, B=4): lean bare 1.25, harness over it 1.2" in rows[f"overhead {mp} [tiny]"]["detail"]
    assert rows[f"batching {mp} L=16 [tiny]"]["detail"] == "batch 1 -> 4; lean bare 0.84"


def test_measure_interleaves_after_warmup_and_reports_median():
    calls = []
    timings = timing.measure_interleaved({"a": lambda: calls.append("a") or 1, "b": lambda: calls.append("b") or 2},
                                        runs=3, warmup=1)
    assert calls == ["a", "b"] + ["a", "b"] * 3
    assert len(timings["a"].runs) == 3 and timings["a"].seconds == ratios.median(timings["a"].runs)
    assert timings["b"].result == 2
    with pytest.raises(ValueError):
        timing.measure(lambda: None, runs=0)


def test_measure_runs_on_until_each_side_has_run_min_seconds():
    import time

    short = timing.measure_interleaved({"a": lambda: time.sleep(0.004), "b": lambda: time.sleep(0.004)}, runs=5,
                                      warmup=0, min_seconds=0.04)
    sides = [short[name].runs for name in ("a", "b")]
    assert len(sides[0]) == len(sides[1]) >= 5
    assert all(sum(runs) >= 0.04 for runs in sides)  # on until each side has run min_seconds ...
    assert any(sum(runs[:-1]) < 0.04 for runs in sides)  # ... then no further (a slow first run of one side under
    # load lets the other pass 0.04 earlier: the pair stops when the later one gets there)
    capped = timing.measure_interleaved({"a": lambda: None}, runs=5, warmup=0, min_seconds=60, max_runs=30)
    assert len(capped["a"].runs) == 30


def test_measure_doubles_its_time_while_the_runs_are_not_precise_enough():
    import time

    asked = []

    def precise(seconds):
        asked.append(len(seconds["a"]))
        return len(asked) == 2  # not after the first 0.02 s, enough after 0.04 s

    timings = timing.measure_interleaved({"a": lambda: time.sleep(0.002)}, runs=5, warmup=0, min_seconds=0.02,
                                        precise=precise, max_seconds=1.0)
    runs = timings["a"].runs
    assert len(asked) == 2 and sum(runs[:-1]) < 0.04 <= sum(runs)
    never = timing.measure_interleaved({"a": lambda: time.sleep(0.002)}, runs=5, warmup=0, min_seconds=0.02,
                                      precise=lambda seconds: False, max_seconds=0.05)
    runs = never["a"].runs
    assert sum(runs[:-1]) < 0.05 <= sum(runs)  # 0.02, 0.04, then the cap of 0.05


def test_peak_memory_sees_a_fresh_allocation():
    meter = memory.PeakMemory()
    meter.start()
    before = meter.peak_mib()
    block = bytearray(64 * 1024 * 1024)
    block[:: 4096] = b"x" * len(block[:: 4096])  # touch every page so it is resident
    after = meter.peak_mib()
    del block
    if meter.method == "vmhwm-reset":
        assert after - before >= 60
    else:
        assert after >= before >= 0


# -- models and workloads --------------------------------------------------------------------------


def test_bench_models_have_matched_parameter_counts(vocabulary):
    import torch

    tokenizer = models.build_bench_tokenizer(len(vocabulary) + 5)
    with torch.device("meta"):  # shapes only: no weights are initialised
        counts = {kind: models.parameter_count(models.build_bench_model(kind, "small", tokenizer, window=300))
                  for kind in ("mlm", "clm", "seq2seq")}
    assert max(counts.values()) <= 1.10 * min(counts.values())


def test_bench_items_are_one_token_per_word_with_the_middle_half_masked(bench_adapters, vocabulary):
    items = samplers.bench_items(20, 3, vocabulary, seed=1)
    assert len(items) == 3 and len({item.words.text for item in items}) == 3
    for item in items:
        assert item.plan.word_indices == tuple(range(5, 15))
        encoding = bench_adapters["mlm"].encode(item.words, item.plan)
        assert len(encoding.ids) == 22 and len(encoding.masked) == 10
    assert samplers.bench_items(20, 3, vocabulary, seed=1)[2].words == items[2].words


#: Forward passes of each sampler for one item with 6 masked tokens, as the algorithms define them: the
#: samplers' own counts (their generations) must say the same, and the bare loops follow those counts.
PASSES_OF_SIX_MASKED = {"one-shot": 1, "mask-predict-1": 1, "mask-predict-4": 4, "mask-predict-10": 10,
                        "left-to-right": 6, "gibbs": 12, "clm-infill": 6, "clm-infill-nocache": 6, "seq2seq-infill": 7}


@pytest.mark.parametrize("case", sampler_cases(), ids=lambda c: c.key)
def test_forward_pass_counts_of_harness_and_bare_agree(case, bench_adapters, vocabulary):
    from mlmh.generation import generate
    from mlmh.registry import get_registry

    sampler = get_registry().build("sampler", case.spec)
    items = samplers.bench_items(12, 2, vocabulary)
    masked = 6
    expected = PASSES_OF_SIX_MASKED[case.key]
    generations = generate(bench_adapters[case.kind], sampler, items, batch_size=2)
    assert [g.forward_passes for g in generations] == [expected, expected]  # the harness's own count, per item
    plan = bare.pass_plan(generations)
    assert plan.passes == expected
    with warnings.catch_warnings(record=True) as caught:  # bare loops and adapters name the cache as the model does
        warnings.simplefilter("always")
        cell = samplers.measure_sampler(case, sampler, bench_adapters[case.kind], items, runs=1)
    assert not [w for w in caught if "past_key_values" in str(w.message)]
    assert cell["bare_forward_passes"] == expected
    assert cell["masked_tokens"] == masked and cell["batch"] == 2 and cell["length"] == 12
    assert bare.bare_work(sampler, bench_adapters[case.kind], items, plan)() == expected
    assert bare.bare_work(sampler, bench_adapters[case.kind], items, plan, lean=True)() == expected
    assert cell["bare_lean_seconds"] > 0
    assert cell["lean_cost"] == pytest.approx(cell["bare_lean_seconds"] / cell["bare_seconds"], rel=1e-4)
    assert cell["overhead_over_lean"] == pytest.approx(cell["harness_seconds"] / cell["bare_lean_seconds"], rel=1e-4)
    assert cell["forward_passes"] == expected  # seq2seq too: rows with the same masked positions share a cache


@pytest.mark.parametrize("case", sampler_cases(), ids=lambda c: c.key)
def test_the_lean_bare_loop_computes_as_many_output_rows_as_the_harness(case, bench_adapters, vocabulary):
    from mlmh.generation import generate
    from mlmh.registry import get_registry

    sampler, adapter = get_registry().build("sampler", case.spec), bench_adapters[case.kind]
    items = samplers.bench_items(12, 2, vocabulary)
    with output_rows(adapter.model) as rows:
        plan = bare.pass_plan(generate(adapter, sampler, items, batch_size=2))
        harness_rows, rows[:] = sum(rows), []
        bare.bare_work(sampler, adapter, items, plan, lean=True)()
        lean_rows, rows[:] = sum(rows), []
        bare.bare_work(sampler, adapter, items, plan)()
        bare_rows = sum(rows)
    assert harness_rows == lean_rows < bare_rows


def test_pass_plans_are_what_the_samplers_report(bench_adapters, vocabulary):
    """Positions chosen after each pass, read from the generations: mask-predict re-predicts
    n = N(T-t)/T at step t; the seq2seq encoder pass chooses nothing; any sampler has a plan."""
    from mlmh.generation import generate
    from mlmh.registry import get_registry

    def plan(spec, length, kind="mlm"):
        sampler = get_registry().build("sampler", spec)
        items = samplers.bench_items(length, 2, vocabulary)
        return bare.pass_plan(generate(bench_adapters[kind], sampler, items, batch_size=2)).chosen

    assert plan("one-shot", 40) == (20,)
    assert plan("mask-predict:steps=4", 40) == (20, 15, 10, 5)
    assert plan("mask-predict:steps=3", 20) == (10, 6, 3)  # n = N(T-t)/T, floored
    assert plan("left-to-right", 10) == (1,) * 5
    assert plan("gibbs", 10) == (1,) * 10
    assert plan("gibbs:steps=3", 10) == (1,) * 5  # raised to the masked count: every mask gets filled
    assert plan("clm-infill", 10, "clm") == (1,) * 5
    assert plan("seq2seq-infill", 10, "seq2seq") == (0,) + (1,) * 5  # the encoder chooses nothing
    assert sum(plan("confidence:steps=3", 10)) == 5  # no copy of its schedule here: what it reports


def test_a_batch_whose_items_made_different_passes_has_no_plan(bench_adapters, vocabulary):
    from mlmh.generation import generate
    from mlmh.registry import get_registry

    sampler = get_registry().build("sampler", "left-to-right")
    long, short = samplers.bench_items(12, 1, vocabulary)[0], samplers.bench_items(8, 1, vocabulary)[0]
    with pytest.raises(ValueError, match="different passes"):
        bare.pass_plan(generate(bench_adapters["mlm"], sampler, [long, short], batch_size=2))


def test_exact_choice_picks_the_argmax_with_its_probability():
    import torch

    logits = torch.randn(3, 7, 50, generator=torch.Generator().manual_seed(0))
    probs, ids = bare.exact_choice(logits)
    assert torch.equal(ids, logits.argmax(-1))
    assert torch.allclose(probs, torch.softmax(logits, -1).amax(-1))
    assert torch.equal(bare.next_token(logits[:, -1], True), bare.next_token(logits[:, -1], False))


# -- the whole report -------------------------------------------------------------------------------


def test_run_bench_report_shape(tmp_path, monkeypatch):
    options = BenchOptions(lengths=(8,), batches=(1, 2), runs=1, threads=1,
                           samplers=("one-shot", "mask-predict-4", "clm-infill"), metrics=("bleu",), metric_pairs=4,
                           startup=False, scaling=False, speedup_length=12)
    seen = []
    report = run.run_bench(options, progress=lambda what, done, total: seen.append((done, total)))
    json.dumps(report)  # JSON-ready throughout
    assert seen[-1][0] == seen[-1][1] == 3 * 2 + 2 * 2 + 1  # grid + speedup cells (2 samplers x 2 batches) + one metric
    block = report["sizes"]["tiny"]
    assert {c["sampler"] for c in block["cells"]} == {"one-shot", "mask-predict T=4", "clm-infill (KV cache)"}
    assert {(c["length"], c["batch"]) for c in block["cells"] if c["sampler"] == "mask-predict T=4"} == {
        (8, 1), (8, 2), (12, 1), (12, 2)}
    for cell in block["cells"]:
        assert cell["forward_passes"] == cell["bare_forward_passes"]
        assert cell["overhead"] == pytest.approx(cell["harness_seconds"] / cell["bare_seconds"], rel=1e-4)
        low, high = cell["overhead_ci"]  # cells run on for 0.5 s a side: enough rounds for an interval
        assert low <= high and len(cell["harness_runs"]) == len(cell["bare_runs"]) == len(cell["lean_runs"])
    size_ratios = block["ratios"]
    assert size_ratios["speedup"]["masked_tokens"] == 6 and size_ratios["speedup"]["value"] > 0
    assert set(size_ratios["batching"]["by_sampler"]["mask-predict T=4"]) == {"8", "12"}
    assert set(size_ratios["batching"]["lean_by_sampler"]["mask-predict T=4"]) == {"8", "12"}
    batching_rows = [row for row in report["goals"] if row["ratio"] == "batching"]
    assert batching_rows and all("lean bare" in row["detail"] for row in batching_rows)
    assert report["metrics"]["bleu"]["pairs"] == 4 and report["metrics"]["bleu"]["pairs_per_s"] > 0
    names = [row["name"] for row in report["goals"]]
    assert "speedup clm-infill/mask-predict T=4 [tiny]" in names and "crossover batch [tiny]" in names
    assert report["method"]["timed_runs"] == 1 and report["machine"]["threads"] == 1

    from io import StringIO

    from rich.console import Console

    out = StringIO()
    render.render(report, Console(file=out, width=200))
    text = out.getvalue()
    assert "goals" in text and "mask-predict T=4" in text and "metric throughput" in text
    assert "speedup clm-infill/mask-predict T=4 [tiny]" in text and "samplers (tiny:" in text
    markdown = render.report_markdown(report)
    assert "| speedup clm-infill/mask-predict T=4 [tiny] |" in markdown and "| bleu | 4 |" in markdown
    assert "| lean bare / bare | harness / lean bare |" in markdown
    assert "| overhead [95% CI] |" in markdown and all("ci" in row for row in report["goals"] if row["ratio"] == "batching")
    overhead_rows = [row for row in report["goals"] if row["ratio"] == "overhead tiny"]
    assert overhead_rows and all("lean bare" in row["detail"] for row in overhead_rows)

    from mlmh.cli import cli

    monkeypatch.setattr(run, "run_bench", lambda options, progress=None: report)  # the command prints this report
    printed = CliRunner().invoke(cli, ["bench", "--markdown", "--metrics", "bleu", "--no-startup", "--no-scaling"])
    assert printed.exit_code == 0 and printed.output.endswith(markdown)  # after the progress display (stderr)


@pytest.mark.parametrize("args, message", [
    (["--sizes", "huge"], "--sizes: unknown 'huge'"),
    (["--batch", "0,8"], "--batch expects integers >= 1"),
    (["--lengths", "x"], "--lengths expects comma-separated integers"),
    (["--samplers", "beam"], "--samplers: unknown 'beam'"),
    (["--lengths", "4000"], "at most 1022 tokens"),
    (["--json", "--markdown"], "--json and --markdown: give one of them"),
])
def test_bad_options_are_one_line_usage_errors(args, message, capsys):
    from mlmh.cli import main

    with pytest.raises(SystemExit) as info:
        main(["bench", *args])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert message in err and len(err.strip().splitlines()) == 1


def test_bench_is_registered_and_help_has_examples():
    from mlmh.cli import COMMANDS, cli

    assert COMMANDS["bench"][0] == "mlmh.commands.bench:bench"
    result = CliRunner().invoke(cli, ["bench", "--help"])
    assert result.exit_code == 0 and "Examples:" in result.output and "CPU time" in result.output


def test_bertscore_throughput_reports_cold_cached_and_bare_encoder():
    figures = metrics.measure_metric_throughput(["bertscore"], pairs=4, runs=1)["bertscore"]
    assert "error" not in figures
    assert figures["pairs"] == 4 and figures["pairs_per_s"] > 0
    assert figures["pairs_per_s_references_cached"] > 0 and figures["encoder_pairs_per_s"] > 0
    assert figures["encoder_tokens_per_cpu_s"] > 0
    first, second = metrics.metric_pairs(4, variant=1), metrics.metric_pairs(4, variant=2)
    assert [p.reference for p in first] == [p.reference for p in second]  # same references, new predictions
    assert all(a.prediction != b.prediction for a, b in zip(first, second))


def test_allocator_tuned_once_and_never_against_the_environment(monkeypatch):
    from mlmh.machine import allocator

    calls = []

    class FakeLibc:
        def mallopt(self, parameter, value):
            calls.append((parameter, value))

    monkeypatch.setattr(allocator.ctypes, "CDLL", lambda name: FakeLibc())
    monkeypatch.setattr(allocator.sys, "platform", "linux")
    monkeypatch.setattr(allocator, "_tuned", False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1")
    allocator.retain_freed_memory()
    assert calls == []  # the user's own setting wins
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_")
    monkeypatch.setattr(allocator, "_tuned", False)
    allocator.retain_freed_memory()
    allocator.retain_freed_memory()
    assert calls == [(-3, 64 << 20), (-1, 256 << 20)]  # mmap and trim thresholds, once per process


def test_timing_intervals_resample_rounds_and_say_when_a_run_cannot_decide():
    steady = ratios.timing_ci(ratios.overhead_ratio, ([1.1] * 20, [1.0] * 20))
    assert steady == pytest.approx((1.1, 1.1))
    rng = random.Random(0)
    harness = [1.15 * rng.uniform(0.8, 1.2) for _ in range(40)]
    bare_side = [rng.uniform(0.8, 1.2) for _ in range(40)]
    low, high = ratios.timing_ci(ratios.overhead_ratio, (harness, bare_side))
    point = ratios.overhead_ratio(ratios.median(harness), ratios.median(bare_side))
    assert low < point < high and high - low > 0.05
    assert ratios.timing_ci(ratios.overhead_ratio, (harness, bare_side)) == (low, high)  # seeded
    # a machine slowed for one round slows both of its sides: resampling whole rounds keeps them together
    drift = [1.0 + 0.5 * (i % 2) for i in range(40)]
    assert ratios.timing_ci(ratios.overhead_ratio, ([1.2 * d for d in drift], drift)) == pytest.approx((1.2, 1.2))
    assert ratios.timing_ci(ratios.overhead_ratio, ([1.0], [1.0])) == (None, None)

    cell = dict(_cell("one-shot", 32, 32, point, 1.0), harness_runs=harness, bare_runs=bare_side)
    cell["overhead_ci"] = ratios.cell_ci(ratios.overhead_ratio, (cell, "harness"), (cell, "bare"))
    assert cell["overhead_ci"] == [low, high]
    summary = goals.summarize_size([cell], [32])
    rows = {row["name"]: row for row in goals.goal_rows({"sizes": {"tiny": {"ratios": run.as_json_ready(summary)}}})}
    row = rows["overhead one-shot [tiny]"]
    assert row["ci"] == pytest.approx([low, high], rel=1e-3) and row["settled"] is (not low <= 1.20 <= high)
    assert row["detail"].startswith(f"95% CI [{low:.3g}, {high:.3g}]; median cell")
    unsettled = {**row, "passed": True, "settled": False}
    table = render.report_markdown({"machine": {"threads": 2, "cores": 2, "torch": "x", "load_average_before": [0.1],
                                               "load_average_after": [0.1]},
                                   "method": {"timed_runs": 5}, "wall_seconds": 1.0, "goals": [unsettled], "sizes": {}})
    assert "| pass (CI spans the goal) |" in table
