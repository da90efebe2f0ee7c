"""The default fit over several training sets per battery table: its coverage (issue 29, goal (b)) and, on
energy, its LL against the previous default (goal (c)).

The battery (``defaults.py --phase test``) scores each table's default fit once: one training set, one set of
test rows. A coverage measured that way mixes the method's calibration with two draws' luck, the test rows'
(the page's ``scatter``) and the training set's, which the page cannot count: ``recalibration_seeds.md``
measured a standard deviation of 0.03 to 0.09 of the 68 % coverage between training sets of the small tables.
Here the library's default (``sigmabnn.api.fit(path, "y")``, no options, as ``defaults.py`` runs it: its split,
noise choice and recalibration included) is fitted on several training sets of every battery table and scored
on fresh rows, so a table's coverage is an average over training sets, the calibration of the method a user gets.

- Rows: ``recalibration_seeds.rows_of`` (a synthetic table: a fresh training set of the table's size and 5,000
  fresh scoring rows per seed; a real table, the built-in cross sections included: a random 80 / 20 split of its
  training rows). No battery test row is read.
- ``sigmabnn``: the default, on every table; ``previous-default``: the default before issue 29 (NUTS at depth
  10, ``defaults.previous_default``), on energy only, the table whose test-phase LL it beat (``defaults.md``
  goal (c): -0.127 against 0.205, while on the validation rows the default was ahead, ``defaults_lbfgs.md``).
  It takes 10 to 20 minutes a fit there, so it is run on energy alone.
- Each cell runs in a fresh process (``defaults.run_subprocess``), as in the battery.

Rules, fixed before the runs. Coverage: per table, the mean over seeds of the 68 % and the 95 % coverage of
the scoring rows and its standard error (the seeds' standard deviation / sqrt(seeds)). A table is *within 3
points* when both means lie within 0.03 of nominal; a level outside is *beyond noise* when its distance from
nominal exceeds 0.03 by more than 2 standard errors, else *not resolved*. Pooled: the mean over tables of each
level's mean coverage. LL against the previous default: per seed, the mean per-row LL difference (default minus
previous, nats, original units) on the same scoring rows; per table, their mean and standard error, and the
verdict of ``numpyro_seeds.verdict`` (behind / ahead: beyond 2 standard errors).

Added after the run, from records already made: the default's fits beside NumPyro's of ``numpyro_seeds.py`` on
the same rows (goal (d) over training sets), with that script's rule; no new fit, and no choice reads it.

Added on 2026-12-07, before any of its cells ran: energy's 68 % coverage was *not resolved* over seeds 0 to 4
(0.726, SE 0.013), so the default alone was fitted on ten more of energy's training sets (``--tables energy
--seeds 5,6,7,8,9,10,11,12,13,14 --default-only``); the verdict is the rule's over all fifteen. The previous
default's cells stay those of seeds 0 to 4 (goal (c) pairs seeds).

Added on 2026-12-07, after the default changed (its ChEES warm-up starts the first slow window after 25
iterations instead of Stan's 75: ``initial-buffer-25`` of ``candidate_seeds.md``): ``--refit-stale`` fits the
default again on the cells recorded before the change (their settings hold no initial buffer: Stan's 75, the
only value then) and replaces their records; the rules are unchanged. A table's ``initial buffer`` column says
which default its cells measured, and the coverage sentence names the tables not yet refitted. The previous
default's cells and NumPyro's (``numpyro_seeds.py``) are not refitted: they do not depend on the default. The
replaced records are kept (the JSON's ``replaced``), and the page compares the refit with them on the same rows
by the rule above for the previous default (per table, the mean per-seed LL and RMSE differences and their
verdicts; pooled, the mean of the tables' LL differences and its SE ``sqrt(sum SE^2) / tables``, beyond 2 SE to
count): a second measurement of the change, on the whole battery, after ``candidate_seeds.md``'s six tables.
The records the first refits (2026-12-07) replaced were restored into ``replaced`` from this file as committed
at 7d51711, the last commit before them (``--replaced-from`` that file: :func:`restore_replaced`).

Run: ``python benchmarks/default_seeds.py`` (resumable: a recorded cell is not rerun; the default's cells first,
seed by seed over every table, about 9 minutes a seed on 2 cores, then the previous default's);
``--tables``, ``--seeds`` select a part; ``--table-only`` rewrites the Markdown from the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import defaults  # noqa: E402
import numpyro_seeds  # noqa: E402
from _results import RESULTS_DIR, markdown_table, write  # noqa: E402

SCRIPT = Path(__file__).resolve()
OUT = RESULTS_DIR / "default_seeds.json"
TABLES = defaults.BATTERY
SEEDS = (0, 1, 2, 3, 4)
DEFAULT, PREVIOUS = "sigmabnn", "previous-default"
#: The tables the previous default runs on (its fits take 10 to 20 minutes on energy).
PREVIOUS_TABLES = ("energy",)
#: Wall-time cap of one cell (s): the previous default took 1033 s on energy in the battery, under load.
TIMEOUT = 2400.0
LEVELS = (0.68, 0.95)
#: ``numpyro_seeds.py``'s results: NumPyro's fits on the same rows (``recalibration_seeds.rows_of``, seeds 0-4).
NUMPYRO_FILE = RESULTS_DIR / "numpyro_seeds.json"
NUMPYRO_INTRO = (
    "The default's fits above beside NumPyro's BNN fitted on the same training sets and scored on the same rows by "
    "`numpyro_seeds.py` (its records in `numpyro_seeds.json`; its tables are those on which NumPyro finishes in "
    "time). The comparison and its rule are `numpyro_seeds.py`'s; it was added after this page's run, from records "
    "both scripts had already made, and no choice reads it."
)
#: The replaced records' sampler on the page (:func:`markdown`).
REPLACED = "replaced"
REFIT_INTRO = (
    "The default's cells fitted again with the current default (`--refit-stale`) beside the records they replaced "
    "(the default before the change: Stan's initial buffer of 75), the same training sets and scoring rows; the "
    "differences are refit minus replaced. Fitted on different days: the seconds do not compare."
)
#: Coverage tolerance of goal (b) (fraction).
TOLERANCE = 0.03
#: The initial buffer of a default cell recorded before the fit's settings held one (Stan's, the only value then).
STAN_INITIAL_BUFFER = 75


def initial_buffer(rec: dict[str, Any]) -> int:
    """The warm-up's initial buffer of the default fit ``rec`` measured (module docstring)."""
    return int((rec.get("settings") or {}).get("initial_buffer", STAN_INITIAL_BUFFER))


