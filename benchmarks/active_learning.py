"""Pool-based active learning on the built-in data: acquisition criteria against random sampling.

For each process, seed and criterion, :func:`sigmabnn.workflows.active.run_loop` starts from 500
random rows of the pool (the process's ``train`` rows with a positive cross section; the same 500
for every criterion of a seed), fits, chooses a batch of 250 pool rows, labels them by looking up
their cross section (the oracle of a simulation) and refits (from the previous round's networks,
warm, or from fresh ones, cold: ``--refits``, by default the val-row pilot's choice per process and
criterion; the table below), up to ``--max-random`` labelled rows for
``random`` and ``--max-criterion`` for the criteria. After every fit the model is scored once on
the process's ``test`` rows (never used for a choice: the fit configuration was chosen on the
``val`` rows by ``active_learning_pilot.py``; the curves are the measurement).

The fit is a reduced configuration (a simulation runs hundreds of fits): a deep ensemble
(:data:`FIT`: 5 members with a variance head, the pilot's Adam steps, the recommended NLO
inputs, derived features and baseline of :func:`sigmabnn.workflows.nlo.recommended_config`). Its
validation rows (early stopping, and the intervals recalibrated on them: ``recalibrate="heldout"``)
are the loop's audit rows (:data:`AUDIT` of every batch, the first included, drawn at random:
``LoopConfig.audit_fraction``), so they are a random sample of the pool whatever the criterion
chose. ``n_train`` counts all labelled rows (audit rows included). The random baseline takes
batches of ``--random-batch`` rows (its picks do not depend on the fits; fewer fits).

Records (``runs`` in the JSON): ``process``, ``criterion`` (``random`` for the baseline),
``refits`` (``warm`` or ``cold``), ``seed``, ``n_train``, ``test_median_rel_err`` (median of
``|pred / true - 1|``, ``pred = 10**mean(log10 sigma)``, in percent), ``test_r2_log`` (R^2 of
log10 sigma), ``coverage_68`` and ``coverage_95`` (percent of test rows inside the central 68 %
and 95 % predictive intervals), ``seconds`` (the round's fit and choice of the next batch, wall
time; the test scoring excluded).

Usage: ``python benchmarks/active_learning.py [--processes ...] [--seeds 0 1 2] [--criteria ...]``;
resumable (finished runs are kept in the JSON, an interrupted run resumes from its last round in
``--workdir``); ``--smoke`` runs a minute-long miniature into a temporary directory;
``--table-only`` rewrites the Markdown and the figure from the JSON; ``--merge A.json B.json``
writes ``--out`` from result files of runs made side by side (e.g. one process per seed), with
``--workdir`` also the fits so far of loops still running or stopped (``loop_unfinished``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import RESULTS_DIR, finish_metadata, run_metadata, write, write_text_atomic  # noqa: E402

RESULTS = RESULTS_DIR / "active_learning.json"
PROCESSES = ("1000022,1000022", "1000024,-1000037", "1000022,1000024")
CRITERIA = ("random", "variance", "bald", "epig")
NUM_STEPS = 1500
FIT = {"method": "ensemble", "num_members": 5, "split": (0.9, 0.1, 0.0), "recalibrate": "heldout"}
LEVELS = (0.68, 0.95)
#: Share of every batch drawn at random and kept as the fits' validation rows (``LoopConfig.audit_fraction``).
AUDIT = 0.1


def fit_spec(process: str, seed: int, num_steps: int, hidden: tuple[int, ...]) -> Any:
    from sigmabnn.fitting.spec import build_spec
    from sigmabnn.workflows.nlo import recommended_config

    cfg = recommended_config(process, hidden=hidden)
    return build_spec(
        cfg.target, list(cfg.features), architecture=cfg.architecture, log_target=True, derive=cfg.derive,
        baseline=cfg.baseline, seed=seed, num_steps=num_steps, **FIT,
    )  # fmt: skip


def num_steps(process: str, given: int | None) -> int:
    """The fit's Adam steps: ``given``, else the pilot's choice for ``process`` (val rows,
    ``active_learning_pilot.py``), else :data:`NUM_STEPS`."""
    if given is not None:
        return given
    pilot = RESULTS_DIR / "active_learning_pilot.json"
    chosen = json.loads(pilot.read_text()).get("chosen", {}) if pilot.exists() else {}
    return int(chosen.get(process, NUM_STEPS))


def test_scores(fitted: Any, test: Any, target: str) -> dict[str, float]:
    """The record's test numbers of one fit (module docstring)."""
    from sigmabnn.predict import predict

    pred = predict(fitted, test, levels=LEVELS)
    y = test[target].to_numpy()
    mean_log = np.asarray(pred.log_space.mean).reshape(-1)
    rel = np.abs(10**mean_log / y - 1.0)
    resid = np.log10(y) - mean_log
    out = {
        "test_median_rel_err": 100 * float(np.median(rel)),
        "test_r2_log": float(1 - np.sum(resid**2) / np.sum((np.log10(y) - np.log10(y).mean()) ** 2)),
    }
    for lv in LEVELS:
        lo, hi = (np.asarray(a[lv]).reshape(-1) for a in (pred.lower, pred.upper))
        out[f"coverage_{round(100 * lv)}"] = 100 * float(np.mean((y >= lo) & (y <= hi)))
    return out


