"""The early-stopping and checkpoint-selection rule, fed scripted validations (no training)."""

from __future__ import annotations

from mlmh.training.stopping import EarlyStopping, Validation


def feed(rule: EarlyStopping, curve, tokens_per_eval: int = 100):
    """Observe ``curve`` [(loss, accuracy)] one evaluation per 100 tokens; the step of each observation
    when the rule says stop, else None, and the steps whose weights became the kept ones."""
    kept = []
    for i, (loss, accuracy) in enumerate(curve, 1):
        if rule.observe(i, i * tokens_per_eval, Validation(loss, accuracy, 0.1, 10_000)):
            kept.append(i)
        if rule.should_stop():
            return i, kept
    return None, kept


def test_on_the_plateau_the_lowest_loss_is_kept_and_nothing_stops():
    rule = EarlyStopping(patience_tokens=200)
    stopped, kept = feed(rule, [(5.0, 0.1), (4.0, 0.1), (4.5, 0.09)] + [(6.0, 0.1)] * 10)
    assert stopped is None and rule.left_plateau_at is None and kept == [1, 2] and rule.step_kept == 2
    assert rule.stop_reason(False, True).startswith("budget spent while still on the unigram plateau")


def test_off_the_plateau_the_highest_accuracy_is_kept_ties_to_the_lower_loss():
    rule = EarlyStopping(patience_tokens=10_000)
    _, kept = feed(rule, [(3.0, 0.1), (4.0, 0.2), (4.5, 0.3), (4.2, 0.3), (4.1, 0.3), (2.0, 0.12), (5.0, 0.29)])
    # step 6 has the lowest loss of all, but its accuracy is back on the plateau: it does not compete
    assert rule.left_plateau_at == 2 and kept == [1, 2, 3, 4, 5] and rule.step_kept == 5 and rule.kept.loss == 4.1


def test_patience_resets_on_a_better_loss_or_a_better_accuracy_and_counts_from_the_plateau_exit():
    rule = EarlyStopping(patience_tokens=300)
    curve = [(5.0, 0.1), (5.5, 0.1), (5.6, 0.1), (5.7, 0.1), (6.0, 0.2),  # off the plateau at 5, loss never better
             (6.1, 0.2), (6.2, 0.25), (6.3, 0.2), (4.9, 0.2), (6.4, 0.24), (6.5, 0.24), (6.6, 0.24)]
    stopped, _ = feed(rule, curve)
    # improvements: accuracy at 7, loss at 9; 300 tokens after step 9 is step 12
    assert stopped == 12 and rule.tokens_at_improvement == 900 and rule.step_kept == 7
    assert rule.stop_reason(True, True) == ("stopped early: neither validation loss nor validation accuracy improved "
                                            "for 300 training tokens, after the model left the unigram plateau at step 5")


def test_no_patience_means_no_early_stop():
    rule = EarlyStopping(patience_tokens=0)
    stopped, _ = feed(rule, [(5.0, 0.2)] + [(6.0, 0.15)] * 50)
    assert stopped is None and rule.stop_reason(False, True) == "budget spent (early stopping off)"
