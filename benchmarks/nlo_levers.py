"""Levers toward the chi1^0 chi1^0 targets of the recommended NLO configuration, measured one at a time.

Each group writes its measured numbers into ``benchmarks/results/nlo_levers.json`` (merged by
group and case, written atomically, with the date and the load average of every case);
``docs/nlo_research.md`` quotes only numbers from there.

Groups (``--group NAME``, repeatable):

- ``map``: MAP levers for the point accuracy (network size, Adam steps, learning rate),
  plain JAX/Optax full-batch Adam with a cosine schedule (``nlo_explore.fit_map``) on the
  recommended features; test R^2 log / xsec and relative errors, wall seconds.
- ``fit``: :func:`sigmabnn.workflows.nlo.train_process` (the library path, ``api.fit``) with
  the overrides of each case (likelihood, Student-t degrees of freedom, network, MAP steps,
  chains, draws, tree depth, seed); test metrics of the calibration report, coverage, wall time,
  and the validation split's metrics (settings such as the degrees of freedom are chosen on
  validation; the issue's targets are on test). Cases ``<base>_seed<k>`` repeat ``<base>``
  (seed 0) with seed ``k``.

- ``table``: print the tables (``hetero``: the heteroscedastic Student-t table alone; ``seeds``:
  the seed-to-seed spread, min / median / max per metric over a case's seeds); ``docs``:
  write them (and the targets table of ``results/thesis_nlo.md``) into the generated blocks of ``docs/nlo_research.md``.

Usage: ``python benchmarks/nlo_levers.py --group map [--case NAME ...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nlo_explore as ex  # noqa: E402
from _results import RESULTS_DIR, write_json, write_text_atomic  # noqa: E402
from sigmabnn.physics import amplitude_features
from sigmabnn.workflows import nlo  # noqa: E402

RESULTS = RESULTS_DIR / "nlo_levers.json"
PROCESS = "1000022,1000022"

MAP_CASES: dict[str, dict[str, Any]] = {
    "20x20_steps4000_lr3e-3": {"hidden": (20, 20), "steps": 4000, "lr": 3e-3},
    "20x20_steps20000_lr3e-3": {"hidden": (20, 20), "steps": 20000, "lr": 3e-3},
    "20x20_steps20000_lr1e-2": {"hidden": (20, 20), "steps": 20000, "lr": 1e-2},
    "32x32_steps12000_lr3e-3": {"hidden": (32, 32), "steps": 12000, "lr": 3e-3},
    "20x20x20_steps12000_lr3e-3": {"hidden": (20, 20, 20), "steps": 12000, "lr": 3e-3},
    "50x50_steps12000_lr3e-3": {"hidden": (50, 50), "steps": 12000, "lr": 3e-3},
}


FIT_CASES: dict[str, dict[str, Any]] = {
    "gaussian": {},
    "student_t_df4": {"likelihood": "student_t", "noise_df": 4.0},
    "student_t_df3": {"likelihood": "student_t", "noise_df": 3.0},
    "student_t_df2.5": {"likelihood": "student_t", "noise_df": 2.5},
    "student_t_df4_map_prec1e4": {"likelihood": "student_t", "noise_df": 4.0, "noise_precision": 1e4},
    "student_t_df3_map_prec1e4": {"likelihood": "student_t", "noise_df": 3.0, "noise_precision": 1e4},
    "student_t_df2.5_map_prec1e4": {"likelihood": "student_t", "noise_df": 2.5, "noise_precision": 1e4},
    "gaussian_map_prec1e4": {"noise_precision": 1e4},
    "hetero_student_t_df3": {"likelihood": "hetero_student_t", "noise_df": 3.0},
    "hetero_student_t_df5": {"likelihood": "hetero_student_t", "noise_df": 5.0},
    "gaussian_chees": {"method": "chees"},
    "hetero_student_t_df3_chees": {"likelihood": "hetero_student_t", "noise_df": 3.0, "method": "chees"},
    "hetero_student_t_df3_map_steps12000_chees": {
        "likelihood": "hetero_student_t",
        "noise_df": 3.0,
        "method": "chees",
        "map_steps": 12000,
        "num_warmup": 300,
        "num_samples": 250,
    },
    "hetero_student_t_df3_map_steps16000_chees": {
        "likelihood": "hetero_student_t",
        "noise_df": 3.0,
        "method": "chees",
        "map_steps": 16000,
        "num_warmup": 300,
        "num_samples": 250,
    },
}
"""Overrides of :func:`sigmabnn.workflows.nlo.recommended_config` per case of the ``fit`` group
(``seed``: the run's seed, default 0)."""

# The cases above were measured before the recommended features had the resonance integral and the
# target its baseline: they keep the features of that time, so a rerun measures the same thing.
_BEFORE_RESONANCE = {
    "derive": tuple(amplitude_features.recommended_features(PROCESS, resonance=False)),
    "baseline": (),
}
for _case in FIT_CASES.values():
    _case.update(_BEFORE_RESONANCE)
_FULL = FIT_CASES["hetero_student_t_df3_map_steps16000_chees"]
for _df in (2.5, 2.2):
    FIT_CASES[f"hetero_student_t_df{_df:g}_map_steps16000_chees"] = _FULL | {"noise_df": _df}
for _df in (3.0, 2.5, 2.2):
    for _seed in (1, 2):
        FIT_CASES[f"hetero_student_t_df{_df:g}_map_steps16000_chees_seed{_seed}"] = _FULL | {
            "noise_df": _df,
            "seed": _seed,
        }
FIT_CASES["hetero_student_t_df3_map_steps16000_chees_seed0"] = _FULL | {"seed": 0}
# the recommended configuration with the resonance integral ``lpint`` as an input and as the target's baseline
_RESONANCE = {k: v for k, v in _FULL.items() if k not in _BEFORE_RESONANCE}
FIT_CASES["resonance_baseline"] = dict(_RESONANCE)
for _seed in (1, 2):
    FIT_CASES[f"resonance_baseline_seed{_seed}"] = _RESONANCE | {"seed": _seed}
SEED_SUFFIX = "_seed"
"""Cases named ``<base>_seed<k>`` repeat case ``<base>`` (seed 0) with seed ``k`` (``_seed0``: a rerun
of seed 0 that adds the validation metrics to a record made before they were kept; the seeds table
uses it in place of ``<base>``'s record)."""


def save(group: str, case: str, record: dict[str, Any]) -> None:
    """Merge ``record`` into the results file (locked, so that runs in parallel processes do not lose records)."""
    import fcntl
    import tempfile

    with open(Path(tempfile.gettempdir()) / "sigmabnn_nlo_levers.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"benchmark": "nlo_levers"}
        data.setdefault(group, {})[case] = record
        write_json(RESULTS, data)
    print(f"[saved {group}/{case}]", flush=True)


def stamp() -> dict[str, Any]:
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_1_5_15": [round(v, 2) for v in os.getloadavg()],
        "cores": os.cpu_count(),
    }


def group_map(cases: list[str] | None) -> None:
    derived = amplitude_features.recommended_features(PROCESS)
    for name, c in MAP_CASES.items():
        if cases and name not in cases:
            continue
        before = stamp()
        out = ex.run_map_case("recommended", derived, c["hidden"], c["steps"], lr=c["lr"])[0]
        out["load_average_before"] = before["load_average_1_5_15"]
        save("map", name, out | stamp())


def r2_xsec_loss(fitted: Any, rows: Any, target: str, top: int = 8) -> dict[str, Any]:
    """Which test points make up the R^2 xsec loss ``sum (10**mean - y)^2 / sum (y - ybar)^2``.

    ``share_top``: the fraction of the squared-error sum held by the ``top`` worst points (and by
    the worst 1 %); ``points``: those points' neutralino mass (GeV), bino / wino / higgsino
    fractions ``N11^2``, ``N12^2``, ``N13^2 + N14^2``, true and predicted cross section (pb),
    log10 error, predictive std of log10 and its epistemic and aleatoric parts.
    """
    import numpy as np

    from sigmabnn.predict import predict

    y = rows[target].to_numpy(np.float64)
    pred = predict(fitted, rows, levels=(0.6827,))
    lp = pred.log_space
    mu = lp.mean[:, 0]
    se = (10.0**mu - y) ** 2
    sst = float(np.sum((y - y.mean()) ** 2))
    order = np.argsort(se)[::-1]
    k1 = max(1, len(y) // 100)
    out: dict[str, Any] = {
        "r2_xsec": 1.0 - float(se.sum()) / sst,
        "loss_share_top": float(se[order[:top]].sum() / se.sum()),
        "loss_share_top1pct": float(se[order[:k1]].sum() / se.sum()),
        "top": top,
        "num_top1pct": k1,
        "points": [],
    }
    for i in order[:top]:
        r = rows.iloc[int(i)]
        out["points"].append(
            {
                "mass_gev": float(abs(r["m_1000022"])),
                "bino": float(r["N1000022_1"] ** 2),
                "wino": float(r["N1000022_2"] ** 2),
                "higgsino": float(r["N1000022_3"] ** 2 + r["N1000022_4"] ** 2),
                "xsec_true_pb": float(y[i]),
                "xsec_pred_pb": float(10.0 ** mu[i]),
                "loss_share": float(se[i] / se.sum()),
                "log10_error": float(mu[i] - np.log10(y[i])),
                "log10_std": float(lp.std[i, 0]),
                "log10_epistemic_std": float(lp.epistemic_std[i, 0]),
                "log10_aleatoric_std": float(lp.aleatoric_std[i, 0]),
            }
        )
    return out


def _cov(m: dict[str, float]) -> str:
    """``"c1/c2/c3"``: coverage (percent) of the 1 / 2 / 3 sigma intervals in a metrics dict."""
    return "/".join(f"{m[f'cov_{k}sigma_pct']:.1f}" for k in (1, 2, 3))


def group_fit(cases: list[str] | None, extra: dict[str, Any]) -> None:
    from sigmabnn.datasets import load_ewino

    data = load_ewino()
    for name, overrides in FIT_CASES.items():
        if cases and name not in cases:
            continue
        overrides = overrides | extra
        seed = overrides.pop("seed", 0)
        before = stamp()
        t0 = time.perf_counter()
        out = nlo.train_process(seed, PROCESS, data=data, progress=False, **overrides)
        wall = time.perf_counter() - t0
        sampler = out.report.sampler
        val = data[(data["split"] == "val") & data[out.config.target].notna() & (data[out.config.target] > 0)]
        rec = {
            "overrides": overrides,
            "seed": seed,
            "config": out.config._asdict(),
            "metrics_test": out.metrics,
            "metrics_val": nlo.score_split(out.fitted, val, out.config.target),
            "timings": out.report.timings.to_json(),
            "noise_std_log10": out.report.noise_std,
            "networks": out.fitted.num_networks,
            "sampler": {
                k: getattr(sampler, k)
                for k in (
                    "acceptance",
                    "divergences",
                    "rhat_predictions",
                    "ess_bulk_predictions",
                    "mean_integration_steps",
                    "num_grad_evals",
                )
            },
            "wall_seconds_with_scoring": round(wall, 1),
            "load_average_before": before["load_average_1_5_15"],
        }
        rows = data[data["split"] == "test"]
        rows = rows[rows[out.config.target].notna() & (rows[out.config.target] > 0)]
        rec["r2_xsec_loss"] = r2_xsec_loss(out.fitted, rows, out.config.target)
        m = out.metrics
        print(
            f"{name}: r2log {m['r2_log']:.5f} r2x {m['r2_xsec']:.4f} med {m['rel_err_median_pct']:.2f}% "
            f"cov {m['cov_1sigma_pct']:.1f}/{m['cov_2sigma_pct']:.1f}/{m['cov_3sigma_pct']:.1f} "
            f"z {m['z_std']:.2f} fit {out.report.timings.fit_seconds:.0f}s "
            f"val cov {_cov(rec['metrics_val'])}",
            flush=True,
        )
        key = name + "".join(f"_{k}{v}" for k, v in sorted(extra.items()))
        save("fit", key, rec | stamp())


def table() -> str:
    """The Markdown tables of ``docs/nlo_research.md`` (section 7), from the results file."""
    data = json.loads(RESULTS.read_text())
    lines = ["MAP (plain Adam, cosine schedule), test split:", ""]
    lines += ["| case | R2 log | R2 xsec | median % | p90 % | p99 % | s | load |", "|---|---|---|---|---|---|---|---|"]
    for name, r in data.get("map", {}).items():
        t = r["test"]
        lines.append(
            f"| {name} | {t['r2_log']:.4f} | {t['r2_xsec']:.3f} | {t['rel_err_median_pct']:.2f} "
            f"| {t['rel_err_p90_pct']:.1f} | {t['rel_err_p99_pct']:.1f} | {r['seconds']:.0f} "
            f"| {r['load_average_before'][0]:.1f} |"
        )
    lines += [
        "",
        "Library path (`train_process` = `api.fit`; NUTS, or ChEES-HMC where the case says `chees`), test split:",
        "",
    ]
    lines += [
        "| case | R2 log | R2 xsec | median % | cov 1s/2s/3s % | val cov 1s/2s/3s % | z std | noise std (log10) "
        "| networks | R-hat | fit s | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in data.get("fit", {}).items():
        if _seed_of(name)[1] >= 0:
            continue
        m, sm = r["metrics_test"], r["sampler"]
        rhat = sm.get("rhat_predictions")
        lines.append(
            f"| {name} | {m['r2_log']:.4f} | {m['r2_xsec']:.3f} | {m['rel_err_median_pct']:.2f} "
            f"| {_cov(m)} | {_val_cov(r)} | {m['z_std']:.2f} "
            f"| {r['noise_std_log10']:.4f} | {r['networks']} | {'-' if rhat is None else f'{rhat:.2f}'} "
            f"| {r['timings']['fit_seconds']:.0f} | {r['load_average_before'][0]:.1f} |"
        )
    return "\n".join(lines) + "\n"


def _seed_of(name: str) -> tuple[str, int]:
    """``(base case, k)`` of a fit case name ``<base>_seed<k>``; ``(name, -1)`` where there is no suffix (seed 0)."""
    base, sep, k = name.rpartition(SEED_SUFFIX)
    if sep and k.isdigit():
        return base, int(k)
    return name, -1


def _val_cov(r: dict[str, Any]) -> str:
    """Validation-split coverage of a fit record (``-`` for records made before it was kept)."""
    return _cov(r["metrics_val"]) if "metrics_val" in r else "-"


SEED_METRICS: tuple[tuple[str, str, str], ...] = (
    ("test", "r2_log", "{:.4f}"),
    ("test", "r2_xsec", "{:.3f}"),
    ("test", "rel_err_median_pct", "{:.2f}"),
    ("test", "cov_1sigma_pct", "{:.1f}"),
    ("test", "cov_2sigma_pct", "{:.1f}"),
    ("test", "cov_3sigma_pct", "{:.1f}"),
    ("val", "cov_1sigma_pct", "{:.1f}"),
    ("val", "cov_2sigma_pct", "{:.1f}"),
    ("val", "cov_3sigma_pct", "{:.1f}"),
    ("timings", "fit_seconds", "{:.0f}"),
)
"""Columns of the seed table: (record part, key, format)."""


def _seed_value(r: dict[str, Any], part: str, key: str) -> float | None:
    block = r["timings"] if part == "timings" else r.get(f"metrics_{part}")
    return None if block is None else block[key]


def seeds_table() -> str:
    """Seed-to-seed spread: every fit case run with more than one seed, one row per seed and the
    min / median / max over its seeds of each metric (test split, validation coverage, fit time)."""
    import numpy as np

    fits = json.loads(RESULTS.read_text()).get("fit", {})
    groups: dict[str, dict[int, dict[str, Any]]] = {}
    for name, r in sorted(fits.items(), key=lambda item: _seed_of(item[0])[1]):  # a _seed0 rerun replaces <base>
        base, _ = _seed_of(name)
        groups.setdefault(base, {})[r.get("seed", 0)] = r
    head = (
        "| case | seed | R2 log | R2 xsec | median % | cov 1s | cov 2s | cov 3s | val cov 1s | val cov 2s "
        "| val cov 3s | fit s | load |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for base, runs in groups.items():
        if len(runs) < 2:
            continue
        for seed in sorted(runs):
            r = runs[seed]
            cells = []
            for part, key, fmt in SEED_METRICS:
                v = _seed_value(r, part, key)
                cells.append("-" if v is None else fmt.format(v))
            lines.append(f"| {base} | {seed} | " + " | ".join(cells) + f" | {r['load_average_before'][0]:.1f} |")
        cells = []
        for part, key, fmt in SEED_METRICS:
            vals = [v for v in (_seed_value(r, part, key) for r in runs.values()) if v is not None]
            cells.append("/".join(fmt.format(f(vals)) for f in (np.min, np.median, np.max)) if vals else "-")
        lines.append(f"| {base} | **min/median/max** ({len(runs)} seeds) | " + " | ".join(cells) + " | |")
    return "\n".join(lines) + "\n"


def _test_xsec() -> Any:
    """True cross sections (pb) of the test split, as scored by ``train_process``."""
    from sigmabnn.datasets import load_ewino

    target = nlo.recommended_config(PROCESS).target
    df = load_ewino()
    rows = df[(df["split"] == "test") & df[target].notna() & (df[target] > 0)]
    return rows[target].to_numpy(float)


def _heavy_points(threshold_pb: float = 20.0) -> str:
    """How many points per split have a cross section above ``threshold_pb``, and the lowest |m|."""
    from sigmabnn.datasets import load_ewino

    target = nlo.recommended_config(PROCESS).target
    df = load_ewino()
    df = df[df[target].notna() & (df[target] > 0)]
    parts = []
    for split in ("train", "val", "test"):
        rows = df[df["split"] == split]
        parts.append(
            f"{split} {int((rows[target] > threshold_pb).sum())} of {len(rows)} "
            f"(lowest |m_chi1| {rows['m_1000022'].abs().min():.2f} GeV)"
        )
    return f"Points above {threshold_pb:g} pb per split: " + "; ".join(parts) + "."


def _r2_without_worst(loss: dict[str, Any], y: Any) -> float:
    """R^2 xsec of a record's predictions with its worst test point left out (from the recorded
    R^2, that point's share of the squared-error sum and the true cross sections ``y``)."""
    import numpy as np

    worst = loss["points"][0]
    keep = ~np.isclose(y, worst["xsec_true_pb"], rtol=1e-12)
    assert keep.sum() == y.size - 1, "the worst point's cross section is not unique"
    sse = (1.0 - loss["r2_xsec"]) * float(np.sum((y - y.mean()) ** 2))
    sst = float(np.sum((y[keep] - y[keep].mean()) ** 2))
    return 1.0 - sse * (1.0 - worst["loss_share"]) / sst


def hetero_table() -> str:
    """Heteroscedastic Student-t cases beside the Gaussian ones: relative-error tails, coverage, and
    the test points that make up their R^2 xsec loss (``r2_xsec_loss`` of the record)."""
    data = json.loads(RESULTS.read_text())
    fits = data.get("fit", {})
    lines = [
        "| case | R2 log | R2 xsec | median % | p90 % | p99 % | cov 1s/2s/3s % | val cov 1s/2s/3s % "
        "| R2 xsec loss in worst 8 / worst 1 % | networks | fit s | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in fits.items():
        if not (name.startswith("hetero") or name.startswith("gaussian")) or "_map_prec" in name:
            continue
        if _seed_of(name)[1] >= 0:
            continue
        m = r["metrics_test"]
        loss = r.get("r2_xsec_loss")
        share = "-"
        if loss is not None:
            share = f"{100 * loss['loss_share_top']:.0f} / {100 * loss['loss_share_top1pct']:.0f} %"
        lines.append(
            f"| {name} | {m['r2_log']:.4f} | {m['r2_xsec']:.3f} | {m['rel_err_median_pct']:.2f} "
            f"| {m['rel_err_p90_pct']:.1f} | {m['rel_err_p99_pct']:.1f} "
            f"| {_cov(m)} | {_val_cov(r)} | {share} "
            f"| {r['networks']} | {r['timings']['fit_seconds']:.0f} | {r['load_average_before'][0]:.1f} |"
        )
    y_test = _test_xsec()
    lines += ["", _heavy_points()]
    for name, r in fits.items():
        loss = r.get("r2_xsec_loss")
        if loss is None or _seed_of(name)[1] >= 0:
            continue
        lines += [
            "",
            f"{name}: the {loss['top']} test points with the largest squared cross-section error "
            f"({100 * loss['loss_share_top']:.0f} % of the squared-error sum of R^2 xsec; without the worst "
            f"point alone, R^2 xsec would be {_r2_without_worst(loss, y_test):.3f}):",
            "",
            "| m_chi1 GeV | bino / wino / higgsino | true pb | predicted pb | share % | log10 error "
            "| std (epistemic / aleatoric), log10 |",
            "|---|---|---|---|---|---|---|",
        ]
        for q in loss["points"]:
            lines.append(
                f"| {q['mass_gev']:.1f} | {q['bino']:.2f} / {q['wino']:.2f} / {q['higgsino']:.2f} "
                f"| {q['xsec_true_pb']:.4g} | {q['xsec_pred_pb']:.4g} | {100 * q['loss_share']:.1f} "
                f"| {q['log10_error']:+.3f} | {q['log10_std']:.3f} ({q['log10_epistemic_std']:.3f} / "
                f"{q['log10_aleatoric_std']:.3f}) |"
            )
    return "\n".join(lines) + "\n"


DOCS = Path(__file__).resolve().parent.parent / "docs" / "nlo_research.md"


def thesis_targets() -> str:
    """The "Targets of the recommended configuration" table of ``results/thesis_nlo.md``."""
    text = (RESULTS_DIR / "thesis_nlo.md").read_text()
    part = text.split("## Targets of the recommended configuration", 1)[1]
    return part.strip() + "\n"


def thesis_runs() -> str:
    """Recommended and demo records of ``results/thesis_nlo.json`` and the demo command's timing."""
    records = json.loads((RESULTS_DIR / "thesis_nlo.json").read_text())["records"]
    lines = [
        "  | config | R^2 log | R^2 xsec | median rel. err. | cov 1s/2s/3s | z std | train s | networks | R-hat "
        "| load | date |",
        "  |---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        if r["config"] not in ("recommended", "demo"):
            continue
        cov = "/".join(f"{100 * r[f'coverage_{k}s']:.1f}" for k in (1, 2, 3))
        lines.append(
            f"  | {r['config']} | {r['r2_log']:.4f} | {r['r2_xsec']:.3f} | {100 * r['median_rel_err']:.2f} % "
            f"| {cov} % | {r['z_std']:.2f} | {r['train_seconds']:.0f} | {r['networks']} "
            f"| {r['rhat_predictions']:.2f} | {r['loadavg_before'][0]:.1f} | {r['date'][:16]} |"
        )
    demo = json.loads((RESULTS_DIR / "demo_nlo.json").read_text())
    lines += [
        "",
        f"  `sigmabnn demo nlo` end to end: {demo['wall_seconds']:.0f} s (budget {demo['budget_seconds']:.0f} s), "
        f"{demo['networks']} networks, load {demo['loadavg_before'][0]:.1f} at the start, {demo['date'][:16]}.",
    ]
    return "\n".join(lines) + "\n"


def update_docs() -> None:
    """Replace the generated blocks of ``docs/nlo_research.md`` (between ``<!-- begin NAME -->`` and
    ``<!-- end NAME -->``) with the tables generated from the results files."""
    text = DOCS.read_text()
    blocks = (
        ("levers", table),
        ("hetero", hetero_table),
        ("seeds", seeds_table),
        ("thesis-targets", thesis_targets),
        ("thesis-runs", thesis_runs),
    )
    for name, fn in blocks:
        begin, end = (
            f"<!-- begin {name} (generated by benchmarks/nlo_levers.py --group docs) -->",
            f"<!-- end {name} -->",
        )
        if begin not in text:
            continue
        head, rest = text.split(begin, 1)
        text = head + begin + "\n\n" + fn() + "\n" + end + rest.split(end, 1)[1]
    write_text_atomic(DOCS, text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--group", action="append", required=True)
    p.add_argument("--case", action="append", default=None)
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="fit group: an NLOConfig override for every case (value parsed as JSON), e.g. map_steps=12000",
    )
    a = p.parse_args(argv)
    extra = {k: json.loads(v) for k, _, v in (s.partition("=") for s in a.set)}
    extra = {k: tuple(v) if isinstance(v, list) else v for k, v in extra.items()}
    for g in a.group:
        if g == "map":
            group_map(a.case)
        elif g == "fit":
            group_fit(a.case, extra)
        elif g == "table":
            print(table(), end="")
        elif g == "hetero":
            print(hetero_table(), end="")
        elif g == "seeds":
            print(seeds_table(), end="")
        elif g == "docs":
            update_docs()
        else:
            raise SystemExit(f"unknown group {g!r}")
    return 0


if __name__ == "__main__":
    t0 = time.perf_counter()
    rc = main()
    print(f"done in {time.perf_counter() - t0:.0f} s", flush=True)
    sys.exit(rc)
