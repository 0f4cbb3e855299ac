"""Reports on the fusion analysis for people tuning it (figures quoted in docs/fusion.md).

    python -m autofusion.tools.analysis_report structure MODEL [--windows 0,64,256]
                                                [--aggressiveness N] [--repeat N]
    python -m autofusion.tools.analysis_report hardware

``structure``: imports MODEL (``zoo:NAME`` or an ``.onnx`` file), runs the recognition passes
that precede ``fuse``, then times the structure analysis whole-graph and with each window
size, printing how far each windowed result agrees with the whole-graph one
(:func:`autofusion.analysis.structure.agreement`).

``hardware``: the cache sizes the cost model reads for this machine, a fresh ``np.copyto``
bandwidth measurement and the sgemm rate of our GEMM core on one thread (the cost model
itself uses the figures recorded in ``autofusion/analysis/hardware.py``, so compiles stay
deterministic; the two measurements become the profiler's one-thread roofs,
``autofusion/runtime/roofs.py``).

These printers live here, not in ``autofusion/analysis/``, because they drive the passes:
the analysis layer must not depend on the pass layer that uses it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from autofusion.errors import AutofusionError, run_cli
from autofusion.tools.compile import positive_int

PROG = "python -m autofusion.tools.analysis_report"
# The tensor passes that run before `fuse` in the pipeline and shape what it sees.
RECOGNITION_PASSES = (
    "canonicalize-nn",
    "fold-batchnorm",
    "recognize-layernorm",
    "recognize-gelu",
    "recognize-attention",
)


def _windows(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated window sizes, got {text!r}"
        ) from None
    if any(w < 0 for w in sizes):
        raise argparse.ArgumentTypeError(f"window sizes must be >= 0, got {text!r}")
    return sizes


def structure_report(model: str, windows: Sequence[int], aggressiveness: int,
                     repeat: int) -> list[str]:  # fmt: skip
    """The lines of the window-size agreement table (best of ``repeat`` timings each)."""
    from xdsl.context import Context

    from autofusion.analysis.hardware import cpu_this_machine
    from autofusion.analysis.structure import StructureResult, agreement, find_clusters
    from autofusion.api import import_model, open_model
    from autofusion.passes import get_all_passes
    from autofusion.passes.fuse import Decision
    from autofusion.policy.engine import FusionPolicy
    from autofusion.policy.reasons import RefusalLog

    module = import_model(open_model(model))
    passes = get_all_passes()
    for name in RECOGNITION_PASSES:
        passes[name]()().apply(Context(), module)
    func_op = next(iter(module.ops))
    ops = [o for o in func_op.regions[0].block.ops if o.name != "func.return"]
    policy = FusionPolicy.resolve(None, aggressiveness)
    decide = Decision(policy, cpu_this_machine())

    def run(window: int) -> StructureResult:
        results = [
            find_clusters(
                ops, decide, RefusalLog(), allow_recompute=policy.level >= 2, window_size=window
            )
            for _ in range(repeat)
        ]
        return min(results, key=lambda r: r.seconds)

    whole = run(0)
    lines = [
        f"{model}: {len(ops)} top-level ops, aggressiveness {policy.level}",
        f"{'window':>8} {'seconds':>9} {'kernels':>8} {'exact':>7} {'op-agree':>9}",
    ]
    for w in windows:
        r = whole if w == 0 else run(w)
        a = agreement(whole, r)
        lines.append(
            f"{w:>8} {r.seconds:>9.4f} {len(r.partition()):>8} "
            f"{a['exact_kernel_agreement']:>7.3f} {a['op_agreement']:>9.3f}"
        )
    return lines


def hardware_report() -> list[str]:
    """Cache sizes read for this machine, the copy bandwidth and our sgemm rate measured
    now; the last two are stored as the profiler's one-thread roofs (runtime/roofs.py)."""
    from autofusion.analysis import hardware
    from autofusion.runtime import roofs

    hw = hardware.cpu_this_machine()
    big = hardware.measure_copy_bandwidth()
    small = hardware.measure_copy_bandwidth(256 * hardware.KiB, 200)
    peak = roofs.measure_sgemm_gflops(1)
    roofs.record_roofs(1, "native", peak, big / 1e9)
    return [
        f"L1d {hw.l1_bytes // hardware.KiB} KiB, L2 {hw.fused_cache_bytes // hardware.KiB} KiB",
        f"copy bandwidth (64 MiB): {big / 1e9:.1f} GB/s",
        f"copy bandwidth (256 KiB): {small / 1e9:.1f} GB/s",
        f"sgemm {roofs.GEMM_N}^3, our GEMM core, 1 thread: {peak:.1f} GFLOP/s",
    ]


def _parser() -> argparse.ArgumentParser:
    from autofusion.tools.compile import CliParser

    ap = CliParser(prog=PROG, description=(__doc__ or "").split("\n\n")[0])
    sub = ap.add_subparsers(dest="report", required=True, metavar="{structure,hardware}",
                            parser_class=CliParser)  # fmt: skip
    st = sub.add_parser("structure", help="window-size agreement of the structure analysis")
    st.add_argument("model", metavar="MODEL", help="zoo:NAME or a path to an .onnx file")
    st.add_argument("--windows", type=_windows, default=_windows("0,32,64,128,256,512"),
                    help="window sizes to compare with the whole graph (0 = the whole graph "
                         "itself; default 0,32,64,128,256,512)")  # fmt: skip
    st.add_argument("--aggressiveness", type=int, default=1, choices=range(4),
                    metavar="{0,1,2,3}", help="fusion level (default 1)")  # fmt: skip
    st.add_argument("--repeat", type=positive_int, default=3, help="timings per window, best kept")
    sub.add_parser("hardware", help="cache sizes and measured copy bandwidth of this machine")
    return ap


def _run(argv: Sequence[str] | None) -> None:
    args = _parser().parse_args(argv)
    if args.report == "structure":
        lines = structure_report(args.model, args.windows, args.aggressiveness, args.repeat)
    elif args.report == "hardware":
        lines = hardware_report()
    else:  # pragma: no cover - argparse restricts the choices
        raise AutofusionError(f"unknown report {args.report!r}")
    print("\n".join(lines))


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(PROG, lambda: _run(argv))


if __name__ == "__main__":
    sys.exit(main())
