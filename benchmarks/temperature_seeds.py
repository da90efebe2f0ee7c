"""Whether a classifier's temperature should be kept, measured over many splits of the digits instead of one.

The classification benchmark (``classification.py``) fits each method once on the fixed digits
split, so whether a temperature fitted on its 359 val rows helps its test rows is one draw of luck
and bias. Here each of its chosen configurations (the ``map`` network, ``bbb``, ``bbb_mixture``,
``flipout``, the ``ensemble``, and NUTS with its settings, read from ``results/classification.json``)
is refitted with :func:`sigmabnn.api.fit` on :data:`SEEDS` fresh splits of the digits' train and val
rows, stratified by class: :data:`VAL_ROWS` val rows (early stopping and the temperature, as in the
benchmark), :data:`SCORE_ROWS` scoring rows, the rest training. The fixed split's test rows are
never read.

Every rule is applied to the same fit afterwards, from the networks' raw log-probabilities on the
val rows (:func:`sigmabnn.temperature.fit_temperature`'s search), and scored on the scoring rows:

- ``none``: ``T = 1``;
- ``val-nll``: ``T`` fitted on all val rows, kept when it lowers their NLL (what ``api.fit`` stores);
- ``cv2``: that ``T``, kept only when a 2-fold cross-validation inside the val rows (``T`` fitted on
  one half, the NLL of the other at that ``T`` against ``T = 1``, summed over both halves) gives
  the lower NLL (the classification benchmark's rule before this study);
- ``cv5``: the same with 5 folds;
- ``pooled``: pool, then calibrate (Rahaman & Thiery 2021, "Uncertainty quantification and deep ensembles"):
  one temperature applied to the log of the posterior predictive, ``softmax(log(mean_t p_t) / T)``, instead of
  to every network's logits before the mean; fitted on all val rows and kept when it lowers their NLL, as
  ``val-nll``. The two maps agree for one network. For many networks they differ: dividing each network's
  logits by a small ``T`` turns the mean into the networks' votes, so a posterior whose networks are each too
  soft (the default ChEES classifier's fit on the fixed split ran ``val-nll``'s search to its lower bound,
  ``T = 0.01``) cannot be sharpened as a whole. Added on 2026-12-07, after the first four rules' run
  (2026-11-29) and after an exploration on the fixed split's val rows (not committed) in which it sharpened
  that ChEES fit's predictive where the per-network map could not; judged on fresh fits of all methods by the
  same rule, ``pooled`` listed last, so it wins only by more than :data:`TIE`.

Rule (fixed before the runs): the rule with the lowest mean scoring-row NLL over every fit (each
method and seed weighted equally) wins; a rule within :data:`TIE` nats of a simpler one (in the
order listed) loses to it. The winner is the rule the classification benchmark and
``api.fit`` should apply. ECE (15 equal-width bins) and error are reported beside it, not used for
the choice. Records: ``method``, ``config`` (the configuration fitted, as ``classification.json`` gave
it then), ``seed``, ``seconds``, ``temperature`` (fitted on all val rows) and per rule ``nll``, ``ece``,
``error`` and ``temperature`` on the scoring rows.

Every rule's search is :func:`sigmabnn.temperature.kept_temperature`. Since the committed run (2026-12-07) it
refuses a minimum at the search's lower bound (``T = 1`` is kept there); in that run no ``pooled`` temperature
was at the bound (the lowest was 0.376), so the choice and the ``pooled`` scores are the same under it, while
``val-nll``'s NUTS temperatures, at the bound on 13 of 20 splits (and no other fit's), would now be 1.

Run: ``python benchmarks/temperature_seeds.py --workdir DIR`` (resumable: one JSON per fit in
``DIR``; about 35 minutes on one core, most of it NUTS, or two shards side by side); ``--seeds``,
``--methods`` and ``--shard I/N`` (fits whose seed plus method index is ``I`` mod ``N``) select a part.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import classification as cls  # noqa: E402
from _results import (  # noqa: E402
    RESULTS_DIR,
    SHARD_ERROR,
    finish_metadata,
    markdown_table,
    parse_shard,
    run_metadata,
    run_units,
    units_load_text,
    write,
)
from sigmabnn.datasets import load_digits  # noqa: E402
from sigmabnn.evaluate.classification import ece  # noqa: E402
from sigmabnn.predict.classes import network_probabilities  # noqa: E402
from sigmabnn.temperature import (  # noqa: E402
    kept_temperature,
    pooled_log_probs,
    temperature_nll,
    tempered_probabilities,
)

METHODS = ("map", "bbb", "bbb_mixture", "flipout", "ensemble", "nuts")
RULES = ("none", "val-nll", "cv2", "cv5", "pooled")
SEEDS = 20
VAL_ROWS, SCORE_ROWS = 359, 360
TIE = 0.001


def split_of(table, seed: int):
    """The non-test rows of ``table`` relabelled ``train``/``val``/``test`` (the scoring rows), stratified by class.

    Per class, a seeded permutation; the first ``round(n_c * VAL_ROWS / n)`` rows are val, the next
    ``round(n_c * SCORE_ROWS / n)`` scoring rows, the rest train.
    """
    rows = table[table.split != "test"].reset_index(drop=True)
    rng = np.random.default_rng([seed, 29])
    labels = np.full(len(rows), "train", dtype=object)
    for c in np.unique(rows["digit"]):
        idx = rng.permutation(np.flatnonzero(rows["digit"].to_numpy() == c))
        n_val = round(idx.size * VAL_ROWS / len(rows))
        n_score = round(idx.size * SCORE_ROWS / len(rows))
        labels[idx[:n_val]] = "val"
        labels[idx[n_val : n_val + n_score]] = "test"
    return rows.assign(split=labels)


def configurations(path: Path = RESULTS_DIR / "classification.json") -> dict[str, dict[str, Any]]:
    """Per method, the classification benchmark's chosen configuration (its ``summary.final``)."""
    final = json.loads(path.read_text())["summary"]["final"]
    keys = ("learning_rate", "epochs", "members", "settings")
    return {m: {k: final[m][k] for k in keys if final[m].get(k) is not None} for m in METHODS if m in final}


