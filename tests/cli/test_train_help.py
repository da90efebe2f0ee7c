"""``sigmabnn train --help`` states the library's defaults as they are (the help does not import JAX, so it
cannot read them: these tests tie its numbers to the constants)."""

from __future__ import annotations

import re

import pytest

from sigmabnn.cli.main import build_parser
from sigmabnn.fitting.spec import AUTO_RECALIBRATION_MAP, auto_dtype, auto_recalibration
from sigmabnn.model.build import DEFAULT_HIDDEN
from sigmabnn.names import MIN_RECALIBRATION_ROWS
from sigmabnn.train.mcmc import CHEES_DEFAULTS, chees_max_tree_depth, chees_num_warmup, default_config


@pytest.fixture(scope="module")
def text() -> str:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return " ".join(sub.choices["train"].format_help().split())


def _steps(depth: int) -> int:
    return 2**depth - 1


def test_the_description_states_the_default_sampler_and_its_row_rule(text):
    widths = "-".join(str(w) for w in DEFAULT_HIDDEN)
    assert f"a NFEATURES-{widths}-1 tanh network sampled by ChEES-HMC in {auto_dtype('chees', 'gaussian')}" in text
    c = CHEES_DEFAULTS
    assert f"{c['num_chains']} chains from {c['num_chains']} MAP starts" in text
    assert f"{c['num_warmup']} warm-up iterations and {c['num_samples']} draws each" in text
    assert f"at most {_steps(chees_max_tree_depth(10**6))} leapfrog steps per iteration" in text
    m = re.search(
        r"(\d+) steps up to ([\d,]+) fitted rows, (\d+) up to ([\d,]+), and (\d+) warm-up iterations up to (\d+)", text
    )
    assert m, text
    s8, n8, s9, n9, w, nw = (int(g.replace(",", "")) for g in m.groups())
    assert (s8, s9) == (_steps(chees_max_tree_depth(n8)), _steps(chees_max_tree_depth(n9)))
    assert chees_max_tree_depth(n8 + 1) < chees_max_tree_depth(n8) and chees_max_tree_depth(
        n9 + 1
    ) < chees_max_tree_depth(n9)
    assert w == chees_num_warmup(nw) and chees_num_warmup(nw + 1) == c["num_warmup"] < w


def test_the_recalibration_options_state_the_automatic_rule(text):
    assert (
        auto_recalibration("chees", "gaussian", None) == "heldout"
        and auto_recalibration("bbb", "gaussian", None) is None
    )
    assert f"an MCMC regression does so when it has at least {MIN_RECALIBRATION_ROWS} validation rows" in text
    assert f"recalibrated on the validation rows when there are at least {MIN_RECALIBRATION_ROWS}" in text
    assert AUTO_RECALIBRATION_MAP == "quantile" and "the empirical one (quantile; the default)" in text
    assert "leave-one-out PIT (loo" in text and "default without this option: MCMC methods recalibrate on" not in text


def test_the_draws_and_chains_defaults(text):
    nuts = default_config(1000, 100, "nuts")
    assert f"default {CHEES_DEFAULTS['num_samples']} for chees, {nuts.num_samples} for nuts, hmc, mh" in text
    assert f"default {CHEES_DEFAULTS['num_chains']} for chees, {nuts.num_chains} for nuts, hmc, mh" in text
