"""Which method a classifier should get by default, measured over many splits of the digits.

A classifier fitted with no ``method`` gets the library's one default method, ChEES-HMC from MAP starts,
chosen for regressions (``defaults.md``). On the classification benchmark's fixed split that fit had the
highest raw val NLL of the methods measured (``classification.md``). Here the two candidates are fitted as a
user would call them, with no option but the likelihood (``fit(table, "digit", likelihood="categorical")``
and the same with ``method="ensemble"``: the library's default architecture, settings and pooled
temperature fitted on the val rows), on :data:`SEEDS` fresh stratified splits of the digits' train and val
rows (:func:`temperature_seeds.split_of`: 359 val rows, 360 scoring rows, the rest training; seeds not used
by any earlier study). The fixed split's test rows are never read. Each fitted model is scored as stored (at
its temperature) on the scoring rows: NLL (nats per row), error, ECE (15 equal-width bins); ``seconds`` is
the fit's wall time, compilation included.

Rule (fixed before the runs): the ensemble becomes the default method of a classifier when its mean
scoring NLL is lower than ChEES's by more than :data:`numpyro_seeds.Z` paired standard errors over the
splits and its mean error is not higher by more than that (:func:`numpyro_seeds.judge`); otherwise ChEES
stays. ECE and time are reported beside the verdict, not used for it.

Run: ``python benchmarks/classifier_method_seeds.py --workdir DIR`` (resumable: one JSON per fit in ``DIR``;
``--shard I/N`` fits the units whose seed plus method index is ``I`` mod ``N``, one process per core, then
once without it to write ``results/classifier_method_seeds.{json,md}``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
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
from numpyro_seeds import Z, judge  # noqa: E402
from sigmabnn.api import fit  # noqa: E402
from sigmabnn.datasets import load_digits  # noqa: E402
from sigmabnn.evaluate.classification import evaluate_classifier  # noqa: E402
from temperature_seeds import split_of  # noqa: E402

METHODS = ("chees", "ensemble")
SEEDS = tuple(range(200, 220))


def fit_once(digits, method: str, seed: int) -> dict[str, Any]:
    """One fit of ``method`` with no option on seed ``seed``'s split, scored on its scoring rows as stored."""
    table = split_of(digits, seed)
    feats = [c for c in table.columns if c.startswith("pixel_")]
    t0 = time.perf_counter()
    fitted, _ = fit(table, "digit", feats, method=method, likelihood="categorical", split_column="split",
                    seed=seed, progress=False)  # fmt: skip
    seconds = time.perf_counter() - t0
    rows = table[table.split == "test"]
    s = evaluate_classifier(fitted, rows[feats], rows["digit"])
    return {"method": method, "seed": seed, "seconds": seconds, "n_score": int(len(rows)),
            "networks": int(fitted.num_networks), "temperature": float(fitted.classes.temperature),
            "nll": float(s["nll"]), "error": float(s["error"]), "ece": float(s["ece"])}  # fmt: skip


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per method the means; the ensemble minus ChEES per metric with its paired SE; the rule's verdict."""
    by = {(r["method"], r["seed"]): r for r in records}
    seeds = sorted({s for m, s in by if all((k, s) in by for k in METHODS)})
    means = {m: {k: float(np.mean([by[m, s][k] for s in seeds])) for k in ("nll", "error", "ece", "seconds")}
             for m in METHODS}  # fmt: skip
    diff, verdicts = {}, {}
    for k in ("nll", "error", "ece", "seconds"):
        d = np.array([by["ensemble", s][k] - by["chees", s][k] for s in seeds])
        se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")
        diff[k] = {"mean": float(d.mean()) if d.size else float("nan"), "se": se}
        verdicts[k] = judge(-diff[k]["mean"], se) if d.size > 1 else "one seed"  # lower is better
    chosen = "ensemble" if verdicts["nll"] == "ahead" and verdicts["error"] != "behind" else "chees"
    return {"seeds": seeds, "means": means, "ensemble_minus_chees": diff, "ensemble_verdict": verdicts,
            "chosen": chosen}  # fmt: skip


def markdown(data: dict[str, Any]) -> str:
    s, meta = data["summary"], data["meta"]
    rows = [{"method": m, **s["means"][m]} for m in METHODS]
    cols = [("method", "method", ""), ("nll", "scoring NLL", ".4f"), ("error", "error", ".4f"),
            ("ece", "ECE", ".4f"), ("seconds", "fit seconds", ".1f")]  # fmt: skip
    drows = [{"metric": k, **v, "verdict": s["ensemble_verdict"][k]} for k, v in s["ensemble_minus_chees"].items()]
    dcols = [("metric", "metric", ""), ("mean", "ensemble minus ChEES", "+.4f"), ("se", "paired SE", ".4f"),
             ("verdict", "ensemble (lower is better)", "")]  # fmt: skip
    return "\n".join([
        "# The default method of a classifier, over many splits of the digits", "",
        f"Written by `benchmarks/classifier_method_seeds.py` (its docstring has the protocol and the rule, fixed "
        f"before the runs). {len(s['seeds'])} splits (seeds {s['seeds'][0]} to {s['seeds'][-1]}), each fitted "
        "with no option but the likelihood, by ChEES (the library's default method) and by the deep ensemble; "
        "scored as stored, at the pooled temperature fitted on the val rows, on 360 fresh scoring rows.", "",
        f"Run {meta['date']} to {meta['date_end']}, load average at start {meta['load_average_1_5_15_at_start']}, "
        f"at end {meta['load_average_1_5_15_at_end']} (resumable: fits may come from earlier invocations, run "
        "one per core side by side; their seconds include that sharing). " + units_load_text(data["records"]), "",
        f"**Chosen: `{s['chosen']}`** (the ensemble needs a lower NLL by more than {Z:g} paired SE and an error "
        "not higher by more than that).", "",
        markdown_table(rows, cols), "", markdown_table(drows, dcols), "",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    ap.add_argument("--shard", default="0/1", help="I/N: only the fits whose seed plus method index is I mod N")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    shard = parse_shard(args.shard)
    if shard is None:
        print(SHARD_ERROR.format(args.shard), file=sys.stderr)
        return 2
    meta = run_metadata("benchmarks/classifier_method_seeds.py")
    digits = load_digits()
    units = [(method, seed, k) for seed in args.seeds for k, method in enumerate(METHODS)]
    records = run_units(args.workdir, units, shard, lambda method, seed: fit_once(digits, method, seed))
    if records is None:
        return 0
    records = [r for r in records if r["seed"] in args.seeds]
    data = {"meta": finish_metadata(meta), "summary": summarise(records), "records": records}
    write(args.out / "classifier_method_seeds.json", data, markdown(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
