"""Complete experiments as library functions; the CLI's commands are thin wrappers around them.

- :mod:`sigmabnn.workflows.toy`: the one-dimensional toy regression experiment
  (``sigmabnn demo``), :func:`~sigmabnn.workflows.toy.run_toy`.
- :mod:`sigmabnn.workflows.nlo`: NLO cross-section surrogates on the built-in data.

Import the submodule you need (``from sigmabnn.workflows.toy import run_toy``);
nothing is imported here, so one workflow never pays for another's imports.
"""
