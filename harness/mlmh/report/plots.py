"""PNG figures of a results.json: quality by masking, quality vs refinement steps, quality vs downstream.

The data is separated from the drawing: :func:`plot_data` and friends return the plotted points as
plain values (what the tests check and the TUI's terminal plots reuse); the ``draw_*`` functions only render them.

Rules a reader can rely on:

* a masking family swept over two or more ratios in the run is drawn against its ratio; any other
  masking (stopwords, punctuation, ner at their fixed ratio) gets its own panel, one column per masking,
  never placed on the ratio axis (its ratio is a share of *its* maskable words, not of all words);
* each model kind has its own colour family (MLM blues, CLM oranges, seq2seq greens); within it each
  series (model / sampler) has its own shade and marker;
* error bars are the results' bootstrap 95% CIs; the legend sits outside the data area.
"""

from __future__ import annotations

import io
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from mlmh.results import higher_is_better, main_metrics
from mlmh.storage.rundir import RunDir, write_atomic
from mlmh.types import ConditionResult, RunResults, Score, SweepPoint

#: colour family (a matplotlib colormap) per model kind; unknown kinds share the grey one
KIND_COLORMAP = {"mlm": "Blues", "clm": "Oranges", "seq2seq": "Greens"}
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
#: the axes of a data-constrained sweep (:mod:`mlmh.findings.crossover`): joined lines on a log scale
SWEEP_AXES = ("epochs", "training FLOPs")


@dataclass(frozen=True)
class Point:
    """One plotted value: ``x`` is a ratio (float), a masking (str), a step count (int) or, in the
    downstream scatter, the quality metric's value (then the CI is that of ``x``)."""

    x: Any
    value: float
    ci_low: float | None = None
    ci_high: float | None = None


@dataclass
class Series:
    """One line or group of dots: a model with a sampler (and a masking family or seed where needed)."""

    label: str
    model_kind: str
    points: list[Point] = field(default_factory=list)
    color: tuple[float, float, float, float] = (0.5, 0.5, 0.5, 1.0)
    marker: str = "o"
    linestyle: str = "-"


@dataclass
class Panel:
    """One axes: a metric against ``axis`` ("masking ratio", "masking", "refinement steps" or another metric)."""

    metric: str
    axis: str
    higher_is_better: bool | None  # None: not known (a downstream score)
    series: list[Series]

    @property
    def ylabel(self) -> str:
        if self.higher_is_better is None:
            return self.metric
        return f"{self.metric} ({'higher' if self.higher_is_better else 'lower'} is better)"


# -- data ------------------------------------------------------------------------------------------
def swept_families(results: RunResults) -> set[str]:
    """Masking families the run varies over two or more ratios: only these go on a ratio axis."""
    ratios: dict[str, set[float]] = defaultdict(set)
    for row in results.conditions:
        if row.masking_ratio is not None:
            ratios[_family(row.masking)].add(float(row.masking_ratio))
    return {family for family, values in ratios.items() if len(values) >= 2}


def plot_data(results: RunResults, metrics: list[str] | None = None, role: str | None = None,
              baselines: bool = False) -> list[Panel]:
    """Panels of the quality-by-masking figure: per metric, a ratio panel (swept maskings) and a masking
    panel (the others), each only when it has points. ``role`` picks the document set ("seen", "unseen";
    None: the headline set); with ``baselines``, the filler and deletion baselines of each masking on
    that set are drawn too (grey, dotted)."""
    rows = [r for r in results.conditions if r.quality(role)]
    if not rows:
        return []
    metrics = metrics or main_metrics(results, role)
    swept = swept_families(results)
    several_seeds = len({r.seed for r in rows}) > 1
    style = _styles(rows, several_seeds)
    panels = []
    for metric in metrics:
        better = higher_is_better(results, metric)
        by_ratio: dict[str, Series] = {}
        by_masking: dict[str, Series] = {}
        for row in rows:
            point_value = _point(row.quality(role).get(metric))
            if point_value is None:
                continue
            key = _series_key(row, several_seeds)
            _place(row, key, swept, lambda label, r=row, k=key: _series(label, r, style[k], _family(r.masking)),
                   point_value, by_ratio, by_masking)
        if baselines:
            _add_baselines(results, rows, role or results.headline, metric, swept, by_ratio, by_masking)
        for axis, series in (("masking ratio", by_ratio), ("masking", by_masking)):
            if series:
                if axis == "masking ratio":
                    for s in series.values():
                        s.points.sort(key=lambda p: p.x)
                panels.append(Panel(metric, axis, better, list(series.values())))
    return panels


