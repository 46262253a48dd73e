"""Terminal plots of a results.json (textual-plotext): a metric against the masking ratio, one line
per model, text quality against downstream score, one point per condition, and a data-constrained sweep's
validation loss and quality against epochs, one line per objective and U."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Mapping

from textual_plotext import PlotextPlot

from mlmh.tui.labels import legend_labels, short_spec
from mlmh.types import ConditionResult, RunResults


def downstream_value(scores: Mapping[str, Mapping[str, float | None]] | None, key: str) -> float | None:
    """``key`` is ``task:metric``; ``scores`` is ``{task: {metric: value}}``."""
    task, _, metric = key.partition(":")
    value = ((scores or {}).get(task) or {}).get(metric)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def downstream_keys(conditions: list[ConditionResult]) -> list[str]:
    keys: list[str] = []
    for condition in conditions:
        for task, scores in condition.downstream.items():
            for metric in scores or {}:
                if f"{task}:{metric}" not in keys:
                    keys.append(f"{task}:{metric}")
    return keys


def series_label(condition: ConditionResult) -> str:
    return f"{short_spec(condition.model)} {condition.sampler}".strip()


def ratio_series(results: RunResults, metric: str) -> dict[str, list[tuple[float, float]]]:
    """``{model sampler: [(masking ratio, metric value), ...]}``: the masking-ratio panel of the PNG figure
    (:func:`mlmh.report.plots.plot_data`, on the headline document set), so only masking families swept over two
    or more ratios are drawn, a fixed-ratio masking (stopwords, punctuation, ner) is never put on the
    ratio axis, and the filler and deletion baselines are lines of their own."""
    from mlmh.report.plots import plot_data

    panels = [p for p in plot_data(results, [metric], baselines=True) if p.axis == "masking ratio"]
    return {_short_label(series.label): [(float(point.x), point.value) for point in series.points]
            for panel in panels for series in panel.series}


def _short_label(label: str) -> str:
    """``model spec / sampler[ / family]`` as the legend's ``short-model sampler[ family]``."""
    model, _, rest = label.partition(" / ")
    return " ".join([short_spec(model), *rest.split(" / ")]).strip()


class MetricByRatioPlot(PlotextPlot):
    """``metric`` against masking ratio, one line per model (and sampler)."""

    def show(self, results: RunResults, metric: str) -> bool:
        """Draw the plot; False (nothing drawn) when no masking was swept over two or more ratios."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        series = ratio_series(results, metric)
        for label, points in zip(legend_labels(list(series)), series.values()):
            plt.plot([x for x, _ in points], [y for _, y in points], label=label, marker="braille")
            plt.scatter([x for x, _ in points], [y for _, y in points], marker="dot")
        plt.title(f"{metric} vs masking ratio")
        plt.xlabel("masking ratio")
        self.refresh()
        return bool(series)


class QualityDownstreamPlot(PlotextPlot):
    """Text quality (``metric``) against downstream score (``task:metric``); the real-data baseline as a line."""

    def show(self, results: RunResults, metric: str, downstream: str) -> bool:
        """Draw the plot; False (nothing drawn) when no condition has both scores."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for condition in results.conditions:
            x, y = condition.value(metric), downstream_value(condition.downstream, downstream)
            if x is not None and y is not None:
                groups[series_label(condition)].append((x, y))
        for label, points in zip(legend_labels(list(groups)), groups.values()):
            plt.scatter([x for x, _ in points], [y for _, y in points], label=label)
        base = downstream_value(results.baseline, downstream)
        if base is not None:
            plt.horizontal_line(base, color="gray")
        title = f"{downstream.rpartition(':')[2] or 'downstream'} vs {metric}"
        plt.title(title + (f" · base {base:.3f}" if base is not None else ""))
        plt.xlabel(metric)
        self.refresh()
        return bool(groups)


def sweep_series(results: RunResults, measure: str = "validation loss (nats/token)") -> dict[str, list[tuple[float, float]]]:
    """``{objective U: [(epochs, value), ...]}``: the against-epochs panel of the sweep's PNG figure
    (:func:`mlmh.report.plots.crossover_data`) for ``measure`` (its panel label)."""
    from mlmh.report.plots import crossover_data

    return {series.label: [(float(p.x), p.value) for p in series.points]
            for panel in crossover_data(results) if panel.axis == "epochs" and panel.metric == measure
            for series in panel.series}


class CrossoverPlot(PlotextPlot):
    """A sweep's curves: validation loss (or an unseen quality metric) against epochs, per objective and U."""

    def show(self, results: RunResults, measure: str = "validation loss (nats/token)") -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        series = sweep_series(results, measure)
        for label, points in zip(legend_labels(list(series)), series.values()):  # epochs double: a log2 axis
            plt.plot([math.log2(x) for x, _ in points], [y for _, y in points], label=label, marker="braille")
        epochs = sorted({x for points in series.values() for x, _ in points})
        if epochs:
            plt.xticks([math.log2(e) for e in epochs], [f"{e:g}" for e in epochs])
        plt.title(f"{measure} vs epochs" if series else "no data-constrained sweep in this run")
        plt.xlabel("epochs (log scale)")
        self.refresh()