def split_rows(target: str, split: str) -> Any:
    """The built-in data's ``split`` rows with a positive cross section ``target``, reindexed."""
    from sigmabnn.datasets import load_ewino

    df = load_ewino()
    ok = df[target].notna() & (df[target] > 0)
    return df[(df["split"] == split) & ok].reset_index(drop=True)


def run_one(process: str, criterion: str, seed: int, args: argparse.Namespace, workdir: Path) -> list[dict]:
    """One loop (resumed from ``workdir`` if started); its records."""
    from sigmabnn.workflows.active import LoopConfig, run_loop

    spec = fit_spec(process, seed, num_steps(process, args.num_steps), tuple(args.hidden))
    target = spec.data.target
    pool, test = split_rows(target, "train"), split_rows(target, "test")
    if args.test_rows:
        test = test.iloc[: args.test_rows]
    truth = pool.drop(columns=[target])

    def oracle(rows):
        return rows.merge(pool[["point_id", target]], on="point_id", how="left")

    name, batch = (criterion[:-4], "top") if criterion.endswith("_top") else (criterion, "greedy")
    refits = arm_refits(args, process, criterion)
    warm = refits == "warm"
    limit, size = (args.max_random, args.random_batch) if criterion == "random" else (args.max_criterion, args.batch)
    config = LoopConfig(spec=spec, batch_size=size, max_labelled=limit, criterion=name, batch=batch,
                        initial_size=args.initial, seed=seed, audit_fraction=args.audit,
                        warm_start=warm)  # fmt: skip

    def evaluate(fitted):
        return test_scores(fitted, test, target)

    def log(line):
        print(f"[{process} {criterion} seed {seed}] {line}", flush=True)

    result = run_loop(workdir / f"{process}_{criterion}_{refits}_{seed}", truth, oracle, config, evaluate=evaluate,
                      log=log)  # fmt: skip
    steps = spec.method.options["num_steps"]
    return [{**r, "num_steps": steps} for r in _records(result.history, process, criterion, seed, warm)]


def arm_refits(args: argparse.Namespace, process: str, criterion: str) -> str:
    """The refits of ``criterion``'s loop on ``process``: ``--refits``, or for ``pilot`` (the default) the
    val-row pilot's choice (:func:`pilot_refits`), warm where it has none."""
    return args.refits if args.refits != "pilot" else pilot_refits(load_pilot(), process, criterion) or "warm"