BASELINE_STYLES = {"filler": ((0.45, 0.45, 0.45, 1.0), "x"), "deletion": ((0.7, 0.7, 0.7, 1.0), "+")}


def _place(row: ConditionResult, key: str, swept: set[str], make: Any, point_value: tuple[float, float | None, float | None],
           by_ratio: dict[str, Series], by_masking: dict[str, Series]) -> None:
    """The one rule of where a point goes: a swept family on the ratio axis, any other masking in its own column."""
    family = _family(row.masking)
    if family in swept and row.masking_ratio is not None:
        label = key if family == "random" else f"{key} / {family}"
        by_ratio.setdefault(label, make(label)).points.append(Point(float(row.masking_ratio), *point_value))
    else:
        by_masking.setdefault(key, make(key)).points.append(Point(row.masking, *point_value))


def _add_baselines(results: RunResults, rows: list[ConditionResult], role: str, metric: str, swept: set[str],
                   by_ratio: dict[str, Series], by_masking: dict[str, Series]) -> None:
    """One series per baseline (filler, deletion), a point per masking, on the same axes as the models."""
    done: set[tuple[str, str]] = set()
    for row in rows:
        block = getattr(row, role, None)
        if block is None:
            continue
        for name, (color, marker) in BASELINE_STYLES.items():
            point_value = _point(getattr(block, name).get(metric))
            if point_value is None or (name, row.masking) in done:
                continue
            done.add((name, row.masking))
            label = f"{name} \"{results.filler_word}\"" if name == "filler" else name
            _place(row, label, swept, lambda lab, c=color, m=marker: Series(lab, "baseline", [], c, m, ":"),
                   point_value, by_ratio, by_masking)


def steps_data(results: RunResults, metric: str, role: str | None = None) -> Panel | None:
    """``metric`` against the sampler's refinement steps T, per model / sampler / masking swept over two or more T."""
    rows = [r for r in results.conditions if r.steps is not None]
    several_seeds = len({r.seed for r in rows}) > 1
    style = _styles(rows, several_seeds, sampler_family=True, with_masking=True)
    series: dict[str, Series] = {}
    for row in rows:
        point_value = _point(row.quality(role).get(metric))
        if point_value is None:
            continue
        label = _series_key(row, several_seeds, sampler_family=True, with_masking=True)
        target = series.setdefault(label, _series(label, row, style[label], _family(row.masking)))
        target.points.append(Point(int(row.steps), *point_value))  # type: ignore[arg-type]  # rows with steps only
    kept = [s for s in series.values() if len({p.x for p in s.points}) >= 2]
    for s in kept:
        s.points.sort(key=lambda p: p.x)
    return Panel(metric, "refinement steps", higher_is_better(results, metric), kept) if kept else None


def downstream_data(results: RunResults, metric: str, role: str | None = None) -> tuple[Panel, str, float | None] | None:
    """(panel of the first downstream score against ``metric``, its name, the real-train baseline), or None.

    Each condition is one point: ``x`` is its ``metric`` value, the CI is the metric's (horizontal)."""
    first = next(((task, score) for row in results.conditions for task, scores in row.downstream.items()
                  for score in scores), None)
    if first is None:
        return None
    task, score = first
    rows = results.conditions
    style = _styles(rows, False)
    series: dict[str, Series] = {}
    for row in rows:
        quality, downstream = _point(row.quality(role).get(metric)), row.downstream.get(task, {}).get(score)
        if quality is None or downstream is None:
            continue
        key = _series_key(row, False)
        target = series.setdefault(key, _series(key, row, style[key], ""))
        target.points.append(Point(quality[0], float(downstream), quality[1], quality[2]))
    if not series:
        return None
    name = f"{task} {score}"
    baseline = results.baseline.get(task, {}).get(score)
    return Panel(name, metric, None, list(series.values())), name, baseline


