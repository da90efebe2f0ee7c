"""The neutralino pairs' contact-term factor of ``lpint`` (a feature choice made on held-out training rows)."""

from __future__ import annotations

import pytest

from sigmabnn.data.features import as_derived
from sigmabnn.physics.amplitude_features import RESONANCE_CONTACT, recommended_features, resonance_features


def _helpers(features):
    return {as_derived(f).name: as_derived(f).expression for f in features}


def test_default_is_the_cross_validated_choice():
    assert RESONANCE_CONTACT == 0.5  # benchmarks/results/nlo_proxy_cv.md
    assert resonance_features("1000022,1000022") == resonance_features("1000022,1000022", contact=0.5)
    assert recommended_features("1000022,1000022")[-1] == resonance_features("1000022,1000022")[-1]


@pytest.mark.parametrize("process", ["1000022,1000022", "1000023,1000035"])
def test_factor_one_halves_every_contact_term_and_nothing_else(process):
    two, one = _helpers(resonance_features(process, contact=2.0)), _helpers(resonance_features(process, contact=1.0))
    assert two.keys() == one.keys()
    changed = {k for k in two if two[k] != one[k]}
    assert changed == {"_b_uL", "_b_dL", "_b_uR", "_b_dR"}
    for k in changed:
        assert two[k].startswith(("2*", "-2*")) and one[k].startswith(("1*", "-1*"))


def test_processes_with_a_chargino_do_not_depend_on_it():
    for process in ("1000023,1000024", "1000024,-1000037"):
        assert recommended_features(process, contact=1.0) == recommended_features(process)
