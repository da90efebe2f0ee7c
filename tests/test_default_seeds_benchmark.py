"""The default-over-training-sets benchmark's own code (benchmarks/default_seeds.py): the coverage rule, the
per-table summary, the previous default's comparison on energy, and a resumable run (cells faked: no fit)."""

from __future__ import annotations

import json

import pytest
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("default_seeds")


@pytest.fixture()
def no_numpyro(bench, tmp_path, monkeypatch):
    """The page without NumPyro's committed records (the tests' made-up default records would pair with them)."""
    monkeypatch.setattr(bench, "NUMPYRO_FILE", tmp_path / "absent.json")


def _rec(table, seed, sampler, cov68, cov95=0.95, ll=0.5, status="ok"):
    return {
        "table": table, "seed": seed, "sampler": sampler, "status": status, "rmse": 0.1, "test_ll": ll,
        "row_ll": [ll - 0.1, ll + 0.1], "n_train": 300, "n_score": 2, "coverage_68": cov68, "coverage_95": cov95,
        "seconds": 10.0, "likelihood": "gaussian",
    }  # fmt: skip


def test_the_coverage_rule_separates_within_beyond_and_unresolved(bench):
    assert bench.level_verdict([0.70, 0.66, 0.69], 0.68)["verdict"] == "within"  # mean 0.683
    beyond = bench.level_verdict([0.75, 0.76, 0.74], 0.68)  # 0.07 above, SE 0.0058
    assert beyond["verdict"] == "beyond noise" and beyond["mean"] == pytest.approx(0.75)
    assert beyond["se"] == pytest.approx(0.01 / 3**0.5)
    assert bench.level_verdict([0.62, 0.82, 0.72], 0.68)["verdict"] == "not resolved"  # 0.04 over, SE 0.058
    assert bench.level_verdict([0.90], 0.95)["verdict"] == "one seed"
    assert bench.level_verdict([0.92], 0.95)["verdict"] == "within"  # exactly 3 points: within


def test_the_summary_counts_tables_within_and_ignores_unscored_cells(bench, no_numpyro):
    recs = [_rec("lin2d-120", s, "sigmabnn", c) for s, c in enumerate((0.70, 0.67, 0.68))]
    recs += [_rec("energy", s, "sigmabnn", c, 0.99) for s, c in enumerate((0.75, 0.76, 0.74))]
    recs += [_rec("energy", 3, "sigmabnn", 0.1, status="timeout")]
    rows = bench.coverage_rows(recs)
    assert [r["table"] for r in rows] == ["lin2d-120", "energy"]  # the battery's order
    assert [r["within"] for r in rows] == [True, False] and rows[1]["seeds"] == 3
    assert rows[1]["coverage_95_verdict"] == "beyond noise"  # 0.99: 4 points over, SE 0
    summary = bench.coverage_summary(rows)
    assert summary["within"] == 1 and summary["beyond_noise"] == ["energy (68%)", "energy (95%)"]
    assert summary["pooled"]["coverage_68"] == pytest.approx((0.6833333 + 0.75) / 2) and summary["min_seeds"] == 3
    assert "within 3 points on 1 of 2 tables (at least 3 training sets each)" in bench.summary_text(summary)
    data = {"records": recs, "runs": []}
    page = bench.markdown(data)
    assert data["summary"] == summary | {"text": bench.summary_text(summary)}  # the JSON carries the page's line
    assert "| energy | 2 | 2 | 0.750 |" not in page and "| energy | 3 | 2 | 0.750 |" in page


def test_the_previous_default_is_compared_on_paired_seeds(bench, no_numpyro):
    recs = [_rec("energy", s, "sigmabnn", 0.7, ll=ll) for s, ll in enumerate((0.1, 0.2, 0.3))]
    recs += [_rec("energy", s, "previous-default", 0.7, ll=ll) for s, ll in enumerate((0.0, 0.1, 0.2))]
    data = {"records": recs, "runs": []}
    page = bench.markdown(data)
    assert "## The previous default" in page
    assert "LL difference +0.1000 (SE 0.0000): ahead" in page and data["previous"][0] in page


