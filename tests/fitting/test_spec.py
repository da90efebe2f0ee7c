"""FitSpec: every invalid option or combination is refused when the spec is built, with fit's one-line message;
the CLI, the API and a checkpoint's record build the same spec."""

from __future__ import annotations

import argparse

import pytest

from sigmabnn.cli import train as cli_train
from sigmabnn.errors import InputError
from sigmabnn.fitting.spec import AUTO_RECALIBRATION_GATE, AUTO_RECALIBRATION_MAP, FitSpec, build_spec, json_value
from sigmabnn.map import MAPConfig
from sigmabnn.names import CLI_METHODS, METHODS

INVALID = [
    ({"seed": -1}, "seed must be an integer from 0 to 2**63 - 1, got -1"),
    ({"seed": True}, "seed must be an integer"),
    ({"method": "gibbs"}, "unknown method 'gibbs'; choose from nuts, hmc, mh, chees, bbb, flipout, ensemble"),
    ({"dtype": "int8"}, "int8"),
    ({"noise_precision": -1.0}, "noise_precision must be a positive number, got -1.0"),
    ({"likelihood": "cauchy"}, "unknown likelihood 'cauchy'; choose from gaussian, student_t, hetero_student_t"),
    ({"likelihood": "student_t", "noise_column": "s"}, "the student_t likelihood has a learnt homoscedastic scale"),
    ({"likelihood": "student_t", "method": "ensemble"}, "the student_t likelihood has a learnt homoscedastic scale"),
    ({"noise_df": 5.0}, "noise_df (degrees of freedom) is an option of the student_t and hetero_student_t"),
    ({"likelihood": "hetero_student_t", "method": "bbb"}, "the hetero_student_t likelihood needs an MCMC method"),
    ({"likelihood": "hetero_student_t", "noise_precision": 4.0}, "learns a scale per point: no noise column"),
    ({"likelihood": "student_t", "noise_df": 1.5}, "degrees of freedom must be a finite number > 2, got 1.5"),
    ({"recalibrate": "all"}, "recalibrate must be True, False, 'heldout', 'loo' or 'loo+heldout'; got 'all'"),
    ({"recalibrate": "loo", "method": "bbb"}, "recalibrate='loo' (leave-one-out PIT) needs MCMC draws"),
    ({"recalibrate": True, "noise_column": "s"}, "recalibration is not supported with a known per-row noise"),
    ({"recalibrate": "auto", "noise_column": "s", "method": "ensemble"}, "the ensemble learns its noise variance"),
    ({"method": "ensemble", "noise_precision": 3.0}, "the ensemble learns its noise variance"),
    ({"method": "ensemble", "noise_column": "s"}, "the ensemble learns its noise variance"),
    ({"step_size": 0.1}, "unknown MCMC option 'step_size'; valid: kernel, num_chains"),
    ({"map": {"steps": 3}}, "unknown MAP option 'steps'; valid: learning_rate"),
    ({"method": "bbb", "num_chains_x": 2}, "unknown VI option 'num_chains_x'"),
    ({"method": "ensemble", "num_chains_x": 2}, "unknown ensemble option 'num_chains_x'"),
    ({"architecture": "2-x-1"}, "2-x-1"),
    ({"activation": "sigmoidal", "architecture": "2-4-1"}, "sigmoidal"),
    ({"ard": "yes"}, "ard must be true or false, got 'yes'"),
    ({"ard": True, "method": "ensemble"}, "ard (per-input prior precisions, Gibbs-sampled) needs an MCMC method"),
    ({"ard": True, "learn_prior": False}, "ard needs the prior precisions sampled"),
]


@pytest.mark.parametrize(("options", "message"), INVALID)
def test_invalid_options_are_refused_when_the_spec_is_built(options, message):
    with pytest.raises(InputError) as err:
        build_spec("y", **options)
    assert message in str(err.value) and "\n" not in str(err.value)


def _cli_args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    cli_train.add_arguments(p)
    return p.parse_args(["data.csv", "--out", "m.model", *argv])


