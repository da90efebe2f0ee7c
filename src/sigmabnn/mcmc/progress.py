"""A tiny progress bar for sampling runs: iterations, rate (it/s) and ETA on stderr.

Updated from Python between jitted chunks of iterations (the chain itself
runs inside ``lax.scan``). Silent when disabled or when the stream is not a
terminal, so logs and CI output stay clean.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _format_seconds(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):  # nan / inf
        return "--:--"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class ProgressBar:
    """Text progress bar ``desc |#####     | n/total  rate it/s  ETA mm:ss``.

    Args:
        total: number of iterations expected (>= 0).
        desc: label printed before the bar (e.g. ``"warmup"``).
        enabled: ``False`` silences the bar; ``None``/``True`` show it only
            when ``stream`` is a terminal.
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
        self.width = width
        self.count = 0
        self._start = time.perf_counter()
        self._closed = False

    def set_description(self, desc: str) -> None:
        """Change the label (e.g. from ``"warmup"`` to ``"sample"``)."""
        self.desc = desc
        self._draw()

    def update(self, n: int = 1) -> None:
        """Advance by ``n`` iterations and redraw."""
        self.count = min(self.count + int(n), self.total) if self.total else self.count + int(n)
        self._draw()

    def line(self) -> str:
        """The current bar as a string (without carriage return)."""
        elapsed = time.perf_counter() - self._start
        rate = self.count / elapsed if elapsed > 0 else float("nan")
        remaining = (self.total - self.count) / rate if rate and rate == rate and rate > 0 else float("nan")
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
        """Finish the line (newline) once."""
        if self.enabled and not self._closed:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
        self._closed = True

    def __enter__(self) -> ProgressBar:
        self._draw()
        return self

    def __exit__(self, *exc) -> None:
        self.close()