def stale(rec: dict[str, Any]) -> bool:
    """Whether ``rec`` is a default cell fitted with another initial buffer than the library's default has now."""
    from sigmabnn.train.mcmc import CHEES_DEFAULTS

    return rec["sampler"] == DEFAULT and initial_buffer(rec) != int(CHEES_DEFAULTS["initial_buffer"])


def _key(level: float) -> str:
    """The records' key of the coverage at ``level``: ``"coverage_68"``."""
    return f"coverage_{round(100 * level)}"


def level_verdict(values: Sequence[float], nominal: float) -> dict[str, Any]:
    """Mean coverage over seeds, its standard error, and the verdict of the module docstring's rule."""
    mean, se, _ = numpyro_seeds.verdict(values, higher_is_better=True)  # the mean and its standard error
    excess = abs(mean - nominal) - TOLERANCE
    if excess <= 1e-12:  # exactly 3 points (up to rounding of the fractions) is within
        verdict = "within"
    elif se is None:
        verdict = "one seed"
    else:
        verdict = "beyond noise" if excess > numpyro_seeds.Z * se else "not resolved"
    return {"mean": mean, "se": se, "verdict": verdict}


def default_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The default's scored records, in the battery's table order, then by seed."""
    ok = [r for r in records if r["sampler"] == DEFAULT and defaults._ok(r) and r["table"] in TABLES]
    return sorted(ok, key=lambda r: (TABLES.index(r["table"]), r["seed"]))


def coverage_rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per table, the default's mean coverage at each level over its scored seeds and the verdicts."""
    rows = []
    scored = default_records(records)
    for table in TABLES:
        recs = [r for r in scored if r["table"] == table]
        if not recs:
            continue
        row: dict[str, Any] = {"table": table, "seeds": len(recs), "n_score": recs[0]["n_score"]}
        for level in LEVELS:
            key = _key(level)
            v = level_verdict([r[key] for r in recs], level)
            row |= {key: v["mean"], f"{key}_se": v["se"], f"{key}_verdict": v["verdict"]}
        row["within"] = all(row[_key(lv) + "_verdict"] == "within" for lv in LEVELS)
        row["initial_buffer"] = ", ".join(str(b) for b in sorted({initial_buffer(r) for r in recs}))
        row["stale"] = any(stale(r) for r in recs)
        row["ll"] = float(np.mean([r["test_ll"] for r in recs]))
        row["seconds"] = float(np.median([r["seconds"] for r in recs]))
        rows.append(row)
    return rows


