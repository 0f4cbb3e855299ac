"""Two builds of one model loaded side by side, for the A/B scripts (``ab_libraries.py``,
``kernel_ab.py``, ``nchwc_models.py``): ``A/libmodel.so`` and ``B/libmodel.so`` from
``autofusion-compile`` folders, and seeded inputs in [-1, 1) for them; and each thread's
on-CPU time (``on_cpu_ns``) for the scripts that time by the busiest thread."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from autofusion.runtime.loader import ModelLibrary


def load_pair(
    a: Path, b: Path, threads: int = 1, profile: bool = False, seed: int = 0
) -> tuple[list[ModelLibrary], dict[str, np.ndarray]]:
    """Both libraries and one set of feeds; with ``profile`` each has run once (warm) and
    has its per-kernel profile on. A folder without ``libmodel.so`` exits with a message."""
    for d in (a, b):
        if not (d / "libmodel.so").is_file():
            print(f"{d}: no libmodel.so (an autofusion-compile folder?)", file=sys.stderr)
            sys.exit(1)
    libs = [ModelLibrary(d / "libmodel.so", d / "weights.bin", threads) for d in (a, b)]
    rng = np.random.default_rng(seed)
    feeds = {s.name: rng.uniform(-1, 1, s.shape).astype(s.dtype) for s in libs[0].inputs}
    if profile:
        for lib in libs:
            lib.run(feeds)
            lib.profile_enable(True)
    return libs, feeds


def on_cpu_ns() -> dict[str, int]:
    """Each thread of this process: nanoseconds on a CPU so far (Linux schedstat)."""
    out: dict[str, int] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[tid] = int(f.read().split()[0])
        except OSError:  # the thread has exited
            continue
    return out
