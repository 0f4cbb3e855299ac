"""The Python side of the kernel benchmarks (winograd_conv, conv1x1_small, nchwc_conv, pool2d,
dwpw_chain, gemm_direct_a): their common options, and building and running a ``*.c`` harness
(``kbench.h``) against ``afrt.h``.

    ap = kbench.parser(__doc__, cases_help="comma-separated CxKxH", cold=True)
    args = ap.parse_args()
    cases = kbench.cases(args, DEFAULT_CASES)
    out = kbench.run(SRC, [args.threads, args.reps, int(args.cold)], cases)
    kbench.print_heading(args, ["C", "K", "map", "new us", "old us", "ratio"])
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from autofusion.runtime import toolchain


def parser(
    doc: str | None, cases_help: str, reps: int = 9, cold: bool = True
) -> argparse.ArgumentParser:
    """``--threads``, ``--reps``, ``--cases`` and (``cold``) ``--cold``; described by the
    first paragraph of ``doc``."""
    ap = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=reps)
    if cold:
        ap.add_argument(
            "--cold",
            action="store_true",
            help="stream 64 MiB through the caches before every call (as in a model)",
        )
    ap.add_argument("--cases", default="", help=cases_help)
    return ap


def cases(args: argparse.Namespace, default: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """``--cases`` ("AxBxC,...") as integer tuples, else ``default``."""
    if not args.cases:
        return list(default)
    return [tuple(int(v) for v in c.split("x")) for c in args.cases.split(",")]


def print_heading(args: argparse.Namespace, columns: Sequence[str], note: str = "") -> None:
    """The line saying how it was measured (``note`` appended), then the table's head."""
    state = "" if "cold" not in args else ("cold caches, " if args.cold else "warm caches, ")
    print(f"{args.threads} thread(s), {state}medians of {args.reps} interleaved rounds{note}\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))


def run(src: Path, head: Sequence[object], cases: Sequence[tuple[int, ...]]) -> list[str]:
    """Build ``src`` (optimised for this CPU, warnings as errors) and run it with ``head``
    then every case's numbers as arguments; its output lines, ``#`` lines left out."""
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / src.stem
        subprocess.run([toolchain.c_compiler(), *toolchain.OPT_FLAGS, *toolchain.WERROR_FLAGS,
                        *toolchain.include_flags(), str(src), "-o", str(exe),
                        "-lm"], check=True)  # fmt: skip
        argv = [str(exe), *(str(v) for v in head), *(str(v) for c in cases for v in c)]
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if not line.startswith("#")]
