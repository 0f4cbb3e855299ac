"""Symbolic sizes (``autofusion/symbolic.py``) and the symbolic import (docs/dynamic.md,
"Symbolic import"): the dynamic-axis exports import **once**, with ``batch`` and ``seq`` as
symbols in the nn types, and that one module, run by the interpreter, matches onnxruntime at
every shape in range. A size never turns into a number by accident, out-of-range and
disagreeing feeds are clear errors, and passes that do not handle symbols refuse the module.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from exported_feeds import DATA, MANIFEST
from exported_feeds import feeds as make_feeds
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from autofusion import symbolic
from autofusion.dialects import get_all_dialects, shapes
from autofusion.dialects.base import shape_of
from autofusion.errors import AutofusionError
from autofusion.frontend.onnx_import import import_onnx
from autofusion.interpreter.core import main_function, run_module
from autofusion.symbolic import Size, SymbolicError
from autofusion.testing import assert_close

TRANSFORMERS = ["bert_tsdyn", "bert_dynamodyn", "gpt2_tsdyn", "gpt2_dynamodyn"]
CNNS = ["resnet_tsdyn", "mobilenet_dynamodyn"]
RANGES = {"batch": (1, 4), "seq": (1, 512)}

seq = Size.symbol("seq", 1, 512)
batch = Size.symbol("batch", 1, 4)


# ---- the size algebra ---------------------------------------------------------------------
def test_sizes_compute_as_polynomials() -> None:
    assert str(seq * 12) == "12*seq"
    assert str(batch * seq * 768) == "768*batch*seq"
    assert (batch * seq * 768) // (batch * seq * 12) == 64  # a Reshape's -1, exactly
    assert seq + seq == 2 * seq
    assert str(seq * seq + 2 * seq + 1) == "seq*seq + 2*seq + 1"
    assert isinstance(seq - seq, int)  # no symbol left: an int
    assert seq - seq == 0
    assert (seq * 768) % 64 == 0
    assert shapes.numel([1, seq, 4, 16]) == 64 * seq
    with pytest.raises(SymbolicError, match="not a multiple"):
        (seq * 3) // 2
    with pytest.raises(SymbolicError, match="depends on the symbols"):
        seq % 7


def test_text_round_trips_and_prints_as_c() -> None:
    for d in (seq * 12, batch * seq + 3, seq * seq - 1, 5 * batch):
        assert symbolic.parse(str(d)) == d
    assert symbolic.parse("12") == 12
    with pytest.raises(ValueError, match="malformed"):
        symbolic.parse("seq +* 2")
    assert symbolic.to_c(seq * 12 + 1, lambda n: f"af_{n}") == "((int64_t)12 * af_seq + (int64_t)1)"
    assert symbolic.evaluate(batch * seq * 12, {"batch": 2, "seq": 5}) == 120


def test_a_size_never_becomes_a_number_by_accident() -> None:
    for use in (int, bool, range, lambda d: np.zeros(d), lambda d: [0, 1, 2][:d]):
        with pytest.raises(SymbolicError):
            use(seq)
    with pytest.raises(SymbolicError, match=r"'seq < 100' depends on the symbols' values"):
        seq < 100


def test_comparisons_are_decided_by_the_ranges() -> None:
    assert seq >= 1
    assert seq <= 512
    assert seq < 513
    assert seq * 2 > 1
    assert seq != 512
    assert seq == symbolic.parse("seq")  # structural equality
    assert max(seq, 0) == seq
    assert min(seq, 600) == seq
    assert symbolic.upper_bound(batch * seq * 12) == 4 * 512 * 12
    with pytest.raises(SymbolicError, match="no upper bound"):
        symbolic.upper_bound(Size.symbol("free") * 2)


def test_bind_solves_symbols_and_checks_the_rest() -> None:
    values: dict[str, int] = {}
    symbolic.bind([batch, seq, 32], [2, 7, 32], values, "input 'x'")
    assert values == {"batch": 2, "seq": 7}
    symbolic.bind([batch * seq, 32], [14, 32], values, "input 'rows'")
    with pytest.raises(SymbolicError, match="expected 32"):
        symbolic.bind([seq, 32], [7, 31], values, "input 'y'")
    with pytest.raises(SymbolicError, match="seq = 8, but seq = 7 elsewhere"):
        symbolic.bind([seq], [8], values, "input 'z'")


# ---- the symbolic import ------------------------------------------------------------------
def _check_at(module: ModuleOp, name: str, b: int, s: int, seed: int) -> None:
    feeds = make_feeds(name, b, s, seed)
    sess = ort.InferenceSession(str(DATA / MANIFEST[name]["files"][0]))
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    got = run_module(module, feeds)
    assert set(got) == set(want)
    for out, ref in want.items():
        assert 0.1 <= float(np.abs(ref).max()) <= 10, out
        assert_close(got[out], ref, f"{name} batch {b} seq {s}: {out}")


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_transformer_exports_import_once_and_match_at_every_shape(name: str) -> None:
    module = import_onnx(DATA / MANIFEST[name]["files"][0], symbols=RANGES)
    main = main_function(module)
    for arg in main.body.block.args:
        assert shape_of(arg) == (symbolic.parse("batch"), symbolic.parse("seq"))
    assert '#nn.shape<["batch", "seq", "32"]>' in str(module)
    for t in main.function_type.outputs.data:  # the outputs keep the batch symbol
        assert '#nn.shape<["batch",' in str(t)
    for i, (b, s) in enumerate([(1, 16), (4, 64), (1, 128), (4, 384), (1, 512)]):
        _check_at(module, name, b, s, seed=i)


@pytest.mark.parametrize("name", CNNS)
def test_cnn_export_imports_once_for_every_batch(name: str) -> None:
    module = import_onnx(DATA / MANIFEST[name]["files"][0], symbols={"batch": (1, 8)})
    for b in (1, 2, 8):
        _check_at(module, name, b, 0, seed=b)


def test_symbolic_ir_round_trips_through_text() -> None:
    module = import_onnx(DATA / "gpt2_tsdyn.onnx", symbols=RANGES)
    ctx = Context()
    for dialect_name, factory in get_all_dialects().items():
        ctx.register_dialect(dialect_name, factory)
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    parsed = Parser(ctx, str(module)).parse_module()
    parsed.verify()
    assert str(parsed) == str(module)


def test_feeds_out_of_range_or_disagreeing_are_errors() -> None:
    module = import_onnx(DATA / "bert_tsdyn.onnx", symbols={"batch": (1, 4), "seq": (1, 64)})
    feeds = make_feeds("bert_tsdyn", 1, 65, 0)
    with pytest.raises(AutofusionError, match=r"'seq' is 65, outside its declared range 1\.\.64"):
        run_module(module, feeds)
    feeds = make_feeds("bert_tsdyn", 1, 16, 0)
    feeds["attention_mask"] = np.ones((1, 17), np.int64)
    with pytest.raises(AutofusionError, match="input 'attention_mask': dim 1 gives seq = 17"):
        run_module(module, feeds)


def test_passes_that_do_not_handle_symbols_refuse_the_module() -> None:
    from autofusion.passes import get_all_passes

    module = import_onnx(DATA / "gpt2_tsdyn.onnx", symbols=RANGES)
    for name, factory in get_all_passes().items():
        if factory().symbolic:
            continue  # symbol-aware (test_symbolic_passes.py, plan-buffers below)
        with pytest.raises(AutofusionError, match=f"pass '{name}' does not handle symbolic sizes"):
            factory()().apply(Context(), module)


def test_a_shape_value_that_cannot_stay_symbolic_names_the_node() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Cast", ["s"], ["sf"], to=TensorProto.FLOAT, name="to_float"),
        helper.make_node("ReduceMax", ["sf"], ["m"], keepdims=0, name="max"),
        helper.make_node("Div", ["x", "m"], ["y"], name="div"),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "g", [x], [y], [numpy_helper.from_array(np.zeros(1), "unused")]),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    with pytest.raises(AutofusionError, match=r"node 'to_float' \(Cast\): .*non-integer type"):
        import_onnx(model, symbols={})
    # pinned, the same model imports as before
    assert "tensor<3x4xf32>" in str(import_onnx(model, input_shapes={"x": [3, 4]}))


@pytest.mark.parametrize(
    ("name", "ranges", "pins"),
    [
        ("resnet_tsdyn", {"batch": (1, 8)}, {"input": [8, 3, 32, 32]}),
        (
            "gpt2_dynamodyn",
            {"batch": (1, 2), "seq": (1, 256)},
            {"input_ids": [2, 256], "attention_mask": [2, 256]},
        ),
    ],
)
def test_memory_plan_at_the_upper_bounds_is_the_static_plan(
    name: str, ranges: dict[str, tuple[int, int]], pins: dict[str, list[int]]
) -> None:
    """plan-buffers on a symbolic module plans every buffer at its upper bound: the arena is
    the static build's at that shape, and every offset is a number."""
    from autofusion.passes.plan_buffers import memory_report, plan_module

    sym = import_onnx(DATA / MANIFEST[name]["files"][0], symbols=ranges)
    fixed = import_onnx(DATA / MANIFEST[name]["files"][0], input_shapes=pins)
    plan = plan_module(sym)
    plan_module(fixed)
    assert memory_report(sym)["arena_bytes"] == memory_report(fixed)["arena_bytes"]
    assert all(isinstance(o, int) for o in plan.offsets.values())


