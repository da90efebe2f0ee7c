"""Local cluster sizing (core shares, worker environment) and the SLURM / HTCondor settings object."""

from __future__ import annotations

import pytest

from sigmabnn.distributed.cluster import core_shares, worker_environment
from sigmabnn.distributed.jobqueue import JobqueueConfig
from sigmabnn.errors import InputError


def test_core_shares_are_disjoint_and_equal():
    assert core_shares([0, 1, 2, 3], 2) == [[0, 1], [2, 3]]
    assert core_shares([0, 1, 2, 3, 4], 2) == [[0, 1], [2, 3]]
    assert core_shares([0, 1], 2) == [[0], [1]]
    assert core_shares([1], 2) == [[1], [1]]  # more workers than cores: shared round-robin
    with pytest.raises(ValueError):
        core_shares([0], 0)


def test_worker_environment_sizes_thread_pools(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    one = worker_environment(1)
    assert one["OMP_NUM_THREADS"] == "1" and "--xla_cpu_multi_thread_eigen=false" in one["XLA_FLAGS"]
    two = worker_environment(2)
    assert two["OMP_NUM_THREADS"] == "2" and "XLA_FLAGS" not in two
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true")
    assert worker_environment(1)["XLA_FLAGS"] == "--xla_cpu_multi_thread_eigen=true"  # the user's choice wins


def test_slurm_settings_become_cluster_arguments():
    config = JobqueueConfig("slurm", jobs=10, cores=8, memory="16GB", walltime="04:00:00", queue="short")
    kw = config.cluster_kwargs()
    assert kw["cores"] == 8 and kw["processes"] == 8 and kw["memory"] == "16GB"
    assert kw["walltime"] == "04:00:00" and kw["queue"] == "short" and "disk" not in kw
    assert "export OMP_NUM_THREADS=1" in kw["job_script_prologue"]
    assert any("xla_cpu_multi_thread_eigen=false" in line for line in kw["job_script_prologue"])
    two = JobqueueConfig("slurm", cores=8, processes=4).cluster_kwargs()
    assert two["processes"] == 4 and "export OMP_NUM_THREADS=2" in two["job_script_prologue"]


def test_htcondor_settings_become_cluster_arguments():
    config = JobqueueConfig("htcondor", cores=4, disk="2GB", job_extra_directives=("+JobFlavour = longlunch",))
    kw = config.cluster_kwargs()
    assert kw["disk"] == "2GB" and kw["job_extra_directives"] == {"+JobFlavour": "longlunch"}
    assert "walltime" not in kw and "queue" not in kw


@pytest.mark.parametrize(
    "kwargs",
    [
        {"system": "pbs"},
        {"system": "slurm", "cores": 0},
        {"system": "slurm", "cores": 4, "processes": 3},
        {"system": "slurm", "cores": 2, "processes": 4},
        {"system": "slurm", "memory": "lots"},
        {"system": "slurm", "walltime": "2h"},
        {"system": "htcondor", "job_extra_directives": ("no equals sign",)},
    ],
)
def test_bad_settings_are_input_errors(kwargs):
    with pytest.raises(InputError):
        JobqueueConfig(**kwargs)


def test_start_without_dask_jobqueue_is_a_clear_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)  # import fails as if not installed
    with pytest.raises(InputError, match="pip install dask-jobqueue"):
        JobqueueConfig("slurm").start()