def test_the_cli_and_the_api_build_the_same_spec():
    args = _cli_args(
        "--target", "y", "--arch", "2-8-1", "--method", "hmc", "--chains", "3", "--warmup", "40", "--draws", "7",
        "--seed", "5", "--log-target", "--split", "0.7,0.2,0.1", "--derive", "s=a+b", "--likelihood", "student_t",
        "--df", "5", "--fixed-noise", "50", "--map-steps", "120", "--recalibrate",
    )  # fmt: skip
    api = build_spec(
        "y", method="hmc", architecture="2-8-1", num_chains=3, num_warmup=40, num_samples=7, seed=5, log_target=True,
        split=(0.7, 0.2, 0.1), derive=["s=a+b"], likelihood="student_t", noise_df=5.0, noise_precision=50.0,
        learn_noise=False, map={"num_steps": 120, "num_epochs": None}, recalibrate=True,
    )  # fmt: skip
    assert cli_train.fit_spec(args) == api
    assert cli_train.fit_spec(_cli_args("--target", "y")) == build_spec("y")


def test_the_json_record_rebuilds_the_spec():
    spec = build_spec(
        "y", ["a", "b"], method="chees", architecture=(2, 5, 1), derive=[("s", "a+b")], baseline=["a"],
        likelihood="hetero_student_t", noise_df=3.0, recalibrate="loo", max_tree_depth=5,
        map=MAPConfig(num_steps=300, patience=None),
    )  # fmt: skip
    record = spec.to_json()
    assert record["method_options"]["map"] == MAPConfig(num_steps=300, patience=None).to_json()
    assert record["architecture"] == [2, 5, 1] and record["derive"] == [["s", "a+b"]]
    assert record["learn_noise"] is False and record["recalibrate"] == "loo" and record["baseline"] == ["a"]
    again = FitSpec.from_json(record)
    assert again == spec and again.to_json() == record
    assert json_value("architecture", (2, 5, 1)) == [2, 5, 1]


def test_ard_builds_per_input_groups_samples_them_and_is_recorded():
    spec = build_spec("y", method="nuts", ard=True)
    bnn = spec.bnn(("a", "b", "c"))
    assert bnn.prior.input_groups and bnn.prior.num_groups(bnn.mlp) == 3 + 3  # three layers, three inputs
    assert spec.mcmc_config(100, 500).learn_prior is True  # NUTS keeps the fixed prior without ard
    assert build_spec("y", method="nuts").mcmc_config(100, 500).learn_prior is False
    auto = build_spec("y", ard=True, learn_prior="auto", likelihood="hetero_student_t")
    assert auto.mcmc_config(100, 500).learn_prior is False  # "auto" keeps the heteroscedastic fit's fixed prior
    record = spec.to_json()
    assert record["ard"] is True and FitSpec.from_json(record) == spec
    assert "ard" not in build_spec("y").to_json()
    assert cli_train.fit_spec(_cli_args("--target", "y", "--method", "nuts", "--ard")) == spec


def test_a_record_written_before_the_spec_existed_resumes_to_the_same_spec():
    record = {  # the fit_args of a checkpoint written by the code before FitSpec (tests/cli/test_kill_resume.py's run)
        "target": "y", "features": None, "method": "mh", "architecture": "2-4-1", "activation": "tanh",
        "log_target": False, "split_column": None, "split": [0.8, 0.1, 0.1], "seed": 3, "num_chains": 2,
        "num_warmup": 500, "num_samples": 6000, "learn_noise": True, "noise_precision": None, "noise_column": None,
        "dtype": "float64", "derive": [], "method_options": {"map": {"num_steps": 150, "num_epochs": None}},
    }  # fmt: skip
    spec = FitSpec.from_json(record)
    assert spec.to_json() == record
    assert spec.mcmc_config(40, 17).map == MAPConfig(num_steps=150, num_epochs=None, patience=200)
    assert spec.recalibrate is None and not spec.recalibrate_auto  # no key then meant no recalibration


@pytest.mark.parametrize(
    ("options", "rows"),
    [
        ({}, "heldout"),
        ({"method": "nuts", "likelihood": "student_t"}, "heldout"),
        ({"method": "hmc", "likelihood": "hetero_student_t"}, "heldout"),
        ({"method": "ensemble"}, None),
        ({"method": "bbb"}, None),
        ({"likelihood": "categorical"}, None),
        ({"noise_column": "s"}, None),
    ],
)
def test_recalibrate_auto_is_heldout_for_an_mcmc_regression_and_recorded_as_auto(options, rows):
    spec = build_spec("y", **options)
    assert spec.recalibrate == rows and spec.recalibrate_auto
    assert spec.recalibration_map == AUTO_RECALIBRATION_MAP and spec.recalibration_gate == AUTO_RECALIBRATION_GATE
    assert spec.to_json()["recalibrate"] == "auto" and FitSpec.from_json(spec.to_json()) == spec
    explicit = build_spec("y", **options, recalibrate=False)
    assert explicit.recalibrate is None and not explicit.recalibrate_auto and "recalibrate" not in explicit.to_json()
    assert explicit.recalibration_gate == 1.0 and explicit.recalibration_map == "quantile"


