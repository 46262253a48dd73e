"""Where masked overtakes causal: the data-constrained crossover of a sweep over unique tokens and epochs.

Prabhudesai et al. 2025 (arXiv 2507.15857) and Ni et al. 2025 (arXiv 2511.03276) find that at a fixed number of
unique training tokens U a causal LM wins near one epoch while a masked diffusion LM keeps improving as the data
repeats and ends ahead. A sweep here trains ``trained-mlm:mask_schedule=mdlm`` and ``trained-clm`` at each U for
growing epoch counts, keeping the weights after exactly E epochs (``keep=last``), and this module reads the
finished run: per U, the epoch count (and training FLOPs, 6 x parameters x tokens) from which the MLM is ahead
and stays ahead, on validation loss and on unseen generation quality, each with a paired bootstrap CI.

Why the two losses are comparable: both are estimates of the same quantity, the negative log-likelihood of the
validation text per token in nats, computed on the same token blocks (one shared tokenizer, the same validation
texts, the same block cut). The CLM's next-token loss is that NLL exactly (by the chain rule); MDLM's loss, the
masked cross-entropy weighted 1/t under the linear schedule, is a Monte Carlo estimate of its continuous-time
ELBO, an upper bound on the NLL (Sahoo et al. 2024). Where they are not: the ELBO is a bound, so a masked model
that is "behind" may be behind only by its bound's slack, and one ELBO draw per block (fixed masks) is noisy;
the CLM also predicts the end token [SEP] (its normaliser counts content tokens + 1), while the MDLM normaliser
counts the maskable tokens only (the specials are never masked); the papers compare the same way (nats per
token on held-out data) and Ni et al. question how far the bound can be read as the likelihood.

The rule of a crossover lives here, once: :func:`crossover_epoch` (ahead from this epoch on, and at every later
one); the sweep's axes (which models it expands, the flags' bounds) are configuration, in :mod:`mlmh.config.sweep`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from mlmh.config.declared import headline, sweep_results, swept_models
from mlmh.params import parse_spec
from mlmh.stats import DEFAULT_RESAMPLES, percentile_interval
from mlmh.types.result_blocks import Crossover, SweepPoint

LOSS = "validation_loss"


# -- the crossover --------------------------------------------------------------------------------------

def crossover_epoch(epochs: Sequence[float], ahead: Sequence[bool]) -> float | None:
    """The first epoch count from which the MLM is ahead at that and every later epoch; None if it is not
    ahead at the last one (no crossover within the sweep). A crossover is stated where ``ahead`` means "beyond its
    CI" (:func:`_crossover`)."""
    found = None
    for e, a in zip(epochs, ahead):
        if not a:
            found = None
        elif found is None:
            found = e
    return found


@dataclass
class Series:
    """One objective at one U across epochs: per epoch its point (results.json) and paired per-item values."""

    points: dict[float, SweepPoint] = field(default_factory=dict)
    blocks: dict[float, np.ndarray] = field(default_factory=dict)  # epoch -> (n, 2) summed loss, normaliser
    documents: dict[float, dict[str, dict[str, float]]] = field(default_factory=dict)  # epoch -> metric -> doc -> value


def summarise(results: Any, per_document: dict[str, dict[str, dict[str, float | None]]] | None = None, *,
              seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES) -> Crossover | None:
    """The ``crossover`` block of a finished run (docs/RESULTS.md), or None when the run is no sweep (no U with
    at least two epoch counts trained for both objectives).

    ``results`` is the run's :class:`mlmh.types.RunResults`; ``per_document[condition id][metric][doc id]`` the
    unseen per-document values (the runner passes them; without them the quality crossover has no CI)."""
    series = _series(results, per_document or {})
    sweeps = {u: pair for u, pair in series.items()
              if len(set(pair.get("mlm", Series()).points) & set(pair.get("clm", Series()).points)) >= 2}
    if not sweeps:
        return None
    points = [p for u in sorted(series) for kind in ("mlm", "clm") if kind in series[u]
              for _, p in sorted(series[u][kind].points.items())]
    # the declared sweep results the run scored on unseen documents
    metrics = [m for m in sweep_results(results) if any(m in p.unseen for p in points)]
    found = []
    for u, pair in sorted(sweeps.items()):
        mlm, clm = pair["mlm"], pair["clm"]
        epochs = sorted(set(mlm.points) & set(clm.points))
        found.append(_loss_crossover(u, epochs, mlm, clm, seed, n_resamples))
        found.extend(_quality_crossover(u, epochs, mlm, clm, metric, seed, n_resamples, _label(metric, results))
                     for metric in metrics)
    return Crossover(points=points, metrics=metrics, crossovers=found, answer=answer(found), comparability=COMPARABILITY)


COMPARABILITY = ("validation losses are nats per token on the same validation blocks: the CLM's next-token NLL "
                 "(end token included) and MDLM's 1/t-weighted ELBO estimate over maskable tokens, an upper bound "
                 "on the NLL")


