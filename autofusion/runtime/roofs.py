"""This machine's roofs for the profiler's roofline: peak sgemm GFLOP/s and copy GB/s.

Both are measured here, not taken from a datasheet:

- *compute roof*: a 512x512x512 fp32 MatMul (the weight a constant, as in a model) compiled
  by autofusion and timed kernel-only with the library's own profiling counters, best of
  several runs: the runtime's GEMM core at ``threads`` threads, with the build flags models
  get. ``2 * 512**3`` FLOPs over the best time, where at one thread a run's time is the
  smaller of its kernel wall time and the process CPU time (a run the scheduler preempted
  for another process counts only the time it ran, so a busy machine still measures its
  peak); with more threads it is the kernel wall time (CPU time per thread is no bound
  there), so measure a multi-thread roof on a quiet machine.
- *memory roof*: :func:`autofusion.analysis.hardware.measure_copy_bandwidth` (``np.copyto``
  of 64 MiB, read + write bytes, best of 5; one core).

Measuring takes a few seconds (one small compile, itself cached), so the figures are kept
in ``roofs.json`` in the compile cache folder (``$AUTOFUSION_CACHE_DIR``), keyed by machine,
CPU model, core count, thread count, ``--cpu`` and a digest of the runtime's C headers (a
new GEMM core is measured again). ``AUTOFUSION_PEAK_GFLOPS`` and ``AUTOFUSION_DRAM_GBS``
override either figure (positive numbers; nothing is measured for an overridden one).

A kernel whose arithmetic intensity (FLOPs per byte moved) is at least the ridge
``peak / bandwidth`` is bounded by compute, below it by memory; its attainable rate is
``min(peak, intensity * bandwidth)``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autofusion.errors import AutofusionError

ENV_PEAK = "AUTOFUSION_PEAK_GFLOPS"
ENV_BANDWIDTH = "AUTOFUSION_DRAM_GBS"
ROOFS_FILE = "roofs.json"
GEMM_N = 512
_GEMM_REPEATS = 15


@dataclass(frozen=True)
class Roofs:
    """Peak compute and memory rates of this machine at ``threads`` threads."""

    peak_gflops: float
    dram_gbs: float
    threads: int
    #: where the figures came from: "measured", "cached", "environment" (or one each)
    source: str

    @property
    def ridge(self) -> float:
        """FLOPs per byte above which a kernel is compute-bound."""
        return self.peak_gflops / self.dram_gbs

    def bound(self, flops_per_byte: float) -> str:
        """``"compute"`` or ``"memory"``: the roof that caps a kernel of this intensity."""
        return "compute" if flops_per_byte >= self.ridge else "memory"

    def attainable_gflops(self, flops_per_byte: float) -> float:
        return min(self.peak_gflops, flops_per_byte * self.dram_gbs)

    def to_dict(self) -> dict[str, object]:
        return {
            "peak_gflops": round(self.peak_gflops, 2),
            "dram_gbs": round(self.dram_gbs, 2),
            "ridge_flops_per_byte": round(self.ridge, 2),
            "threads": self.threads,
            "source": self.source,
        }


def _env_rate(name: str) -> float | None:
    text = os.environ.get(name)
    if text is None or not text.strip():
        return None
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v > 0):
        raise AutofusionError(f"{name}={text!r}: expected a positive number")
    return v


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "CPU part"):
                return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _runtime_digest() -> str:
    """A digest of the runtime's C headers (the GEMM core): a new core is a new roof."""
    h = hashlib.sha256()
    include = Path(__file__).resolve().parent / "include"
    for path in sorted(include.rglob("*")):
        if path.is_file():
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def roof_key(threads: int, cpu: str = "native") -> str:
    return "|".join([platform.machine(), _cpu_model(), f"cores={os.cpu_count()}",
                     f"threads={threads}", f"cpu={cpu}", f"rt={_runtime_digest()}"])  # fmt: skip