def _fit(table, method: str, config: dict[str, Any], seed: int):
    if method == "nuts":
        return cls._fit(table, "nuts", dict(config["settings"]), seed=seed)
    n_train = int((table.split == "train").sum())
    name, opts = cls._options(method, config["epochs"], config["learning_rate"], n_train, config["members"])
    return cls._fit(table, name, opts, seed=seed)


def _cv_keeps(log_p: np.ndarray, codes: np.ndarray, folds: int, seed: int) -> bool:
    """Whether ``folds``-fold cross-validation inside the val rows gives a lower NLL at the fold-fitted ``T``."""
    fold = np.random.default_rng([seed, folds]).permutation(codes.size) % folds
    at_t = at_one = 0.0
    for f in range(folds):
        held = fold == f
        t = kept_temperature(log_p[:, ~held], codes[~held]).temperature
        at_t += temperature_nll(log_p[:, held], codes[held], t) * held.sum()
        at_one += temperature_nll(log_p[:, held], codes[held], 1.0) * held.sum()
    return bool(at_t < at_one)


def rule_temperatures(log_p: np.ndarray, codes: np.ndarray, seed: int) -> dict[str, float]:
    """Each rule's temperature from the val rows' raw log-probabilities ``[T, n, K]`` and codes ``[n]``."""
    t = kept_temperature(log_p, codes).temperature
    return {"none": 1.0, "val-nll": t, "cv2": t if _cv_keeps(log_p, codes, 2, seed) else 1.0,
            "cv5": t if _cv_keeps(log_p, codes, 5, seed) else 1.0,
            "pooled": kept_temperature(pooled_log_probs(log_p), codes).temperature}  # fmt: skip


def score_rules(val_log_p, val_codes, score_log_p, score_codes, seed: int) -> dict[str, dict[str, float]]:
    """Per rule: its temperature and the scoring rows' NLL (nats), ECE and error at it."""
    out = {}
    for rule, t in rule_temperatures(val_log_p, val_codes, seed).items():
        lp = pooled_log_probs(score_log_p) if rule == "pooled" else score_log_p
        p = tempered_probabilities(lp, t)
        out[rule] = {"temperature": t, "nll": temperature_nll(lp, score_codes, t),
                     "ece": ece(p, score_codes), "error": float(np.mean(p.argmax(axis=1) != score_codes))}  # fmt: skip
    return out


def fit_once(digits, method: str, config: dict[str, Any], seed: int) -> dict[str, Any]:
    """One fit on seed ``seed``'s split, every rule scored."""
    table = split_of(digits, seed)
    fitted, seconds = _fit(table, method, config, seed)
    feats = cls._features(table)
    parts = {}
    for name in ("val", "test"):
        rows = table[table.split == name]
        p = network_probabilities(fitted, rows[feats], calibrated=False)
        parts[name] = (np.log(np.maximum(p, 1e-300)), fitted.classes.encode(rows["digit"]))
    rules = score_rules(*parts["val"], *parts["test"], seed)
    return {"method": method, "config": config, "seed": seed, "seconds": seconds, "n_val": int(parts["val"][1].size),
            "n_score": int(parts["test"][1].size), "temperature": rules["val-nll"]["temperature"],
            "rules": rules}  # fmt: skip