def _series(results: Any, per_document: dict[str, dict[str, dict[str, float | None]]]) -> dict[int, dict[str, Series]]:
    out: dict[int, dict[str, Series]] = {}
    swept = swept_models(results)  # name -> its kind: the sweep's objectives, as the run recorded them
    for spec, entry in results.models.items():
        name, params = parse_spec(spec)
        training = entry.training
        if name not in swept or "epochs" not in params or not training:
            continue
        epochs, u = float(params["epochs"]), int(float(params.get("unique_tokens", 0)))
        rows = [row for row in results.conditions if _same_model(row.model, name, params) and row.unseen is not None]
        row = rows[0] if rows else None  # the first masking x sampler of the model (a sweep has one)
        quality = row.unseen if row is not None else None
        point = SweepPoint(unique_tokens=u, epochs=epochs, objective=swept[name], model=spec,
                           unique_tokens_trained=training.get("unique_tokens"), validation_loss=training.get(LOSS),
                           approx_train_flops=training.get("approx_train_flops"),
                           train_seconds=training.get("train_seconds"), tokens_seen=training.get("tokens_seen"),
                           parameters=training.get("parameters"), condition=row.id if row else None,
                           unseen=dict(quality.metrics) if quality else {}, filler=dict(quality.filler) if quality else {},
                           deletion=dict(quality.deletion) if quality else {})
        s = out.setdefault(u, {}).setdefault(swept[name], Series())
        if epochs in s.points:
            continue  # a second base at the same point (another schedule): the first listed stands for it
        s.points[epochs] = point
        if training.get("validation_block_losses"):
            s.blocks[epochs] = np.asarray(training["validation_block_losses"], dtype=float)
        if row is not None:
            s.documents[epochs] = {m: {d: v for d, v in values.items() if v is not None}
                                   for m, values in per_document.get(row.id, {}).items()}
    return out


def _same_model(short: str, name: str, params: dict[str, str]) -> bool:
    """Whether a condition's short model spec names this model (its parameters are a subset of the full spec's)."""
    short_name, short_params = parse_spec(short)
    return short_name == name and all(params.get(k) == v for k, v in short_params.items())


def _loss_crossover(u: int, epochs: list[float], mlm: Series, clm: Series, seed: int, n: int) -> dict[str, Any]:
    losses = [(mlm.points[e].validation_loss, clm.points[e].validation_loss) for e in epochs]
    ahead = [m is not None and c is not None and m < c for m, c in losses]
    at = crossover_epoch(epochs, ahead)
    paired = all(e in mlm.blocks and e in clm.blocks and len(mlm.blocks[e]) == len(clm.blocks[e]) == len(mlm.blocks[epochs[0]])
                 for e in epochs)

    def differences(index: np.ndarray) -> np.ndarray:  # (resamples, epochs): MLM loss - CLM loss
        cols = []
        for e in epochs:
            m, c = mlm.blocks[e][index], clm.blocks[e][index]
            cols.append(m[..., 0].sum(-1) / m[..., 1].sum(-1) - c[..., 0].sum(-1) / c[..., 1].sum(-1))
        return np.stack(cols, axis=-1)

    size = len(mlm.blocks[epochs[0]]) if paired else 0
    return _crossover(u, LOSS, epochs, mlm, at, [_difference(m, c) for m, c in losses],
                      differences if paired and size >= 2 else None, size, lower_is_better=True, seed=seed,
                      n_resamples=n, paired_over="validation blocks", what=_label(LOSS))


def _quality_crossover(u: int, epochs: list[float], mlm: Series, clm: Series, metric: str, seed: int,
                       n: int, what: str) -> dict[str, Any]:
    values = [(_value(mlm.points[e], metric), _value(clm.points[e], metric)) for e in epochs]
    ahead = [m is not None and c is not None and m > c for m, c in values]
    at = crossover_epoch(epochs, ahead)
    docs = sorted(set.intersection(*[set(s.documents.get(e, {}).get(metric, {})) for s in (mlm, clm) for e in epochs]))
    per_doc = {s: np.asarray([[series.documents[e][metric][d] for d in docs] for e in epochs]).T
               for s, series in (("mlm", mlm), ("clm", clm))} if docs else {}

    def differences(index: np.ndarray) -> np.ndarray:  # (resamples, epochs): mean per-document MLM - CLM
        return (per_doc["mlm"][index] - per_doc["clm"][index]).mean(axis=-2)

    return _crossover(u, metric, epochs, mlm, at, [_difference(m, c) for m, c in values],
                      differences if len(docs) >= 2 else None, len(docs), lower_is_better=False, seed=seed,
                      n_resamples=n, paired_over="unseen documents (per-document values)", what=what)


def _difference(mlm: float | None, clm: float | None) -> float | None:
    return None if mlm is None or clm is None else mlm - clm


def _value(point: SweepPoint, metric: str) -> float | None:
    score = point.unseen.get(metric)
    return None if score is None else score.value


