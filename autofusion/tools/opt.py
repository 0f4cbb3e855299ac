"""``autofusion-opt``: xdsl-opt with autofusion's dialects, passes, targets and ONNX input.

It is xDSL's ``xDSLOptMain`` with its ``register_all_*`` hooks extended, so ``-p`` pipelines
with options, ``--split-input-file``, ``--verify-diagnostics`` and ``--print-op-generic``
behave exactly as in xdsl-opt. ``.onnx`` inputs are read as bytes by the ONNX frontend.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from autofusion.errors import AutofusionError, run_cli


class AutofusionOptMain(xDSLOptMain):
    version_format = "autofusion-opt (xdsl {xdsl_version})"

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        from autofusion.dialects import get_all_dialects

        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def onnx_frontend(stream: IO[bytes]) -> ModuleOp:
            from autofusion.frontend.onnx_import import import_onnx_stream

            return import_onnx_stream(stream, self.get_input_name())

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
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--elide-constants-larger",
            type=int,
            default=16,
            metavar="N",
            help="print constants with more than N elements as dense_resource<__elided__> "
            "(default 16; -1 prints every constant in full)",
        )
        arg_parser.add_argument(
            "--fusion-summary",
            action="store_true",
            help="after the pipeline, print a summary of fused groups and refusals to stderr",
        )

    def run(self) -> None:
        from autofusion.dialects.nn import ConstantOp

        limit = self.args.elide_constants_larger
        ConstantOp.ELIDE_LIMIT = None if limit < 0 else limit
        try:
            super().run()
        except VerifyException as e:
            # Name the file: a verifier message alone does not say where it came from.
            raise AutofusionError(f"{self.get_input_name()}: {e}") from None

    def apply_passes(self, prog: ModuleOp) -> None:
        super().apply_passes(prog)
        if self.args.fusion_summary:
            from autofusion.policy.report import summarize_module

            print(summarize_module(prog), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli("autofusion-opt", lambda: AutofusionOptMain(args=argv).run())


if __name__ == "__main__":
    sys.exit(main())
