"""A classifier's MCMC prior: the unit Gaussian's fixed precisions against Gibbs-sampled per-layer precisions.

NUTS on the digits with the library's unit prior (precision 1 on every weight and bias) gives
underconfident predictions: over 20 splits its median fitted temperature is 0.03, against 0.7 to 0.85
for the other methods (``temperature_seeds.md``). The prior's scale is one suspect: with 64 inputs,
unit-variance first-layer weights give pre-activations of variance 64, saturating ``tanh``. Here NUTS
(the classification benchmark's settings) is fitted with the precisions fixed at 1 and with them
Gibbs-sampled under the library's Gamma(1, 1) hyperpriors (``learn_prior=True``), on the same
:data:`SEEDS` splits of the digits' train and val rows as ``temperature_seeds.py`` (its
:func:`temperature_seeds.split_of`; the fixed split's test rows are never read), and scored on the
scoring rows: NLL, ECE and error raw and with the temperature ``api.fit`` keeps (fitted on the val
rows when it lowers their NLL).

Rule (fixed before the runs): the variant with the lower mean scoring NLL with its kept temperature
(what a user gets) wins, unless within :data:`TIE` nats of the fixed prior (today's default); the
winner is the default of MCMC classifiers. Records: ``variant``, ``seed``, ``seconds``, ``temperature``
and ``nll``, ``ece``, ``error`` with and without it (``*_raw``).

Run: ``python benchmarks/classifier_prior.py --workdir DIR`` (resumable; about a minute per fit;
``--shard I/N`` for workers side by side, then once without it to write the results).
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
import temperature_seeds  # noqa: E402
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
from sigmabnn.evaluate.classification import evaluate_classifier  # noqa: E402

VARIANTS = {"fixed": {"learn_prior": False}, "learned": {"learn_prior": True}}
SEEDS = 10
TIE = 0.001
NUTS = {"num_chains": 2, "num_warmup": 200, "num_samples": 100, "max_tree_depth": 7}


def fit_once(digits, variant: str, seed: int, settings: dict[str, Any] = NUTS) -> dict[str, Any]:
    """NUTS with ``variant``'s prior on seed ``seed``'s split, scored on its scoring rows."""
    table = temperature_seeds.split_of(digits, seed)
    fitted, seconds = cls._fit(table, "nuts", {**settings, **VARIANTS[variant]}, seed=seed)
    feats = cls._features(table)
    score = table[table.split == "test"]
    kept = evaluate_classifier(fitted, score[feats], score["digit"], calibrated=True)
    raw = evaluate_classifier(fitted, score[feats], score["digit"], calibrated=False)
    keys = ("nll", "ece", "error")
    return {"variant": variant, "seed": seed, "seconds": seconds, "temperature": fitted.classes.temperature,
            **{k: kept[k] for k in keys}, **{f"{k}_raw": raw[k] for k in keys}}  # fmt: skip


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per variant the means; the paired difference learned - fixed over the seeds both have; the pre-set choice."""
    by = {v: {r["seed"]: r for r in records if r["variant"] == v} for v in VARIANTS}
    means = {v: {k: float(np.mean([r[k] for r in rs.values()])) for k in ("nll", "ece", "error", "nll_raw", "ece_raw")}
             | {"fits": len(rs), "median_temperature": float(np.median([r["temperature"] for r in rs.values()]))}
             for v, rs in by.items() if rs}  # fmt: skip
    both = sorted(set(by["fixed"]) & set(by["learned"]))
    d = np.array([by["learned"][s]["nll"] - by["fixed"][s]["nll"] for s in both])
    diff = {"seeds": len(both), "mean": float(d.mean()) if d.size else None,
            "se": float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else None}  # fmt: skip
    chosen = "learned" if diff["mean"] is not None and diff["mean"] < -TIE else "fixed"
    return {"means": means, "nll_learned_minus_fixed": diff, "chosen": chosen}


COLS = [("variant", "prior precisions", ""), ("fits", "fits", "d"), ("nll", "scoring NLL (kept T)", ".4f"),
        ("ece", "ECE (kept T)", ".4f"), ("error", "error", ".4f"), ("nll_raw", "NLL T=1", ".4f"),
        ("ece_raw", "ECE T=1", ".4f"), ("median_temperature", "median T", ".3g")]  # fmt: skip


def _number(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def markdown(data: dict[str, Any]) -> str:
    s, meta = data["summary"], data["meta"]
    d = s["nll_learned_minus_fixed"]
    rows = [{"variant": v, **m} for v, m in s["means"].items()]
    return "\n".join([
        "# A classifier's MCMC prior: fixed unit precisions against Gibbs-sampled ones (NUTS, digits)", "",
        f"Written by `benchmarks/classifier_prior.py` (its docstring has the protocol and the rule, fixed before "
        f"the runs). NUTS settings {NUTS}; the splits of `temperature_seeds.py` (train and val rows only).", "",
        f"Run {meta['date']} to {meta['date_end']}, load average at start {meta['load_average_1_5_15_at_start']}, "
        f"at end {meta['load_average_1_5_15_at_end']} (resumable: fits may come from earlier invocations). "
        + units_load_text(data["records"]), "",
        markdown_table(rows, COLS), "",
        f"Paired over {d['seeds']} splits, scoring NLL learned - fixed: {_number(d['mean'], '+.4f')} "
        f"(SE {_number(d['se'], '.4f')}). "
        f"**Chosen: `{s['chosen']}`** (lower mean scoring NLL with the kept temperature; within {TIE} nats "
        "of the fixed prior, the fixed prior).", "",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--seeds", type=int, default=SEEDS)
    ap.add_argument("--shard", default="0/1", help="I/N: only the fits whose seed plus variant index is I mod N")
    ap.add_argument("--settings", type=json.loads, default=NUTS, help=argparse.SUPPRESS)  # the smoke test's budget
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    shard = parse_shard(args.shard)
    if shard is None:
        print(SHARD_ERROR.format(args.shard), file=sys.stderr)
        return 2
    meta = run_metadata("benchmarks/classifier_prior.py")
    digits = load_digits()
    units = [(variant, seed, j) for seed in range(args.seeds) for j, variant in enumerate(VARIANTS)]
    records = run_units(args.workdir, units, shard, lambda v, seed: fit_once(digits, v, seed, args.settings))
    if records is None:
        return 0
    records = [r for r in records if r["seed"] < args.seeds]
    data = {"meta": finish_metadata(meta), "summary": summarise(records), "records": records}
    write(args.out / "classifier_prior.json", data, markdown(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
