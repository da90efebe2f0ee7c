"""Figures (matplotlib, Agg): built on :class:`matplotlib.figure.Figure`, never pyplot.

No global backend switch and no GUI: each function builds its own figure,
renders it with the Agg canvas and writes the file atomically (temporary name,
then rename), so an interrupted run never leaves a half-written image.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["save_figure", "toy_figure"]


def save_figure(fig: Figure, path: str | os.PathLike[str], dpi: int = 110) -> Path:
    """Render ``fig`` with Agg and write it to ``path`` atomically (format from the suffix)."""
    path = Path(path)
    FigureCanvasAgg(fig)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fig.savefig(fh, format=path.suffix.lstrip(".") or "png", dpi=dpi)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def toy_figure(
    path: str | os.PathLike[str],
    *,
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_grid: np.ndarray,
    y_true: np.ndarray,
    network_means: np.ndarray,
    mean: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    level: float = 0.95,
    title: str = "",
    domain: tuple[float, float] = (-10.0, 10.0),
) -> Path:
    """Two panels for one toy function (as in the Maz 2018 figures).

    Left: the outputs of several sampled networks, ``network_means`` ``[k, m]``
    on ``x_grid`` ``[m]``. Right: predictive mean with the central ``level``
    interval ``[lower, upper]`` (each ``[m]``), the training points and the
    true function ``y_true`` ``[m]``. The training domain is shaded.
    The y range is set by the training data (with margin) so that the
    singular functions (10/x, log x^2) do not flatten the plot.
    """
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    ax_nets, ax_pred = fig.subplots(1, 2, sharey=True)
    y_lo, y_hi = float(np.min(y_train)), float(np.max(y_train))
    pad = 0.6 * (y_hi - y_lo) + 1.0
    ylim = (y_lo - pad, y_hi + pad)

    colors = [f"C{i % 10}" for i in range(len(network_means))]
    for curve, color in zip(network_means, colors):
        ax_nets.plot(x_grid, curve, color=color, lw=1.0, alpha=0.8)
    ax_nets.set_title(f"{len(network_means)} sampled networks")

    ax_pred.fill_between(x_grid, lower, upper, color="C0", alpha=0.25, lw=0, label=f"{level:.0%} interval")
    ax_pred.plot(x_grid, mean, color="C0", lw=1.6, label="predictive mean")
    # Points outside the plotted range are left out, so a pole (10/x) is not drawn as a vertical line.
    visible = np.where((y_true >= ylim[0]) & (y_true <= ylim[1]), y_true, np.nan)
    ax_pred.plot(x_grid, visible, color="C3", lw=1.2, ls="--", label="true function")
    ax_pred.set_title("prediction")

    for ax in (ax_nets, ax_pred):
        ax.axvspan(domain[0], domain[1], color="0.93", zorder=0)
        ax.scatter(x_train, y_train, s=10, color="k", zorder=5, label="training points")
        ax.set_xlim(float(x_grid[0]), float(x_grid[-1]))
        ax.set_ylim(*ylim)
        ax.set_xlabel("x")
    ax_nets.set_ylabel("y")
    ax_pred.legend(loc="upper left", fontsize=8, framealpha=0.9)
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)
