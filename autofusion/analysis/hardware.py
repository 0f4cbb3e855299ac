"""Hardware descriptions the cost model reads: cache sizes, bandwidths, peak FLOP rate.

``cpu_this_machine()`` reads cache sizes from sysfs (falling back to the figures recorded
below) and uses the bandwidth measured once on this machine with a numpy copy benchmark
(``measure_copy_bandwidth()``; re-run it with
``python -m autofusion.tools.analysis_report hardware``).
Recorded on the development machine (2-core "Intel(R) Xeon(R) Processor" VM, 2026-12-02):

    L1d 48 KiB, L2 2 MiB per core (sysfs ``/sys/devices/system/cpu/cpu0/cache``),
    L3 480 MiB reported by lscpu (virtualised, not trusted as a working-set bound),
    np.copyto of 64 MiB: 14.1 GB/s counted as read+write bytes (DRAM);
    np.copyto of 256 KiB (L2-resident): 92.7 GB/s.
    sgemm ~100 GFLOP/s on one core (shared/NOTES.md; the runtime's own GEMM core is measured
    by ``autofusion.runtime.roofs``).

Ascend 910B (Atlas A2 training series) from public specifications:
    Unified Buffer (UB) 192 KB per AI Core (vector unit working memory), L1 buffer 512 KB,
    L0A/L0B 64 KB, L0C 128 KB — Ascend C programming guide, "hardware architecture"
    (hiascend.com, CANN 8.0 docs, Atlas A2 series); HBM2e about 1.6 TB/s
    (Atlas 800T A2 datasheet); FP16 cube peak about 313 TFLOP/s (same datasheet).
The cost model treats the UB as the fused working set bound on Ascend (a fused vector
group must keep its tiles in UB) and L2 as the bound on CPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

KiB = 1024
MiB = 1024 * 1024


@dataclass(frozen=True)
class Hardware:
    """What the cost model needs to know about one target."""

    name: str
    #: bytes of the cache level that bounds a fused kernel's working set (L2 / UB)
    fused_cache_bytes: int
    l1_bytes: int
    #: main-memory bandwidth (bytes/s) and the bandwidth inside fused_cache
    dram_bandwidth: float
    cache_bandwidth: float
    #: peak FLOP/s of the contraction unit (GEMM / cube)
    peak_flops: float
    #: output elements a fused kernel processes per tile (epilogue tile, vector chunk)
    tile_elems: int
    #: bytes of the GEMM/cube operand block kept resident while an output tile is produced
    gemm_block_bytes: int

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity above which a kernel is compute-bound (roofline ridge)."""
        return self.peak_flops / self.dram_bandwidth


def _sysfs_cache(level: int, kind: str) -> int | None:
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        for idx in sorted(base.glob("index*")):
            if (idx / "level").read_text().strip() == str(level) and (
                idx / "type"
            ).read_text().strip() in (kind, "Unified"):
                text = (idx / "size").read_text().strip().upper()
                mult = {"K": KiB, "M": MiB}.get(text[-1], 1)
                return int(text.rstrip("KM")) * mult
    except (OSError, ValueError):
        return None
    return None


def measure_copy_bandwidth(nbytes: int = 64 * MiB, repeats: int = 5) -> float:
    """Bytes moved (read + write) per second by ``np.copyto`` of ``nbytes`` (best of N).

    Each copy counts the smaller of its wall time and this thread's CPU time, so a copy
    the scheduler preempted for another process counts only the time it ran."""
    import numpy as np

    a = np.ones(nbytes // 4, dtype=np.float32)
    b = np.empty_like(a)
    best = float("inf")
    for _ in range(repeats):
        c = time.thread_time()
        t = time.perf_counter()
        np.copyto(b, a)
        wall = time.perf_counter() - t
        best = min(best, wall, max(time.thread_time() - c, 1e-9))
    return 2 * a.nbytes / best


@cache
def cpu_this_machine() -> Hardware:
    """This machine: sysfs cache sizes, recorded bandwidths (deterministic: not re-measured)."""
    l1 = _sysfs_cache(1, "Data") or 48 * KiB
    l2 = _sysfs_cache(2, "Unified") or 2 * MiB
    return Hardware(
        name="cpu",
        fused_cache_bytes=l2,
        l1_bytes=l1,
        dram_bandwidth=14.1e9,
        cache_bandwidth=92.7e9,
        peak_flops=100e9,
        tile_elems=8192,
        gemm_block_bytes=256 * KiB,
    )


ASCEND_910B = Hardware(
    name="ascend910b",
    fused_cache_bytes=192 * KiB,  # Unified Buffer per AI Core
    l1_bytes=512 * KiB,  # L1 buffer feeding the cube unit
    dram_bandwidth=1.6e12,  # HBM2e
    cache_bandwidth=1.6e12 * 8,  # UB is on-core SRAM; ~an order above HBM (estimate)
    peak_flops=313e12,  # FP16 cube peak
    tile_elems=8192,  # 32 KB of fp32 per tensor per chunk, double-buffered
    gemm_block_bytes=128 * KiB,  # L0C output block
)


def hardware_for(name: str) -> Hardware:
    if name == "cpu":
        return cpu_this_machine()
    if name == "ascend910b":
        return ASCEND_910B
    from autofusion.errors import AutofusionError

    raise AutofusionError(f"unknown hardware {name!r} (known: cpu, ascend910b)")
