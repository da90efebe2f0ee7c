"""The stages of a fit, each in its own module, run in order by :func:`sigmabnn.fitting.run.run_fit`.

``spec`` (the validated options) -> ``prepare`` (table -> derived features -> split -> transforms ->
model data) -> :mod:`sigmabnn.model.build` (the BNN) -> ``trainers`` (MCMC, VI or ensemble behind
one interface) -> ``score`` (noise std, metrics) -> ``report`` (the typed fit report);
``checkpointing`` opens, resumes and saves interrupted runs. Nothing is imported here, so the
report types can be read without loading the stages.
"""
