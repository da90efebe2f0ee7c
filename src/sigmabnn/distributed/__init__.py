"""Work on a Dask cluster: independent tasks (one fit per process), prediction scans over table partitions.

Nothing here is imported by ``import sigmabnn`` or ``sigmabnn --help``: the API
(:func:`sigmabnn.workflows.surrogates.train_all` with ``client=``) and the CLI
(``--dask``) import this package only when a cluster is asked for. The package is
generic: it runs functions it is given and imports no workflow, so the workflows
and the CLI can call it without an import cycle.

- :mod:`~sigmabnn.distributed.cluster`: a client for a scheduler address or a local
  cluster of worker processes, each pinned to its share of the cores.
- :mod:`~sigmabnn.distributed.tasks`: run one function over many items, results as
  they finish, a killed worker's task retried.
- :mod:`~sigmabnn.distributed.scan`: a table (Parquet data set or CSV) in partitions,
  each transformed on a worker and written as one file of a Parquet data set that
  appears complete or not at all.
- :mod:`~sigmabnn.distributed.jobqueue`: the settings of a SLURM or HTCondor cluster
  (dask-jobqueue) as a typed, validated object.
"""
