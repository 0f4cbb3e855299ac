"""The pipeline object (autofusion.pipeline.Pipeline): order, options, verification."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from autofusion.errors import AutofusionError
from autofusion.pipeline import (
    CONV_CHAIN_TARGETS,
    CONV_PAIR_TARGETS,
    LOWERING,
    SIBLING_CONV_TARGETS,
    TENSOR_PASSES,
    Pipeline,
    PipelineOptions,
    PipelineVerifyError,
    Stage,
    blocked_convs,
    make_pass,
)

IR = """
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %z = nn.neg %y : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %z : tensor<2x3xf32>
}
"""


def _module() -> ModuleOp:
    from xdsl.parser import Parser

    from autofusion.pipeline import make_context

    return Parser(make_context(), IR).parse_module()


@dataclass(frozen=True)
class BreakIR(ModulePass):
    """Puts a terminator in front of @main's body: the module no longer verifies."""

    name: ClassVar[str] = "break-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fn = next(o for o in op.ops if isinstance(o, func.FuncOp))
        first = fn.body.block.first_op
        assert first is not None
        fn.body.block.insert_op_before(func.ReturnOp(), first)


@dataclass(frozen=True)
class Refuse(ModulePass):
    name: ClassVar[str] = "refuse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise PassFailedException("refuse: not today")


def test_stages_are_the_tensor_table_then_the_backend_lowering() -> None:
    from autofusion.lowering import BACKENDS, get_backend

    for target in BACKENDS:
        pipe = Pipeline.from_options(PipelineOptions(target=target))
        tensor = [n for n, g in TENSOR_PASSES if g not in ("tiling", "precision")]
        if target not in CONV_CHAIN_TARGETS:  # its two-conv kernels are C-only
            tensor.remove("fuse-conv-chain")
        if target not in CONV_PAIR_TARGETS:  # so are the two-input 1x1 conv and 1x1 chain
            tensor.remove("fuse-conv-pair")
            tensor.remove("fuse-pw-chain")
        if target not in SIBLING_CONV_TARGETS:  # Ascend C copies a split's pieces
            tensor.remove("merge-sibling-convs")
        if not (target == "c" and blocked_convs(PipelineOptions(target=target))):
            tensor.remove("assign-layout")  # the blocked conv kernels: C on AVX-512 only
            tensor.remove("fuse-conv-pool")  # joins only what assign-layout blocked
        assert pipe.names == [*tensor, *get_backend(target).lowering]
        assert pipe.lowering().names == list(get_backend(target).lowering)
        assert all(s.group == LOWERING for s in pipe.lowering().stages)
    plain = Pipeline.from_options(PipelineOptions(fusion=False, memory_limit_mb=8)).tensor()
    cleanup = [n for n, g in TENSOR_PASSES if g == "cleanup"]
    assert plain.names == [*cleanup, "plan-buffers", "tile-fusion"]


def test_assign_layout_runs_where_the_blocked_kernel_does(tmp_path) -> None:
    """assign-layout is in the pipeline exactly when lower-nn-to-loops gets blocked_convs
    (target c, fusion on, an AVX-512 build, conv_layout auto) and nothing is tiled (no
    memory limit: tile-fusion's conv pieces read NCHW slices)."""
    cfg = tmp_path / "nchw.yaml"
    cfg.write_text("conv_layout: nchw\n")
    v4 = Pipeline.from_options(PipelineOptions(cpu="x86-64-v4"))
    assert "assign-layout" in v4.names
    assert v4.names.index("assign-layout") == v4.names.index("fuse-conv-chain") + 1
    for opts in (PipelineOptions(cpu="x86-64-v3"), PipelineOptions(cpu="x86-64-v4", fusion=False),
                 PipelineOptions(cpu="x86-64-v4", config=str(cfg)),
                 PipelineOptions(cpu="x86-64-v4", memory_limit_mb=64),
                 PipelineOptions(target="ascendc")):  # fmt: skip
        assert "assign-layout" not in Pipeline.from_options(opts).names, opts