def crossover_data(results: RunResults) -> list[Panel]:
    """A sweep's curves (``results.crossover``): validation loss and each unseen quality metric against epochs
    and against training FLOPs, one series per objective and unique-token budget U."""
    block = results.crossover
    if block is None or not block.points:
        return []
    points = block.points
    budgets = sorted({p.unique_tokens for p in points})
    panels = []
    for measure in ["validation_loss", *block.metrics]:
        for axis, x_of in zip(SWEEP_AXES, (_epochs, _flops)):
            series = []
            for objective in ("mlm", "clm"):
                for shade, u in enumerate(budgets):
                    mine = [(x, p) for p in points if p.objective == objective and p.unique_tokens == u
                            and (x := x_of(p))]
                    values = [(x, _sweep_value(p, measure)) for x, p in sorted(mine, key=lambda pair: pair[0])]
                    kept = [Point(x, v[0], v[1], v[2]) for x, v in values if v is not None]
                    if kept:
                        cmap = _colormap(objective)
                        series.append(Series(f"{objective.upper()} U={u:,}", objective, kept,
                                             cmap(0.85 - 0.45 * shade / max(1, len(budgets) - 1)), MARKERS[shade % len(MARKERS)]))
            if series:
                label = "validation loss (nats/token)" if measure == "validation_loss" else f"unseen {measure}"
                panels.append(Panel(label, axis, measure != "validation_loss", series))
    return panels


def _epochs(point: SweepPoint) -> float | None:
    return point.epochs


def _flops(point: SweepPoint) -> float | None:
    return point.approx_train_flops


def _sweep_value(point: SweepPoint, measure: str) -> tuple[float, float | None, float | None] | None:
    if measure == "validation_loss":
        return (point.validation_loss, None, None) if point.validation_loss is not None else None
    return _point(point.unseen.get(measure))


def _colormap(kind: str) -> Any:
    import matplotlib

    return matplotlib.colormaps[KIND_COLORMAP.get(kind, "Greys")]


def _family(masking: str) -> str:
    return masking.split(":")[0]


def _point(score: Score | None) -> tuple[float, float | None, float | None] | None:
    if score is None or score.value is None:
        return None
    low, high = score.ci_low, score.ci_high
    return float(score.value), None if low is None else float(low), None if high is None else float(high)


def _series_key(row: ConditionResult, several_seeds: bool, sampler_family: bool = False, with_masking: bool = False) -> str:
    sampler = _family(row.sampler) if sampler_family else row.sampler
    key = f"{row.model} / {sampler}" + (f" / {row.masking}" if with_masking else "")
    return f"{key} / seed={row.seed}" if several_seeds else key


def _series(label: str, row: ConditionResult, style: tuple[Any, str], family: str) -> Series:
    color, marker = style
    linestyle = "-" if family in ("random", "") else "--"
    return Series(label, row.model_kind, [], color, marker, linestyle)


def _styles(rows: list[ConditionResult], several_seeds: bool, sampler_family: bool = False,
            with_masking: bool = False) -> dict[str, tuple[Any, str]]:
    """Colour and marker per series key: the kind picks the colour family, the series' rank within its
    kind picks the shade (dark to light, evenly spread) and the marker."""
    from matplotlib import colormaps

    keys: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        key = _series_key(row, several_seeds, sampler_family, with_masking)
        if key not in keys[row.model_kind]:
            keys[row.model_kind].append(key)
    style = {}
    for kind, members in keys.items():
        cmap = colormaps[KIND_COLORMAP.get(kind, "Greys")]
        for rank, key in enumerate(sorted(members)):
            shade = 0.95 - 0.45 * rank / max(1, len(members) - 1) if len(members) > 1 else 0.75
            style[key] = (tuple(float(c) for c in cmap(shade)), MARKERS[rank % len(MARKERS)])
    return style


# -- drawing ---------------------------------------------------------------------------------------
class FigureStore(Protocol):
    """Where drawn figures are kept by :func:`figure_key` (the run cache, :class:`mlmh.storage.cache.SampleCache`)."""

    def get_figure(self, key: str) -> bytes | None: ...

    def put_figure(self, key: str, png: bytes) -> None: ...


