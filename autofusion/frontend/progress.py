"""Progress lines on stderr for big imports (``importing: 512/1024 nodes``)."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

BIG_WEIGHT_BYTES = 100 * 1024 * 1024
BIG_NODE_COUNT = 500


@dataclass
class Progress:
    """Reports about ten evenly spaced steps of the node walk, plus load and finish lines."""

    total: int
    weight_bytes: int
    enabled: bool
    start: float = field(default_factory=time.perf_counter)
    _next: int = 0

    @staticmethod
    def create(option: bool | None, total: int, weight_bytes: int) -> Progress:
        """``option`` True/False forces it; None shows it for big models on a terminal
        (or when ``AUTOFUSION_PROGRESS=1``)."""
        if option is not None:
            return Progress(total, weight_bytes, option)
        big = weight_bytes > BIG_WEIGHT_BYTES or total > BIG_NODE_COUNT
        wanted = sys.stderr.isatty() or os.environ.get("AUTOFUSION_PROGRESS") == "1"
        enabled = big and wanted and os.environ.get("AUTOFUSION_PROGRESS") != "0"
        return Progress(total, weight_bytes, enabled)

    @staticmethod
    def reading(option: bool | None, path: str | os.PathLike[str]) -> None:
        """Announce reading a big file (before the node count is known)."""
        try:
            size = os.path.getsize(path)
        except OSError:
            return
        if Progress.create(option, 0, size).enabled:
            print(
                f"importing: reading {os.fspath(path)} ({size / 2**20:.0f} MB)",
                file=sys.stderr,
                flush=True,
            )

    def _say(self, text: str) -> None:
        if self.enabled:
            print(f"importing: {text}", file=sys.stderr, flush=True)

    def loaded(self) -> None:
        mb = self.weight_bytes / (1024 * 1024)
        self._say(
            f"{mb:.1f} MB of weights, {self.total} nodes ({time.perf_counter() - self.start:.1f} s)"
        )
        self._next = max(1, self.total // 10)

    def step(self, done: int) -> None:
        if self.enabled and (done >= self._next or done == self.total):
            self._say(f"{done}/{self.total} nodes")
            self._next = done + max(1, self.total // 10)

    def done(self) -> None:
        self._say(f"done in {time.perf_counter() - self.start:.1f} s")
