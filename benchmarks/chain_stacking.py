"""Whether the default fit's chains should be weighted by stacking instead of equally (validation rows only).

The default fit runs several ChEES chains from separate MAP starts, and on small tables they do not
mix: the chains settle in different modes (``rhat_predictions`` up to 2 in ``defaults.json``). Its
predictive weighs every chain equally. Yao, Vehtari & Gelman (2022, "Stacking for non-mixing
Bayesian computations: the curse and blessing of multimodal posteriors", JMLR 23(79)) weigh
non-mixing chains instead by stacking: the simplex weights ``w`` that maximise ``sum_i log sum_c
w_c p_c(y_i)``, with ``p_c(y_i)`` chain ``c``'s leave-one-out predictive density of row ``i``. Here
that is measured against equal weights on each validation table of the defaults battery:

- each table's training rows are split as ``defaults.py --phase validate`` splits them (80 % fit
  rows, 20 % validation rows); the library's default fit (``sigmabnn.api.fit(path, "y")``, no
  options) trains on the fit rows, which it splits itself (its automatic split);
- ``equal``: the default's predictive (every chain weighted ``1 / C``);
- ``stack-loo``: stacking weights from each chain's PSIS leave-one-out densities of the rows the
  fit trained on (:func:`sigmabnn.recalibration.loo_log_weights`, per chain);
- ``stack-val``: stacking weights from the exact densities of the fit's own validation rows
  (where its split has them);
- ``best-loo``: the one chain with the highest summed leave-one-out density.

Every rule is scored by the mean log predictive density of the validation rows (nats per row, the
target's model space: ``log10`` for a log target); ``per-chain`` gives each chain's alone. The
weights are found by EM on the mixture weights (monotone in the objective, :data:`EM_STEPS` steps).

Rule, fixed before the runs: a rule replaces equal weights only if its mean, over tables, of the
per-table validation LL difference to ``equal`` is positive by more than 2 standard errors of that
mean (the tables' spread). No battery test row is read.

Run: ``python benchmarks/chain_stacking.py`` (resumable per table; about 10 minutes on 2 cores);
``--tables`` selects a part, ``--table-only`` rewrites the Markdown.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import defaults  # noqa: E402
from _results import RESULTS_DIR, finish_metadata, markdown_table, run_lines, run_metadata, write  # noqa: E402

OUT = RESULTS_DIR / "chain_stacking.json"
#: The validation phase's tables (``defaults_validation.md``).
TABLES = (
    "sin1d-100", "lin2d-120", "smooth6d-300", "steep6d-300", "hetero2d-1000", "friedman10d-2000",
    "student10d-2000", "bostonHousing", "energy", "wine-quality-red", "ewino-chi1chi1",
)  # fmt: skip
RULES = ("equal", "stack-loo", "stack-val", "best-loo")
EM_STEPS = 2000
Z = 2.0


def _logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    top = np.max(a, axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.sum(np.exp(a - top), axis=axis))


def stacking_weights(lpd: np.ndarray, steps: int = EM_STEPS) -> np.ndarray:
    """Simplex weights ``[C]`` maximising ``sum_i log sum_c w_c exp(lpd[i, c])`` (EM on mixture weights)."""
    w = np.full(lpd.shape[1], 1.0 / lpd.shape[1])
    for _ in range(steps):
        a = np.log(np.maximum(w, 1e-300)) + lpd
        w = np.exp(a - _logsumexp(a, 1)[:, None]).mean(axis=0)
    return w


def chain_densities(log_lik: np.ndarray, num_chains: int) -> np.ndarray:
    """``[n, C]``: each chain's predictive log density of each row from per-network ``log_lik`` ``[n, S]``
    (networks chain-major)."""
    per = log_lik.reshape(log_lik.shape[0], num_chains, -1)
    return _logsumexp(per, 2) - math.log(per.shape[2])


def chain_loo_densities(log_lik: np.ndarray, num_chains: int) -> np.ndarray:
    """``[n, C]``: each chain's PSIS leave-one-out log density of each (training) row."""
    from sigmabnn.recalibration import loo_log_weights

    per = log_lik.reshape(log_lik.shape[0], num_chains, -1)
    out = []
    for c in range(num_chains):
        log_w, _ = loo_log_weights(per[:, c, :])
        out.append(_logsumexp(log_w + per[:, c, :], 1))
    return np.stack(out, axis=1)