def figure_key(panels: list[Panel], subtitle: str = "", baseline: float | None = None) -> str:
    """What decides a figure's pixels: its panels (points, CIs, colours, labels), subtitle and baseline,
    the plotting code (:func:`mlmh.implementation.source_hash`) and the matplotlib version."""
    from importlib.metadata import version

    from mlmh.implementation import source_hash
    from mlmh.storage.cache import content_digest

    return content_digest([panels, subtitle, baseline, source_hash(__name__), version("matplotlib")])


def write_plots(results: RunResults, out_dir: Path | RunDir, store: FigureStore | None = None) -> list[Path]:
    """Write the PNG figures (matplotlib, Agg) of ``results`` into the run directory ``out_dir``; returns their paths.

    With a ``store`` (the run cache), a figure drawn before from the same data and code is copied from it:
    drawing the four figures of a pan run cost about 2 of a warm run's 12 CPU seconds.
    """
    run = out_dir if isinstance(out_dir, RunDir) else RunDir(out_dir)

    def draw(name: str, panels: list[Panel], subtitle: str = "", baseline: float | None = None) -> Path:
        key = figure_key(panels, subtitle, baseline) if store is not None else ""
        png = store.get_figure(key) if store is not None else None
        if png is None:
            buffer = io.BytesIO()
            draw_panels(panels, buffer, subtitle, baseline)
            png = buffer.getvalue()
            if store is not None:
                store.put_figure(key, png)
        return run.write_with(run.figure(name), lambda handle: handle.write(png))

    written = []
    metrics = main_metrics(results)
    headline = results.headline
    figures: list[tuple[str, list[Panel], str]] = [
        ("quality_by_masking", plot_data(results, metrics, baselines=True), f"on {headline} documents")]
    has_seen = any(r.seen is not None and r.seen.metrics for r in results.conditions)
    if headline == "unseen" and has_seen:
        figures.append(("quality_by_masking_seen", plot_data(results, metrics, "seen", baselines=True),
                        "on seen (training) documents"))
    for name, panels, subtitle in figures:
        if panels:
            written.append(draw(name, panels, subtitle))
    steps = steps_data(results, metrics[0]) if metrics else None
    if steps:
        written.append(draw("quality_vs_steps", [steps]))
    # the downstream tasks train on the seen regenerations, so their quality is the one to set against them
    scatter = downstream_data(results, metrics[0], "seen" if has_seen else None) if metrics else None
    if scatter:
        panel, _, baseline = scatter
        written.append(draw("quality_vs_downstream", [panel], baseline=baseline))
    sweep = crossover_data(results)
    if sweep:
        written.append(draw("crossover", sweep, "where masked overtakes causal"))
    return written


