"""Convergence figures: traces, rank plots and autocorrelation of chains (matplotlib, Agg).

Each function takes plain arrays ``[C, S]`` (chains, draws) of one or more
named scalar quantities (e.g. the log posterior and the prediction at the
input with the worst R-hat), draws one row per quantity and writes the file
atomically through :func:`sigmabnn.plots.save_figure`.

Rank plots follow Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021,
"Rank-normalization, folding, and localization", Bayesian Analysis 16(2)):
all draws are ranked together, and the ranks of each chain are histogrammed;
well-mixed chains give flat histograms, a chain that sits elsewhere or mixes
slowly gives a sloped or humped one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from sigmabnn.plots import save_figure

__all__ = ["autocorrelation_figure", "rank_figure", "ranks", "trace_figure"]


def _rows(quantities: Mapping[str, np.ndarray]) -> list[tuple[str, np.ndarray]]:
    rows = []
    for name, values in quantities.items():
        arr = np.asarray(values, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] < 2:
            raise ValueError(f"{name}: expected [chain, draw] with at least 2 draws, got shape {arr.shape}")
        rows.append((name, arr))
    if not rows:
        raise ValueError("nothing to plot")
    return rows


def _figure(num_rows: int, num_cols: int = 1, width: float = 9.0) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(width, 2.6 * num_rows + 0.4), layout="constrained")
    axes = np.asarray(fig.subplots(num_rows, num_cols, squeeze=False))
    return fig, axes


def trace_figure(path: str | os.PathLike[str], quantities: Mapping[str, np.ndarray], title: str = "") -> Path:
    """One row per quantity: its value against the draw index, one line per chain."""
    rows = _rows(quantities)
    fig, axes = _figure(len(rows))
    for ax, (name, arr) in zip(axes[:, 0], rows):
        for c, chain in enumerate(arr):
            ax.plot(np.arange(chain.size), chain, lw=0.7, alpha=0.8, color=f"C{c % 10}", label=f"chain {c}")
        ax.set_ylabel(name)
        ax.set_xlabel("draw")
    axes[0, 0].legend(loc="upper right", fontsize="small", ncols=min(4, rows[0][1].shape[0]))
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


def ranks(values: np.ndarray) -> np.ndarray:
    """Ranks ``0..C*S-1`` of ``values`` ``[C, S]`` among all draws pooled (ties by order), shape ``[C, S]``."""
    arr = np.asarray(values, dtype=np.float64)
    order = np.argsort(arr.ravel(), kind="stable")
    out = np.empty(arr.size, dtype=np.int64)
    out[order] = np.arange(arr.size)
    return out.reshape(arr.shape)


def rank_figure(
    path: str | os.PathLike[str], quantities: Mapping[str, np.ndarray], title: str = "", bins: int | None = None
) -> Path:
    """One row per quantity, one panel per chain: histograms of the chain's pooled ranks.

    The dashed line is the count each bin would hold for perfectly mixed
    chains (uniform ranks). ``bins`` defaults to about ``S / 10``, between 5 and 30.
    """
    rows = _rows(quantities)
    num_chains = rows[0][1].shape[0]
    fig, axes = _figure(len(rows), num_chains, width=max(6.0, 2.4 * num_chains))
    for r, (name, arr) in enumerate(rows):
        rk = ranks(arr)
        nb = int(bins) if bins else int(min(30, max(5, arr.shape[1] // 10)))
        edges = np.linspace(0, arr.size, nb + 1)
        expected = arr.shape[1] / nb
        for c in range(arr.shape[0]):
            ax = axes[r, c]
            ax.hist(rk[c], bins=edges, color=f"C{c % 10}", alpha=0.8)
            ax.axhline(expected, color="k", ls="--", lw=0.8)
            ax.set_yticks([])
            ax.set_title(f"chain {c}", fontsize="small")
            if c == 0:
                ax.set_ylabel(name)
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)


def autocorrelation_figure(
    path: str | os.PathLike[str],
    autocorrelations: Mapping[str, np.ndarray],
    title: str = "",
    suggested_thin: int | None = None,
) -> Path:
    """One row per quantity: autocorrelation ``rho_k`` ``[C, L]`` against lag ``k``, one line per chain.

    The dotted line marks 0.1, the level of the thinning rule of
    :func:`sigmabnn.evaluate.diagnostics.suggest_thin`; ``suggested_thin``
    (if given) is drawn as a vertical line.
    """
    rows = _rows(autocorrelations)
    fig, axes = _figure(len(rows))
    for ax, (name, rho) in zip(axes[:, 0], rows):
        lags = np.arange(rho.shape[1])
        for c, chain in enumerate(rho):
            ax.plot(lags, chain, lw=0.9, color=f"C{c % 10}", label=f"chain {c}")
        ax.axhline(0.0, color="k", lw=0.6)
        ax.axhline(0.1, color="k", lw=0.6, ls=":")
        if suggested_thin is not None:
            ax.axvline(suggested_thin, color="0.4", lw=0.8, ls="--", label=f"suggested thin {suggested_thin}")
        ax.set_ylabel(f"autocorr. {name}")
        ax.set_xlabel("lag")
        ax.set_ylim(-0.3, 1.05)
    axes[0, 0].legend(loc="upper right", fontsize="small")
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)
