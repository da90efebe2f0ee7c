"""The noise choice's margin, measured over several training sets per table instead of one.

``likelihood="auto"`` (fit's default for an MCMC regression) fits the MAP starts of the Gaussian and of
the heteroscedastic Student-t noise model and keeps the heteroscedastic one only when its starts' mean
validation log density beats the Gaussian's by more than a margin of paired standard errors
(``sigmabnn.fitting.noise_choice``; today 1.0, ``sigmabnn.fitting.spec.AUTO_NOISE_MARGIN``). On the
defaults battery's validation rows the choice was confirmed by the sampled posteriors on 8 of 10 tables
and wrong on smooth6d-300 (at 1.44 SE) and bostonHousing (at 2.27 SE) (``defaults_lbfgs.md``): one
training set each, too few to set a margin by. Here each table is fitted on several training sets, each
twice from the same MAP starts:

- ``always-gaussian``: the library's default with ``noise_margin=1e6`` (the Gaussian is kept);
- ``always-hetero``: the same with ``noise_margin=-1e6`` (the heteroscedastic model is kept);

both with ``noise_choice_by="starts"`` (one model sampled, the library's default).

Both run the same choice (same key, same MAP fits), so both record the same gain and paired SE of the
choice (``noise_choice.gain``, ``gain_se``; their ratio ``z``), and each is exactly the default's fit
for the margins that pick its model. So for any margin ``M`` the default's fit of a cell is known
without running it: the heteroscedastic fit when ``z > M``, else the Gaussian.

Rows: those of ``recalibration_seeds.rows_of`` (synthetic tables: a fresh training set and 5,000 fresh
scoring rows per seed; real tables: a random 80 / 20 split of the training rows; no battery test row is
read). Each cell runs in a fresh process (``defaults.run_subprocess``). Tables: those of the battery on
which the choice is made (at least 20 validation rows) and whose fits take about a minute or less;
kin8nm on three seeds (its z was 1.94 on the validation rows, within the margins compared); the larger
tables (power-plant, ewino-chi1chi1, the 10,000- and 20,000-row Friedman tables) had z of 4.6, 17.1,
-3.4 and -7.1 there, outside every margin compared, and are not run.

Rule, fixed before the runs. The margins compared: :data:`MARGINS`. Per cell and margin, the LL is the
mean per-row log predictive density of the scoring rows (nats, original units) of the fit that margin
picks. Per table, the mean over seeds of the LL difference from the current margin (1.0) and its standard
error; pooled, the mean of the tables' means and ``sqrt(sum SE^2) / tables``. The margin with the largest
pooled mean (a tie within 0.001 nats to the one nearer 1.0) replaces 1.0 only when it is ahead on the
pooled LL by more than 2 SE and behind on no table (``numpyro_seeds.verdict``: a mean difference below
-2 SE); otherwise 1.0 stays. Coverage (mean ``|coverage - nominal|`` over the 68 % and 95 % intervals)
and RMSE are printed beside it and decide nothing.

A second question, added after the first cells ran and before any cell's validation LL of its sampled fits was
recorded or seen: would sampling both noise models and keeping the one whose sampled predictive scores better on
fit's own validation rows (``val_ll`` of the records: raw, before recalibration) choose better than any margin on
the MAP starts? That rule (``sampled-val``) doubles the sampling time, so it is judged by the same rule against the
margin chosen above, and printed beside the margins; the cells run before ``val_ll`` was recorded are rerun.

Outcome of the run of 2026-12-06 (``results/noise_margin_seeds.md``, 43 cells on 9 tables): the margin 1.0 has
the largest pooled LL of the margins and stays (``AUTO_NOISE_MARGIN``); ``sampled-val`` passes its rule against it,
by a hair (the page gives the numbers). It is built (``noise_choice_by="sampled"``, ``sigmabnn.fitting.
sampled_choice``; a checkpointed run keeps the first model's finished fit in its checkpoint so that a resumed run
still compares the two) but is not the default: its time failed the issue's goals (``defaults_sampled.md``,
``defaults_speed_sampled.md``; ``sigmabnn.fitting.spec.AUTO_NOISE_CHOICE_BY``).

Run: ``python benchmarks/noise_margin_seeds.py`` (resumable; 20 to 90 s per cell on 2 cores);
``--tables``, ``--seeds`` select a part; ``--table-only`` rewrites the Markdown from the JSON.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import defaults  # noqa: E402
import numpyro_seeds  # noqa: E402
from _results import RESULTS_DIR, markdown_table, run_lines  # noqa: E402

SCRIPT = Path(__file__).resolve()
OUT = RESULTS_DIR / "noise_margin_seeds.json"
TABLES = (
    "smooth6d-300", "steep6d-300", "hetero2d-1000", "friedman10d-2000", "student10d-2000", "bostonHousing", "energy",
    "wine-quality-red", "kin8nm",
)  # fmt: skip
SEEDS = (0, 1, 2, 3, 4)
GAUSSIAN, HETERO = "always-gaussian", "always-hetero"
#: A margin no gain reaches in either direction: the choice is fixed, its MAP fits and record unchanged.
FORCED = 1e6
ENTRIES = {
    GAUSSIAN: {"noise_margin": FORCED, "noise_choice_by": "starts"},
    HETERO: {"noise_margin": -FORCED, "noise_choice_by": "starts"},
}
defaults.ENTRIES.update(ENTRIES)
#: The margins compared (paired standard errors); ``math.inf``: the Gaussian always.
MARGINS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, math.inf)
CURRENT = 1.0
SAMPLED = "sampled-val"
TIE = 0.001
Z = numpyro_seeds.Z
TIMEOUT = 900.0
LEVELS = (68, 95)


def cells(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (table, seed) with both fits scored: the choice's ``z`` and each model's scores."""
    recs = {numpyro_seeds.cell_key(r): r for r in records if defaults._ok(r)}
    out = []
    for table, seed in sorted({(k[0], k[1]) for k in recs}, key=lambda k: (TABLES.index(k[0]), k[1])):
        g, h = recs.get((table, seed, GAUSSIAN)), recs.get((table, seed, HETERO))
        if g is None or h is None:
            continue
        choice = h.get("noise_choice") or {}
        if choice.get("gain") is None:
            continue  # no choice made (too few validation rows): the margin does not matter
        diff = defaults.paired_ll_difference(h, g)
        out.append({
            "table": table, "seed": seed, "n_val": h.get("n_val"), "gain": choice["gain"], "gain_se": choice["gain_se"],
            "z": choice["gain"] / choice["gain_se"], "zc": _calibrated_z(choice),
            "same_choice": (g.get("noise_choice") or {}).get("gain") == choice["gain"],
            "ll_gaussian": g["test_ll"], "ll_hetero": h["test_ll"], "ll_difference": h["test_ll"] - g["test_ll"],
            "ll_difference_se": diff[1] if diff else None, "rmse_gaussian": g["rmse"], "rmse_hetero": h["rmse"],
            **{f"cov{lv}_{name}": r.get(f"coverage_{lv}") for lv in LEVELS
               for name, r in (("gaussian", g), ("hetero", h))},
            "val_ll_gaussian": g.get("val_ll"), "val_ll_hetero": h.get("val_ll"),
            "seconds_gaussian": g.get("seconds"), "seconds_hetero": h.get("seconds"),
        })  # fmt: skip
    return out


