"""The harness of the benchmarks that time several engines, each in its own process.

A script (``dynamic_seq.py``, ``run_time_batch.py``, ``attention_fused.py``) calls itself with
``--worker ENGINE --out FILE.json --outputs FILE.npz`` once per engine and round; the worker
times its engine alone (no other engine's threads in its process) and writes its figures
(JSON) and outputs (npz), which the parent compares against onnxruntime. Rounds are
interleaved so load changes on a shared machine hit every engine alike, and the parent
reports the median over rounds of each round's median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np


def median_ms(run: Callable[[], object], runs: int, warmup: int) -> float:
    """Median wall time of ``run`` in ms, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def add_options(
    ap: argparse.ArgumentParser, engines: Sequence[str], runs: int = 20, warmup: int = 3
) -> None:
    """``--threads --runs --warmup --rounds`` and the hidden worker options."""
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=runs)
    ap.add_argument("--warmup", type=int, default=warmup)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker", choices=tuple(engines), help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--outputs", help=argparse.SUPPRESS)


def finish_worker(args: argparse.Namespace, result: Any, outputs: Mapping[str, np.ndarray]) -> None:
    """The worker's last step: its figures to ``--out``, its outputs to ``--outputs``."""
    arrays: dict[str, Any] = dict(outputs)
    np.savez(args.outputs, **arrays)
    Path(args.out).write_text(json.dumps(result))


def spawn(
    script: str,
    engine: str,
    argv: Sequence[str],
    tmp: Path,
    rnd: int,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``script --worker engine ...argv`` in a new process; its figures (a JSON object)
    with its outputs added under ``"outputs"``."""
    out, npz = tmp / f"{engine}-{rnd}.json", tmp / f"{engine}-{rnd}.npz"
    cmd = [sys.executable, script, "--worker", engine, "--out", str(out), "--outputs", str(npz),
           *argv]  # fmt: skip
    subprocess.run(cmd, check=True, env={**os.environ, **(env or {})})
    result = json.loads(out.read_text())
    with np.load(npz) as data:
        result["outputs"] = {k: data[k] for k in data.files}
    return result


def common_argv(args: argparse.Namespace) -> list[str]:
    """The options every worker takes, as given to the parent."""
    return ["--threads", str(args.threads), "--runs", str(args.runs), "--warmup", str(args.warmup)]
