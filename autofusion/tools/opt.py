"""``autofusion-opt``: xdsl-opt with autofusion's dialects, passes, targets and ONNX input.

It is xDSL's ``xDSLOptMain`` with its ``register_all_*`` hooks extended, so ``-p`` pipelines
with options, ``--split-input-file``, ``--verify-diagnostics`` and ``--print-op-generic``
behave exactly as in xdsl-opt. ``.onnx`` inputs are read as bytes by the ONNX frontend;
``zoo:NAME`` is a built-in model (as for autofusion-compile); ``--input-shape NAME=DIMS``
pins an ONNX input's dynamic dims.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import io
import os
import re
import sys
from collections.abc import Sequence
from typing import IO, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from autofusion.errors import AutofusionError, run_cli
from autofusion.tools.compile import add_input_shape_option

PROG = "autofusion-opt"
# autofusion.zoo.ZOO_PREFIX, spelled here: importing autofusion.zoo imports onnx, and onnx
# imports ml_dtypes (~0.5 s of CPU at start-up), which an .mlir input never needs; the lit
# suite starts this tool about a hundred times. test_opt_cli.py checks the two agree.
ZOO_PREFIX = "zoo:"


def _usage_error(message: str) -> NoReturn:
    """argparse's ``error``: one line, exit status 1 (argparse's own is usage + exit 2)."""
    print(f"{PROG}: error: {message} (see {PROG} --help)", file=sys.stderr)
    raise SystemExit(1)


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _pipeline_syntax_error(spec: str, e: ArgSpecParseError) -> AutofusionError:
    """``-p 'fuse{'``: xDSL's multi-line caret diagnostic as one line with the column."""
    text = str(e)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    m = re.search(r"pass-pipeline:(\d+):(\d+)", text)
    where = f" at column {m.group(2)}" if m else ""
    what = lines[-1] if lines else "cannot parse"
    hint = ' (quote string values: opt="...")' if what == "Unknown token" else ""
    return AutofusionError(f"-p {spec!r}: bad pass pipeline{where}: {what}{hint}")


def _option_type_error(cls: type, spec: ArgSpec, e: Exception) -> AutofusionError:
    """Which option of ``spec`` xDSL could not convert, and to what type."""
    types = {f.name: f.type for f in dataclasses.fields(cls)}
    for opt, values in spec.parameters.items():
        try:
            cls.from_pass_spec(ArgSpec(spec.name, {opt: values}))
        except (ValueError, TypeError):
            given = ",".join(str(v) for v in values) if values else "(nothing)"
            return AutofusionError(f"-p: pass {spec.name!r}: option {opt}={given}: expected "
                                   f"{types.get(opt, 'another type')}")  # fmt: skip
    return AutofusionError(f"-p: pass {spec.name!r}: {_one_line(e)}")


def _version_format() -> str:
    import autofusion

    return f"autofusion {autofusion.__version__} (xdsl {{xdsl_version}})"


