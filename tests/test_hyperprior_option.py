"""The ``hyperprior`` fit option: the Gamma priors of the Gibbs-sampled precisions, given as a dict of
fields or a :class:`HyperPrior`, checked where they enter, reaching the sampler and recorded in the model."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sigmabnn.api import fit
from sigmabnn.errors import InputError
from sigmabnn.train.gibbs import HyperPrior

SMALL = {"num_chains": 2, "num_warmup": 40, "num_samples": 40, "map": {"num_steps": 200}, "progress": False}


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (160, 2))
    df = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": 2 * x[:, 0] - x[:, 1] + 0.1 * rng.standard_normal(160)})
    path = tmp_path_factory.mktemp("hp") / "t.csv"
    df.to_csv(path, index=False)
    return str(path)


def test_from_json_replaces_fields_and_refuses_bad_values():
    hp = HyperPrior.from_json({"noise_rate": 0.1, "noise_shape": 2})
    assert hp == HyperPrior(noise_shape=2.0, noise_rate=0.1) and isinstance(hp.noise_shape, float)
    assert HyperPrior.from_json({"bias_rate": 3}, base=hp).noise_rate == 0.1  # the base's other fields kept
    for bad, word in (({"noise_rat": 1}, "unknown"), ({"noise_rate": 0}, "positive"),
                      ({"noise_rate": math.inf}, "positive"), ({"weight_shape": True}, "positive"),
                      ({"noise_rate": "1"}, "positive")):  # fmt: skip
        with pytest.raises(ValueError, match=word):
            HyperPrior.from_json(bad)


def test_a_tight_noise_prior_reaches_the_sampler_and_the_model_file(table):
    # Gamma(10^4, 100): mean 100, sd 1. The 160 rows add shape 80 and rate SSE / 2 (under 1 in standardised
    # units): the conditional's mean stays within 1 of 100 and its sd near 1, so every draw is within 7 of 100,
    # whatever the data say (alone they give a precision of several hundred, asserted below).
    fitted, _ = fit(table, "y", likelihood="gaussian", hyperprior={"noise_shape": 1e4, "noise_rate": 100.0}, **SMALL)
    tau = np.asarray(fitted.draws.hyper.noise_precision)
    assert np.all(np.abs(tau - 100.0) < 7.0)
    assert fitted.settings["hyperprior_noise_rate"] == 100.0 and fitted.settings["hyperprior_noise_shape"] == 1e4
    default, _ = fit(table, "y", likelihood="gaussian", **SMALL)
    assert default.settings["hyperprior_noise_rate"] == HyperPrior().noise_rate
    assert np.median(np.asarray(default.draws.hyper.noise_precision)) > 150  # the data's own, far from 100


def test_a_hyperprior_object_is_accepted_and_bad_ones_are_one_line_errors(table):
    fitted, _ = fit(table, "y", likelihood="gaussian", hyperprior=HyperPrior(noise_rate=0.5), **SMALL)
    assert fitted.settings["hyperprior_noise_rate"] == 0.5
    for bad in ({"noise_rat": 1}, {"noise_rate": -1.0}, 3):
        with pytest.raises(InputError) as err:
            fit(table, "y", hyperprior=bad, **SMALL)
        assert "\n" not in str(err.value) and "hyperprior" in str(err.value)
