"""The speed-repeat script of the defaults benchmark (benchmarks/defaults_speed.py): which tables, order, ratio."""

from __future__ import annotations

import json

import pytest
from tests.conftest import load_benchmark
from tests.test_defaults_benchmark import rec


@pytest.fixture(scope="module")
def speed():
    return load_benchmark("defaults_speed")


def _test_phase():
    return {
        "records": [
            rec("close", "sigmabnn", seconds=20.0),
            rec("close", "numpyro", seconds=99.0),  # 4.95x: undecided
            rec("clear", "sigmabnn", seconds=20.0),
            rec("clear", "numpyro", seconds=170.0),  # 8.5x: one run decides
            rec("slow", "sigmabnn", seconds=20.0),
            rec("slow", "numpyro", seconds=60.0),  # 3x: one run decides
            rec("gone", "sigmabnn", seconds=20.0),
            rec("gone", "numpyro", status="timeout", seconds=100.0),
        ]
    }


def test_only_tables_whose_single_ratio_is_near_the_goal_are_repeated(speed):
    assert speed.undecided_tables(_test_phase()) == ["close"]
    assert speed.undecided_tables(_test_phase(), goal=3.0) == ["slow"]


def test_pairs_alternate_which_method_runs_first(speed):
    assert speed.cells(["t"], 3) == [
        ("t", 0, "sigmabnn"), ("t", 0, "numpyro"),
        ("t", 1, "numpyro"), ("t", 1, "sigmabnn"),
        ("t", 2, "sigmabnn"), ("t", 2, "numpyro"),
    ]  # fmt: skip


def _repeats(ours, theirs, rmse=0.1):
    out = []
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        out += [rec("close", "sigmabnn", seconds=a, repeat=k), rec("close", "numpyro", seconds=b, repeat=k, rmse=rmse)]
    return out


def test_a_forced_rerun_drops_the_tables_repeats_beyond_those_asked(speed):
    records = _repeats([20.0] * 5, [100.0] * 5) + [rec("other", "sigmabnn", seconds=1.0, repeat=4)]
    kept = speed.drop_beyond(records, ["close"], 3)
    assert sorted({r["repeat"] for r in kept if r["table"] == "close"}) == [0, 1, 2]
    assert [r for r in kept if r["table"] == "other"] == [records[-1]]  # other tables keep theirs


def test_the_ratio_is_that_of_the_medians_and_the_draws_are_checked(speed):
    s = speed.summarise(_repeats([20.0, 18.0, 22.0], [100.0, 95.0, 120.0]), _test_phase())["close"]
    assert s["pairs"] == 3 and s["ratio_of_medians"] == pytest.approx(100.0 / 20.0) and s["met"] is True
    assert s["pair_ratio_range"] == pytest.approx([100.0 / 20.0, 120.0 / 22.0])
    assert s["same_draws"] is True
    slow = speed.summarise(_repeats([20.0, 21.0, 22.0], [95.0, 99.0, 120.0]), _test_phase())["close"]
    assert slow["ratio_of_medians"] == pytest.approx(99.0 / 21.0) and slow["met"] is False
    other = speed.summarise(_repeats([20.0], [100.0], rmse=0.3), _test_phase())["close"]
    assert other["same_draws"] is False  # NumPyro refitted other draws: these repeats time another fit
    last_bits = speed.summarise(_repeats([20.0], [100.0], rmse=0.1 * (1 + 1e-15)), _test_phase())["close"]
    assert last_bits["same_draws"] is True  # a float reduction's last bits on another day: the same draws


def test_the_test_phase_judges_speed_on_the_repeats_of_the_same_draws(speed):
    bench = speed.defaults
    records = _test_phase()["records"]
    (single,) = [r for r in bench.check_goals(records)["vs_numpyro"] if r["table"] == "close"]
    assert single["met"] is False and "4.95x faster (MISSED" in single["text"]
    repeats = _repeats([20.0, 18.0, 22.0], [100.0, 95.0, 120.0])
    summary = speed.summarise(repeats, _test_phase())
    speed_file = {"summary": summary, "records": repeats}

    def close(recs):
        (row,) = [r for r in bench.check_goals(recs, speed=speed_file)["vs_numpyro"] if r["table"] == "close"]
        return row

    rep = close(records)
    assert rep["met"] is True and "over 3 interleaved pairs" in rep["text"] and "5.00x (ok" in rep["text"]
    # a default changed since the repeats (its test record has another RMSE): they no longer time it
    changed = [dict(r, rmse=0.09) if r["sampler"] == "sigmabnn" else r for r in records]
    assert "interleaved" not in close(changed)["text"]
    # and a single ratio of fits timed on different days says so
    apart = [dict(r, date="2026-12-02T00:00:00Z") if r["sampler"] == "sigmabnn" else r for r in changed]
    assert "(timed on other days: the default 2026-12-02, NumPyro" in close(apart)["text"]
    assert "other days" not in close(changed)["text"]
    # beside the repeats, the test phase's single ratio still says its fits ran on different days
    both = [dict(r, date="2026-12-02T00:00:00Z") if r["sampler"] == "sigmabnn" else r for r in records]
    text = close(both)["text"]
    assert "two cells (timed on other days: the default 2026-12-02, NumPyro" in text and "over 3 interleaved" in text
    summary["close"]["same_draws"] = False
    ign = close(records)
    assert ign["met"] is False and "interleaved" not in ign["text"]


def test_main_records_each_cell_and_resumes(speed, tmp_path, monkeypatch):
    test_file = tmp_path / "defaults.json"
    test_file.write_text(json.dumps(_test_phase()))
    monkeypatch.setattr(speed, "TEST_FILE", test_file)
    monkeypatch.setattr(speed.defaults, "numpyro_available", lambda: True)
    ran = []

    def fake(spec, timeout, log):
        ran.append((spec["table"], spec["sampler"]))
        seconds = 20.0 if spec["sampler"] == "sigmabnn" else 101.0
        return rec(spec["table"], spec["sampler"], seconds=seconds, date=f"{len(ran):03d}")

    monkeypatch.setattr(speed.defaults, "run_subprocess", fake)
    out = tmp_path / "speed.json"
    assert speed.main(["--repeats", "2", "--out", str(out)]) == 0
    assert ran == [("close", "sigmabnn"), ("close", "numpyro"), ("close", "numpyro"), ("close", "sigmabnn")]
    data = json.loads(out.read_text())
    assert data["summary"]["close"]["ratio_of_medians"] == pytest.approx(101.0 / 20.0)
    assert "| close | 2 |" in out.with_suffix(".md").read_text()
    assert speed.main(["--repeats", "3", "--out", str(out)]) == 0  # only the third pair is new
    assert ran[4:] == [("close", "sigmabnn"), ("close", "numpyro")]