def _records(history: list[dict], process: str, criterion: str, seed: int, warm: bool) -> list[dict]:
    """The records of a loop's fits (module docstring) from its history; ``refits``: the loop's refits
    (``"warm"`` or ``"cold"``; its first fit is always cold)."""
    records = []
    for h in history:
        scores = {k: h[k] for k in ("test_median_rel_err", "test_r2_log", "coverage_68", "coverage_95")}
        records.append({"process": process, "criterion": criterion, "seed": seed, "n_train": h["n_labelled"],
                        **scores, "seconds": h["fit_seconds"] + h.get("choose_seconds", 0.0),
                        "warm_start": h["warm_start"], "refits": "warm" if warm else "cold"})  # fmt: skip
    return records


def with_refits(runs: list[dict]) -> list[dict]:
    """``runs`` with ``refits`` on every record; records written before the field take their loop's
    (warm where any of the loop's fits started from the previous networks)."""
    warm = {(r["process"], r["criterion"], r["seed"]) for r in runs if r.get("warm_start")}
    return [r if "refits" in r else {**r, "refits": "warm" if (r["process"], r["criterion"], r["seed"]) in warm
                                      else "cold"} for r in runs]  # fmt: skip


def load_pilot() -> dict:
    """The val-row pilot's results (``active_learning_pilot.json``), empty where there are none."""
    path = RESULTS_DIR / "active_learning_pilot.json"
    return json.loads(path.read_text()) if path.exists() else {}


def pilot_refits(pilot: dict, process: str, criterion: str) -> str | None:
    """The refits the val-row pilot chose for ``criterion``'s loop on ``process``: the criterion's own
    choice (``--criterion-loops``) where made, else the process's (the random loop's, ``--loops``);
    ``None`` without either."""
    start = pilot.get("chosen_criterion_start", {}).get(f"{process}|{criterion}")
    start = pilot.get("chosen_start", {}).get(process) if start is None else start
    return None if start is None else ("warm" if start else "cold")


def summarise(runs: list[dict], pilot: dict | None = None) -> list[dict]:
    """Per process and arm (criterion and refits): the mean over seeds at each ``n_train``, and the goal's
    check. Random's reference is its arm with the pilot's refits; a criterion's arm counts towards the
    goal only with the pilot's refits for it (:func:`pilot_refits`; any arm where the pilot has none)."""
    pilot = load_pilot() if pilot is None else pilot
    runs = with_refits(runs)
    out = []
    for process in dict.fromkeys(r["process"] for r in runs):
        rows = [r for r in runs if r["process"] == process]
        arms = list(dict.fromkeys((r["criterion"], r["refits"]) for r in rows))
        rand_refits = pilot_refits(pilot, process, "random")
        rand = [r for r in rows if r["criterion"] == "random" and rand_refits in (None, r["refits"])]
        n_max = max((r["n_train"] for r in rand), default=None)
        n_min = min((r["n_train"] for r in rand), default=None)
        ref = _mean([r["test_median_rel_err"] for r in rand if r["n_train"] == n_max])
        start = _mean([r["test_median_rel_err"] for r in rand if r["n_train"] == n_min])
        for criterion, refits in arms:
            mine = [r for r in rows if (r["criterion"], r["refits"]) == (criterion, refits)]
            chosen = pilot_refits(pilot, process, criterion) in (None, refits)
            curve = {n: _mean([r["test_median_rel_err"] for r in mine if r["n_train"] == n])
                     for n in sorted({r["n_train"] for r in mine})}  # fmt: skip
            reach = next((n for n, e in curve.items() if ref is not None and e <= ref), None)
            at = [r for r in mine if r["n_train"] == reach]
            checkable = criterion != "random" and chosen and _falls(start, ref)
            out.append({
                "process": process, "criterion": criterion, "refits": refits, "pilot_choice": chosen,
                "seeds": len({r["seed"] for r in mine}),
                "random_n_max": n_max, "random_err_at_n_max": ref, "random_err_at_start": start, "n_to_reach": reach,
                "err_at_2000": curve.get(2000), "paired_at_2000": _paired(mine, rand, n_max),
                "r2_log_at_2000": _mean([r["test_r2_log"] for r in mine if r["n_train"] == 2000]),
                "coverage_95_at_reach": _mean([r["coverage_95"] for r in at]),
                "coverage_68_at_reach": _mean([r["coverage_68"] for r in at]),
                "goal_met": None if not checkable else reach is not None
                and reach <= 2000 and abs(_mean([r["coverage_95"] for r in at]) - 95.0) <= 3.0,
            })  # fmt: skip
    return out