def _crossover(u: int, measure: str, epochs: list[float], mlm: Series, at: float | None, gaps: list[float | None],
               differences: Any, size: int, *, lower_is_better: bool, seed: int, n_resamples: int,
               paired_over: str, what: str) -> dict[str, Any]:
    """One crossover finding: where, the MLM - CLM difference per epoch with its paired CI, and the bootstrap
    distribution of the crossover epoch itself (every epoch resampled with the same items); ``what`` names the
    measure in its statement (:func:`_label`).

    The crossover stated (``epochs``) is where the MLM is ahead **beyond its paired 95% CI** at that epoch count and
    every later one: each epoch is tested in turn from the last back and the run stops at the first that is not
    beyond, a fixed-sequence test (Maurer, Hothorn & Lehmacher 1995) that keeps the chance of stating a crossover where
    there is none at the one-sided 2.5% of one interval. ``ahead_from`` is the point estimates' crossover
    (:func:`crossover_epoch`), which a sweep where both objectives are equal shows about half the time (mlmh
    calibrate: 52% on validation loss, 42% on unseen BLEU at the crossover preset's five epochs); without a CI no
    crossover is stated."""
    per_epoch = [{"epochs": e, "difference": g} for e, g in zip(epochs, gaps)]
    out: dict[str, Any] = {"unique_tokens": u, "measure": measure, "epochs": None, "approx_train_flops": None,
                           "ahead_from": at, "swept_epochs": epochs, "paired_over": paired_over, "n": size,
                           "per_epoch": per_epoch, "lower_is_better": lower_is_better}
    if differences is not None:
        draws = np.random.default_rng(seed).integers(0, size, size=(n_resamples, size))
        resampled = differences(draws)
        for i, entry in enumerate(per_epoch):
            entry["ci_low"], entry["ci_high"] = percentile_interval(resampled[:, i])
        beyond = [(p["ci_high"] is not None and p["ci_high"] < 0) if lower_is_better else
                  (p["ci_low"] is not None and p["ci_low"] > 0) for p in per_epoch]
        out["epochs"] = crossover_epoch(epochs, beyond) if beyond and beyond[-1] else None
        if out["epochs"] is not None:
            out["approx_train_flops"] = mlm.points[out["epochs"]].approx_train_flops
        ahead = resampled < 0 if lower_is_better else resampled > 0
        where = [crossover_epoch(epochs, row) for row in ahead]
        out["epochs_ci"] = list(percentile_interval([w for w in where if w is not None]))
        out["no_crossover_share"] = round(sum(w is None for w in where) / len(where), 4)
    out["statement"] = _statement(out, what)
    return out


def _label(measure: str, results: Any = None) -> str:
    """How a sentence names ``measure``: by its declared label, as ``results`` recorded it where it did."""
    if measure == LOSS:
        return "validation loss"
    declared = headline(measure, results)
    return f"unseen {declared.label if declared and declared.label else measure}"


def _num(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}g}"


def _statement(found: dict[str, Any], what: str) -> str:
    swept = found["swept_epochs"]
    span = f"{swept[0]:g}-{swept[-1]:g} epochs"
    if found["epochs"] is None:
        tail = (f"; a crossover appears in {(1 - found['no_crossover_share']) * 100:.0f}% of bootstrap resamples"
                if "no_crossover_share" in found else "")
        point = found.get("ahead_from")
        if point is not None:
            last = found["per_epoch"][-1]
            ci = (f" [{_num(last['ci_low'])}, {_num(last['ci_high'])}]" if last.get("ci_low") is not None
                  else ", without a CI")
            tail = (f"; the point estimates put the MLM ahead from {point:g} epochs, but not beyond its CI "
                    f"(MLM - CLM {_num(last['difference'])}{ci} at {last['epochs']:g} epochs)") + tail
        return f"U={found['unique_tokens']:,}: no crossover on {what} beyond its CI within the sweep ({span}){tail}"
    entry = next(p for p in found["per_epoch"] if p["epochs"] == found["epochs"])
    ci = (f" [{_num(entry['ci_low'])}, {_num(entry['ci_high'])}]" if entry.get("ci_low") is not None else "")
    at = ("from the first swept epoch" if found["epochs"] == swept[0] else f"from {found['epochs']:g} epochs")
    flops = f" ({found['approx_train_flops']:.2g} FLOPs)" if found.get("approx_train_flops") else ""
    where = f", crossover epoch 95% CI {_num(found['epochs_ci'][0])}-{_num(found['epochs_ci'][1])}" if found.get("epochs_ci", [None])[0] is not None else ""
    return (f"U={found['unique_tokens']:,}: the MLM's {what} is {'below' if found['lower_is_better'] else 'above'} "
            f"the CLM's beyond its CI {at}{flops} and stays so (MLM - CLM {_num(entry['difference'])}{ci}{where})")


def answer(found: Sequence[dict[str, Any]]) -> str:
    """The sweep's answer in one sentence: every crossover finding joined."""
    return "; ".join(f["statement"] for f in found) + "." if found else "No sweep in this run."