def test_buffers_of_a_symbolic_module_take_the_symbols_as_arguments() -> None:
    """convert-nn-to-buffers on a planned symbolic module: @main takes one index argument per
    symbol after its buffers, each kernel whose types are symbolic takes them too (named by
    ``c.symbol``), buffers are ``?`` where a dim is symbolic, the kernels' tensors keep their
    sizes, and the result verifies."""
    from autofusion.lowering.c.convert_nn_to_buffers import ConvertNNToBuffers, work_table
    from autofusion.passes.plan_buffers import plan_module

    module = import_onnx(DATA / "bert_tsdyn.onnx", symbols={"batch": (1, 4), "seq": (1, 128)})
    plan_module(module)
    ConvertNNToBuffers().apply(Context(), module)
    module.verify()
    main = main_function(module)
    roles = [str(d.data["c.role"]) for d in main.arg_attrs.data]  # type: ignore[union-attr]
    assert roles[-2:] == ['"symbol"', '"symbol"']
    assert [str(d.data["c.symbol"]) for d in main.arg_attrs.data[-2:]] == ['"batch"', '"seq"']  # type: ignore[union-attr]
    text = str(module)
    assert "memref<?x?x32xf32>" in text
    assert 'index {c.symbol = "seq"}' in text
    to_tensor = "bufferization.to_tensor %0 restrict : memref<?x?x32xf32> to tensor<?x?x32xf32, "
    assert to_tensor + '#nn.shape<["batch", "seq", "32"]>>' in text
    # work at the upper bounds: every kernel's FLOPs and bytes are numbers
    assert all(w["bytes"] > 0 for w in work_table(module).values())