def choose(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The pre-set rule (module docstring): mean scoring NLL per rule over every record; ties to the simpler."""
    mean = {r: float(np.mean([rec["rules"][r]["nll"] for rec in records])) for r in RULES}
    best = min(RULES, key=mean.get)
    chosen = next(r for r in RULES if mean[r] <= mean[best] + TIE)
    diffs = {r: np.array([rec["rules"][r]["nll"] - rec["rules"]["none"]["nll"] for rec in records]) for r in RULES}
    se = {r: float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else None for r, d in diffs.items()}
    return {"mean_nll": mean, "chosen": chosen, "nll_minus_none": {r: float(d.mean()) for r, d in diffs.items()},
            "nll_minus_none_se": se}  # fmt: skip


def per_method(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per method and rule: fits, mean NLL, ECE and error, share of fits with ECE <= 0.03, share keeping ``T``."""
    rows = []
    for method in METHODS:
        recs = [r for r in records if r["method"] == method]
        for rule in RULES if recs else ():
            vals = [r["rules"][rule] for r in recs]
            rows.append({"method": method, "rule": rule, "fits": len(recs),
                         "nll": np.mean([v["nll"] for v in vals]), "ece": np.mean([v["ece"] for v in vals]),
                         "ece_le_003": np.mean([v["ece"] <= 0.03 for v in vals]),
                         "error": np.mean([v["error"] for v in vals]),
                         "kept": np.mean([v["temperature"] != 1.0 for v in vals]),
                         "median_t": float(np.median([r["temperature"] for r in recs]))})  # fmt: skip
    return rows


COLS = [("method", "method", ""), ("rule", "rule", ""), ("fits", "fits", "d"), ("nll", "scoring NLL", ".4f"),
        ("ece", "ECE", ".4f"), ("ece_le_003", "fits with ECE <= 0.03", ".2f"), ("error", "error", ".4f"),
        ("kept", "fits keeping T", ".2f"), ("median_t", "median T (all val rows)", ".3g")]  # fmt: skip


def _configs_of(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per method, the configurations its records were fitted with (one, unless the runs straddle a change)."""
    out: dict[str, list] = {}
    for r in records:
        if r.get("config") not in out.setdefault(r["method"], []):
            out[r["method"]].append(r.get("config"))
    return {m: c[0] if len(c) == 1 else c for m, c in out.items()}


def markdown(data: dict[str, Any]) -> str:
    s = data["summary"]
    meta = data["meta"]
    rule_rows = [{"rule": r, "nll": s["mean_nll"][r], "diff": s["nll_minus_none"][r],
                  "se": s["nll_minus_none_se"][r], "chosen": r == s["chosen"]} for r in RULES]  # fmt: skip
    rule_cols = [("rule", "rule", ""), ("nll", "mean scoring NLL", ".5f"), ("diff", "minus none", "+.5f"),
                 ("se", "paired SE", ".5f"), ("chosen", "chosen", "")]  # fmt: skip
    return "\n".join([
        "# Keeping a classifier's temperature, over many splits of the digits",
        "",
        f"Written by `benchmarks/temperature_seeds.py` (its docstring has the protocol and the rule, fixed before "
        f"the runs). {len(data['records'])} fits: the classification benchmark's chosen configuration of each "
        f"method, refitted on fresh stratified splits of the digits' {data['n_rows']} train and val rows (about "
        f"{VAL_ROWS} val rows, {SCORE_ROWS} scoring rows, the rest training: about "
        f"{data['n_rows'] - VAL_ROWS - SCORE_ROWS} rows, against 1,078 in the fixed split); the fixed split's "
        "test rows are never read. Configurations fitted (from `classification.json` when the fits were made): "
        + "; ".join(f"{m} {c}" for m, c in _configs_of(data["records"]).items())
        + ".",
        "",
        f"Run {meta['date']} to {meta['date_end']}, load average at start {meta['load_average_1_5_15_at_start']}, "
        f"at end {meta['load_average_1_5_15_at_end']} (resumable: fits may come from earlier invocations). "
        + units_load_text(data["records"]),
        "",
        f"**Chosen rule: `{s['chosen']}`** (lowest mean scoring-row NLL over every fit; ties within {TIE} nats "
        "to the simpler rule).",
        "",
        markdown_table(rule_rows, rule_cols),
        "",
        "## Per method",
        "",
        markdown_table(per_method(data["records"]), COLS),
        "",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--seeds", type=int, default=SEEDS)
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--shard", default="0/1", help="I/N: only the fits whose seed plus method index is I mod N")
    ap.add_argument("--config", type=Path, default=RESULTS_DIR / "classification.json")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    unknown = sorted(set(args.methods) - set(METHODS))
    shard = parse_shard(args.shard)
    if unknown or not args.config.exists():
        print(f"error: unknown method {unknown[0]!r}" if unknown else f"error: no {args.config}", file=sys.stderr)
        return 2
    if shard is None:
        print(SHARD_ERROR.format(args.shard), file=sys.stderr)
        return 2
    configs = configurations(args.config)
    meta = run_metadata("benchmarks/temperature_seeds.py")
    digits = load_digits()
    units = [(m, seed, METHODS.index(m)) for seed in range(args.seeds) for m in args.methods if m in configs]
    records = run_units(args.workdir, units, shard, lambda m, seed: fit_once(digits, m, configs[m], seed))
    if records is None:
        return 0
    records = [r for r in records if r["method"] in args.methods and r["seed"] < args.seeds]
    n_rows = int((digits.split != "test").sum())
    data = {"meta": finish_metadata(meta), "n_rows": n_rows, "summary": choose(records), "records": records}
    write(args.out / "temperature_seeds.json", data, markdown(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
