"""The one progress display of the package: over the runs of a sweep (tqdm when installed, otherwise one
rewritten stderr line), or, with no total, over the requests of one call (``prefetchsim sim``, ``run``,
``reproduce``): the count and the rate.

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


class Progress:
    """Runs done out of the grid, the rate, and requests replayed inside the running tasks; with
    ``total=None``, requests replayed and their rate only. Calling it with a request count is the core's
    progress callback."""

    def __init__(self, total: int | None, initial: int = 0, progress: bool | None = None, desc: str = "sweep",
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
        if self.enabled and total is not None:
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
            self._draw(force=self.total is not None and self.n >= self.total)

    def __call__(self, requests: int) -> None:
        self.set_requests(requests)

    def set_requests(self, requests: int) -> None:
        """Requests replayed so far by the tasks now running (from the core's progress callback)."""
        if self.total is None:
            self.requests = requests
            self._draw_requests()
            return
        if requests == self.requests:
            return
        self.requests = requests
        if self._tqdm is not None:
            self._tqdm.set_postfix_str(f"{requests / 1e6:.1f}M requests in running tasks", refresh=False)
        elif self.enabled:
            self._draw()

    def _draw_requests(self) -> None:
        if not self.enabled:
            return
        dt = max(time.monotonic() - self.t0, 1e-9)
        self.stream.write(f"\r  {self.requests:,} requests  ({self.requests / dt / 1e6:.2f} M/s)   ")
        self.stream.flush()
        self._drawn = (0, self.requests)

    def _draw(self, force: bool = False) -> None:
        if self.total is None:
            return
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
        elif self.enabled and self.total is None:
            if self._drawn is not None:
                self.stream.write("\n")
                self.stream.flush()
            self.enabled = False
        elif self.enabled:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False
