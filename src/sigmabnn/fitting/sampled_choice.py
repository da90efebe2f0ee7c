"""``noise_choice_by="sampled"``: of the two sampled models of ``likelihood="auto"``, keep the better on the val rows.

:func:`sigmabnn.fitting.run.run_fit` samples both noise models of :data:`sigmabnn.names.AUTO_NOISE_MODELS`
from their MAP starts (those :mod:`sigmabnn.fitting.noise_choice` fitted) and scores each raw model (before
any recalibration) on the validation rows, as every fit's report does (``metrics["val"]``). The
heteroscedastic model is kept when its mean log predictive density there is higher than the Gaussian's,
else the Gaussian: the rule ``sampled-val`` of ``benchmarks/noise_margin_seeds.py``, which chose the
better model on fresh rows more often than the MAP starts' margin did. The kept model's report says so
(``noise_choice``: ``likelihood``, ``sampled_val_log_density`` and the reason) and its ``total_seconds``
count both runs.
"""

from __future__ import annotations

from sigmabnn.fitted import FittedModel

__all__ = ["better", "val_log_density"]


def val_log_density(fitted: FittedModel) -> float:
    """Mean log predictive density of a fit's own validation rows (nats per row, original units, the raw model),
    from its report's metrics; ``-inf`` when it has none."""
    val = (fitted.diagnostics.get("metrics") or {}).get("val")
    return -float(val["original"]["nll"]) if val else float("-inf")


def better(first: FittedModel, second: FittedModel, total_seconds: float) -> FittedModel:
    """Of two fits of the same rows with the two noise models, the one the module docstring's rule keeps, its
    report's ``noise_choice`` and ``timings.total_seconds`` (s, both runs) updated."""
    fits = {f.bnn.likelihood.name: f for f in (first, second)}
    scores = {name: val_log_density(f) for name, f in fits.items()}
    hetero, gauss = scores["hetero_student_t"], scores["gaussian"]
    name = "hetero_student_t" if hetero > gauss else "gaussian"
    kept = fits[name]
    report = kept.diagnostics
    choice = dict(report.get("noise_choice") or {})
    reason = (
        f"both sampled: mean log predictive density on the validation rows (nats per row) gaussian {gauss:.4g}, "
        f"hetero_student_t {hetero:.4g}"
    )
    choice.update(
        likelihood=name,
        sampled_val_log_density=scores,
        reason=f"{choice['reason']}; {reason}" if choice.get("reason") else reason,
    )
    timings = {**(report.get("timings") or {}), "total_seconds": total_seconds}
    return kept.with_diagnostics(noise_choice=choice, timings=timings)
