"""Interrupt requests that a long run honours at its next chunk, even when the exception was lost.

A signal handler that raises ``KeyboardInterrupt`` (Python's default for Ctrl-C, and the
command line's handler for SIGTERM) interrupts whatever Python code runs at that moment. When
that code is a callback whose exceptions Python swallows (a garbage-collection callback, a
``__del__``), the exception is printed as "ignored" and lost, and a training run would go on
to the end as if the signal had never come. The command line's handlers therefore also
:func:`request` the interrupt; the MCMC runner (after each chunk's commit), MAP pretraining
(and so the deep ensemble) and variational fits call :func:`raise_if_pending` after every
chunk, so a lost exception is raised there.

Without a handler that calls :func:`request` (library use), nothing is ever pending and
:func:`raise_if_pending` does nothing.
"""

from __future__ import annotations

__all__ = ["clear", "pending", "raise_if_pending", "request"]

_pending: type[BaseException] | None = None


def request(exception_type: type[BaseException] = KeyboardInterrupt) -> None:
    """Record that an interrupt of type ``exception_type`` was asked for (called by signal handlers)."""
    global _pending
    _pending = exception_type


def pending() -> type[BaseException] | None:
    """The exception type of the pending interrupt, or ``None``."""
    return _pending


def clear() -> None:
    """Forget a pending interrupt (when the handler that requested it is removed)."""
    global _pending
    _pending = None


def raise_if_pending() -> None:
    """Raise the pending interrupt's exception (and clear it), if any."""
    exception_type = _pending
    if exception_type is not None:
        clear()
        raise exception_type()
