"""afrt.h's NEON kernels against its portable C on aarch64, under qemu-aarch64.

For each model, one ``--cpu aarch64`` folder is compiled and its ``model_main`` built twice
with the folder's own Makefile: as generated (NEON) and with ``-DAFRT_PORTABLE`` added to
CFLAGS. The two executables then run on the same .npy inputs in interleaved rounds; the
script prints the median wall time of each and their ratio (portable / NEON).

qemu translates every guest instruction into host code, so its wall time only indicates
how much work each build does; it is not a prediction of times on real aarch64 hardware.

    python benchmarks/bench_aarch64_qemu.py [--rounds N] [MODEL ...]   (default tiny_cnn mobilenet)
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from autofusion.tools import compile as compile_tool
from autofusion.zoo import get_model, sample_inputs

QEMU = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"]
_TRACE = re.compile(r"^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/")
_INSN = re.compile(r"^0x([0-9a-f]+):\s")


def guest_instructions(cmd: list[str], where: Path, status: int = 0) -> int:
    """Guest instructions one run executes: qemu logs each translated block's instructions
    (``-d in_asm``) and each block it runs (``exec,nochain``: chaining would hide them), into
    a FIFO read here; the count is the sum of the executed blocks' sizes. Noise-free, unlike
    the wall time, but still only a proxy: an FMLA counts as one, as do a load and a branch."""
    fifo = where / "qemu.log"
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    traced = [*QEMU, "-d", "in_asm,exec,nochain", "-D", str(fifo), *cmd[len(QEMU) :]]
    proc = subprocess.Popen(traced, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sizes: dict[str, int] = {}
    block, n, total = "", 0, 0
    with open(fifo, errors="replace") as log:
        for line in log:
            if line.startswith("Trace"):
                if block:
                    sizes[block], block = n, ""
                m = _TRACE.match(line)
                total += sizes.get(m.group(1).lstrip("0"), 0) if m else 0
            elif line.startswith("IN:"):
                block, n = "", 0
            elif m := _INSN.match(line):
                block = block or m.group(1).lstrip("0")
                n += 1
            elif block and not line.strip():
                sizes[block], block = n, ""
    assert proc.wait() == status, f"{cmd}: exit status {proc.returncode}"
    return total


def build(name: str, where: Path) -> tuple[dict[str, Path], list[str]]:
    out = where / name
    assert compile_tool.main([f"zoo:{name}", "-o", str(out), "--cpu", "aarch64",
                              "--threads", "1"]) == 0  # fmt: skip
    make = (out / "Makefile").read_text()
    cflags = next(line for line in make.splitlines() if line.startswith("CFLAGS = "))[9:]
    exes = {}
    for variant, extra in (("neon", ""), ("portable", " -DAFRT_PORTABLE")):
        subprocess.run(["make", "-s", "-B", "main", f"CFLAGS={cflags}{extra}"], cwd=out,
                       check=True)  # fmt: skip
        exe = out / f"model_main_{variant}"
        (out / "model_main").rename(exe)
        assert f"afrt-kernels={variant}".encode() in exe.read_bytes()
        exes[variant] = exe
    files = []
    for i, x in enumerate(sample_inputs(get_model(name), seed=3).values()):
        np.save(out / f"in{i}.npy", x)
        files.append(str(out / f"in{i}.npy"))
    return exes, files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", default=["tiny_cnn", "mobilenet"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--icount", action="store_true",
                    help="count executed guest instructions (one run each), not time")  # fmt: skip
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            exes, files = build(name, Path(tmp))
            if args.icount:
                # start-up and loading alone: no arguments, main prints its usage (status 2)
                start = guest_instructions([*QEMU, str(exes["neon"])], Path(tmp), 2)
                counts = {}
                for variant, exe in exes.items():
                    outdir = exe.parent / f"out_{variant}"
                    outdir.mkdir(exist_ok=True)
                    weights = str(exe.parent / "weights.bin")
                    cmd = [*QEMU, str(exe), weights, *files, "-o", str(outdir)]
                    counts[variant] = guest_instructions(cmd, Path(tmp)) - start
                neon, portable = counts["neon"] / 1e6, counts["portable"] / 1e6
                print(f"{name}: guest instructions of one run (start-up removed): "
                      f"neon {neon:.1f} M, portable {portable:.1f} M, "
                      f"portable/neon {portable / neon:.2f}")  # fmt: skip
                continue
            times: dict[str, list[float]] = {v: [] for v in [*exes, "start"]}
            for _ in range(args.rounds):
                for variant, exe in exes.items():  # interleaved: neon, portable, neon, ...
                    outdir = exe.parent / f"out_{variant}"
                    outdir.mkdir(exist_ok=True)
                    t0 = time.perf_counter()
                    weights = str(exe.parent / "weights.bin")
                    cmd = [*QEMU, str(exe), weights, *files, "-o", str(outdir)]
                    subprocess.run(cmd, check=True, capture_output=True)
                    times[variant].append(time.perf_counter() - t0)
                # qemu start-up and loading alone: no arguments, main prints its usage
                t0 = time.perf_counter()
                subprocess.run([*QEMU, str(exes["neon"])], capture_output=True)
                times["start"].append(time.perf_counter() - t0)
            med = {v: statistics.median(t) for v, t in times.items()}
            run = {v: med[v] - med["start"] for v in exes}
            print(f"{name}: neon {med['neon']:.3f} s, portable {med['portable']:.3f} s, "
                  f"portable/neon {med['portable'] / med['neon']:.2f}; without qemu start-up "
                  f"({med['start']:.3f} s): {run['portable'] / run['neon']:.2f} "
                  f"(median of {args.rounds}, qemu wall time: indicative only)")  # fmt: skip


if __name__ == "__main__":
    main()