def test_numpyros_records_of_the_same_rows_are_compared_and_quoted(bench, tmp_path):
    recs = [_rec("bostonHousing", s, "sigmabnn", 0.7, ll=ll) for s, ll in enumerate((-2.5, -2.4, -2.6))]
    other = [_rec("bostonHousing", s, "numpyro", 0.7, ll=ll) for s, ll in enumerate((-2.3, -2.3, -2.3))]
    other += [_rec("bostonHousing", 0, "sigmabnn", 0.7, ll=9.0)]  # numpyro_seeds' own default fits: not read
    path = tmp_path / "numpyro_seeds.json"
    path.write_text(json.dumps({"records": other, "runs": []}))
    data = {"records": recs, "runs": []}
    page = bench.markdown(data, numpyro_path=path)
    (text,) = data["numpyro"]
    assert "bostonHousing, the default against NumPyro over 3 training sets: LL difference -0.2000" in text
    assert "(SE 0.0577): behind" in text and text.endswith("at least as accurate: no") and "## NumPyro" in page
    seeds_file = tmp_path / "default_seeds.json"
    seeds_file.write_text(json.dumps(data))
    assert text in bench.defaults.seeds_lines("vs_numpyro", bench.defaults.load_results(seeds_file))


def test_a_run_resumes_runs_the_previous_default_on_energy_only_and_refuses_unknown_tables(
    bench, tmp_path, monkeypatch, no_numpyro
):
    calls = []

    def fake(spec, timeout, log, script):
        calls.append((spec["table"], spec["seed"], spec["sampler"]))
        assert script == bench.SCRIPT
        return _rec(spec["table"], spec["seed"], spec["sampler"], 0.68) | {"date": "d"}

    monkeypatch.setattr(bench.defaults, "run_subprocess", fake)
    out = tmp_path / "seeds.json"
    args = ["--tables", "sin1d-100,energy", "--seeds", "0", "--out", str(out)]
    assert bench.main(args) == 0
    assert calls == [("sin1d-100", 0, "sigmabnn"), ("energy", 0, "sigmabnn"), ("energy", 0, "previous-default")]
    assert bench.main(args + ["--seeds", "0,1"]) == 0  # only seed 1 is new
    assert calls[3:] == [("sin1d-100", 1, "sigmabnn"), ("energy", 1, "sigmabnn"), ("energy", 1, "previous-default")]
    data = json.loads(out.read_text())
    assert len(data["records"]) == 6 and len(data["runs"]) == 2  # one entry per invocation
    with pytest.raises(SystemExit, match="unknown table"):
        bench.main(["--tables", "nope", "--out", str(out)])


