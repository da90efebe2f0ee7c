"""Test targets: log-densities with known reference posteriors."""