FIT_COLUMNS = [("process", "process", ""), ("num_steps", "Adam steps", ""), ("refits", "refits run", ""),
               ("pilot_steps", "pilot's steps", ""), ("pilot_refits", "pilot's refits (random loop)", ""),
               ("pilot_criterion_refits", "pilot's refits per criterion", "")]  # fmt: skip


def fits(runs: list[dict], pilot: dict | None = None) -> list[dict]:
    """Per process: the fits' Adam steps and the refits run (warm: from the previous networks; cold: from
    fresh initialisations), beside the val-row pilot's choices (``None`` where it has none)."""
    pilot = load_pilot() if pilot is None else pilot
    runs = with_refits(runs)
    out = []
    for process in dict.fromkeys(r["process"] for r in runs):
        mine = [r for r in runs if r["process"] == process]
        steps = sorted({r.get("num_steps") for r in mine if r.get("num_steps") is not None})
        start = pilot.get("chosen_start", {}).get(process)
        per = {k.split("|")[1]: w for k, w in pilot.get("chosen_criterion_start", {}).items()
               if k.split("|")[0] == process}  # fmt: skip
        out.append({"process": process, "num_steps": ", ".join(map(str, steps)) or "-",
                    "refits": ", ".join(sorted({r["refits"] for r in mine})),
                    "pilot_steps": pilot.get("chosen", {}).get(process),
                    "pilot_refits": None if start is None else ("warm" if start else "cold"),
                    "pilot_criterion_refits": ", ".join(f"{c}: {'warm' if w else 'cold'}" for c, w in per.items())
                    or None})  # fmt: skip
    return out


def _paired(mine: list[dict], rand: list[dict], n_max: int | None) -> str | None:
    """``"k/m"``: of the ``m`` seeds with both fits, those where the criterion's error at 2,000 rows is at
    or below random's at ``n_max`` rows for the same seed (the same initial rows)."""
    at = {r["seed"]: r["test_median_rel_err"] for r in mine if r["n_train"] == 2000}
    ref = {r["seed"]: r["test_median_rel_err"] for r in rand if r["n_train"] == n_max}
    both = sorted(set(at) & set(ref))
    return f"{sum(at[s] <= ref[s] for s in both)}/{len(both)}" if both else None


def _falls(start: float | None, end: float | None) -> bool:
    """Random sampling's error fell from its first to its last fit: only then can a criterion show a saving."""
    return start is not None and end is not None and end < start


