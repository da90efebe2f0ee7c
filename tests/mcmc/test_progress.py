"""Progress off a terminal: a few whole lines with elapsed time and the time left, never a redrawn bar."""

from __future__ import annotations

import io

from sigmabnn.mcmc import progress
from sigmabnn.mcmc.progress import ProgressBar


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_an_estimate_one_line_per_phase_and_no_bar(monkeypatch):
    clock = iter(float(t) for t in range(0, 1000, 2))  # every reading of the clock 2 s later
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    log = io.StringIO()
    bar = ProgressBar(100, "warmup", enabled=True, stream=log)
    for _ in range(5):
        bar.update(10)
    bar.set_description("sample")
    for _ in range(5):
        bar.update(10)
    bar.close()
    bar.close()  # once only
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and "|" not in log.getvalue()
    assert len(lines) == 3, lines
    assert lines[0].startswith("warmup at 10/100 iterations: 00:02 elapsed, about 00:18 left")
    assert lines[1].startswith("warmup done at 50/100 iterations:") and "left" in lines[1]
    assert lines[2].startswith("sample done at 100/100 iterations:") and "left" not in lines[2]


def test_terminal_gets_the_bar_and_no_log_lines():
    tty = _Tty()
    with ProgressBar(10, "sample", enabled=True, stream=tty) as bar:
        bar.update(10)
    assert tty.getvalue().startswith("\rsample |") and "iterations:" not in tty.getvalue()


def test_disabled_or_terminal_only_is_silent_in_a_log():
    for enabled in (False, None):
        log = io.StringIO()
        with ProgressBar(10, "sample", enabled=enabled, stream=log) as bar:
            bar.update(10)
        assert log.getvalue() == ""


def test_a_phase_without_a_bar_gets_one_line_in_a_log_only():
    log = io.StringIO()
    progress.log_phase("map done (4 starts, up to 800 steps)", 75.4, True, stream=log)
    assert log.getvalue() == "map done (4 starts, up to 800 steps): 01:15 elapsed\n"
    for enabled, stream in ((True, _Tty()), (None, io.StringIO()), (False, io.StringIO())):
        progress.log_phase("map done", 1.0, enabled, stream=stream)
        assert stream.getvalue() == ""


def test_fit_logs_the_map_phase_then_the_sampling_phases(capsys):
    """A fit whose stderr is not a terminal (here: captured) writes the MAP line before the sampler's."""
    import jax
    import numpy as np

    from sigmabnn.map import MAPConfig
    from sigmabnn.model import BNN, Data, parse_architecture
    from sigmabnn.train import MCMCConfig, fit_mcmc

    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 1))
    data = Data(x, np.sin(x))
    config = MCMCConfig(kernel="hmc", num_chains=1, num_warmup=20, num_samples=10, map=MAPConfig(num_steps=100))
    fit_mcmc(jax.random.key(0), BNN(parse_architecture("1-4-1")), data, config, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("map done (1 starts, up to ") and lines[0].endswith(" elapsed")
    assert any(line.startswith("warmup done at 20/30 iterations") for line in lines[1:])
