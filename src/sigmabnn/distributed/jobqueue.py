"""A SLURM or HTCondor cluster for sigmabnn's tasks, through dask-jobqueue, as a typed settings object.

:class:`JobqueueConfig` holds what a batch system needs (cores, memory, wall time,
partition, ...) validated once; :meth:`JobqueueConfig.cluster_kwargs` gives the keyword
arguments of ``dask_jobqueue.SLURMCluster`` / ``HTCondorCluster`` (dask-jobqueue >= 0.8
names), and :meth:`JobqueueConfig.start` starts the cluster and asks for ``jobs`` batch
jobs. Each job runs ``processes`` worker processes of one thread (a fit holds the GIL
between XLA calls), and its script first sizes XLA's and OpenMP's thread pools to the
cores of one worker, as the local cluster does (:mod:`sigmabnn.distributed.cluster`).
dask-jobqueue is not a dependency of sigmabnn: install it on the submit host
(``pip install dask-jobqueue``); the workers need sigmabnn and the same Python packages,
and the surrogate directory, the models and the scan outputs must be on a file system the
submit host and the workers share.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sigmabnn.errors import InputError

__all__ = ["SYSTEMS", "JobqueueConfig"]

SYSTEMS = ("slurm", "htcondor")
_SIZE = re.compile(r"^\d+(\.\d+)?\s*(B|kB|KB|KiB|MB|MiB|GB|GiB|TB|TiB)$")
_WALLTIME = re.compile(r"^(\d+-)?\d{1,3}:\d{2}:\d{2}$")


@dataclass(frozen=True)
class JobqueueConfig:
    """Settings of a batch-system cluster of Dask workers (validated when built).

    Attributes:
        system: ``"slurm"`` or ``"htcondor"``.
        jobs: batch jobs to start (each runs ``processes`` workers).
        cores: cores requested per job.
        processes: worker processes per job (default: ``cores``, one single-threaded worker per core).
        memory: memory per job, e.g. ``"8GB"`` (shared by its workers).
        walltime: SLURM time limit ``[D-]HH:MM:SS``; ignored by HTCondor.
        queue: SLURM partition (``None``: the site's default).
        account: SLURM account to charge.
        disk: HTCondor disk request per job, e.g. ``"4GB"``.
        python: the workers' Python executable (``None``: the submitting one).
        local_directory: scratch directory of a worker on its node.
        job_extra_directives: extra ``#SBATCH`` options (SLURM, e.g. ``"--exclusive"``) or submit-file
            lines ``key = value`` (HTCondor).
    """

    system: str
    jobs: int = 1
    cores: int = 1
    processes: int | None = None
    memory: str = "4GB"
    walltime: str = "02:00:00"
    queue: str | None = None
    account: str | None = None
    disk: str = "4GB"
    python: str | None = None
    local_directory: str | None = None
    job_extra_directives: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.system not in SYSTEMS:
            raise InputError(f"unknown batch system {self.system!r}; use one of {', '.join(SYSTEMS)}")
        for name in ("jobs", "cores"):
            if int(getattr(self, name)) < 1:
                raise InputError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.processes is not None and not 1 <= self.processes <= self.cores:
            raise InputError(f"processes must be between 1 and cores ({self.cores}), got {self.processes}")
        if self.cores % self.worker_processes:
            raise InputError(f"cores ({self.cores}) must be a multiple of processes ({self.worker_processes})")
        for name in ("memory", "disk"):
            if not _SIZE.match(getattr(self, name)):
                raise InputError(f"{name} must be a size such as 4GB, got {getattr(self, name)!r}")
        if not _WALLTIME.match(self.walltime):
            raise InputError(f"walltime must be [D-]HH:MM:SS, got {self.walltime!r}")
        if self.system == "htcondor" and any("=" not in d for d in self.job_extra_directives):
            raise InputError("HTCondor job_extra_directives are submit-file lines 'key = value'")

    @property
    def worker_processes(self) -> int:
        """Worker processes per job."""
        return self.cores if self.processes is None else self.processes

    @property
    def cores_per_worker(self) -> int:
        return self.cores // self.worker_processes

    def prologue(self) -> list[str]:
        """Shell lines run before the workers start: thread pools sized to one worker's cores."""
        n = self.cores_per_worker
        lines = [f"export OMP_NUM_THREADS={n}", f"export OPENBLAS_NUM_THREADS={n}", f"export MKL_NUM_THREADS={n}"]
        if n == 1:
            lines.append('export XLA_FLAGS="${XLA_FLAGS:-} --xla_cpu_multi_thread_eigen=false"')
        return lines

    def cluster_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``dask_jobqueue.SLURMCluster`` (``system="slurm"``) or ``HTCondorCluster``."""
        kwargs: dict[str, Any] = {
            "cores": self.cores,
            "processes": self.worker_processes,
            "memory": self.memory,
            "job_script_prologue": self.prologue(),
        }
        if self.python is not None:
            kwargs["python"] = self.python
        if self.local_directory is not None:
            kwargs["local_directory"] = self.local_directory
        if self.system == "slurm":
            kwargs["walltime"] = self.walltime
            kwargs["job_extra_directives"] = list(self.job_extra_directives)
            if self.queue is not None:
                kwargs["queue"] = self.queue
            if self.account is not None:
                kwargs["account"] = self.account
        else:
            kwargs["disk"] = self.disk
            kwargs["job_extra_directives"] = dict(
                (key.strip(), value.strip()) for key, value in (d.split("=", 1) for d in self.job_extra_directives)
            )
        return kwargs

    def start(self) -> Any:
        """Start the dask-jobqueue cluster and request ``jobs`` jobs; pass it to ``dask.distributed.Client``.

        Raises:
            InputError: dask-jobqueue is not installed.
        """
        try:
            import dask_jobqueue
        except ImportError:
            raise InputError("a batch-system cluster needs dask-jobqueue: pip install dask-jobqueue") from None
        cls = dask_jobqueue.SLURMCluster if self.system == "slurm" else dask_jobqueue.HTCondorCluster
        cluster = cls(**self.cluster_kwargs())
        cluster.scale(jobs=self.jobs)
        return cluster
