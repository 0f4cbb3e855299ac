"""The "Adding a target" how-to (docs/internals.md), followed literally: a new backend in its
own folder plus one registry line reaches every entry point with no other edit.

The skeleton is a portable C target without fused epilogues: it reuses the C lowering passes
(one with an option written in its pass list) and the C printer, and writes only model.c.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from autofusion import lowering

BACKEND = '''
"""A skeleton target: portable C, no fused epilogues (a test of the Backend protocol)."""

from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target


class PlainCBackend:
    name = "plain-c"
    lowering = ("convert-nn-to-buffers", "legalize-contractions",
                "lower-nn-to-loops{fuse-epilogues=false}")
    option_fields = ()

    def target(self):
        return PlainCTarget

    def check_lowered(self, module: ModuleOp) -> None:
        from autofusion.lowering.c.emit import check_lowered

        check_lowered(module, self.lowering)

    def emit(self, module: ModuleOp, out_dir: Path) -> None:
        from autofusion.lowering.c.printer import print_c

        self.check_lowered(module)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "model.c").write_text(print_c(module)[0])


@dataclass(frozen=True)
class PlainCTarget(Target):
    name: ClassVar[str] = "plain-c"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from autofusion.lowering.c.printer import print_c

        PlainCBackend().check_lowered(module)
        print_c(module, output)
'''


@pytest.fixture
def plain_c(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "plainc"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "backend.py").write_text(textwrap.dedent(BACKEND))
    monkeypatch.syspath_prepend(str(tmp_path))
    # the one registry line
    monkeypatch.setitem(lowering.BACKENDS, "plain-c", "plainc.backend:PlainCBackend")
    return tmp_path


def test_new_target_reaches_compile_opt_and_the_pipeline(
    plain_c: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from autofusion.lowering.backend import Backend
    from autofusion.pipeline import Pipeline, PipelineOptions
    from autofusion.tools import compile as compile_cli
    from autofusion.tools import opt

    backend = lowering.get_backend("plain-c")
    assert isinstance(backend, Backend)
    pipe = Pipeline.from_options(PipelineOptions(target="plain-c"))
    assert pipe.pipeline_string().endswith("lower-nn-to-loops{fuse_epilogues=false}")

    out = plain_c / "out"
    assert compile_cli.main(["zoo:tiny_cnn", "--target", "plain-c", "-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["target"] == "plain-c"
    assert report["pipeline"] == pipe.pipeline_string()
    model_c = (out / "model.c").read_text()
    assert "af_run" in model_c
    # the option in its pass list took effect: library calls without a fused epilogue
    assert "afrt_no_epilogue()" in model_c
    assert "_epilogue(void" not in model_c

    capsys.readouterr()
    assert opt.main(["zoo:tiny_cnn", "--compile-pipeline", "-t", "plain-c"]) == 0
    assert capsys.readouterr().out == model_c

    assert opt.main(["zoo:tiny_cnn", "-t", "plain-c"]) == 1  # not lowered: named, not printed
    assert "c target: op nn." in capsys.readouterr().err


def test_new_target_without_run_or_load_is_refused_by_compile_and_bench(plain_c: Path) -> None:
    import autofusion
    from autofusion.errors import AutofusionError
    from autofusion.tools.bench import bench

    with pytest.raises(AutofusionError, match="only target 'c' can be loaded"):
        autofusion.compile("zoo:tiny_cnn", target="plain-c")
    with pytest.raises(AutofusionError, match="'plain-c' can neither run nor be simulated"):
        bench("zoo:tiny_cnn", target="plain-c", progress=False)
    with pytest.raises(AutofusionError, match="--cpu x86-64-v3 applies to --target c only"):
        bench("zoo:tiny_cnn", target="plain-c", cpu="x86-64-v3", progress=False)