COVERAGE_COLUMNS = (
    ("table", "table", ""),
    ("seeds", "seeds", ""),
    ("n_score", "scoring rows", ""),
    ("coverage_68", "cov 68 (mean)", ".3f"),
    ("coverage_68_se", "its SE", ".3f"),
    ("coverage_68_verdict", "68 %", ""),
    ("coverage_95", "cov 95 (mean)", ".3f"),
    ("coverage_95_se", "its SE", ".3f"),
    ("coverage_95_verdict", "95 %", ""),
    ("within", "both within 3 points", ""),
    ("initial_buffer", "initial buffer", ""),
    ("ll", "LL (mean)", ".3f"),
    ("seconds", "median s", ".1f"),
)
SEED_COLUMNS = (
    ("table", "table", ""),
    ("seed", "seed", ""),
    ("n_train", "training rows", ""),
    ("n_score", "scoring rows", ""),
    ("rmse", "RMSE", ".4g"),
    ("test_ll", "LL", ".3f"),
    ("coverage_68", "cov 68", ".3f"),
    ("coverage_95", "cov 95", ".3f"),
    ("noise", "noise model", ""),
    ("seconds", "s", ".1f"),
)


def coverage_summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The count of tables within 3 points, the levels outside (beyond noise or not resolved), the pooled
    coverage and the fewest seeds of a table: the JSON's ``summary``, which ``defaults.py`` quotes."""
    if not rows:
        return None

    def outside(verdict: str) -> list[str]:
        return [f"{r['table']} ({lv:.0%})" for r in rows for lv in LEVELS if r[_key(lv) + "_verdict"] == verdict]

    return {
        "tables": len(rows),
        "within": sum(r["within"] for r in rows),
        "beyond_noise": outside("beyond noise"),
        "not_resolved": outside("not resolved"),
        "pooled": {_key(lv): float(np.mean([r[_key(lv)] for r in rows])) for lv in LEVELS},
        "min_seeds": min(r["seeds"] for r in rows),
        "stale": [r["table"] for r in rows if r["stale"]],
    }


def summary_text(summary: dict[str, Any]) -> str:
    """One sentence of :func:`coverage_summary` (this page's opening line; ``defaults.md`` quotes it)."""
    p = summary["pooled"]
    return (
        f"both levels within 3 points on {summary['within']} of {summary['tables']} tables (at least "
        f"{summary['min_seeds']} training sets each); pooled over tables, mean 68 % coverage {p['coverage_68']:.3f} "
        f"and 95 % coverage {p['coverage_95']:.3f}; outside 3 points by more than 2 SE: "
        f"{', '.join(summary['beyond_noise']) or 'none'}; outside but within 2 SE of it: "
        f"{', '.join(summary['not_resolved']) or 'none'}"
        + (
            f"; measured (in part) before the default's current initial buffer: {', '.join(summary['stale'])}"
            if summary.get("stale")
            else ""
        )
    )


