"""``autofusion-compile``: ONNX model -> a directory with model.c, model.h, weights.bin,
Makefile and libmodel.so (target c), or the Ascend C sources (target ascendc).

    autofusion-compile MODEL -o DIR [--target c|ascendc] [--config FILE] [--no-fusion]
                       [--memory-limit MB] [--threads N] [--report FILE.json]
                       [--memory-plot FILE.svg] [--policy module:Class]
                       [--input-shape NAME=DIMS ...] [--dynamic SYM=LO..HI ...] [--cpu CPU]
                       [--validate-precision] [--save-fused-onnx FILE.onnx] [--runtime-sizes]
                       [--report-html FILE.html] [--[no-]one-build] [--version]

Everything is written into a staging directory first and moved to DIR only when complete,
so a failure leaves no half-written output (an existing DIR is replaced only on success).
Progress lines go to stderr; errors are one line (exit status 1, no traceback).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from autofusion.errors import AutofusionError, run_cli
from autofusion.runtime.toolchain import CPUS


class CliParser(argparse.ArgumentParser):
    """argparse that reports bad usage as a one-line error with exit status 1."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(1)


def int_at_least(lo: int) -> Callable[[str], int]:
    """An argparse ``type`` accepting integers >= ``lo``."""
    want = "a positive integer" if lo == 1 else f"an integer >= {lo}"

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}")
        return v

    return parse


non_negative_int = int_at_least(0)
positive_int = int_at_least(1)


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"expected a finite positive number, got {text!r}")
    return v


def version_text() -> str:
    """``autofusion X.Y.Z (xdsl A.B.C)``, printed by every command's ``--version``."""
    from importlib.metadata import PackageNotFoundError, version

    import autofusion

    try:
        xdsl = version("xdsl")
    except PackageNotFoundError:  # pragma: no cover - xdsl is a dependency
        xdsl = "unknown"
    return f"autofusion {autofusion.__version__} (xdsl {xdsl})"


def add_input_shape_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input-shape",
        metavar="NAME=DIMS",
        action="append",
        help="pin a graph input's shape, e.g. input_ids=1x128 (repeatable; fixes the "
        "input's dynamic dims, the others must match the model)",
    )


def add_dynamic_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dynamic",
        metavar="SYM=LO..HI",
        action="append",
        help="declare the range of a symbolic input dim, e.g. seq=1..512 (repeatable; "
        "pinned sizes must lie in it; a one-size range N..N fixes the symbol; "
        "autofusion-compile builds one library for every size of a free batch symbol, "
        "docs/dynamic.md)",
    )


def open_cli_model(
    args: argparse.Namespace, run_time_batch: bool = False, one_build: bool | None = False
):  # -> ModelSource
    """``args.model`` opened with its pins and declared ranges checked; every symbol must be
    pinned (a command builds one library per shape), except, with ``run_time_batch``
    (autofusion-compile), one free batch symbol of a batch-separable model, which the
    library takes at run time (``api.pin_batch``, docs/dynamic.md), and with ``one_build``
    (``--one-build``; ``None``: whenever the free symbols are not a lone batch and the
    target is c, ``api.auto_one_build``) every free symbol, kept symbolic
    (``api.one_build_source``)."""
    from autofusion.api import auto_one_build, one_build_source, open_model, pin_batch
    from autofusion.frontend.shapes import parse_shape_specs
    from autofusion.frontend.symbols import parse_range_specs

    source = open_model(args.model, input_shapes=parse_shape_specs(args.input_shape),
                        dynamic=parse_range_specs(args.dynamic), config=args.config,
                        flags=("--input-shape", "--dynamic"))  # fmt: skip
    assert source.plan is not None
    if one_build is None:
        one_build = auto_one_build(source, getattr(args, "target", "c"))
    if one_build and source.plan.free:
        return one_build_source(source)
    if run_time_batch and source.plan.free:
        from autofusion.frontend.batch import batch_candidate

        if batch_candidate(source.plan) is not None:
            return pin_batch(source)
    source.plan.require_static()
    return source


def add_model_options(p: argparse.ArgumentParser) -> None:
    """Options shared by autofusion-compile and autofusion-bench."""
    p.add_argument("--version", action="version", version=version_text())
    p.add_argument("model", metavar="MODEL", help="an .onnx file or zoo:NAME")
    from autofusion.lowering import BACKENDS

    p.add_argument("--target", choices=tuple(BACKENDS), default="c")
    p.add_argument("--config", metavar="FILE", help="fusion config (JSON or YAML)")
    p.add_argument("--no-fusion", action="store_true", help="skip all fusion passes")
    p.add_argument("--memory-limit", metavar="MB", type=positive_float,
                   help="tile fused groups so the arena fits in MB")  # fmt: skip
    p.add_argument("--threads", metavar="N", type=positive_int, help="threads (default: all cores)")
    p.add_argument("--policy", metavar="MODULE:CLASS", help="a user fusion policy")
    p.add_argument("--analysis-window", metavar="N", type=non_negative_int,
                   help="fusion analysis in windows of N ops (0: whole graph, the default; "
                        "overrides the config's analysis_window)")  # fmt: skip
    p.add_argument("--cpu", choices=tuple(CPUS), default="native",
                   help="the CPU the C build is for (default native: this machine's)")  # fmt: skip
    add_input_shape_option(p)
    add_dynamic_option(p)


