"""A progress bar over the runs of a sweep: tqdm when installed, otherwise one rewritten stderr line.

Shown only when stderr is a terminal or when forced (``progress=True``, ``--progress``); silent
otherwise, so logs and CI output stay clean.
"""

from __future__ import annotations

import sys
import time
from typing import IO

from ._deps import optional


def _enabled(progress: bool | None, stream: IO[str]) -> bool:
    if progress is not None:
        return bool(progress)
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class RunBar:
    """Runs done out of the grid, the rate, and requests replayed inside the running tasks."""

    def __init__(self, total: int, initial: int = 0, progress: bool | None = None, desc: str = "sweep",
                 stream: IO[str] | None = None):
        self.stream = stream or sys.stderr
        self.enabled = _enabled(progress, self.stream)
        self.total, self.n, self.initial = total, initial, initial
        self.requests = 0
        self.desc = desc
        self.t0 = time.monotonic()
        self._last = 0.0
        self._drawn: tuple[int, int] | None = None
        self._tqdm = None
        if self.enabled:
            tqdm = optional("tqdm")
            if tqdm is not None:
                self._tqdm = tqdm.tqdm(total=total, initial=initial, unit="run", desc=desc, file=self.stream,
                                       dynamic_ncols=True, smoothing=0.1)
            else:
                self._draw(force=True)

    def update(self, n: int = 1) -> None:
        self.n += n
        if self._tqdm is not None:
            self._tqdm.update(n)
        elif self.enabled:
            self._draw(force=self.n >= self.total)

    def set_requests(self, requests: int) -> None:
        """Requests replayed so far by the tasks now running (from the core's progress callback)."""
        if requests == self.requests:
            return
        self.requests = requests
        if self._tqdm is not None:
            self._tqdm.set_postfix_str(f"{requests / 1e6:.1f}M requests in running tasks", refresh=False)
        elif self.enabled:
            self._draw()

    def _draw(self, force: bool = False) -> None:
        t = time.monotonic()
        if not force and t - self._last < 0.2:
            return
        if self._drawn == (self.n, self.requests):
            return
        self._last, self._drawn = t, (self.n, self.requests)
        dt = max(t - self.t0, 1e-9)
        done_now = self.n - self.initial
        rate = done_now / dt
        pct = 100.0 * self.n / self.total if self.total else 100.0
        eta = f", ETA {int((self.total - self.n) / rate)} s" if rate > 0 and self.n < self.total else ""
        req = f", {self.requests / 1e6:.1f}M requests in running tasks" if self.requests else ""
        self.stream.write(f"\r{self.desc}: {self.n}/{self.total} runs ({pct:.0f}%), {rate:.2f} runs/s{eta}{req}   ")
        self.stream.flush()

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None
        elif self.enabled:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False