def comparisons(
    records: Sequence[dict[str, Any]], other: str, label: str, tables: Sequence[str]
) -> list[tuple[str, list[dict[str, Any]]]]:
    """The default against ``other`` (a sampler of ``records``, called ``label``) over training sets, per table of
    ``tables`` with paired seeds: one sentence (``numpyro_seeds.table_differences``: the mean differences, their SE
    and verdicts, and whether the default is at least as accurate) and the per-seed rows."""
    recs = {numpyro_seeds.cell_key(r): r for r in records}
    out = []
    for table in tables:
        rows = numpyro_seeds.seed_differences(recs, table, DEFAULT, other)
        if not rows:
            continue
        row = numpyro_seeds.table_differences(table, rows)
        se = "-" if row["ll_se"] is None else f"{row['ll_se']:.4f}"
        text = (
            f"{table}, the default against {label} over {row['seeds']} training sets: LL difference "
            f"{row['ll_difference']:+.4f} (SE {se}): {row['ll_verdict']}; RMSE difference "
            f"{row['rmse_difference']:+.4g}: {row['rmse_verdict']}"
        )
        if row["at_least_as_accurate"] is not None:
            text += f"; at least as accurate: {'yes' if row['at_least_as_accurate'] else 'no'}"
        out.append((text, rows))
    return out


def comparison_section(found: Sequence[tuple[str, list[dict[str, Any]]]], label: str, goal: str) -> list[str]:
    """The page's section of :func:`comparisons` against ``label`` (``goal``: the issue's goal it measures)."""
    columns = numpyro_seeds.seed_columns(("base", "default"), ("other", label))
    return [line for text, rows in found for line in (f"**{text}** ({goal}).", "", markdown_table(rows, columns), "")]


def restore_replaced(data: dict[str, Any], earlier: dict[str, Any]) -> int:
    """Add to ``data["replaced"]`` the default's scored records of ``earlier`` (an earlier state of this file) that
    a refit has replaced: a cell whose record in ``data`` has another initial buffer. Returns how many were added
    (a record already kept is not added again)."""
    now = {numpyro_seeds.cell_key(r): r for r in data["records"]}
    kept = {numpyro_seeds.cell_key(r) for r in data.get("replaced", [])}
    found = []
    for r in default_records(earlier["records"]):
        key = numpyro_seeds.cell_key(r)
        if key in now and key not in kept and initial_buffer(now[key]) != initial_buffer(r):
            found.append(r)
    data.setdefault("replaced", []).extend(found)
    return len(found)


def refit_summary(found: Sequence[tuple[str, list[dict[str, Any]]]]) -> dict[str, Any] | None:
    """The refit against the records it replaced, pooled over tables (module docstring): the mean of the tables'
    mean LL differences, its SE and verdict, and the tables ahead and behind in LL."""
    rows = [numpyro_seeds.table_differences(seeds[0]["table"], seeds) for _, seeds in found]
    rows = [r for r in rows if r["ll_se"] is not None]
    if not rows:
        return None
    mean, se = numpyro_seeds.pooled(rows)
    verdict = numpyro_seeds.judge(mean, se)
    ahead = [r["table"] for r in rows if r["ll_verdict"] == "ahead"]
    behind = [r["table"] for r in rows if r["ll_verdict"] == "behind"]
    text = (
        f"LL difference {mean:+.4f} (SE {se:.4f}): {verdict}; ahead in LL on {', '.join(ahead) or 'none'}; "
        f"behind on {', '.join(behind) or 'none'}"
    )
    return {"tables": len(rows), "ll_difference": mean, "ll_se": se, "verdict": verdict, "text": text}


def numpyro_records(path: Path = NUMPYRO_FILE) -> list[dict[str, Any]]:
    """NumPyro's records of ``numpyro_seeds.py`` (the same rows per table and seed as here), if its file exists."""
    if not path.exists():
        return []
    return [r for r in json.loads(path.read_text(encoding="utf-8"))["records"] if r["sampler"] == defaults.NUMPYRO]