def pipeline_options(args: argparse.Namespace):  # -> PipelineOptions
    from autofusion.pipeline import PipelineOptions, backend_of

    if args.config is not None and not Path(args.config).is_file():
        raise AutofusionError(f"{args.config}: no such config file")
    opts = PipelineOptions(
        target=args.target,
        fusion=not args.no_fusion,
        config=args.config,
        policy=args.policy,
        memory_limit_mb=args.memory_limit,
        cpu=args.cpu,
        validate_precision=bool(getattr(args, "validate_precision", False)),
        analysis_window=args.analysis_window,
        runtime_sizes=bool(getattr(args, "runtime_sizes", False)),
    )
    backend_of(opts)  # a backend option (--cpu) given to a target that does not read it
    return opts


def _check_writable_parent(flag: str, path: Path) -> None:
    """``path``'s folder must exist and be writable; checked before the compile so a typo in
    ``-o``/``--report``/``--memory-plot`` fails at once, with nothing written or created."""
    parent = path.absolute().parent
    if not parent.is_dir():
        raise AutofusionError(f"{flag} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise AutofusionError(f"{flag} {path}: directory {parent} is not writable")


def check_outputs(out: Path, side_files: Sequence[tuple[str, str | None]]) -> None:
    """The output folder and every side file (flag, path or None) can be written."""
    if out.exists() and not out.is_dir():
        raise AutofusionError(f"{out}: exists and is not a directory")
    # -o's missing parent folders are created; the nearest existing one must be a folder
    base = out.absolute().parent
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise AutofusionError(f"-o {out}: {base} is not a directory")
    if not os.access(base, os.W_OK | os.X_OK):
        raise AutofusionError(f"-o {out}: directory {base} is not writable")
    for flag, name in side_files:
        if name is None:
            continue
        p = Path(name)
        if p.absolute() == out.absolute() or out.absolute() in p.absolute().parents:
            raise AutofusionError(f"{flag} {p}: is inside the output folder {out}, which is "
                                  "replaced as a whole")  # fmt: skip
        check_side_file(flag, p)


def check_side_file(flag: str, path: str | os.PathLike[str]) -> None:
    """A file a command will write (``--report-html`` ...): not a folder, and its folder
    exists and is writable."""
    p = Path(path)
    if p.is_dir():
        raise AutofusionError(f"{flag} {p}: is a directory, expected a file name")
    _check_writable_parent(flag, p)


def _memory_plot(path: Path):  # -> Callable[[ModuleOp], None]
    def write(module) -> None:  # ModuleOp
        try:
            from autofusion.analysis.memory_plot import write_memory_plot
        except ImportError:
            raise AutofusionError(
                "--memory-plot: the memory plot is not available in this build"
            ) from None
        write_memory_plot(module, path)

    return write


def _html_page(pages: list):  # -> Callable[[ModuleOp], None]
    """Hook keeping the HTML report's graph and memory plan (the page is rendered once the
    build's figures are known)."""

    def take(module) -> None:  # ModuleOp
        from autofusion.policy.html_report import collect

        pages.append(collect(module))

    return take


def _fused_onnx(source, path: Path, say):  # (ModelSource, ...) -> Callable[[ModuleOp], None]
    """Hook writing the fused graph (each kernel an ONNX function) to ``path``. The
    original model is copied with its weights now, before the importer drops them."""
    from autofusion.fused_onnx import full_model, fused_model, save_fused_onnx

    original = full_model(source.loaded)

    def write(module) -> None:  # ModuleOp
        fused, summary = fused_model(original, module)
        save_fused_onnx(fused, path)
        skipped = sum(summary.skipped.values())
        say(f"fused ONNX: {summary.functions} functions over {summary.nodes_in_functions} "
            f"nodes, {summary.plain_nodes} plain nodes"
            + (f", {skipped} groups left as plain nodes" if skipped else ""))  # fmt: skip

    return write


def _hooks(*hooks):  # (Callable[[ModuleOp], None] | None, ...) -> Callable | None
    live = [h for h in hooks if h is not None]
    if not live:
        return None

    def run(module) -> None:
        for h in live:
            h(module)

    return run


def _run(argv: Sequence[str] | None) -> None:
    from autofusion.api import build_model_dir, stderr_progress
    from autofusion.runtime import cache

    parser = CliParser(prog="autofusion-compile", description=(__doc__ or "").split("\n\n")[0])
    add_model_options(parser)
    parser.add_argument("-o", "--output", metavar="DIR", required=True, help="output directory")
    parser.add_argument("--report", metavar="FILE.json", help="write the fusion/memory report")
    parser.add_argument("--memory-plot", metavar="FILE.svg", help="draw the memory plan")
    parser.add_argument("--report-html", metavar="FILE.html",
                        help="write the report as one self-contained HTML page: the fused "
                             "graph, groups, refusals, memory plan (docs/report.md)")  # fmt: skip
    parser.add_argument("--validate-precision", action="store_true",
                        help="run each fused group's C against the fp32 reference and roll back "
                             "groups over the tolerance (docs/fusion.md)")  # fmt: skip
    parser.add_argument("--runtime-sizes", action="store_true",
                        help="target ascendc: host tiling from run-time sizes for elementwise "
                             "and row-wise kernels (one project for every leading size up to "
                             "the compiled one; docs/ascendc.md)")  # fmt: skip
    parser.add_argument("--one-build", action=argparse.BooleanOptionalAction, default=None,
                        help="target c: keep the free symbols symbolic and build one library "
                             "for every shape in their --dynamic ranges (af_run_sym; "
                             "docs/dynamic.md); the default when symbols other than a lone "
                             "batch are left free with declared --dynamic ranges; "
                             "--no-one-build asks for pins instead")  # fmt: skip
    parser.add_argument("--save-fused-onnx", metavar="FILE.onnx",
                        help="also write the model with each fused group as an ONNX function "
                             "(opens in Netron and onnxruntime; docs/fusion.md)")  # fmt: skip
    args = parser.parse_args(argv)
    opts = pipeline_options(args)
    out = Path(args.output)
    check_outputs(out, [("--report", args.report), ("--memory-plot", args.memory_plot),
                        ("--save-fused-onnx", args.save_fused_onnx),
                        ("--report-html", args.report_html)])  # fmt: skip
    say = stderr_progress("autofusion-compile")
    if args.one_build is True and args.target != "c":
        raise AutofusionError(f"--one-build: target {args.target} takes no run-time sizes (only c)")
    proto = open_cli_model(args, run_time_batch=args.target in ("c", "ascendc"),
                           one_build=args.one_build)  # fmt: skip
    if proto.symbols:
        ranges = ", ".join(f"{s} {lo}..{hi}" for s, (lo, hi) in proto.symbols.items())
        say(f"one library for every shape: {ranges} (af_run_sym)")
    if proto.batch is not None:
        b = proto.batch
        built = (
            "project (af_run_model_batch)" if args.target == "ascendc" else "library (af_run_batch)"
        )
        say(f"run-time batch: '{b.symbol}' {b.lo}..{b.hi} in one {built}")
    staged = cache.staging_dir()
    plot_staged = staged / "memory_plot.svg"
    # staged under the user's file name: external weights are found by it (FILE.onnx.data)
    fused_staged = staged / Path(args.save_fused_onnx or "fused.onnx").name
    html_staged = staged / "report.html"
    pages: list = []  # the HTML page's data, taken from the module after the tensor passes
    try:
        hook = _hooks(
            _memory_plot(plot_staged) if args.memory_plot else None,
            _fused_onnx(proto, fused_staged, say) if args.save_fused_onnx else None,
            _html_page(pages) if args.report_html else None,
        )
        report = build_model_dir(proto, staged, opts, args.model, say, after_passes=hook,
                                 default_threads=args.threads)  # fmt: skip
        report["threads"] = args.threads
        (staged / "report.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        if args.report_html:
            from autofusion.policy.html_report import render_html

            html_staged.write_text(render_html(report, pages[0], args.model), encoding="utf-8")
        # user-named side files are staged too, and land only if everything succeeded
        extra: list[tuple[str, Path, Path]] = []  # (flag, staged file, user's target)
        if args.report:
            extra.append(("--report", staged / "report.json", Path(args.report)))
        if args.memory_plot:
            extra.append(("--memory-plot", plot_staged, Path(args.memory_plot)))
        if args.report_html:
            extra.append(("--report-html", html_staged, Path(args.report_html)))
        if args.save_fused_onnx:
            target = Path(args.save_fused_onnx)
            extra.append(("--save-fused-onnx", fused_staged, target))
            data = fused_staged.with_name(fused_staged.name + ".data")
            if data.exists():
                extra.append(("--save-fused-onnx", data, target.with_name(data.name)))
        # side files go beside their targets first, so a folder that refuses them fails the
        # command before -o DIR is touched; they are renamed into place after it is published
        tmps: list[tuple[Path, Path]] = []
        try:
            for flag, src, target in extra:
                tmp = target.with_name(f".{target.name}.tmp")
                try:
                    shutil.copyfile(src, tmp)
                except OSError as e:
                    raise AutofusionError(f"{flag} {target}: cannot write: {e.strerror}") \
                        from None  # fmt: skip
                tmps.append((tmp, target))
            try:
                dest = cache.publish_dir(staged, out)
            except OSError as e:
                raise AutofusionError(f"-o {out}: cannot write: {e.strerror}") from None
            for tmp, target in tmps:
                tmp.replace(target)
        finally:
            for tmp, _ in tmps:
                tmp.unlink(missing_ok=True)
    finally:
        cache.discard_staging(staged)
    say(f"wrote {dest} ({report['kernels_after']} kernels, {report['compile_seconds']} s)")


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli("autofusion-compile", lambda: _run(argv))


if __name__ == "__main__":
    sys.exit(main())
