"""Sampler names -> :class:`~sigmabnn.mcmc.algorithm.SamplingAlgorithm`: the one place a kernel name is read.

A configuration names its kernel (``"nuts"``, ``"hmc"``, ``"chees"``, ``"mh"``);
:func:`make_algorithm` turns the name and the kernel settings into the algorithm value the
runner (:func:`sigmabnn.mcmc.run.sample`) takes. Nothing downstream looks at the name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from sigmabnn.mcmc import chees, hmc, mh, nuts
from sigmabnn.mcmc.algorithm import SamplingAlgorithm
from sigmabnn.mcmc.window import window_adaptation


class _Settings(NamedTuple):
    """The settings of :func:`make_algorithm`, read by the factories below."""

    target_accept: float | None
    dense_mass: bool
    initial_step_size: float
    max_tree_depth: int
    num_integration_steps: int
    random_direction: bool
    max_integration_steps: int | None
    chees_centre: str
    chees_acceptance: str
    step_size_jitter: float


def _nuts(s: _Settings) -> SamplingAlgorithm:
    return window_adaptation(
        nuts.sampler(int(s.max_tree_depth)),
        target_accept=s.target_accept,
        dense_mass=s.dense_mass,
        initial_step_size=s.initial_step_size,
    )


def _hmc(s: _Settings) -> SamplingAlgorithm:
    return window_adaptation(
        hmc.sampler(int(s.num_integration_steps), bool(s.random_direction), step_size_jitter=float(s.step_size_jitter)),
        target_accept=s.target_accept,
        dense_mass=s.dense_mass,
        initial_step_size=s.initial_step_size,
    )


def _mh(s: _Settings) -> SamplingAlgorithm:
    return window_adaptation(
        mh.sampler(), target_accept=s.target_accept, dense_mass=s.dense_mass, initial_step_size=s.initial_step_size
    )


def _chees(s: _Settings) -> SamplingAlgorithm:
    if s.dense_mass:
        raise ValueError("kernel 'chees' adapts a diagonal mass matrix (dense_mass=False)")
    max_num_steps = 2 ** int(s.max_tree_depth) - 1 if s.max_integration_steps is None else s.max_integration_steps
    if int(s.num_integration_steps) < 1 or int(max_num_steps) < 1:
        raise ValueError("kernel 'chees' needs num_integration_steps >= 1 and max_integration_steps >= 1")
    return chees.algorithm(
        target_accept=s.target_accept,
        initial_step_size=s.initial_step_size,
        initial_num_steps=int(s.num_integration_steps),
        max_num_steps=int(max_num_steps),
        centre=s.chees_centre,
        acceptance=s.chees_acceptance,
    )


ALGORITHMS: dict[str, Callable[[_Settings], SamplingAlgorithm]] = {
    "nuts": _nuts,
    "hmc": _hmc,
    "mh": _mh,
    "chees": _chees,
}
"""Kernel name -> factory of its :class:`~sigmabnn.mcmc.algorithm.SamplingAlgorithm`."""

KERNELS: tuple[str, ...] = tuple(ALGORITHMS)
"""The kernel names :func:`make_algorithm` knows (the MCMC method names of the fit API)."""


def make_algorithm(
    kernel: str,
    *,
    target_accept: float | None = None,
    dense_mass: bool = False,
    initial_step_size: float = 1.0,
    max_tree_depth: int = 10,
    num_integration_steps: int = 32,
    random_direction: bool = False,
    max_integration_steps: int | None = None,
    chees_centre: str = "chains",
    chees_acceptance: str = "harmonic",
    step_size_jitter: float = 0.0,
) -> SamplingAlgorithm:
    """The sampling algorithm named ``kernel``, with its settings (the same object for the same settings).

    Args:
        kernel: ``"nuts"``, ``"hmc"`` or ``"mh"`` (each chain adapts its own step size and inverse
            mass matrix in Stan's windows: :func:`~sigmabnn.mcmc.window.window_adaptation`), or
            ``"chees"`` (ChEES-HMC, :func:`sigmabnn.mcmc.chees.algorithm`: all chains share one
            step size, diagonal mass matrix and jittered trajectory length, adapted across chains;
            its ``adapted`` is a :class:`~sigmabnn.mcmc.chees.ChEESAdaptedParameters`).
        target_accept: dual-averaging target (default: nuts 0.8, hmc 0.8, mh 0.234; chees 0.651 for
            the harmonic mean of the chains' acceptance probabilities).
        dense_mass: adapt a dense inverse mass matrix ``[d, d]`` (default: diagonal ``[d]``; not chees).
        initial_step_size: start of the step-size heuristic.
        max_tree_depth: NUTS maximal tree depth; chees: the default cap ``2**max_tree_depth - 1``
            on the leapfrog steps of one iteration.
        num_integration_steps: HMC leapfrog steps per transition (chees: the initial trajectory
            length, in steps of the initial step size).
        random_direction: HMC integrates forwards or backwards in time at random.
        max_integration_steps: chees only: cap on the leapfrog steps of one iteration.
        chees_centre: chees only: where its criterion measures squared distances from,
            ``"chains"`` or ``"within"`` (:func:`sigmabnn.mcmc.chees.algorithm`'s ``centre``).
        chees_acceptance: chees only: the statistic of the chains' acceptance its step size targets,
            ``"harmonic"``, ``"mean"`` or ``"harmonic-running"`` (:func:`sigmabnn.mcmc.chees.algorithm`'s
            ``acceptance``).
        step_size_jitter: hmc only: each transition's step size is scaled by ``1 + j u``, ``u``
            uniform in ``(-1, 1)`` (:func:`sigmabnn.mcmc.hmc.sampler`; 0: no jitter).

    Raises:
        ValueError: an unknown kernel or invalid settings (one-line message).
    """
    if kernel not in ALGORITHMS:
        raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    settings = _Settings(
        target_accept=None if target_accept is None else float(target_accept),
        dense_mass=bool(dense_mass),
        initial_step_size=float(initial_step_size),
        max_tree_depth=max_tree_depth,
        num_integration_steps=num_integration_steps,
        random_direction=random_direction,
        max_integration_steps=max_integration_steps,
        chees_centre=chees_centre,
        chees_acceptance=chees_acceptance,
        step_size_jitter=step_size_jitter,
    )
    return ALGORITHMS[kernel](settings)