def test_options_reach_passes_converted_to_their_declared_type(tmp_path) -> None:
    from autofusion.passes.tile_fusion import TileFusion

    p = make_pass(TileFusion, {"memory_limit_mb": 3, "config": "ignored: no such field"})
    assert isinstance(p, TileFusion)
    assert p.memory_limit_mb == 3.0
    assert isinstance(p.memory_limit_mb, float)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("aggressiveness: 2\n")
    pipe = Pipeline.from_options(PipelineOptions(config=str(cfg), memory_limit_mb=2))
    assert 'fuse{config="' in pipe.pipeline_string()
    assert "tile-fusion{memory_limit_mb=2.0}" in pipe.pipeline_string()
    with pytest.raises(AutofusionError, match=r"option memory_limit_mb=-1\.0 is out of range"):
        make_pass(TileFusion, {"memory_limit_mb": -1})


def test_a_pass_that_breaks_the_ir_is_named() -> None:
    pipe = Pipeline((Stage("canonicalize-nn", "cleanup", make_pass(_cls("canonicalize-nn"), {})),
                     Stage("break-ir", "cleanup", BreakIR())))  # fmt: skip
    with pytest.raises(PipelineVerifyError, match="does not verify after pass break-ir"):
        pipe.run(_module())


def test_a_failing_pass_is_an_autofusion_error_naming_it() -> None:
    seen: list[str] = []
    pipe = Pipeline((Stage("canonicalize-nn", "cleanup", make_pass(_cls("canonicalize-nn"), {})),
                     Stage("refuse", "cleanup", Refuse())))  # fmt: skip
    with pytest.raises(AutofusionError, match="pass refuse failed: refuse: not today"):
        pipe.run(_module(), progress=seen.append)
    assert seen == ["pass canonicalize-nn", "pass refuse"]


def test_invalid_input_is_blamed_on_no_pass() -> None:
    module = _module()
    BreakIR().apply(Context(), module)
    with pytest.raises(PipelineVerifyError, match="before the first pass"):
        Pipeline.from_options(PipelineOptions()).run(module)


def test_a_backend_option_on_another_target_is_refused() -> None:
    with pytest.raises(AutofusionError, match="--cpu x86-64-v3 applies to --target c only"):
        Pipeline.from_options(PipelineOptions(target="ascendc", cpu="x86-64-v3"))
    with pytest.raises(AutofusionError, match="unknown target 'gpu'; expected one of c, ascendc"):
        Pipeline.from_options(PipelineOptions(target="gpu"))


def _cls(name: str) -> type[ModulePass]:
    from autofusion.passes import get_all_passes

    return get_all_passes()[name]()


def test_autofusion_opt_names_the_pass_that_broke_the_ir(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import autofusion.passes
    from autofusion.tools import opt

    real = autofusion.passes.get_all_passes
    monkeypatch.setattr(
        autofusion.passes, "get_all_passes", lambda: {**real(), "break-ir": lambda: BreakIR}
    )
    src = tmp_path / "m.mlir"
    src.write_text(IR)
    assert opt.main([str(src), "-p", "canonicalize-nn,break-ir"]) == 1
    err = capsys.readouterr().err
    assert "the IR does not verify after pass break-ir" in err
    assert "Traceback" not in err


def test_assign_precision_only_with_16_bit_ops(tmp_path) -> None:
    keep = tmp_path / "keep.yaml"
    keep.write_text("precision: {fp32_ops: [Softmax]}")
    red = tmp_path / "red.yaml"
    red.write_text("precision: {bf16_ops: [MatMul]}")
    assert "assign-precision" not in Pipeline.from_options(PipelineOptions(config=str(keep))).names
    names = Pipeline.from_options(PipelineOptions(config=str(red), fusion=False)).names
    cleanup = [n for n, g in TENSOR_PASSES if g == "cleanup"]
    assert names[: len(cleanup) + 1] == [*cleanup, "assign-precision"]