def measure_sgemm_gflops(threads: int, cpu: str = "native",
                         say: Callable[[str], None] = lambda _s: None) -> float:  # fmt: skip
    """GFLOP/s of the runtime's GEMM core on a 512^3 fp32 MatMul, kernel time only."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    import autofusion

    n = GEMM_N
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "sgemm_roof",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])], initializer=[w],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    say(f"measuring this machine's sgemm roof ({n}^3, {threads} thread(s))")
    compiled = autofusion.compile(model, threads=threads, cpu=cpu, label="sgemm roof")
    try:
        feeds = {"x": rng.standard_normal((n, n)).astype(np.float32)}
        for _ in range(2):
            compiled.run(feeds)
        best = math.inf
        for _ in range(_GEMM_REPEATS):
            c0 = time.process_time()
            (k,) = compiled.profile(feeds, 1)
            cpu_s = time.process_time() - c0
            # a 1-thread run preempted by other processes counts the CPU time it got, not the
            # wait. With more threads the process's CPU time per thread is no bound on the
            # kernel's wall time (threads that wait or sleep add less than the wall time;
            # dividing by the thread count once reported 3x the 1-thread roof at 2 threads),
            # so only the best wall time over the repeats counts there.
            best = min(best, k.seconds, max(cpu_s, 1e-9) if threads == 1 else math.inf)
    finally:
        compiled.close()
    return 2 * n**3 / best / 1e9


def _read_cache(path: Path) -> dict[str, dict[str, float]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(path: Path, data: dict[str, dict[str, float]]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        tmp.replace(path)
    except OSError:  # a read-only cache only costs a re-measurement next time
        tmp.unlink(missing_ok=True)


def record_roofs(threads: int, cpu: str, peak_gflops: float, dram_gbs: float) -> dict[str, float]:
    """Store measured roofs for this machine at ``threads`` threads (replacing any)."""
    from autofusion.runtime.cache import cache_root

    path = cache_root() / ROOFS_FILE
    entry = {"peak_gflops": peak_gflops, "dram_gbs": dram_gbs, "measured_at": time.time()}
    data = _read_cache(path)  # the latest: another process may have added keys meanwhile
    data[roof_key(threads, cpu)] = entry
    _write_cache(path, data)
    return entry


def machine_roofs(threads: int, cpu: str = "native",
                  say: Callable[[str], None] = lambda _s: None) -> Roofs:  # fmt: skip
    """The roofs at ``threads`` threads: environment overrides, else the cached
    measurement for this machine, else measured now (and cached)."""
    from autofusion.analysis.hardware import measure_copy_bandwidth
    from autofusion.runtime.cache import cache_root

    peak, bw = _env_rate(ENV_PEAK), _env_rate(ENV_BANDWIDTH)
    sources = ["environment" if peak is not None else "", "environment" if bw is not None else ""]
    if peak is None or bw is None:
        path = cache_root() / ROOFS_FILE
        key = roof_key(threads, cpu)
        data = _read_cache(path)
        entry = data.get(key, {})
        origin = "cached"
        # More threads never lower the roof: at T > 1 threads the 1-thread roof is a floor,
        # and a cached T-thread figure below it was a preempted measurement (the wall time
        # of a 2-thread GEMM while another process held a core once read 154 GFLOP/s, under
        # the 1-thread 186, and reports showed kernels at 177% of the roof).
        floor = machine_roofs(1, cpu, say).peak_gflops if threads > 1 else 0.0
        if (
            not isinstance(entry, dict)
            or not all(
                isinstance(entry.get(k), int | float) and entry[k] > 0
                for k in ("peak_gflops", "dram_gbs")
            )
            or entry["peak_gflops"] < floor
        ):
            measured = measure_sgemm_gflops(threads, cpu, say)
            if measured < floor:  # preempted: once more, and never below the floor
                measured = max(measured, measure_sgemm_gflops(threads, cpu, say), floor)
            entry = record_roofs(threads, cpu, measured, measure_copy_bandwidth() / 1e9)
            origin = "measured"
        if peak is None:
            peak, sources[0] = float(entry["peak_gflops"]), origin
        if bw is None:
            bw, sources[1] = float(entry["dram_gbs"]), origin
    source = (
        sources[0] if sources[0] == sources[1] else f"peak {sources[0]}, bandwidth {sources[1]}"
    )
    return Roofs(peak, bw, threads, source)
