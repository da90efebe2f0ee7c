"""Automatic relevance determination (``fit(..., ard=True)``): the sampled per-input precisions shrink the
first-layer weights of inputs the target does not depend on."""

from __future__ import annotations

import numpy as np
import pandas as pd

import sigmabnn


def test_ard_shrinks_the_inputs_the_target_does_not_depend_on():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (200, 4))
    df = pd.DataFrame(x, columns=["a", "b", "c", "d"])
    df["y"] = np.sin(2 * x[:, 0]) + 0.1 * rng.standard_normal(200)  # only a matters
    fitted, _ = sigmabnn.fit(df, "y", ard=True, num_warmup=150, num_samples=30, progress=False)
    prior = fitted.bnn.prior
    assert prior.input_groups and fitted.draws.hyper.weight_precision.shape[-1] == prior.num_groups(fitted.bnn.mlp)
    first = prior.num_groups(fitted.bnn.mlp) - 4  # the input groups come last, in the inputs' order
    median = np.median(np.asarray(fitted.draws.hyper.weight_precision)[..., first:], axis=(0, 1))
    # a's weights carry the function: its precision is far below every irrelevant input's
    assert np.all(median[1:] > 4 * median[0]), median