def draw_panels(panels: list[Panel], out: Path | IO[bytes], subtitle: str = "", baseline: float | None = None) -> Any:
    """A grid of panels with one legend outside, on the right. With both a ratio and a fixed-masking
    panel, each metric is one row sharing its y scale (ratio left, fixed maskings right); otherwise
    the metrics wrap three to a row. ``out`` is a PNG path (written whole or not at all) or an open binary file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = list(dict.fromkeys(p.axis for p in panels))
    if len(columns) > 1:
        grid = [[next((p for p in panels if p.metric == m and p.axis == c), None) for c in columns]
                for m in dict.fromkeys(p.metric for p in panels)]
        widths = [_width(next(p for p in panels if p.axis == c)) for c in columns]
    else:
        per_row = min(3, len(panels))
        grid = [list(panels[i:i + per_row]) + [None] * (per_row - len(panels[i:i + per_row]))
                for i in range(0, len(panels), per_row)]
        widths = [max(_width(p) for p in panels)] * per_row
    fig, axes = plt.subplots(len(grid), len(widths), figsize=(1.9 * sum(widths) + 3.0, 2.7 * len(grid) + 0.4),
                             squeeze=False, gridspec_kw={"width_ratios": widths}, sharey="row" if len(columns) > 1 else False)
    handles: dict[str, Any] = {}
    for r, row in enumerate(grid):
        for c, panel in enumerate(row):
            ax = axes[r][c]
            if panel is None:
                ax.set_axis_off()
                continue
            _draw_panel(ax, panel, handles)
            if baseline is not None:
                handles["real train baseline"] = ax.axhline(baseline, linestyle=":", color="0.35", linewidth=1)
            if c == 0 or len(columns) == 1:
                ax.set_ylabel(panel.ylabel, fontsize=8)
            if panel.axis != "masking" or r == len(grid) - 1:
                ax.set_xlabel(_xlabel(panel), fontsize=8)
    if subtitle:
        fig.suptitle(subtitle)
    fig.legend(list(handles.values()), list(handles), loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7,
               frameon=False, title="model / sampler" if len(handles) > 1 else None, title_fontsize=7)
    fig.tight_layout()

    def save(handle: IO[bytes]) -> None:
        fig.savefig(handle, format="png", dpi=110, bbox_inches="tight")

    try:
        if isinstance(out, (str, Path)):  # a PNG file, written whole or not at all
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            return write_atomic(out, save)
        save(out)
        return out
    finally:
        plt.close(fig)


def _width(panel: Panel) -> float:
    """Relative panel width: a fixed-masking panel grows with its number of maskings."""
    if panel.axis == "masking":
        return max(1.2, 0.5 * len({p.x for s in panel.series for p in s.points}))
    return 2.2


def _xlabel(panel: Panel) -> str:
    if panel.axis == "masking ratio":
        return "masking ratio (share of maskable words)"
    if panel.axis == "masking":
        return "masking (not swept over ratios)"
    return panel.axis


def _draw_panel(ax: Any, panel: Panel, handles: dict[str, Any]) -> None:
    categorical = panel.axis == "masking"
    positions: dict[Any, float] = {}
    if categorical:
        for s in panel.series:
            for p in s.points:
                positions.setdefault(p.x, float(len(positions)))
    width = 0.7 / max(1, len(panel.series))
    numeric = [p.x for s in panel.series for p in s.points] if not categorical and not _is_scatter(panel) else [0]
    span = (max(numeric) - min(numeric)) or 1.0
    for index, s in enumerate(panel.series):
        offset = (index - (len(panel.series) - 1) / 2) * width
        if categorical:
            xs = [positions[p.x] + offset for p in s.points]
        elif _is_scatter(panel):
            xs = [p.x for p in s.points]
        else:  # nudge coincident series apart by at most 1.5 % of the axis, so none hides another
            xs = [p.x + offset * span * 0.03 for p in s.points]
        ys = [p.value for p in s.points]
        vertical = not _is_scatter(panel)
        centres = ys if vertical else xs  # a scatter's CI belongs to x, the quality metric
        errors = [[c - p.ci_low if p.ci_low is not None else 0.0 for c, p in zip(centres, s.points)],
                  [p.ci_high - c if p.ci_high is not None else 0.0 for c, p in zip(centres, s.points)]]
        container = ax.errorbar(xs, ys, yerr=errors if vertical else None, xerr=None if vertical else errors,
                                color=s.color, marker=s.marker, markersize=5, capsize=2.5, elinewidth=1,
                                linestyle="none" if categorical or _is_scatter(panel) else s.linestyle,
                                markeredgecolor="0.2", markeredgewidth=0.4, label=s.label)
        handles.setdefault(s.label, container)
    if categorical:
        ax.set_xticks(list(positions.values()), [str(x) for x in positions], rotation=20, ha="right", fontsize=8)
        ax.set_xlim(-0.6, len(positions) - 0.4)
    elif panel.axis in SWEEP_AXES:
        ax.set_xscale("log")
    elif panel.axis == "masking ratio":
        ticks = sorted({p.x for s in panel.series for p in s.points})
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks], fontsize=8)
    title = {"masking": f"{panel.metric}: fixed maskings", "masking ratio": f"{panel.metric}: swept masking ratio",
             "refinement steps": f"{panel.metric} vs refinement steps"}.get(panel.axis, f"{panel.metric} vs {panel.axis}")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)


def _is_scatter(panel: Panel) -> bool:
    """The downstream panel: x is another metric, so its CI is horizontal and points are not joined."""
    return panel.axis not in ("masking ratio", "masking", "refinement steps", *SWEEP_AXES)


__all__ = ["FigureStore", "Panel", "Point", "Series", "crossover_data", "downstream_data", "draw_panels", "figure_key",
           "plot_data", "steps_data", "write_plots"]
