"""The physics proxies' free choices, re-made by cross-validation inside the training rows of every neutralino pair.

The fixed-energy amplitude proxy (``la_*``, ``lproxy``:
:func:`sigmabnn.physics.amplitude_features.proxy_features`) has an effective partonic energy
``s_eff = k (|m_i| + |m_j|)^2 + s0``, relative signs of the squark and Z terms for left- and
right-handed quarks, and a Z normalisation; ``lpint``
(:func:`~sigmabnn.physics.amplitude_features.resonance_features`) has the contact term's factor.
They were once picked by a test-split score on chi1^0 chi1^0 alone. Here every variant is scored
by a least-squares fit of log10 sigma on a cubic in ``log|m_i|``, ``log|m_j|``, the signs of the
masses and the proxy, with 5-fold cross-validation inside the ``train`` rows (the ``val`` and
``test`` rows are never read), on each of the 7 neutralino pairs of the built-in data.

Rule (fixed before the scores were computed): per proxy, the variant with the largest mean
(over the 7 processes) cross-validated R^2 of log10 sigma.

Writes ``results/nlo_proxy_cv.json`` and ``.md``. Usage: ``python benchmarks/nlo_proxy_cv.py``
(seconds to minutes; no network is trained).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import RESULTS_DIR, finish_metadata, run_metadata, write  # noqa: E402
from sigmabnn.data.features import add_derived, as_derived  # noqa: E402
from sigmabnn.datasets import load_ewino, processes  # noqa: E402
from sigmabnn.physics.amplitude_features import proxy_features, resonance_features  # noqa: E402
from sigmabnn.physics.processes import NEUTRALINOS  # noqa: E402

JSON_PATH = RESULTS_DIR / "nlo_proxy_cv.json"
FOLDS = 5
SEED = 0
CURRENT = {"proxy": "sl+1_sr-1_k2_s040000", "lpint": "contact2"}
"""The variants the library's features use today (``proxy_features`` defaults; ``resonance_features`` default)."""


def proxy_variants() -> dict[str, dict[str, float]]:
    """The grid of ``proxy_features`` arguments (the same 40 variants as the original exploration)."""
    grid = [(sl, sr, k, 0.0, 1.0) for sl in (1, -1) for sr in (1, -1) for k in (1.0, 1.5, 2.0, 3.0)]
    grid += [(1, sr, k, 0.0, 1.0) for sr in (1, -1) for k in (4.0, 6.0, 10.0)]
    grid += [(1, -1, k, s0, 1.0) for k in (1.0, 2.0, 4.0) for s0 in (1e4, 4e4, 1e5)]
    grid += [(sl, -1, 2.0, 4e4, zk) for sl in (1, -1) for zk in (0.25, 0.5, 2.0, 4.0)]
    out = {}
    for sl, sr, k, s0, zk in grid:
        key = f"sl{sl:+d}_sr{sr:+d}_k{k:g}_s0{s0:g}" + (f"_z{zk:g}" if zk != 1.0 else "")
        out[key] = {"sign_left": sl, "sign_right": sr, "shat_factor": k, "shat_offset": s0, "z_scale": zk}
    return out


def cv_r2(base: np.ndarray, extra: np.ndarray | None, y: np.ndarray, folds: np.ndarray) -> float:
    """R^2 of the out-of-fold least-squares predictions of ``y`` (pooled over the folds)."""
    a = base if extra is None else np.column_stack([base, extra])
    pred = np.empty_like(y)
    for f in range(FOLDS):
        fit = folds != f
        coef, *_ = np.linalg.lstsq(a[fit], y[fit], rcond=None)
        pred[~fit] = a[~fit] @ coef
    return float(1.0 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2))


def score_process(process: Any, df: Any) -> dict[str, float]:
    i, j = process.pdg1, process.pdg2
    rows = df[(df["split"] == "train") & df[process.target].notna() & (df[process.target] > 0)].reset_index(drop=True)
    y = np.log10(rows[process.target].to_numpy())
    cols = [np.ones(len(rows))]
    for pdg in dict.fromkeys((i, j)):
        lm = np.log(np.abs(rows[f"m_{pdg}"].to_numpy()))
        cols += [lm, lm**2, lm**3, np.sign(rows[f"m_{pdg}"].to_numpy())]
    base = np.column_stack(cols)
    folds = np.random.default_rng(SEED).permutation(len(rows)) % FOLDS
    out = {"masses_only": cv_r2(base, None, y, folds)}
    for key, kwargs in proxy_variants().items():
        spec = proxy_features(process, **kwargs)
        name = as_derived(spec[-1]).name
        out[f"proxy:{key}"] = cv_r2(base, add_derived(rows, spec)[name].to_numpy(), y, folds)
    for contact in (2.0, 1.0, 0.5, 0.25, 0.0):
        spec = resonance_features(process, contact=contact)
        out[f"lpint:contact{contact:g}"] = cv_r2(base, add_derived(rows, spec)["lpint"].to_numpy(), y, folds)
    return out


def markdown(out: dict[str, Any]) -> str:
    scores, chosen = out["scores"], out["chosen"]
    names = list(scores)
    lines = [
        "# Physics proxies' variants by cross-validation inside the training rows (`benchmarks/nlo_proxy_cv.py`)",
        "",
        f"{FOLDS}-fold cross-validated R^2 of log10 sigma (least squares on a cubic in log|m| of each particle, the "
        "signs of the masses and one proxy), train rows only, every neutralino pair. Rule: per proxy, the largest "
        "mean over the processes.",
        "",
        "| variant | mean | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    keys = list(next(iter(scores.values())))
    means = {k: float(np.mean([scores[p][k] for p in names])) for k in keys}
    for k in sorted(keys, key=lambda k: -means[k]):
        mark = " **(chosen)**" if k in chosen.values() else ""
        lines.append(f"| {k}{mark} | {means[k]:.4f} | " + " | ".join(f"{scores[p][k]:.4f}" for p in names) + " |")
    lines += ["", f"Chosen: {chosen}. In use before: {CURRENT}.", ""]
    return "\n".join(lines)


def main() -> int:
    meta = run_metadata("benchmarks/nlo_proxy_cv.py")
    df = load_ewino()
    pairs = [p for p in processes() if p.pdg1 in NEUTRALINOS and p.pdg2 in NEUTRALINOS]
    scores = {}
    for process in pairs:
        scores[str(process)] = score_process(process, df)
        print(str(process), "done", flush=True)
    keys = list(next(iter(scores.values())))
    means = {k: float(np.mean([s[k] for s in scores.values()])) for k in keys}
    chosen = {
        kind: max((k for k in keys if k.startswith(f"{kind}:")), key=means.__getitem__).split(":", 1)[1]
        for kind in ("proxy", "lpint")
    }
    out = {"benchmark": finish_metadata(meta), "folds": FOLDS, "seed": SEED, "scores": scores, "means": means}
    out["chosen"] = {k: f"{k}:{v}" for k, v in chosen.items()}
    out["current"] = CURRENT
    write(JSON_PATH, out, markdown(out))
    print(f"chosen {chosen}; current {CURRENT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
