"""Does a longer warm-up buy the default accuracy on small tables? Measured over several training sets.

The default fit runs 300 ChEES warm-up iterations (600 up to 256 fitted rows) and then 125 draws per
chain. On small tables it finishes well inside the 60 s goal (``defaults.md``), and there it loses
log-likelihood to the previous default (NUTS at depth 10, 1,250 iterations; goal (c)) and RMSE to
NumPyro's single long chain (``numpyro_seeds.md``), whose chains both spend many times its leapfrog
steps. A few single fits with 1,000 warm-up iterations scored better on the validation rows of
smooth6d-300 and energy, and one with 2,000 worse: one training set cannot tell a warm-up's effect
from the chains' luck. Here the default and ``warmup-1000`` (the default with ``num_warmup=1000``, all
else as the library sets it) train on the same rows, per seed, and are scored on the same rows:

- the rows are those of ``recalibration_seeds.rows_of`` (synthetic tables: a fresh training set and
  5,000 fresh scoring rows per seed; real tables: a random 80 / 20 split of the training rows; no
  battery test row is read);
- each cell runs in a fresh process (``defaults.run_subprocess``); per seed and table the two methods
  run one after the other, so their seconds are paired under similar load.

Per seed: the LL difference (mean per-row log predictive density of ``warmup-1000`` minus the
default's, nats) and the RMSE difference. Per table: their means over the seeds, standard errors and
verdicts (``numpyro_seeds.verdict``: beyond 2 SE). Pooled: the mean of the tables' mean LL
differences, its SE ``sqrt(sum SE^2) / tables``.

Rule, fixed before the runs: a longer warm-up is worth a cost-fitted default (a later step: within the
time goal, the warm-up a table's rows afford) only when ``warmup-1000`` is ahead on the pooled LL by
more than 2 SE and behind on no table in LL or RMSE. Otherwise the warm-up stays as it is, and the
small tables' misses of goals (c) and (d) are not a matter of warm-up length.

Run: ``python benchmarks/warmup_seeds.py`` (resumable; about 50 s per cell on 2 cores, 60 cells);
``--tables``, ``--seeds`` select a part; ``--table-only`` rewrites the Markdown from the JSON.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import defaults  # noqa: E402
import numpyro_seeds  # noqa: E402
from _results import RESULTS_DIR  # noqa: E402

SCRIPT = Path(__file__).resolve()
OUT = RESULTS_DIR / "warmup_seeds.json"
TABLES = ("sin1d-100", "lin2d-120", "smooth6d-300", "steep6d-300", "bostonHousing", "energy")
SEEDS = (0, 1, 2, 3, 4)
CANDIDATE = "warmup-1000"
#: The candidate's options: the library's default with a 1,000-iteration warm-up.
defaults.ENTRIES[CANDIDATE] = {"num_warmup": 1000}
METHODS = ("sigmabnn", CANDIDATE)
TIMEOUT = 600.0
Z = numpyro_seeds.Z


def summarise(records: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(per-seed rows, per-table rows)``: differences ``warmup-1000`` minus the default."""
    recs = {numpyro_seeds.cell_key(r): r for r in records}
    seeds, tables = [], []
    for table in [t for t in TABLES if any(k[0] == t for k in recs)]:
        rows = numpyro_seeds.seed_differences(recs, table, base=CANDIDATE, other="sigmabnn")
        seeds += rows
        if not rows:
            continue
        ratios = [r["seconds_base"] / r["seconds_other"] for r in rows if r["seconds_base"] and r["seconds_other"]]
        tables.append(numpyro_seeds.table_differences(table, rows) | {
            "seconds_default": float(np.median([r["seconds_other"] for r in rows])),
            "seconds_candidate": float(np.median([r["seconds_base"] for r in rows])),
            "max_seconds_candidate": float(max(r["seconds_base"] for r in rows)),
            "time_ratio": float(np.median(ratios)) if ratios else None,
        })  # fmt: skip
    return seeds, tables


def pooled(tables: Sequence[dict[str, Any]]) -> tuple[float, float | None]:
    """The mean of the tables' mean LL differences and its SE (``sqrt(sum SE^2) / tables``)."""
    means = [t["ll_difference"] for t in tables]
    ses = [t["ll_se"] for t in tables]
    if not means:
        return math.nan, None
    if any(s is None for s in ses):
        return float(np.mean(means)), None
    return float(np.mean(means)), math.sqrt(sum(s * s for s in ses)) / len(ses)


def decide(tables: Sequence[dict[str, Any]], expected: int = len(TABLES)) -> str:
    """The module docstring's rule, in words: ``"worth a cost-fitted default"``, ``"no"`` or ``"incomplete"``."""
    mean, se = pooled(tables)
    if len(tables) < expected or se is None:
        return "incomplete"
    behind = any("behind" in (t["ll_verdict"], t["rmse_verdict"]) for t in tables)
    return "worth a cost-fitted default" if mean > Z * se and not behind else "no"


TABLE_COLUMNS = (
    *numpyro_seeds.DIFFERENCE_COLUMNS,
    ("seconds_default", "median s default", ".1f"),
    ("seconds_candidate", "median s warmup-1000", ".1f"),
    ("max_seconds_candidate", "max s warmup-1000", ".1f"),
    ("time_ratio", "median time ratio", ".2f"),
)
SEED_COLUMNS = (
    *numpyro_seeds.seed_columns(("other", "default"), ("base", CANDIDATE)),
    ("seconds_other", "s default", ".1f"),
    ("seconds_base", f"s {CANDIDATE}", ".1f"),
)


def markdown(data: dict[str, Any]) -> str:
    seeds, tables = summarise(data["records"])
    mean, se = pooled(tables)
    pooled_text = f"{mean:+.4f} (SE {se:.4f})" if se is not None else "needs two seeds per table"
    intro = (
        "Generated by `benchmarks/warmup_seeds.py` from `warmup_seeds.json`; do not edit. The script's docstring "
        "has the protocol and the rule, fixed before the runs; no battery test row is read. Differences: "
        "`warmup-1000` (the default with 1,000 warm-up iterations) minus the default (LL: mean per-row log "
        "predictive density, nats; RMSE: target units); their SE over the seeds. Seconds: each fit in a fresh "
        "process, compilation included, the pair of a seed run one after the other (loads in the JSON)."
    )
    summary = [f"Pooled LL difference over {len(tables)} tables: {pooled_text}. Decision: **{decide(tables)}**."]
    title = "A longer warm-up for the default, over several training sets"
    columns = (TABLE_COLUMNS, SEED_COLUMNS)
    return numpyro_seeds.seed_page(title, intro, data, tables, seeds, columns, "warmup_seeds.py", summary)


def main(argv: list[str] | None = None) -> int:
    return numpyro_seeds.seeds_cli(argv, __doc__.split("\n")[0], TABLES, METHODS, OUT, SCRIPT, markdown, SEEDS, TIMEOUT)


if __name__ == "__main__":
    raise SystemExit(main())