def test_refit_stale_refits_only_the_defaults_cells_fitted_with_another_initial_buffer(
    bench, tmp_path, monkeypatch, no_numpyro
):
    from sigmabnn.train.mcmc import CHEES_DEFAULTS

    now = int(CHEES_DEFAULTS["initial_buffer"])
    assert now != bench.STAN_INITIAL_BUFFER  # the change the option was added for
    calls = []

    def fake(spec, timeout, log, script):
        calls.append((spec["table"], spec["seed"], spec["sampler"]))
        return _rec(spec["table"], spec["seed"], spec["sampler"], 0.70) | {"settings": {"initial_buffer": now}}

    monkeypatch.setattr(bench.defaults, "run_subprocess", fake)
    old = [_rec("energy", s, "sigmabnn", 0.75) for s in (0, 1)]  # recorded before settings held the buffer
    old += [_rec("energy", 2, "sigmabnn", 0.66) | {"settings": {"initial_buffer": now}}]
    old += [_rec("energy", s, "previous-default", 0.8) for s in (0, 1, 2)]
    assert [bench.stale(r) for r in old] == [True, True, False, False, False, False]
    out = tmp_path / "seeds.json"
    out.write_text(json.dumps({"records": old, "runs": []}))
    args = ["--tables", "energy", "--seeds", "0,1,2", "--out", str(out)]
    assert bench.main(args) == 0 and calls == []  # without the option a recorded cell is kept
    assert bench.main(["--table-only", "--out", str(out)]) == 0
    page = (tmp_path / "seeds.md").read_text()
    both = ", ".join(str(b) for b in sorted({bench.STAN_INITIAL_BUFFER, now}))
    assert f"| {both} |" in page and "initial buffer: energy" in page
    assert bench.main([*args, "--refit-stale"]) == 0
    assert calls == [("energy", 0, "sigmabnn"), ("energy", 1, "sigmabnn")]
    data = json.loads(out.read_text())
    assert len(data["records"]) == 6 and not any(bench.stale(r) for r in data["records"])
    assert [r["coverage_68"] for r in data["records"] if r["sampler"] == "sigmabnn"] == [0.66, 0.70, 0.70]
    assert data["summary"]["stale"] == [] and "initial buffer:" not in data["summary"]["text"]
    assert f"| {now} |" in (tmp_path / "seeds.md").read_text()
    assert bench.main([*args, "--refit-stale"]) == 0 and len(calls) == 2  # resumable: nothing stale is left
    data = json.loads(out.read_text())
    assert [(r["seed"], r["coverage_68"]) for r in data["replaced"]] == [(0, 0.75), (1, 0.75)]  # kept once
    assert "## The refit against the records it replaced" in (tmp_path / "seeds.md").read_text()
    assert data["refit"]["tables"] == 1 and data["refit"]["ll_difference"] == pytest.approx(0.0)


def test_the_refit_is_compared_with_the_records_it_replaced_restored_from_an_earlier_file(bench, tmp_path, no_numpyro):
    now = {"settings": {"initial_buffer": 25}}
    earlier = {"records": [_rec(t, s, "sigmabnn", 0.7, ll=0.5) for t in ("energy", "sin1d-100") for s in (0, 1)]}
    earlier["records"] += [_rec("energy", 0, "previous-default", 0.7, ll=0.0)]  # not the default's: not kept
    records = [_rec("energy", s, "sigmabnn", 0.7, ll=ll) | now for s, ll in ((0, 0.6), (1, 0.8))]
    records += [_rec("sin1d-100", 0, "sigmabnn", 0.7, ll=0.5), _rec("sin1d-100", 1, "sigmabnn", 0.7, ll=0.4) | now]
    data = {"records": records, "runs": []}
    assert bench.restore_replaced(data, earlier) == 3  # energy 0 and 1, sin1d-100 1 (its seed 0 is not refitted)
    assert bench.restore_replaced(data, earlier) == 0  # kept once
    page = bench.markdown(data)
    (energy,) = [t for t in page.splitlines() if t.startswith("**energy, the default against the records")]
    assert "over 2 training sets: LL difference +0.2000 (SE 0.1000): within noise" in energy
    assert "**sin1d-100, the default against the records it replaced over 1 training sets" in page
    assert data["refit"] == data["refit"] | {"tables": 1, "verdict": "within noise"}  # one seed: not pooled
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(earlier))
    out = tmp_path / "seeds.json"
    out.write_text(json.dumps({"records": records, "runs": []}))
    assert bench.main(["--out", str(out), "--replaced-from", str(path)]) == 0
    assert len(json.loads(out.read_text())["replaced"]) == 3
    with pytest.raises(SystemExit, match="no such file"):
        bench.main(["--out", str(out), "--replaced-from", str(tmp_path / "absent.json")])


