"""Per kernel of a model: the busiest thread's CPU time at N threads against one thread.

Copies an ``autofusion-compile`` folder twice, rewrites the per-kernel profile macro of each
copy's ``model.c`` (``AF_PROF_CALL``) to read every OpenMP thread's CPU clock before and after
the kernel (a parallel region of stamps on each side), rebuilds ``libmodel.so``, and runs
the copies at one and at ``--threads`` threads alternately, ``--rounds`` profiled runs each,
with ``OMP_WAIT_POLICY=passive`` (this script re-executes itself with it set), so a thread
with nothing to do sleeps and its CPU time is its share. Per kernel: the median over rounds
of the one-thread CPU time, of the busiest thread's and of all threads' at N threads, and
"lost": busiest minus one thread / N, what the kernel adds to a run's time over a perfect
split, in ms; then the same summed by kernel class (the kernel name without its number:
``conv_sigmoid_mul``, ``global_avg_pool``...), and the kernels that lose most. Robust to
load where two-thread wall time is not (docs/runtime.md, "Threads on a busy machine");
the stamps cost a few microseconds per kernel, so tiny kernels read high. The thread-count
adaptation is off in both copies. Linux only.

    .venv/bin/python benchmarks/kernel_thread_cpu.py DIR [--threads 2] [--rounds 15]
        [--top 25]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from autofusion.runtime.loader import ModelLibrary

STAMPED = r"""
static inline double af_thread_cpu_(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static void af_stamp_(double *t) {
  const int n = afrt_num_threads_;
  _Pragma("omp parallel num_threads(n)") t[omp_get_thread_num()] = af_thread_cpu_();
}
/* seconds: the busiest thread's CPU time; calls: all threads' CPU time in ns */
#define AF_PROF_CALL(i, call)                                                    \
  do {                                                                           \
    if (af_prof_on_) {                                                           \
      double a_[64], b_[64], mx_ = 0.0, s_ = 0.0;                                \
      af_stamp_(a_);                                                             \
      call;                                                                      \
      af_stamp_(b_);                                                             \
      for (int j_ = 0; j_ < afrt_num_threads_; ++j_) {                           \
        s_ += b_[j_] - a_[j_];                                                   \
        mx_ = b_[j_] - a_[j_] > mx_ ? b_[j_] - a_[j_] : mx_;                     \
      }                                                                          \
      af_prof_seconds_[i] += mx_;                                                \
      af_prof_calls_[i] += (long long)(s_ * 1e9);                                \
    } else {                                                                     \
      call;                                                                      \
    }                                                                            \
    if (af_nomem_call_ < 0 && afrt_nomem_kernel())                               \
      af_nomem_call_ = (i);                                                      \
  } while (0)
"""


def stamped_copy(src: Path, dst: Path) -> None:
    """``src`` copied to ``dst`` with the stamping profile macro, ``libmodel.so`` rebuilt."""
    shutil.copytree(src, dst)
    text = (dst / "model.c").read_text()
    text, n = re.subn(r"#define AF_PROF_CALL\(i, call\).*?while \(0\)\n", lambda _: STAMPED,
                      text, count=1, flags=re.S)  # fmt: skip
    if n != 1:
        sys.exit(f"{src}/model.c: no AF_PROF_CALL macro (not built by this autofusion?)")
    (dst / "model.c").write_text(text)
    subprocess.run(["make", "-s", "-B", "-C", str(dst), "libmodel.so"],
                   check=True, capture_output=True)  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    if os.environ.get("OMP_WAIT_POLICY") != "passive":
        os.environ["OMP_WAIT_POLICY"] = "passive"
        os.execv(sys.executable, [sys.executable, *sys.argv])
    if not (args.dir / "model.c").is_file():
        print(f"{args.dir}: no model.c (an autofusion-compile folder?)", file=sys.stderr)
        return 1
    nth = args.threads
    with tempfile.TemporaryDirectory() as tmp:
        libs: dict[int, ModelLibrary] = {}
        for t in (1, nth):  # two copies: the thread count belongs to the loaded library
            d = Path(tmp) / f"t{t}"
            stamped_copy(args.dir, d)
            libs[t] = ModelLibrary(d / "libmodel.so", d / "weights.bin", t)
            libs[t].set_thread_lag_us(1e12)
        rng = np.random.default_rng(0)
        feeds = {s.name: rng.uniform(-1, 1, s.shape).astype(s.dtype) for s in libs[1].inputs}
        busy: dict[int, dict[tuple[int, str], list[float]]] = {t: collections.defaultdict(list)
                                                               for t in libs}  # fmt: skip
        work: dict[int, dict[tuple[int, str], list[float]]] = {t: collections.defaultdict(list)
                                                               for t in libs}  # fmt: skip
        for _ in range(args.rounds):
            for t, lib in libs.items():
                lib.run(feeds)
                lib.profile_enable(True)
                lib.profile_reset()
                lib.run(feeds)
                lib.profile_enable(False)
                for i, k in enumerate(lib.profile()):
                    busy[t][(i, k.kernel)].append(k.seconds * 1e3)
                    work[t][(i, k.kernel)].append(k.calls * 1e-6)
    rows = []
    for key in busy[1]:
        one = statistics.median(work[1][key])
        b, w = statistics.median(busy[nth][key]), statistics.median(work[nth][key])
        rows.append((b - one / nth, key[1], one, b, w))
    s1, sb, sw = (sum(r[i] for r in rows) for i in (2, 3, 4))
    print(f"{args.dir}: {len(rows)} kernels, medians of {args.rounds} rounds, ms per run")
    print(f"one thread {s1:.3f}; {nth} threads: busiest {sb:.3f} (speed-up {s1 / sb:.2f}), "
          f"all {sw:.3f} (work {sw / s1:.2f}); lost {sb - s1 / nth:.3f}\n")  # fmt: skip
    classes: dict[str, list[float]] = collections.defaultdict(lambda: [0.0] * 5)
    for lost, name, one, b, w in rows:
        c = classes[re.sub(r"^(k|op)\d+_", "", name)]
        for i, v in enumerate((lost, one, b, w, 1.0)):
            c[i] += v
    print("| class | kernels | one thread | busiest | all threads | speed-up | lost |")
    print("|---|---|---|---|---|---|---|")
    for name, (lost, one, b, w, n) in sorted(classes.items(), key=lambda kv: -kv[1][0]):
        print(f"| {name} | {n:.0f} | {one:.3f} | {b:.3f} | {w:.3f} | {one / b:.2f} | {lost:.3f} |")
    print("\n| kernel | one thread | busiest | all threads | speed-up | lost |")
    print("|---|---|---|---|---|---|")
    for lost, name, one, b, w in sorted(rows, reverse=True)[: args.top]:
        print(f"| {name} | {one:.3f} | {b:.3f} | {w:.3f} | {one / b:.2f} | {lost:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