def markdown(data: dict[str, Any], numpyro_path: Path | None = None) -> str:
    """The Markdown page of ``data``; sets ``data["summary"]`` (:func:`coverage_summary` and its ``text``),
    ``data["previous"]`` and ``data["numpyro"]`` (the sentences of :func:`comparisons`) for the JSON written
    beside it. ``numpyro_path``: NumPyro's records (``None``: :data:`NUMPYRO_FILE`)."""
    records = data["records"]
    rows = coverage_rows(records)
    summary = coverage_summary(rows)
    data["summary"] = summary and summary | {"text": summary_text(summary)}
    seeds = [r | {"noise": defaults.noise_model_text(r)} for r in default_records(records)]
    intro = (
        "Generated by `benchmarks/default_seeds.py` from `default_seeds.json`; do not edit. The script's docstring "
        "has the protocol and the rules, fixed before the runs; no battery test row is read. Coverage: fraction of "
        "the scoring rows inside the central 68 % / 95 % predictive interval of the library's default fit; per "
        "table its mean over the training sets and the standard error of that mean."
    )
    page = numpyro_seeds.seed_page(
        "The default over several training sets per table",
        intro,
        data,
        rows,
        seeds,
        (COVERAGE_COLUMNS, SEED_COLUMNS),
        SCRIPT.name,
        [f"**Coverage over training sets (goal (b))**: {data['summary']['text']}."] if rows else [],
    )
    previous = comparisons(records, PREVIOUS, "the previous default", PREVIOUS_TABLES)
    replaced = [r | {"sampler": REPLACED} for r in data.get("replaced", [])]
    refits = comparisons([*records, *replaced], REPLACED, "the records it replaced", TABLES)
    data["refit"] = refit_summary(refits)
    numpyro_recs = numpyro_records(NUMPYRO_FILE if numpyro_path is None else numpyro_path)
    numpyro = comparisons([*records, *numpyro_recs], defaults.NUMPYRO, "NumPyro", TABLES)
    data["previous"], data["numpyro"] = [t for t, _ in previous], [t for t, _ in numpyro]
    if previous:
        page += "\n## The previous default\n\n" + "\n".join(comparison_section(previous, "previous", "goal (c)"))
    if refits:
        page += "\n## The refit against the records it replaced\n\n" + REFIT_INTRO + "\n\n"
        if data["refit"]:
            page += f"**Pooled over {data['refit']['tables']} tables**: {data['refit']['text']}.\n\n"
        page += "\n".join(comparison_section(refits, "replaced", "the initial buffer's change"))
    if numpyro:
        page += "\n## NumPyro\n\n" + NUMPYRO_INTRO + "\n\n"
        page += "\n".join(comparison_section(numpyro, "NumPyro", "goal (d)"))
    return page


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    ap.add_argument("--timeout", type=float, default=TIMEOUT)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--default-only", action="store_true", help="fit the default only, not the previous default")
    ap.add_argument("--refit-stale", action="store_true", help="fit the default again where its cell is stale")
    ap.add_argument("--replaced-from", type=Path, help="keep the records a refit replaced, from an earlier JSON")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.cell:
        print("\n" + json.dumps(numpyro_seeds.run_cell(json.loads(args.cell)), default=defaults._jsonable), flush=True)
        return 0
    data = defaults.load_results(args.out)
    if args.replaced_from:
        if not args.replaced_from.is_file():
            raise SystemExit(f"--replaced-from: no such file: {args.replaced_from}")
        added = restore_replaced(data, defaults.load_results(args.replaced_from))
        print(f"kept {added} replaced record(s) from {args.replaced_from}")
    if args.table_only or args.replaced_from:
        write(args.out, data, markdown(data))
        return 0
    chosen = defaults.parse_names(args.tables, TABLES, TABLES, "table")
    seeds = [int(s) for s in args.seeds.split(",")]
    redo = stale if args.refit_stale else None
    numpyro_seeds.run_seed_cells(
        args.out, data, chosen, seeds, (DEFAULT,), args.timeout, SCRIPT, markdown, argv, redo=redo
    )
    previous = [] if args.default_only else [t for t in chosen if t in PREVIOUS_TABLES]
    if previous:
        numpyro_seeds.run_seed_cells(
            args.out, data, previous, seeds, (PREVIOUS,), args.timeout, SCRIPT, markdown, argv, new_run=False
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
