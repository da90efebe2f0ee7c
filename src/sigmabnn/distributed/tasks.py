"""One function over many items on a Dask cluster: results in order of completion, failures raised.

A task whose worker dies (killed, out of memory) is rescheduled by the scheduler on
another worker, up to its ``distributed.scheduler.allowed-failures`` (default 3)
times; a task that raises stops the whole map: the other tasks are cancelled and
the exception is raised in the caller, with its own type (an
:class:`~sigmabnn.errors.InputError` stays one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["map_unordered"]


def map_unordered(
    client: Any,
    fn: Callable[..., Any],
    items: Sequence[Any],
    *,
    keys: Sequence[str],
    **kwargs: Any,
) -> Iterator[tuple[int, Any]]:
    """Run ``fn(item, **kwargs)`` for every item as one task each; yield ``(index, result)`` as they finish.

    Args:
        client: a ``dask.distributed.Client``.
        fn: a module-level function (workers import it by name).
        items: one per task.
        keys: the task keys (unique; shown on the dashboard and in logs), one per item.
        **kwargs: passed to every call (sent once, not once per task).

    Raises:
        whatever a task raised (the remaining tasks are cancelled first);
        ``distributed.KilledWorker`` when a task's workers died more often than allowed.
    """
    from distributed import as_completed

    if len(keys) != len(items) or len(set(keys)) != len(keys):
        raise ValueError("need one unique key per item")
    shared = {name: client.scatter(value, broadcast=True) if _large(value) else value for name, value in kwargs.items()}
    futures = [client.submit(fn, item, key=key, pure=False, **shared) for item, key in zip(items, keys, strict=True)]
    index = {f.key: i for i, f in enumerate(futures)}
    try:
        for future in as_completed(futures):
            yield index[future.key], future.result()
    finally:
        client.cancel(futures)


def _large(value: Any) -> bool:
    """Whether a shared argument is worth sending once (a table) rather than inside every task."""
    return hasattr(value, "memory_usage") and hasattr(value, "columns")
