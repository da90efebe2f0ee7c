"""A slow, plain-Python, recursive NUTS transition: the reference for :mod:`sigmabnn.mcmc.nuts`.

Written from the recursive definition (Hoffman & Gelman 2014, Algorithm 6 with
multinomial sampling and the generalized U-turn criterion of Betancourt 2017,
arXiv:1701.02434, as in Stan's ``base_nuts`` including the checks across the
boundary of merged subtrees), with the tree logic, momentum sums and U-turn
tests done in NumPy float64 and Python control flow. Only the leapfrog step
and the metric come from the library (they are tested on their own), so a
disagreement with the iterative kernel points at the tree bookkeeping.

Random numbers are consumed exactly as documented in :mod:`sigmabnn.mcmc.nuts`:
``key_momentum, key_tree = split(rng_key)``; doubling ``j`` splits
``fold_in(key_tree, j)`` into (direction, subtree, accept) keys; leaf ``n`` of
the subtree uses ``uniform(fold_in(key_subtree, n))`` for progressive uniform
sampling within the subtree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn.mcmc.integrators import IntegratorState, velocity_verlet
from sigmabnn.mcmc.metrics import gaussian_euclidean


@partial(jax.jit, static_argnums=0)
def _leapfrog(logdensity_fn, state: IntegratorState, step_size, inverse_mass_matrix):
    """One library leapfrog step, plus the velocity at the new point."""
    metric = gaussian_euclidean(inverse_mass_matrix)
    new = velocity_verlet(logdensity_fn, metric)(state, step_size)
    return new, metric.velocity(new.momentum)


@jax.jit
def _leaf_uniform(key_subtree, leaf):
    return jax.random.uniform(jax.random.fold_in(key_subtree, leaf), (), jnp.float64)


def _turning(v_left: np.ndarray, v_right: np.ndarray, rho: np.ndarray) -> bool:
    return not (float(v_left @ rho) > 0 and float(v_right @ rho) > 0)


@dataclass
class _Tree:
    rho: np.ndarray
    p_beg: np.ndarray
    v_beg: np.ndarray
    p_end: np.ndarray
    v_end: np.ndarray
    valid: bool


@dataclass
class ReferenceResult:
    position: np.ndarray
    logdensity: float
    energy: float
    acceptance_rate: float
    is_divergent: bool
    num_integration_steps: int
    tree_depth: int
    num_trajectory_expansions: int
    stop_reason: str  # divergent | subtree-ends | subtree-boundary | merged-ends | merged-boundary | max-depth


def nuts_reference(
    rng_key,
    position,
    logdensity_fn,
    step_size: float,
    inverse_mass_matrix,
    max_tree_depth: int = 10,
    divergence_threshold: float = 1000.0,
) -> ReferenceResult:
    """One NUTS transition from ``position`` (float64), recursively."""
    position = jnp.asarray(position, jnp.float64)
    imm = jnp.asarray(inverse_mass_matrix, jnp.float64)
    metric = gaussian_euclidean(imm)

    key_momentum, key_tree = jax.random.split(rng_key)
    logdensity, grad = jax.value_and_grad(logdensity_fn)(position)
    p0 = metric.sample_momentum(key_momentum, position)
    z0 = IntegratorState(position, p0, logdensity, grad)
    v0 = np.asarray(metric.velocity(p0))
    H0 = 0.5 * float(np.asarray(p0) @ v0) - float(logdensity)

    # mutable bookkeeping shared by the recursion
    ctx = {
        "z": None,  # current end of the subtree being built
        "n_leapfrog": 0,
        "sum_accept": 0.0,
        "divergent": False,
        "leaf": 0,
        "sub_lsw": -math.inf,
        "sub_proposal": None,
        "key_subtree": None,
        "sign": 1.0,
        "stop": None,  # why the transition ended (see ReferenceResult.stop_reason)
    }

    def leaf() -> _Tree:
        z, v = _leapfrog(logdensity_fn, ctx["z"], ctx["sign"] * step_size, imm)
        ctx["z"] = z
        ctx["n_leapfrog"] += 1
        p = np.asarray(z.momentum)
        v = np.asarray(v)
        h = 0.5 * float(p @ v) - float(z.logdensity)
        finite = math.isfinite(h) and bool(np.all(np.isfinite(np.asarray(z.logdensity_grad))))
        if not finite:
            h = math.inf
        if h - H0 > divergence_threshold:
            ctx["divergent"] = True
            ctx["stop"] = "divergent"
        log_w = H0 - h
        ctx["sum_accept"] += math.exp(min(log_w, 0.0))
        new_lsw = np.logaddexp(ctx["sub_lsw"], log_w)
        u = float(_leaf_uniform(ctx["key_subtree"], ctx["leaf"]))
        if finite and u < math.exp(log_w - new_lsw):
            ctx["sub_proposal"] = (z, h)
        ctx["sub_lsw"] = new_lsw
        ctx["leaf"] += 1
        return _Tree(rho=p.copy(), p_beg=p, v_beg=v, p_end=p, v_end=v, valid=not ctx["divergent"])

    def build_tree(depth: int) -> _Tree:
        if depth == 0:
            return leaf()
        init = build_tree(depth - 1)
        if not init.valid:
            return init
        final = build_tree(depth - 1)
        if not final.valid:
            return final
        rho = init.rho + final.rho
        if _turning(init.v_beg, final.v_end, rho):
            turning, ctx["stop"] = True, "subtree-ends"
        elif _turning(init.v_beg, final.v_beg, init.rho + final.p_beg) or _turning(
            init.v_end, final.v_end, final.rho + init.p_end
        ):
            turning, ctx["stop"] = True, "subtree-boundary"
        else:
            turning = False
        return _Tree(
            rho=rho, p_beg=init.p_beg, v_beg=init.v_beg, p_end=final.p_end, v_end=final.v_end, valid=not turning
        )

    left = right = (z0, v0)
    rho = np.asarray(p0).copy()
    log_sum_weight = 0.0
    sample = (z0, H0)
    depth = 0
    expansions = 0
    while expansions < max_tree_depth:
        key_direction, key_subtree, key_accept = jax.random.split(jax.random.fold_in(key_tree, expansions), 3)
        forward = bool(jax.random.bernoulli(key_direction))
        start, far = (right, left) if forward else (left, right)
        ctx.update(z=start[0], leaf=0, sub_lsw=-math.inf, sub_proposal=None, key_subtree=key_subtree)
        ctx["sign"] = 1.0 if forward else -1.0
        tree = build_tree(depth)
        expansions += 1
        if not tree.valid:
            break
        depth += 1
        u = float(jax.random.uniform(key_accept, (), jnp.float64))
        if u < math.exp(ctx["sub_lsw"] - log_sum_weight):
            sample = ctx["sub_proposal"]
        log_sum_weight = float(np.logaddexp(log_sum_weight, ctx["sub_lsw"]))
        rho_total = rho + tree.rho
        start_p = np.asarray(start[0].momentum)
        if _turning(far[1], tree.v_end, rho_total):
            ctx["stop"] = "merged-ends"
        elif _turning(far[1], tree.v_beg, rho + tree.p_beg) or _turning(start[1], tree.v_end, tree.rho + start_p):
            ctx["stop"] = "merged-boundary"
        turning = ctx["stop"] is not None
        end = (ctx["z"], tree.v_end)
        if forward:
            right = end
        else:
            left = end
        rho = rho_total
        if turning:
            break

    z, energy = sample
    return ReferenceResult(
        position=np.asarray(z.position),
        logdensity=float(z.logdensity),
        energy=float(energy),
        acceptance_rate=ctx["sum_accept"] / ctx["n_leapfrog"],
        is_divergent=bool(ctx["divergent"]),
        num_integration_steps=int(ctx["n_leapfrog"]),
        tree_depth=depth,
        num_trajectory_expansions=expansions,
        stop_reason=ctx["stop"] or "max-depth",
    )