def _calibrated_z(choice: dict[str, Any]) -> float | None:
    """The gain over its SE with each model's noise scale calibrated on the validation rows (recorded since
    2026-12-07; ``noise_calibration_seeds.py``), else ``None``."""
    gain, se = choice.get("calibrated_gain"), choice.get("calibrated_se")
    return None if gain is None or not se else gain / se


def picked(cell: dict[str, Any], margin: float) -> str:
    """The model a margin picks for a cell: ``"hetero"`` when its ``z`` exceeds the margin."""
    return "hetero" if cell["z"] > margin else "gaussian"


def picked_sampled(cell: dict[str, Any]) -> str:
    """The model ``sampled-val`` picks: the one whose sampled fit scores better on fit's validation rows."""
    return "hetero" if cell["val_ll_hetero"] > cell["val_ll_gaussian"] else "gaussian"


def miscalibration(cell: dict[str, Any], model: str) -> float:
    """Mean ``|coverage - nominal|`` over the 68 % and 95 % intervals of one of a cell's fits."""
    return float(np.mean([abs(cell[f"cov{lv}_{model}"] - lv / 100) for lv in LEVELS]))


Picker = Callable[[dict[str, Any]], str]


def rule_rows(
    cell_rows: Sequence[dict[str, Any]], name: str, value: float, pick: Picker, base: Picker
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(summary, per table)`` of the rule ``pick`` against the rule ``base``: LL differences, verdicts, coverage."""
    tables = [t for t in TABLES if any(c["table"] == t for c in cell_rows)]
    means, ses, behind, per_table = [], [], [], []
    for table in tables:
        mine = [c for c in cell_rows if c["table"] == table]
        mean, se, verdict = numpyro_seeds.verdict([c[f"ll_{pick(c)}"] - c[f"ll_{base(c)}"] for c in mine], True)
        means.append(mean)
        ses.append(se or 0.0)
        behind += [table] if verdict == "behind" else []
        per_table.append({
            "margin": name, "table": table, "seeds": len(mine), "hetero_picked": sum(pick(c) == "hetero" for c in mine),
            "ll_difference": mean, "ll_se": se, "ll_verdict": verdict,
        })  # fmt: skip
    picks = [(c, pick(c)) for c in cell_rows]
    summary = {
        "margin": name, "value": value, "tables": len(tables), "pooled_ll_difference": float(np.mean(means)),
        "pooled_se": math.sqrt(sum(s * s for s in ses)) / len(ses), "behind_on": ", ".join(behind) or "none",
        "hetero_picked": f"{sum(p == 'hetero' for _, p in picks)}/{len(picks)}",
        "mean_ll": float(np.mean([c[f"ll_{p}"] for c, p in picks])),
        "miscalibration": float(np.mean([miscalibration(c, p) for c, p in picks])),
        "oracle_agreement": float(np.mean([(p == "hetero") == (c["ll_difference"] > 0) for c, p in picks])),
    }  # fmt: skip
    return summary, per_table


def margin_rows(cell_rows: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(per margin, per table and margin)``: each margin against the current one (:func:`rule_rows`)."""
    per_margin, per_table = [], []
    for margin in MARGINS:
        pick = functools.partial(picked, margin=margin)
        summary, tables = rule_rows(
            cell_rows, margin_text(margin), margin, pick, functools.partial(picked, margin=CURRENT)
        )
        per_margin.append(summary)
        per_table += tables
    return per_margin, per_table


def sampled_rows(cell_rows: Sequence[dict[str, Any]], margin: float) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``sampled-val`` against the chosen ``margin`` (:func:`rule_rows`); every cell needs its ``val_ll``."""
    return rule_rows(cell_rows, SAMPLED, math.nan, picked_sampled, functools.partial(picked, margin=margin))


def margin_text(margin: float) -> str:
    return "Gaussian always" if math.isinf(margin) else f"{margin:g}"


def decide(per_margin: Sequence[dict[str, Any]], expected_tables: int) -> tuple[float, str]:
    """The module docstring's rule: ``(margin, reason)``."""
    if not per_margin or per_margin[0]["tables"] < expected_tables:
        return CURRENT, "incomplete: not every table has both fits on at least two seeds"
    top = max(r["pooled_ll_difference"] for r in per_margin)
    near = [r for r in per_margin if r["pooled_ll_difference"] >= top - TIE]
    best = min(near, key=lambda r: abs(r["value"] - CURRENT))
    if best["value"] == CURRENT:
        return CURRENT, f"the current margin {CURRENT:g} has the largest pooled LL (within {TIE:g} nats): kept"
    ahead = best["pooled_ll_difference"] > Z * best["pooled_se"]
    if ahead and best["behind_on"] == "none":
        return best["value"], f"margin {best['margin']} is ahead by more than {Z:g} SE and behind on no table: adopted"
    why = "not ahead by more than 2 SE" if not ahead else f"behind on {best['behind_on']}"
    return CURRENT, f"the best margin, {best['margin']}, is {why}: {CURRENT:g} kept"


def rule_passed(summary: dict[str, Any] | None, expected_tables: int) -> tuple[bool | None, str]:
    """Whether a rule's :func:`rule_rows` summary passes against its base: ahead on the pooled LL by more than
    :data:`Z` SE and behind on no table. ``(None, "")`` when not every table is in it; else ``(passed, why not)``."""
    if summary is None or summary["tables"] < expected_tables:
        return None, ""
    ahead = summary["pooled_ll_difference"] > Z * summary["pooled_se"]
    if ahead and summary["behind_on"] == "none":
        return True, ""
    return False, "not ahead by more than 2 SE" if not ahead else f"behind on {summary['behind_on']}"


def decide_sampled(summary: dict[str, Any] | None, margin: float, expected_tables: int) -> str:
    """The module docstring's rule for ``sampled-val`` against the chosen ``margin``, in words."""
    passed, why = rule_passed(summary, expected_tables)
    if passed is None:
        return "incomplete: not every cell has its sampled fits' validation LL"
    if passed:
        return f"ahead of margin {margin_text(margin)} by more than {Z:g} SE and behind on no table: worth its time"
    return f"{why} against margin {margin_text(margin)}: not worth sampling both"


MARGIN_COLUMNS = (
    ("margin", "margin (SE)", ""),
    ("hetero_picked", "cells picking hetero", ""),
    ("mean_ll", "mean LL over cells", ".4f"),
    ("pooled_ll_difference", "pooled LL difference from 1.0", "+.4f"),
    ("pooled_se", "its SE", ".4f"),
    ("behind_on", "behind on", ""),
    ("miscalibration", "mean abs(cov - nominal)", ".4f"),
    ("oracle_agreement", "picks the better sampled model", ".2f"),
)
TABLE_COLUMNS = (
    ("margin", "margin (SE)", ""),
    ("table", "table", ""),
    ("seeds", "seeds", ""),
    ("hetero_picked", "seeds picking hetero", ""),
    ("ll_difference", "LL difference from 1.0", "+.4f"),
    ("ll_se", "its SE", ".4f"),
    ("ll_verdict", "LL", ""),
)
CELL_COLUMNS = (
    ("table", "table", ""),
    ("seed", "seed", ""),
    ("n_val", "val rows", ""),
    ("gain", "choice gain", "+.4f"),
    ("gain_se", "its SE", ".4f"),
    ("z", "z", "+.2f"),
    ("ll_gaussian", "LL Gaussian", ".4f"),
    ("ll_hetero", "LL hetero", ".4f"),
    ("ll_difference", "hetero - Gaussian", "+.4f"),
    ("ll_difference_se", "paired SE (rows)", ".4f"),
    ("rmse_gaussian", "RMSE Gaussian", ".4g"),
    ("rmse_hetero", "RMSE hetero", ".4g"),
    ("cov68_gaussian", "cov 68 G", ".3f"),
    ("cov95_gaussian", "cov 95 G", ".3f"),
    ("cov68_hetero", "cov 68 H", ".3f"),
    ("cov95_hetero", "cov 95 H", ".3f"),
    ("val_ll_gaussian", "val LL G", ".4f"),
    ("val_ll_hetero", "val LL H", ".4f"),
    ("seconds_hetero", "s hetero", ".1f"),
)


def markdown(data: dict[str, Any]) -> str:
    cell_rows = cells(data["records"])
    per_margin, per_table = margin_rows(cell_rows) if cell_rows else ([], [])
    margin, reason = decide(per_margin, len(TABLES))
    intro = (
        "Generated by `benchmarks/noise_margin_seeds.py` from `noise_margin_seeds.json`; do not edit. The script's "
        "docstring has the protocol and the rule, fixed before the runs; no battery test row is read. Per cell (a "
        "table and a training set), the default's fit with the Gaussian kept and with the heteroscedastic model kept, "
        "from the same MAP starts; z: the choice's gain over its paired SE on fit's validation rows. LL: mean per-row "
        "log predictive density of the scoring rows (nats, original units)."
    )
    runs = run_lines(data.get("runs", []), SCRIPT.name).rstrip("\n")
    lines = ["# The noise choice's margin over several training sets", "", intro, "", "Invocations:", runs, ""]
    lines += [f"Decision: **{margin_text(margin)}** ({reason}).", "", "## Per margin", ""]
    lines += [
        markdown_table(per_margin, MARGIN_COLUMNS),
        "",
        "## Per cell",
        "",
        markdown_table(cell_rows, CELL_COLUMNS),
    ]
    lines += ["", "## Per table and margin", "", markdown_table(per_table, TABLE_COLUMNS)]
    lines += _sampled_section(cell_rows, margin)
    failed = [r for r in data["records"] if r.get("status") != "ok"]
    if failed:
        lines += ["", "Cells not scored: " + "; ".join(f"{'/'.join(map(str, numpyro_seeds.cell_key(r)))}: "
                                                      f"{r.get('error')}" for r in failed)]  # fmt: skip
    return "\n".join(lines) + "\n"


def _sampled_section(cell_rows: Sequence[dict[str, Any]], margin: float) -> list[str]:
    """The ``sampled-val`` rule against the chosen margin (module docstring), on the cells with their val LL."""
    ready = [c for c in cell_rows if c["val_ll_gaussian"] is not None and c["val_ll_hetero"] is not None]
    summary, per_table = sampled_rows(ready, margin) if ready else (None, [])
    tables = len({c["table"] for c in cell_rows})
    verdict = decide_sampled(summary if len(ready) == len(cell_rows) else None, margin, max(tables, len(TABLES)))
    columns = [tuple((k, label.replace("from 1.0", f"from margin {margin_text(margin)}"), f) for k, label, f in cols)
               for cols in (MARGIN_COLUMNS, TABLE_COLUMNS)]  # fmt: skip
    lines = ["", f"## Sampling both: {SAMPLED} against margin {margin_text(margin)}", ""]
    lines += [f"On {len(ready)} of {len(cell_rows)} cells (those with both fits' validation LL). Verdict: {verdict}."]
    if summary is not None:
        lines += ["", markdown_table([summary], columns[0]), "", markdown_table(per_table, columns[1])]
    return lines


def main(argv: list[str] | None = None) -> int:
    description = __doc__.split("\n")[0]
    return numpyro_seeds.seeds_cli(argv, description, TABLES, (GAUSSIAN, HETERO), OUT, SCRIPT, markdown, SEEDS, TIMEOUT)


if __name__ == "__main__":
    raise SystemExit(main())