def test_the_defaults_page_quotes_the_summary_of_the_seeds_file(bench, tmp_path, no_numpyro):
    recs = [_rec("lin2d-120", s, "sigmabnn", c) for s, c in enumerate((0.70, 0.67, 0.68))]
    data = {"records": recs, "runs": []}
    bench.markdown(data)
    path = tmp_path / "default_seeds.json"
    assert bench.defaults.seeds_lines("coverage", bench.defaults.load_results(path)) == ""  # no file: no line
    path.write_text(json.dumps(data))
    line = bench.defaults.seeds_lines("coverage", bench.defaults.load_results(path))
    assert line.startswith("- over training sets (`default_seeds.md`") and data["summary"]["text"] in line
    assert (
        bench.defaults.seeds_lines("ll_vs_previous", bench.defaults.load_results(path)) == ""
    )  # no previous-default cells
    assert (
        bench.defaults.seeds_lines("time", bench.defaults.load_results(path)) == ""
    )  # a goal the file does not measure
    recs += [_rec("energy", s, m, 0.7, ll=0.1 * s) for s in (0, 1) for m in ("sigmabnn", "previous-default")]
    data = {"records": recs, "runs": []}
    bench.markdown(data)
    path.write_text(json.dumps(data))
    (line,) = bench.defaults.seeds_lines("ll_vs_previous", bench.defaults.load_results(path)).splitlines()
    assert "energy, the default against the previous default over 2 training sets: LL difference +0.0000" in line


def test_the_readme_quotes_the_committed_run(bench):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    data = json.loads((root / "benchmarks" / "results" / "default_seeds.json").read_text())
    rows = bench.coverage_rows(data["records"])
    summary = bench.coverage_summary(rows)
    readme = " ".join((root / "README.md").read_text().split())
    assert summary["min_seeds"] == 5 and summary["tables"] == 15 == len(bench.TABLES)
    assert f"on average on {summary['within']} of 15" in readme
    (energy,) = [r for r in rows if r["table"] == "energy"]
    assert summary["within"] == 15 and energy["within"] and energy["seeds"] == 15 and not summary["stale"]
    assert f"covers {energy['coverage_68']:.3f} (SE {energy['coverage_68_se']:.3f})" in readme
    closest = max(rows, key=lambda r: abs(r["coverage_68"] - 0.68))
    assert closest["table"] == "energy" and "energy's 68 % interval, the closest," in readme
    refit = data["refit"]
    assert refit["tables"] == 15 and refit["verdict"] == "within noise"
    assert f"pooled gain ({refit['ll_difference']:+.4f}, SE {refit['ll_se']:.4f}) was within noise" in readme
    assert refit["text"].endswith("ahead in LL on steep6d-300; behind on none")
    (energy_refit,) = bench.comparisons(data["records"] + [r | {"sampler": "replaced"} for r in data["replaced"]],
                                        "replaced", "the records it replaced", ["energy"])  # fmt: skip
    e = bench.numpyro_seeds.table_differences("energy", energy_refit[1])
    assert f"(energy {e['ll_difference']:+.4f}, SE {e['ll_se']:.4f})" in readme
    (comparison,) = bench.comparisons(data["records"], "previous-default", "the previous default", ["energy"])
    row = bench.numpyro_seeds.table_differences("energy", comparison[1])
    assert row["ll_verdict"] == "behind" and row["seeds"] == 5
    assert f"by {-row['ll_difference']:.4f} nats per row (SE {row['ll_se']:.4f}" in readme
    found = bench.comparisons([*data["records"], *bench.numpyro_records()], "numpyro", "NumPyro", bench.TABLES)
    assert len(found) == 6 and [text.endswith("at least as accurate: yes") for text, _ in found] == [
        True, True, True, True, False, True
    ]  # fmt: skip
    text, rows = found[4]
    boston = bench.numpyro_seeds.table_differences("bostonHousing", rows)
    assert text.startswith("bostonHousing") and boston["ll_verdict"] == "behind" and boston["rmse_verdict"] != "behind"
    assert f"log-likelihood ({boston['ll_difference']:+.4f}, SE {boston['ll_se']:.4f}; its RMSE within noise)" in (
        readme
    )