class AutofusionOptMain(xDSLOptMain):
    version_format = _version_format()

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        from autofusion.dialects import get_all_dialects

        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def onnx_frontend(stream: IO[bytes]) -> ModuleOp:
            from autofusion.frontend.onnx_import import import_onnx_stream
            from autofusion.frontend.shapes import parse_shape_specs
            from autofusion.frontend.symbols import parse_range_specs

            pins = parse_shape_specs(self.args.input_shape)
            ranges = parse_range_specs(self.args.dynamic)
            if ranges and not self.args.symbolic:
                raise AutofusionError("--dynamic gives symbol ranges for --symbolic imports")
            return import_onnx_stream(
                stream,
                self.get_input_name(),
                input_shapes=pins,
                symbols=ranges if self.args.symbolic else None,
            )

        self.available_frontends["onnx"] = onnx_frontend

    def register_all_passes(self) -> None:
        super().register_all_passes()
        from autofusion.passes import get_all_passes

        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        from autofusion.lowering import get_all_targets

        for name, factory in get_all_targets().items():
            self.available_targets[name] = factory

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.prog = PROG
        arg_parser.error = _usage_error
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--elide-constants-larger",
            type=int,
            default=16,
            metavar="N",
            help="print constants with more than N elements as dense_resource<__elided__> "
            "(default 16; -1 prints every constant in full)",
        )
        add_input_shape_option(arg_parser)
        arg_parser.add_argument(
            "--symbolic",
            action="store_true",
            help="import dynamic dims no --input-shape fixes as symbolic sizes (docs/dynamic.md, "
            "'Symbolic import'): the nn IR holds them as #nn.shape encodings; passes that do "
            "not handle symbols yet stop with an error naming themselves",
        )
        arg_parser.add_argument(
            "--dynamic",
            action="append",
            default=[],
            metavar="SYM=LO..HI",
            help="with --symbolic: the range of a symbol (repeatable; default 1..4096)",
        )
        arg_parser.add_argument(
            "--compile-pipeline",
            action="store_true",
            help="run the passes autofusion.compile() runs (autofusion.pipeline.Pipeline, "
            "default options): the tensor passes, then the lowering passes of the -t target "
            "(none for -t mlir); --print-pipeline shows them as a -p string",
        )
        arg_parser.add_argument(
            "--analysis-window",
            type=int,
            default=None,
            metavar="N",
            help="with --compile-pipeline: fuse's structure analysis in windows of N ops "
            "(0: whole graph); with -p write fuse{window_size=N}",
        )
        arg_parser.add_argument(
            "--print-pipeline",
            action="store_true",
            help="print the pass pipeline (-p or --compile-pipeline) on stderr before running it",
        )
        arg_parser.add_argument(
            "--fusion-summary",
            action="store_true",
            help="after the pipeline, print a summary of fused groups and refusals to stderr",
        )

    def setup_pipeline(self) -> None:
        """Check ``-p`` before xDSL builds it: a syntax error, an unknown pass, an unknown
        option, a value of the wrong type or out of range is one line naming the pass."""
        from autofusion.passes.options import check_pass_options

        window = self.args.analysis_window
        if window is not None and (window < 0 or not self.args.compile_pipeline):
            raise AutofusionError(
                f"--analysis-window {window}: expected an integer >= 0 with --compile-pipeline "
                "(in a -p pipeline write fuse{window_size=N})"
            )
        if self.args.compile_pipeline:
            self.args.passes = self._compile_pipeline()
        if self.args.print_pipeline:
            print(self.args.passes, file=sys.stderr)
        spec = self.args.passes
        try:
            specs = list(parse_pipeline(spec))
        except ArgSpecParseError as e:
            raise _pipeline_syntax_error(spec, e) from None
        for s in specs:
            if s.name not in self.available_passes:
                close = difflib.get_close_matches(s.name, list(self.available_passes), 3)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise AutofusionError(f"-p: unknown pass {s.name!r}{hint}")
            cls = self.available_passes[s.name]()
            known = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) \
                else []  # fmt: skip
            for opt in s.parameters:
                if opt.replace("-", "_") not in known:
                    have = f"its options: {', '.join(known)}" if known else "it has no options"
                    raise AutofusionError(f"-p: pass {s.name!r} has no option {opt!r} ({have})")
            try:
                check_pass_options(cls.from_pass_spec(s))
            except AutofusionError as e:
                raise AutofusionError(f"-p: {e}") from None
            except (ValueError, TypeError) as e:
                raise _option_type_error(cls, s, e) from None
        super().setup_pipeline()
        self._name_failing_pass()

    def _compile_pipeline(self) -> str:
        """``--compile-pipeline``: compile()'s pipeline for the ``-t`` backend (tensor passes
        only for a printing target that is no backend, such as ``mlir``)."""
        from autofusion.lowering import BACKENDS
        from autofusion.pipeline import Pipeline, PipelineOptions

        if self.args.passes:
            raise AutofusionError("give either -p or --compile-pipeline, not both")
        target = str(self.args.target).split("{")[0]
        pipe = Pipeline.from_options(
            PipelineOptions(
                target=target if target in BACKENDS else "c",
                analysis_window=self.args.analysis_window,
            )
        )
        return (pipe if target in BACKENDS else pipe.tensor()).pipeline_string()

    def _name_failing_pass(self) -> None:
        """IR that stops verifying after a pass names that pass (xDSL's callback does not)."""
        from xdsl.passes import PassPipeline

        inner = self.pipeline.callback

        def named(prev: ModulePass | None, module: ModuleOp, nxt: ModulePass | None) -> None:
            try:
                if inner is not None:
                    inner(prev, module, nxt)
            except VerifyException as e:
                if prev is None:
                    raise
                raise AutofusionError(f"{self.get_input_name()}: the IR does not verify after "
                                      f"pass {prev.name}: {_one_line(e)}") from None  # fmt: skip

        self.pipeline = PassPipeline(self.pipeline.passes, named)

    def _is_zoo(self) -> bool:
        return bool(self.args.input_file and self.args.input_file.startswith(ZOO_PREFIX))

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """``zoo:NAME`` is the built-in model, serialised, read by the ONNX frontend."""
        if self._is_zoo():
            from autofusion.zoo import get_model

            proto = get_model(self.args.input_file[len(ZOO_PREFIX) :])
            return io.BytesIO(proto.SerializeToString()), "onnx"
        return super().get_input_stream()

    def _check_files(self) -> None:
        """The input must be a readable file, the output's folder must exist: checked up front
        so neither surfaces as an OSError half-way (and no output is created for a bad input)."""
        src = self.args.input_file
        if self.args.input_shape and not (
            self._is_zoo() or (self.args.frontend or os.path.splitext(src or "")[1]) in
            ("onnx", ".onnx")
        ):  # fmt: skip
            raise AutofusionError(
                "--input-shape applies to ONNX input (.onnx or zoo:NAME); IR text has its shapes"
            )
        if src is not None and not self._is_zoo():
            if os.path.isdir(src):
                raise AutofusionError(f"{src}: is a directory, not an input file")
            if not os.path.exists(src):
                raise AutofusionError(f"{src}: no such file")
            if not os.access(src, os.R_OK):
                raise AutofusionError(f"{src}: permission denied (cannot read it)")
        out = self.args.output_file
        if out is not None:
            parent = os.path.dirname(os.path.abspath(out))
            if os.path.isdir(out):
                raise AutofusionError(f"-o {out}: is a directory, not an output file")
            if not os.path.isdir(parent):
                raise AutofusionError(f"-o {out}: directory {parent} does not exist")
            if not os.access(parent, os.W_OK):
                raise AutofusionError(f"-o {out}: directory {parent} is not writable")

    def parse_chunk(self, chunk: IO[bytes], file_extension: str,
                    start_offset: int = 0) -> ModuleOp | None:  # fmt: skip
        """xDSL's, with input that is no UTF-8 text or holds no IR named in one line."""
        frontend = self.args.frontend or file_extension
        if not frontend.startswith("onnx"):
            data = chunk.read()  # stdin cannot seek back: parse a copy
            chunk = io.BytesIO(data)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise AutofusionError(
                    f"{self.get_input_name()}: not UTF-8 text (byte 0x{data[e.start]:02x} at "
                    f"offset {e.start}); IR files must be UTF-8"
                ) from None
            if not text.strip() and not self.args.split_input_file:
                raise AutofusionError(f"{self.get_input_name()}: empty input, no IR to read")
        return super().parse_chunk(chunk, file_extension, start_offset)

    def run(self) -> None:
        from autofusion.dialects.nn import ConstantOp

        limit = self.args.elide_constants_larger
        ConstantOp.ELIDE_LIMIT = None if limit < 0 else limit
        self._check_files()
        try:
            super().run()
        except VerifyException as e:
            # Name the file: a verifier message alone does not say where it came from.
            raise AutofusionError(f"{self.get_input_name()}: {e}") from None
        except ValueError as e:
            if "Unrecognized file extension" in str(e) or "Unknown target" in str(e):
                raise AutofusionError(f"{self.get_input_name()}: {_one_line(e)} (use -f to "
                                      "name the frontend)") from None  # fmt: skip
            raise

    def apply_passes(self, prog: ModuleOp) -> None:
        super().apply_passes(prog)
        if self.args.fusion_summary:
            from autofusion.policy.report import summarize_module

            print(summarize_module(prog), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(PROG, lambda: AutofusionOptMain(args=argv).run())


if __name__ == "__main__":
    sys.exit(main())