def curves(runs: list[dict]) -> list[dict]:
    """Mean over seeds per process, arm (criterion and refits) and ``n_train`` of the test numbers."""
    runs = with_refits(runs)
    key = lambda r: (r["process"], r["criterion"], r["refits"], r["n_train"])  # noqa: E731
    out = []
    for process, criterion, refits, n in sorted(
        dict.fromkeys(map(key, runs)), key=lambda k: (k[0], k[1] != "random", k[1], k[2], k[3])
    ):
        mine = [r for r in runs if key(r) == (process, criterion, refits, n)]
        out.append({"process": process, "criterion": criterion, "refits": refits, "n_train": n, "seeds": len(mine),
                    **{k: _mean([r[k] for r in mine]) for k in ("test_median_rel_err", "test_r2_log", "coverage_68",
                                                                 "coverage_95", "seconds")}})  # fmt: skip
    return out


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def figure(runs: list[dict], path: Path) -> None:
    """Test median relative error against labelled rows per arm: the arms with the val-row pilot's refits
    solid, with a band (min to max over seeds); the others dashed, without one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs, pilot = with_refits(runs), load_pilot()
    processes = list(dict.fromkeys(r["process"] for r in runs))
    fig, axes = plt.subplots(1, len(processes), figsize=(5 * len(processes), 4), squeeze=False)
    for ax, process in zip(axes[0], processes):
        arms = list(dict.fromkeys((r["criterion"], r["refits"]) for r in runs if r["process"] == process))
        for criterion, refits in arms:
            mine = [r for r in runs if r["process"] == process and (r["criterion"], r["refits"]) == (criterion, refits)]
            chosen = pilot_refits(pilot, process, criterion) in (None, refits)
            label = criterion if len({f for _, f in arms}) == 1 else f"{criterion}, {refits}"
            label += f" ({len({r['seed'] for r in mine})} seeds)" + ("" if chosen else ", not counted")
            ns = sorted({r["n_train"] for r in mine})
            errs = [[r["test_median_rel_err"] for r in mine if r["n_train"] == n] for n in ns]
            mean = [np.mean(e) for e in errs]
            style = {"marker": "."} if chosen else {"linestyle": "--", "alpha": 0.6, "linewidth": 1}
            order = [*CRITERIA, "variance_top"]  # a criterion's colour is the same in every panel
            colour = f"C{order.index(criterion) if criterion in order else len(order)}"
            (line,) = ax.plot(ns, mean, label=label, color=colour, **style)
            if chosen:
                ax.fill_between(ns, [min(e) for e in errs], [max(e) for e in errs], color=line.get_color(), alpha=0.2)
        ax.set_xlabel("labelled points")
        ax.set_ylabel("test median relative error (%)")
        ax.set_title(process)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(data: dict) -> str:
    from _results import markdown_table, meta_lines

    summary = summarise(data["runs"])  # against the pilot's choices as they are now
    cols = [("process", "process", ""), ("criterion", "criterion", ""), ("refits", "refits", ""),
            ("pilot_choice", "the pilot's choice", ""), ("seeds", "seeds", ""),
            ("random_err_at_start", "random: err % at start", ".2f"), ("random_n_max", "random: points", ""),
            ("random_err_at_n_max", "random: err %", ".2f"),
            ("n_to_reach", "points to reach it", ""), ("err_at_2000", "err % at 2000", ".2f"),
            ("paired_at_2000", "seeds at 2000 <= random's final", ""), ("r2_log_at_2000", "R^2 log at 2000", ".4f"),
            ("coverage_68_at_reach", "cov 68 there", ".1f"), ("coverage_95_at_reach", "cov 95 there", ".1f"),
            ("goal_met", "goal met", "")]  # fmt: skip
    run_cols = [("process", "process", ""), ("criterion", "criterion", ""), ("refits", "refits", ""),
                ("seed", "seed", ""), ("n_train", "n_train", ""), ("test_median_rel_err", "median rel err %", ".2f"),
                ("test_r2_log", "R^2 log", ".4f"), ("coverage_68", "cov 68", ".1f"), ("coverage_95", "cov 95", ".1f"),
                ("seconds", "s", ".1f"), ("loop_unfinished", "loop unfinished", "")]  # fmt: skip
    return (
        "# Active learning on the built-in data (`benchmarks/active_learning.py`)\n\n"
        + (__doc__ or "").split("Usage:")[0].strip()
        + f"\n\nSettings: {json.dumps(data['settings'])}\n\n"
        + (
            "**This run has no audit rows** (`--audit 0`): the fits' validation rows are a random 10 % of all "
            "labelled rows, the actively chosen ones included.\n\n"
            if data["settings"].get("audit") == 0
            else ""
        )
        + "Each process's fit as run, beside the choices of the val-row pilot (`active_learning_pilot.py`, "
        "`active_learning_pilot.md`: the Adam budget, and warm or cold refits, for the random loop and per "
        "criterion); a loop's first fit is always cold. An arm is a criterion with its refits. Random's reference "
        "is its arm with the pilot's refits, and a criterion's arm counts towards the goal only with the pilot's "
        "refits for it (`the pilot's choice` True; the criterion's own choice where the pilot made one, else the "
        "random loop's); other arms are shown and not counted (`goal met` empty).\n\n"
        + markdown_table(fits(data["runs"]), FIT_COLUMNS)
        + "\n"
        + (
            f"Merged from {len(data['meta']['merged_from'])} result files of loops run side by side as separate "
            "processes sharing the machine's cores (the `seconds` are inflated by that sharing; each file's load "
            "average is in the JSON's `parts_meta`): "
            + "; ".join(
                f"`{n}` {m.get('date', '?')} to {m.get('date_end', '?')}"
                for n, m in zip(data["meta"]["merged_from"], data["meta"]["parts_meta"])
            )
            + ". Runs are not redone when a later pilot chooses their refits: an arm counted towards the goal may "
            "predate the choice that counts it (the pilot's dates are in `active_learning_pilot.md`).\n\n"
            if data["meta"].get("merged_from")
            else ""
        )
        + "Goal (issue 26): the best criterion reaches random sampling's test median relative error at "
        "4,000 points with at most 2,000 points, the 95 % coverage within 3 points of nominal. "
        "`points to reach it`: the first `n_train` at which the criterion's mean over seeds is at or "
        "below random's mean at its largest `n_train` (`-`: not within the points run). `random: err % at start`: "
        "random's mean at its first fit (the initial rows, the same for every criterion): where it is already "
        "at or below random's final error, more points do not lower the error and the comparison cannot show a "
        "saving (`goal met` is then empty: not checkable). `seeds at 2000 <= random's final`: per seed (the same "
        "initial rows), whether the criterion's error at 2,000 points is at or below random's at its largest "
        "`n_train`. `R^2 log at 2000`: the mean R^2 of log10 sigma there, which the worst-predicted rows drive "
        "(a criterion can lower the median error and raise the largest ones).\n\n"
        + markdown_table(summary, cols)
        + "\n![test error against points](active_learning.png)\n\n## Mean over seeds\n\n"
        + markdown_table(curves(data["runs"]), [("seeds", "seeds", ""), *run_cols[:3], *run_cols[4:]])
        + "\n## Every fit\n\n"
        + markdown_table(with_refits(data["runs"]), run_cols)
        + "\n"
        + meta_lines(data["meta"])
    )


def save(runs: list[dict], settings: dict, meta: dict, path: Path) -> None:
    data = {"meta": finish_metadata(meta), "settings": settings, "runs": runs, "summary": summarise(runs)}
    write(path, data, render(data))
    figure(runs, path.with_suffix(".png"))


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    skip = ("workdir", "out", "table_only", "smoke", "merge")
    return {k: v for k, v in vars(args).items() if k not in skip} | {
        "fit": {**FIT, "num_steps": {p: num_steps(p, args.num_steps) for p in args.processes}, "hidden": args.hidden}
    }


def merge(args: argparse.Namespace) -> None:
    """Write ``--out`` from the runs of the ``--merge`` result files, and with ``--workdir`` the fits so far of
    loops not finished (``loop_unfinished``); a run present in two files (resumed from one loop) once."""
    parts = [json.loads(f.read_text()) for f in args.merge]
    first = parts[0] if parts else {"meta": run_metadata("benchmarks/active_learning.py"), "settings": _settings(args)}
    key = lambda r: (r["process"], r["criterion"], r["refits"], r["seed"], r["n_train"])  # noqa: E731
    seen: dict[tuple, dict] = {}
    for part in parts:
        steps = part["settings"]["fit"]["num_steps"]  # an int in files written before the pilot
        for r in with_refits(part["runs"]):
            r.setdefault("num_steps", steps if isinstance(steps, int) else steps[r["process"]])
            seen.setdefault(key(r), r)
    for state in sorted(args.workdir.glob("*/state.json")) if args.workdir else ():
        process, rest = state.parent.name.split("_", 1)
        criterion, refits, seed = rest.rsplit("_", 2)
        for r in _records(json.loads(state.read_text())["history"], process, criterion, int(seed), refits == "warm"):
            seen.setdefault(key(r), {**r, "loop_unfinished": True})
    runs = list(seen.values())
    names, metas = [], []
    for f, part in zip(args.merge, parts):  # a merged file's own parts, not the file: one flat list
        names += part["meta"].get("merged_from", [f.name])
        metas += part["meta"].get("parts_meta", [part["meta"]])
    meta = {**first["meta"], "merged_from": names, "parts_meta": metas}
    settings = first["settings"] | {
        "seeds": sorted({r["seed"] for r in runs}),
        "criteria": list(dict.fromkeys(r["criterion"] for r in runs)),
        "processes": list(dict.fromkeys(r["process"] for r in runs)),
    }
    save(runs, settings, meta, args.out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--processes", nargs="+", default=list(PROCESSES))
    p.add_argument("--criteria", nargs="+", default=list(CRITERIA))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--initial", type=int, default=500)
    p.add_argument("--batch", type=int, default=250)
    p.add_argument("--random-batch", type=int, default=500, help="batch of the random baseline (fewer fits)")
    p.add_argument(
        "--refits",
        choices=("pilot", "warm", "cold"),
        default="pilot",
        help="refit from the previous networks (warm) or fresh initialisations (cold); default: the "
        "val-row pilot's choice per process and criterion",
    )
    p.add_argument("--audit", type=float, default=AUDIT, help="audit fraction of every batch (validation rows)")
    p.add_argument("--max-random", type=int, default=4000)
    p.add_argument("--max-criterion", type=int, default=2000)
    p.add_argument("--num-steps", type=int, help="Adam steps (default: the pilot's choice per process)")
    p.add_argument("--hidden", nargs="+", type=int, default=[20, 20])
    p.add_argument("--test-rows", type=int, default=0, help="score on the first N test rows (0: all)")
    p.add_argument("--workdir", type=Path, help="where the loops keep their rounds (default: a temporary directory)")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--smoke", action="store_true", help="a miniature into a temporary directory")
    p.add_argument("--table-only", action="store_true")
    p.add_argument("--merge", nargs="*", type=Path, help="write --out from the runs of these result files")
    args = p.parse_args(argv)
    if args.merge is not None:
        merge(args)
        return 0
    if args.smoke:  # a miniature: one process, random and bald, three small fits each
        tmp = Path(tempfile.mkdtemp(prefix="al_smoke_"))
        args.processes, args.criteria, args.seeds = args.processes[:1], ["random", "bald"], [0]
        args.initial, args.batch, args.random_batch, args.max_random, args.max_criterion = 200, 50, 50, 250, 250
        args.num_steps, args.hidden, args.test_rows, args.refits = 20, [3], 50, "warm"
        args.workdir = args.workdir or tmp / "work"
        args.out = tmp / "active_learning.json" if args.out == RESULTS else args.out
    args.workdir = args.workdir or Path(tempfile.gettempdir()) / "sigmabnn_active_learning"
    if args.table_only:
        data = json.loads(args.out.read_text())
        write_text_atomic(args.out.with_suffix(".md"), render(data))
        figure(data["runs"], args.out.with_suffix(".png"))
        return 0
    settings = _settings(args)
    old = json.loads(args.out.read_text()) if args.out.exists() else {}
    runs = old.get("runs", [])
    meta = old.get("meta") or run_metadata("benchmarks/active_learning.py")
    done = {(r["process"], r["criterion"], r["refits"], r["seed"]) for r in with_refits(runs)}
    for process in args.processes:
        for seed in args.seeds:
            for criterion in args.criteria:
                if (process, criterion, arm_refits(args, process, criterion), seed) in done:
                    continue
                runs += run_one(process, criterion, seed, args, args.workdir)
                save(runs, settings, meta, args.out)
    save(runs, settings, meta, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