def test_recalibration_map_and_gate_are_checked_and_recorded():
    spec = build_spec("y", recalibrate=True, recalibration_map="scale", recalibration_gate=0.2)
    record = spec.to_json()
    assert record["recalibration_map"] == "scale" and record["recalibration_gate"] == 0.2
    assert FitSpec.from_json(record) == spec
    with pytest.raises(InputError, match="recalibration_map must be one of quantile, scale"):
        build_spec("y", recalibrate=True, recalibration_map="isotonic")
    for gate in (0.0, 1.5, True, "0.1"):
        with pytest.raises(InputError, match="recalibration_gate must be a number in"):
            build_spec("y", recalibration_gate=gate)


@pytest.mark.parametrize(
    ("options", "dtype"),
    [
        ({}, "float32"),  # the default fit: ChEES, Gaussian
        ({"method": "chees", "likelihood": "gaussian"}, "float32"),
        ({"dtype": "float64"}, "float64"),
        ({"method": "nuts"}, "float64"),
        ({"method": "ensemble"}, "float64"),
        ({"likelihood": "student_t"}, "float64"),
        ({"likelihood": "categorical"}, "float64"),
        ({"method": "nuts", "dtype": "float32"}, "float32"),
    ],
)
def test_a_fit_that_names_no_dtype_is_float32_only_for_chees_with_a_gaussian_likelihood(options, dtype):
    spec = build_spec("y", **options)
    assert spec.model.dtype == dtype
    assert FitSpec.from_json(spec.to_json()).model.dtype == dtype  # recorded resolved: a resume keeps it
    assert cli_train.fit_spec(_cli_args("--target", "y", "--dtype", "float64")).model.dtype == "float64"
    with pytest.raises(InputError, match="float32 or float64"):
        build_spec("y", dtype="float16")


@pytest.mark.parametrize(
    ("options", "min_val_rows"),
    [
        ({}, 20),
        ({"method": "nuts", "recalibrate": False}, 20),
        ({"likelihood": "student_t"}, 20),
        ({"split": (0.9, 0.1, 0.0)}, 0),
        ({"method": "ensemble"}, 0),
        ({"method": "bbb"}, 0),
        ({"likelihood": "categorical"}, 0),
        ({"noise_column": "s"}, 0),
    ],
)
def test_a_fit_given_no_split_trains_on_a_validation_part_too_small_to_recalibrate_on(options, min_val_rows):
    spec = build_spec("y", **options)
    assert spec.data.split == tuple(options.get("split", (0.9, 0.1, 0.0)))
    assert spec.data.min_val_rows == min_val_rows
    again = FitSpec.from_json(spec.to_json())  # recorded as the automatic split (None), so a resume keeps it
    assert again.data == spec.data
    assert (spec.to_json()["split"] is None) == (min_val_rows > 0)
    assert cli_train.fit_spec(_cli_args("--target", "y", "--split", "0.9,0.1,0")).data.min_val_rows == 0


def test_the_method_settings_come_from_the_spec():
    assert build_spec("y", method="bbb", num_samples=20, num_steps=300).vi_config().num_draws == 20
    assert build_spec("y", method="ensemble", num_members=3).ensemble_config().num_members == 3
    mcmc = build_spec("y", num_warmup=60, map=None, max_tree_depth=4).mcmc_config(80, 21)
    assert (mcmc.num_warmup, mcmc.map, mcmc.max_tree_depth, mcmc.kernel) == (60, None, 4, "chees")  # the default method
    assert build_spec("y", likelihood="hetero_student_t").model.learn_noise is False
    assert build_spec("y", noise_column="s").learns_noise is False
    assert build_spec("y", method="ensemble", learn_noise=False).learns_noise is True


def test_one_list_of_method_names():
    assert sorted(CLI_METHODS) == sorted(METHODS) and len(CLI_METHODS) == len(set(CLI_METHODS))
