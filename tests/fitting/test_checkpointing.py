"""A checkpointed api.fit interrupted in sampling leaves a partial model with a typed report; api.resume
rebuilds the spec from the checkpoint's record and finishes with the draws of an uninterrupted run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sigmabnn import api
from sigmabnn.errors import InputError
from sigmabnn.io.checkpoint import Checkpoint, TrainingInterrupted
from sigmabnn.io.model_file import load_model

OPTIONS = dict(method="mh", architecture="2-3-1", num_chains=2, num_warmup=40, num_samples=60, progress=False,
               map={"num_steps": 30}, seed=4)  # fmt: skip


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-1, 1, 40), rng.uniform(-1, 1, 40)
    return pd.DataFrame({"a": a, "b": b, "y": np.sin(2 * a) + 0.5 * b + 0.05 * rng.normal(size=40)})


@pytest.mark.slow
def test_interrupted_fit_resumes_to_the_uninterrupted_model(tmp_path, monkeypatch):
    path = tmp_path / "data.csv"
    _table().to_csv(path, index=False)
    reference, _ = api.fit(path, "y", **OPTIONS)
    commit = Checkpoint.commit

    def stop_in_sampling(self, iteration, state):
        commit(self, iteration, state)
        if iteration == 90:  # warm-up 40, then one chunk of 50 draws
            raise KeyboardInterrupt

    monkeypatch.setattr(Checkpoint, "commit", stop_in_sampling)
    model = tmp_path / "m.model"
    with pytest.raises(TrainingInterrupted) as stop:
        api.fit(path, "y", checkpoint=model, **OPTIONS)
    training = stop.value.training
    assert (training.phase, training.draws_done, training.draws_planned) == ("sampling", 50, 60)
    assert load_model(model).report.training == training and not load_model(model).report.complete
    monkeypatch.setattr(Checkpoint, "commit", commit)
    with pytest.raises(InputError, match="it was started with num_samples=60, not 5"):
        api.resume(model, num_samples=5)
    fitted, report = api.resume(model, progress=False)
    np.testing.assert_array_equal(fitted.draws.positions, reference.draws.positions)
    assert report.sampler.num_grad_evals > 0 and load_model(model).report == report
    assert fitted.settings == reference.settings
