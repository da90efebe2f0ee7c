"""Progress of a long loop on stderr: a bar on a terminal, a few plain lines in a log.

Updated from Python between jitted chunks of iterations (the chain itself
runs inside ``lax.scan``). On a terminal it is a bar redrawn in place
(iterations, rate, time left). Anywhere else (a batch job's log file, a pipe) a
redrawn bar would be noise, so it writes whole lines instead: one when the run
is :data:`ESTIMATE_FRACTION` done (elapsed time and an estimate of the time
left), one when a phase ends (the description changes, e.g. from ``"warmup"``
to ``"sample"``) and one when the run closes. Silent when disabled. A phase without a bar
(MAP pretraining, whose length early stopping decides) gets one line when it ends in a log
(:func:`log_phase`).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

ESTIMATE_FRACTION = 0.1
"""Share of the iterations after which a log (not a terminal) gets its estimate of the time left."""


def _format_seconds(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):  # nan / inf
        return "--:--"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def log_phase(what: str, seconds: float, enabled: bool | None = True, stream: TextIO | None = None) -> None:
    """One line ``"<what>: mm:ss elapsed"`` for a phase that ended, in a log only (not a terminal, not
    when ``enabled`` is ``False`` or ``None``), as :class:`ProgressBar` writes its lines."""
    stream = stream if stream is not None else sys.stderr
    if enabled is True and not bool(getattr(stream, "isatty", lambda: False)()):
        stream.write(f"{what}: {_format_seconds(seconds)} elapsed\n")
        stream.flush()


class ProgressBar:
    """Text progress bar ``desc |#####     | n/total  rate it/s  ETA mm:ss``, or log lines off a terminal.

    Args:
        total: number of iterations expected (>= 0).
        desc: label printed before the bar (e.g. ``"warmup"``): the current phase.
        enabled: ``False`` silences it; ``True`` draws the bar on a terminal and writes log
            lines (module docstring) elsewhere; ``None`` draws the bar on a terminal only.
        stream: where to write (default ``sys.stderr``).
        width: bar width in characters.
    """

    def __init__(
        self, total: int, desc: str = "", enabled: bool | None = True, stream: TextIO | None = None, width: int = 30
    ) -> None:
        self.total = max(int(total), 0)
        self.desc = desc
        self.stream = stream if stream is not None else sys.stderr
        is_tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = bool(enabled is not False and is_tty)
        self.logging = bool(enabled is True and not is_tty)
        self.width = width
        self.count = 0
        self._start = time.perf_counter()
        self._closed = False
        self._estimated = False

    def set_description(self, desc: str) -> None:
        """Change the label (e.g. from ``"warmup"`` to ``"sample"``): in a log, the end of a phase."""
        if self.logging and desc != self.desc and not self._closed:
            self._log(f"{self.desc or 'run'} done at {self.count}/{self.total}")
        self.desc = desc
        self._draw()

    def update(self, n: int = 1) -> None:
        """Advance by ``n`` iterations and redraw."""
        self.count = min(self.count + int(n), self.total) if self.total else self.count + int(n)
        if self.logging and not self._estimated and self.count >= max(1, ESTIMATE_FRACTION * self.total):
            self._estimated = True
            self._log(f"{self.desc or 'run'} at {self.count}/{self.total}")
        self._draw()

    def _remaining(self) -> tuple[float, float, float]:
        """Elapsed seconds, rate (iterations per second) and estimated seconds left."""
        elapsed = time.perf_counter() - self._start
        rate = self.count / elapsed if elapsed > 0 else float("nan")
        remaining = (self.total - self.count) / rate if rate and rate == rate and rate > 0 else float("nan")
        return elapsed, rate, remaining

    def _log(self, what: str) -> None:
        elapsed, _, remaining = self._remaining()
        left = "" if self.count >= self.total else f", about {_format_seconds(remaining)} left"
        self.stream.write(f"{what} iterations: {_format_seconds(elapsed)} elapsed{left}\n")
        self.stream.flush()

    def line(self) -> str:
        """The current bar as a string (without carriage return)."""
        _, rate, remaining = self._remaining()
        frac = self.count / self.total if self.total else 1.0
        filled = int(round(frac * self.width))
        bar = "#" * filled + " " * (self.width - filled)
        rate_txt = f"{rate:.1f} it/s" if rate == rate else "-- it/s"
        label = f"{self.desc} " if self.desc else ""
        return f"{label}|{bar}| {self.count}/{self.total}  {rate_txt}  ETA {_format_seconds(remaining)}"

    def _draw(self) -> None:
        if not self.enabled or self._closed:
            return
        self.stream.write("\r" + self.line())
        self.stream.flush()

    def close(self) -> None:
        """Finish the line (newline) once; in a log, the line of the last phase."""
        if self.enabled and not self._closed:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
        if self.logging and not self._closed:
            self._log(f"{self.desc or 'run'} done at {self.count}/{self.total}")
        self._closed = True

    def __enter__(self) -> ProgressBar:
        self._draw()
        return self

    def __exit__(self, *exc) -> None:
        self.close()