def mixture_ll(lpd: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``[n]``: the log density of each row under the chains' mixture with weights ``w``."""
    return _logsumexp(np.log(np.maximum(w, 1e-300)) + lpd, 1)


def measure(table: str) -> dict[str, Any]:
    """Fit the default on the table's fit rows; every rule's weights and validation LL."""
    from sigmabnn.api import fit
    from sigmabnn.data.tables import prepare
    from sigmabnn.names import DEFAULT_SPLIT, MIN_RECALIBRATION_ROWS
    from sigmabnn.predict.scoring import per_draw_predictive
    from sigmabnn.recalibration import _are_training_rows

    t = defaults.load_table(table, with_test=False)
    fit_df, val_df = defaults.phase_rows(t, "validate")
    with tempfile.TemporaryDirectory(prefix="sigmabnn_stacking_") as tmp:
        path = Path(tmp) / "table.csv"
        fit_df.to_csv(path, index=False)
        t0 = time.perf_counter()
        fitted, _ = fit(str(path), "y", log_target=t.log_target, progress=False)
        seconds = time.perf_counter() - t0
    own = prepare(
        fit_df, "y", split_fractions=DEFAULT_SPLIT, seed=0, log_target=t.log_target, min_val_rows=MIN_RECALIBRATION_ROWS
    )
    if not _are_training_rows(fitted, own.train.x, own.train.y):
        raise SystemExit(f"{table}: the rows rebuilt from fit's split are not the ones it trained on")
    chains = fitted.draws.num_chains
    loo = chain_loo_densities(per_draw_predictive(fitted, own.train.x, own.train.y)[0], chains)
    features = list(fitted.feature_names)
    val = chain_densities(per_draw_predictive(fitted, val_df[features], val_df["y"].to_numpy(np.float64))[0], chains)
    weights = {"equal": np.full(chains, 1.0 / chains), "stack-loo": stacking_weights(loo)}
    weights["best-loo"] = np.eye(chains)[int(np.argmax(loo.sum(axis=0)))]
    if own.val.n:
        inner = per_draw_predictive(fitted, own.val.x, own.val.y)[0]
        weights["stack-val"] = stacking_weights(chain_densities(inner, chains))
    lls = {rule: mixture_ll(val, w) for rule, w in weights.items()}
    return {
        "table": table, "n_fit_rows": len(fit_df), "n_trained": own.train.n, "n_own_val": own.val.n,
        "n_val": len(val_df), "chains": chains, "fit_seconds": round(seconds, 1),
        "likelihood": fitted.bnn.likelihood.__class__.__name__,
        "weights": {rule: np.round(w, 4).tolist() for rule, w in weights.items()},
        "val_ll": {rule: float(v.mean()) for rule, v in lls.items()},
        "val_ll_diff_se": {rule: float((v - lls["equal"]).std(ddof=1) / math.sqrt(v.size)) for rule, v in lls.items()},
        "per_chain_val_ll": np.round(val.mean(axis=0), 4).tolist(),
    }  # fmt: skip


def summary(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per rule: tables, the mean over tables of the validation LL difference to ``equal``, its SE, verdict."""
    rows = []
    for rule in RULES[1:]:
        d = np.array([r["val_ll"][rule] - r["val_ll"]["equal"] for r in records if rule in r["val_ll"]])
        if d.size < 2:
            continue
        mean, se = float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size))
        rows.append({
            "rule": rule, "tables": int(d.size), "mean_diff": mean, "se": se,
            "tables_better": int((d > 0).sum()), "replaces_equal": mean > Z * se,
        })  # fmt: skip
    return rows


def markdown(data: dict[str, Any]) -> str:
    recs = data["records"]
    per_table = [
        {"table": r["table"], "chains": r["chains"], "n_val": r["n_val"], **{k: r["val_ll"].get(k) for k in RULES},
         "best_chain": max(r["per_chain_val_ll"]), "worst_chain": min(r["per_chain_val_ll"])}
        for r in recs
    ]  # fmt: skip
    cols = [("table", "table", ""), ("chains", "chains", ""), ("n_val", "val rows", "")]
    cols += [(k, f"LL {k}", ".3f") for k in RULES] + [("best_chain", "LL best chain alone", ".3f")]
    cols += [("worst_chain", "LL worst chain alone", ".3f")]
    runs = run_lines(data.get("runs", []), "chain_stacking.py").rstrip("\n")
    return "\n".join([
        "# Chain weights of the default fit: equal against stacking (validation rows)",
        "",
        "Generated by `benchmarks/chain_stacking.py` from `chain_stacking.json`; do not edit. The script's "
        "docstring has the protocol and the rule, fixed before the runs; no battery test row is read. LL: mean "
        "log predictive density of the validation rows (nats per row, the target's model space).",
        "",
        "Invocations:",
        runs,
        "",
        "## Rules against equal weights",
        "",
        markdown_table(summary(recs), [
            ("rule", "rule", ""), ("tables", "tables", ""), ("mean_diff", "mean LL difference to equal", "+.4f"),
            ("se", "its SE (tables)", ".4f"), ("tables_better", "tables better than equal", ""),
            ("replaces_equal", "replaces equal weights", ""),
        ]),
        "## Per table",
        "",
        markdown_table(per_table, cols),
    ]) + "\n"  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--table-only", action="store_true")
    args = ap.parse_args(argv)
    data = defaults.load_results(args.out)
    if args.table_only:
        write(args.out, data, markdown(data))
        return 0
    tables = defaults.parse_names(args.tables, TABLES, TABLES, "table")
    meta = run_metadata("chain_stacking.py") | {"command": " ".join(argv if argv is not None else sys.argv[1:])}
    data["runs"].append(meta)
    done = {r["table"] for r in data["records"]}
    for table in (t for t in tables if t not in done):
        rec = measure(table)
        print(f"{table}: {json.dumps(rec['val_ll'])}", flush=True)
        data["records"].append(rec)
        data["runs"][-1] = finish_metadata(meta)
        write(args.out, data, markdown(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
