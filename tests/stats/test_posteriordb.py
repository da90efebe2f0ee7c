"""posteriordb reference posteriors: the log-densities (quick) and sigmabnn's NUTS against them (slow).

Quick tests check each unconstrained log-density of :mod:`targets.posteriordb`
against an independent computation: scipy.stats on the constrained scale plus
the log-determinant of a finite-difference Jacobian of the constraining map.
Slow tests sample each posterior with :func:`sigmabnn.mcmc.run.sample` (NUTS,
4 chains, 1000 warm-up + 1000 draws) and compare posterior means and standard
deviations with the reference draws within Monte-Carlo error
(:func:`targets.posteriordb.compare_moments`).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special, stats

from targets import posteriordb as pdb

# --------------------------------------------------------------------------- independent reference (numpy/scipy)


def _unconstrain(name: str, p: dict[str, float], data: dict) -> np.ndarray:
    """Reference-draw values (constrained, reference names) -> unconstrained z."""
    if name.startswith("eight_schools"):
        j = int(data["J"])
        theta = np.array([p[f"theta[{i + 1}]"] for i in range(j)])
        return np.concatenate([(theta - p["mu"]) / p["tau"], [p["mu"], np.log(p["tau"])]])
    if name.startswith("diamonds"):
        b = [p[f"b[{i + 1}]"] for i in range(len(p) - 2)]
        return np.array([*b, p["Intercept"], np.log(p["sigma"])])
    if name.startswith("arK"):
        beta = [p[f"beta[{i + 1}]"] for i in range(int(data["K"]))]
        return np.array([p["alpha"], *beta, np.log(p["sigma"])])
    if name.startswith("garch"):
        a1 = p["alpha1"]
        return np.array([p["mu"], np.log(p["alpha0"]), special.logit(a1), special.logit(p["beta1"] / (1 - a1))])
    if name.startswith("low_dim_gauss_mix"):
        return np.array(
            [
                p["mu[1]"],
                np.log(p["mu[2]"] - p["mu[1]"]),
                np.log(p["sigma[1]"]),
                np.log(p["sigma[2]"]),
                special.logit(p["theta"]),
            ]
        )
    if name.startswith("sblrc"):
        beta = [p[f"beta[{i + 1}]"] for i in range(int(data["D"]))]
        return np.array([*beta, np.log(p["sigma"])])
    raise AssertionError(name)


def _constrained_vector(name: str, z: np.ndarray) -> np.ndarray:
    """The bijection z -> (model parameters, constrained) written independently in numpy."""
    z = np.asarray(z, np.float64)
    if name.startswith("eight_schools") or name.startswith("diamonds") or name.startswith("arK"):
        return np.concatenate([z[:-1], [np.exp(z[-1])]])
    if name.startswith("sblrc"):
        return np.concatenate([z[:-1], [np.exp(z[-1])]])
    if name.startswith("garch"):
        a1 = 1 / (1 + np.exp(-z[2]))
        return np.array([z[0], np.exp(z[1]), a1, (1 - a1) / (1 + np.exp(-z[3]))])
    if name.startswith("low_dim_gauss_mix"):
        return np.array([z[0], z[0] + np.exp(z[1]), np.exp(z[2]), np.exp(z[3]), 1 / (1 + np.exp(-z[4]))])
    raise AssertionError(name)


def _log_det_jacobian(name: str, z: np.ndarray, h: float = 1e-6) -> float:
    d = z.size
    jac = np.empty((d, d))
    for i in range(d):
        e = np.zeros(d)
        e[i] = h
        jac[:, i] = (_constrained_vector(name, z + e) - _constrained_vector(name, z - e)) / (2 * h)
    sign, logdet = np.linalg.slogdet(jac)
    assert sign > 0
    return float(logdet)


def _reference_logp(name: str, v: np.ndarray, data: dict) -> float:
    """Log posterior density on the constrained scale (scipy.stats, loops), full constants."""
    if name.startswith("eight_schools"):
        j = int(data["J"])
        theta_trans, mu, tau = v[:j], v[j], v[j + 1]
        y, sigma = np.asarray(data["y"]), np.asarray(data["sigma"])
        return (
            stats.norm.logpdf(theta_trans).sum()
            + stats.norm.logpdf(mu, 0, 5)
            + stats.halfcauchy.logpdf(tau, scale=5)
            + sum(stats.norm.logpdf(y[i], mu + tau * theta_trans[i], sigma[i]) for i in range(j))
        )
    if name.startswith("diamonds"):
        x, y = np.asarray(data["X"]), np.asarray(data["Y"])
        k = int(data["K"])
        xc = np.stack([x[:, c] - x[:, c].mean() for c in range(1, k)], axis=1)
        b, intercept, sigma = v[: k - 1], v[k - 1], v[k]
        return (
            stats.norm.logpdf(y, intercept + xc @ b, sigma).sum()
            + stats.norm.logpdf(b, 0, 1).sum()
            + stats.t.logpdf(intercept, 3, 8, 10)
            + np.log(2) + stats.t.logpdf(sigma, 3, 0, 10)
        )  # fmt: skip
    if name.startswith("arK"):
        k, y = int(data["K"]), np.asarray(data["y"])
        alpha, beta, sigma = v[0], v[1 : k + 1], v[k + 1]
        lp = stats.norm.logpdf(alpha, 0, 10) + stats.norm.logpdf(beta, 0, 10).sum()
        lp += stats.halfcauchy.logpdf(sigma, scale=2.5)
        for t in range(k, y.size):
            mu = alpha + sum(beta[m] * y[t - m - 1] for m in range(k))
            lp += stats.norm.logpdf(y[t], mu, sigma)
        return lp
    if name.startswith("garch"):
        y = np.asarray(data["y"])
        mu, alpha0, alpha1, beta1 = v
        sigma = float(data["sigma1"])
        lp = stats.norm.logpdf(y[0], mu, sigma)
        for t in range(1, y.size):
            sigma = np.sqrt(alpha0 + alpha1 * (y[t - 1] - mu) ** 2 + beta1 * sigma**2)
            lp += stats.norm.logpdf(y[t], mu, sigma)
        return lp
    if name.startswith("low_dim_gauss_mix"):
        y = np.asarray(data["y"])
        mu1, mu2, s1, s2, theta = v
        lik = np.logaddexp(
            np.log(theta) + stats.norm.logpdf(y, mu1, s1), np.log1p(-theta) + stats.norm.logpdf(y, mu2, s2)
        )
        return (
            lik.sum()
            + stats.halfnorm.logpdf([s1, s2], scale=2).sum()
            + stats.norm.logpdf([mu1, mu2], 0, 2).sum()
            + stats.beta.logpdf(theta, 5, 5)
        )
    if name.startswith("sblrc"):
        x, y = np.asarray(data["X"]), np.asarray(data["y"])
        beta, sigma = v[:-1], v[-1]
        return (
            stats.norm.logpdf(beta, 0, 10).sum()
            + stats.halfnorm.logpdf(sigma, scale=10)
            + stats.norm.logpdf(y, x @ beta, sigma).sum()
        )
    raise AssertionError(name)


def _reference_draw(ref: dict[str, np.ndarray], chain: int, draw: int) -> dict[str, float]:
    return {k: float(v[chain, draw]) for k, v in ref.items()}


# --------------------------------------------------------------------------- quick tests


@pytest.mark.parametrize("name", pdb.NAMES)
def test_logdensity_matches_scipy_plus_jacobian(name, shared_data):
    target = pdb.load_target(name, shared_data)
    ref, ref_ess = pdb.load_reference(name, shared_data)
    data = pdb.load_data(name, shared_data)
    assert set(ref_ess) == set(ref)
    points = [_reference_draw(ref, c, d) for c, d in ((0, 0), (3, 500), (9, 999))]
    zs = [_unconstrain(name, p, data) for p in points]
    value_and_grad = jax.jit(jax.value_and_grad(target.logdensity))
    evaluated = [value_and_grad(jnp.asarray(z)) for z in zs]
    ours = np.array([float(v) for v, _ in evaluated])
    for _, grad in evaluated:
        assert grad.shape == (target.dim,) and bool(jnp.all(jnp.isfinite(grad)))
    theirs = np.array(
        [_reference_logp(name, _constrained_vector(name, z), data) + _log_det_jacobian(name, z) for z in zs]
    )
    assert np.all(np.isfinite(ours))
    # equal up to one additive constant (normalising constants are dropped)
    np.testing.assert_allclose(ours - ours[0], theirs - theirs[0], atol=1e-5)
    # a point that is not a posterior draw moves the density by the same amount
    z_far = zs[0] + 0.3
    far = float(value_and_grad(jnp.asarray(z_far))[0])
    far_ref = _reference_logp(name, _constrained_vector(name, z_far), data) + _log_det_jacobian(name, z_far)
    assert far - ours[0] == pytest.approx(far_ref - theirs[0], abs=1e-5)


@pytest.mark.parametrize("name", pdb.NAMES)
def test_constrain_roundtrips_reference_names(name, shared_data):
    target = pdb.load_target(name, shared_data)
    ref, _ = pdb.load_reference(name, shared_data)
    data = pdb.load_data(name, shared_data)
    zs = np.stack([_unconstrain(name, _reference_draw(ref, c, 7), data) for c in range(3)])
    assert zs.shape == (3, target.dim)
    values = target.constrain(jnp.asarray(zs))  # batched: leading axes are kept
    assert set(values) == set(ref)
    for key, value in values.items():
        np.testing.assert_allclose(np.asarray(value), ref[key][:3, 7], rtol=1e-9, atol=1e-9, err_msg=key)


def test_compare_moments_detects_a_shifted_sampler(shared_data):
    ref, ref_ess = pdb.load_reference("sblrc-blr", shared_data)
    # four chains of 1000 reference draws each stand in for a sampler: they pass ...
    ours = {k: v[:4] for k, v in ref.items()}
    rest = {k: v[4:] for k, v in ref.items()}
    rest_ess = {k: 6000.0 for k in ref}
    failures, rows = pdb.compare_moments(ours, rest, rest_ess)
    assert failures == [], failures
    assert len(rows) == len(ref)
    # ... and fail once one mean moves by one posterior sd, or one sd is inflated by 20%
    shifted = dict(ours, sigma=ours["sigma"] + ours["sigma"].std())
    failures, _ = pdb.compare_moments(shifted, rest, rest_ess)
    assert [f.split(":")[0] for f in failures] == ["sigma"]
    m = ours["beta[2]"].mean()
    wide = dict(ours, **{"beta[2]": m + 1.2 * (ours["beta[2]"] - m)})
    failures, _ = pdb.compare_moments(wide, rest, rest_ess)
    assert len(failures) == 1 and failures[0].startswith("beta[2]: sd")


# --------------------------------------------------------------------------- slow: sigmabnn NUTS


def _run_nuts(target: pdb.Target, seed: int, dense_mass: bool):
    from sigmabnn.mcmc import run
    from sigmabnn.mcmc.registry import make_algorithm

    key_init, key_run = jax.random.split(jax.random.key(seed))
    # Stan's default initialisation: uniform(-2, 2) on the unconstrained scale
    init = jax.random.uniform(key_init, (4, target.dim), jnp.float64, minval=-2.0, maxval=2.0)
    return run.sample(
        key_run,
        make_algorithm("nuts", dense_mass=dense_mass, max_tree_depth=10),
        lambda z, hyper: target.logdensity(z),
        init,
        None,
        run.RunConfig(num_warmup=1000, num_samples=1000),
        progress=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", pdb.NAMES)
def test_nuts_matches_reference_moments(name, shared_data):
    from sigmabnn.evaluate import diagnostics as diag

    target = pdb.load_target(name, shared_data)
    ref, ref_ess = pdb.load_reference(name, shared_data)
    start = time.perf_counter()
    result = _run_nuts(target, seed=20240611, dense_mass=name.startswith("diamonds"))
    positions = np.asarray(result.positions)
    elapsed = time.perf_counter() - start
    assert positions.shape == (4, 1000, target.dim)
    draws = {k: np.asarray(v) for k, v in target.constrain(jnp.asarray(positions)).items()}

    failures, rows = pdb.compare_moments(draws, ref, ref_ess)
    summary = diag.summarize(
        parameters=positions, log_posterior=np.asarray(result.info.logdensity), info=result.info, max_tree_depth=10
    )
    sampler = summary["sampler"]
    print(
        f"\n{name}: {elapsed:.1f} s, min ESS {min(r['ess'] for r in rows):.0f}, "
        f"mean steps {float(np.mean(result.info.num_integration_steps)):.1f}, "
        f"divergent {sampler['num_divergent']}, warnings: {diag.warnings(summary)}"
    )
    assert failures == [], "; ".join(failures)
    assert summary["parameters"]["max_rhat"] < 1.05, summary["parameters"]["max_rhat"]
    assert sampler["divergent_fraction"] < 0.01, sampler["num_divergent"]
    assert min(sampler["ebfmi"]) > 0.3, sampler["ebfmi"]
