"""The nn/fusion dialects: every op has round-trip and negative lit tests, dense constants
round-trip for every element type, and verifiers fail only with VerifyException."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.dialects.func import Func
from xdsl.ir import Attribute, Block
from xdsl.irdl import IRDLOperation, OptOperandDef, VarOperandDef
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from autofusion.dialects import dtypes, nn
from autofusion.dialects.base import bool_attr, f64_attr, i64_array, int_attr
from autofusion.dialects.fusion import Fusion
from autofusion.dialects.nn import NN

DIALECT_TESTS = Path(__file__).resolve().parents[1] / "filecheck" / "dialects"


def _op_pattern(name: str) -> re.Pattern[str]:
    # ``nn.gather`` must not be satisfied by ``nn.gather_elements``.
    return re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")


def _split_checks(path: Path) -> tuple[str, str]:
    """(input lines, CHECK lines) of a lit file."""
    lines = path.read_text().splitlines()
    checks = [ln for ln in lines if re.search(r"CHECK(-NEXT|-LABEL)?:", ln)]
    inputs = [ln for ln in lines if not ln.lstrip().startswith("//")]
    return "\n".join(inputs), "\n".join(checks)


@pytest.mark.parametrize(
    ("dialect", "roundtrip", "invalid"),
    [
        (NN, "nn_roundtrip.mlir", "nn_invalid.mlir"),
        (Fusion, "fusion_roundtrip.mlir", "fusion_invalid.mlir"),
    ],
)
def test_every_op_has_roundtrip_and_negative_tests(
    dialect: object, roundtrip: str, invalid: str
) -> None:
    names = [op.name for op in dialect.operations]  # type: ignore[attr-defined]
    assert names
    rt_input, rt_checks = _split_checks(DIALECT_TESTS / roundtrip)
    _, bad_checks = _split_checks(DIALECT_TESTS / invalid)
    missing_rt = [n for n in names if not _op_pattern(n).search(rt_input)]
    unchecked_rt = [n for n in names if not _op_pattern(n).search(rt_checks)]
    # A negative case counts when its CHECKed diagnostic names the op.
    missing_bad = [n for n in names if not re.search(rf"'{re.escape(n)}'", bad_checks)]
    assert not missing_rt, f"ops without a case in {roundtrip}: {missing_rt}"
    assert not unchecked_rt, f"ops never CHECKed in {roundtrip}: {unchecked_rt}"
    assert not missing_bad, f"ops without a negative case in {invalid}: {missing_bad}"


def _ctx() -> Context:
    ctx = Context()
    for d in (NN, Fusion, Func):
        ctx.load_dialect(d)
    from xdsl.dialects.builtin import Builtin

    ctx.load_dialect(Builtin)
    return ctx


def _print(op: object) -> str:
    import io

    out = io.StringIO()
    Printer(stream=out).print_op(op)  # type: ignore[arg-type]
    return out.getvalue()


def _reparse(module: ModuleOp) -> ModuleOp:
    again = Parser(_ctx(), _print(module)).parse_module()
    again.verify()
    return again


def _roundtrip_constant(text: str) -> nn.ConstantOp:
    module = Parser(_ctx(), f"builtin.module {{\n{text}\n}}").parse_module()
    module.verify()
    op = next(o for o in module.walk() if isinstance(o, nn.ConstantOp))
    op2 = next(o for o in _reparse(module).walk() if isinstance(o, nn.ConstantOp))
    assert op2.value == op.value
    return op2


def test_i1_constant_roundtrips_through_text() -> None:
    op = _roundtrip_constant("%c = nn.constant dense<[true, false]> : tensor<2xi1>")
    assert isinstance(op.value, DenseIntOrFPElementsAttr)
    got = dtypes.numpy_from_dense(op.value)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, [True, False])
    assert "dense<[true, false]> : tensor<2xi1>" in _print(op)


def _sample(dt: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dt, np.floating):
        a = (rng.standard_normal(shape) * 100).astype(dt)
        flat = a.reshape(-1)
        specials = np.array([np.nan, np.inf, -np.inf, -0.0], dtype=dt)[: flat.size]
        flat[: specials.size] = specials
        return a
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    if a.size >= 2:
        a.reshape(-1)[:2] = [info.min, info.max]
    return a


DTYPES = [row[0] for row in dtypes._TABLE]


@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (2, 3, 4), (0, 3)], ids=str)
def test_dense_numpy_roundtrip_every_dtype(dt: np.dtype, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(7)
    a = _sample(dt, shape, rng)
    attr = dtypes.dense_from_numpy(a)
    t = attr.get_type()
    assert isinstance(t, TensorType)
    assert t.element_type == dtypes.from_numpy_dtype(dt)
    assert tuple(t.get_shape()) == shape
    back = dtypes.numpy_from_dense(attr)
    assert back.dtype == dt
    assert back.shape == shape
    assert back.tobytes() == a.tobytes()  # bit-exact, NaN payloads and -0.0 included


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_dense_constant_text_roundtrip_every_dtype(dt: np.dtype) -> None:
    """Printed as nn.constant text and parsed back, the values are unchanged."""
    a = _sample(dt, (2, 3), np.random.default_rng(3))
    if np.issubdtype(dt, np.floating):
        a[0, 0] = 0.1  # not exactly representable: the printer must keep every bit
    module = ModuleOp([nn.ConstantOp(dtypes.dense_from_numpy(a))])
    op = next(o for o in _reparse(module).walk() if isinstance(o, nn.ConstantOp))
    assert isinstance(op.value, DenseIntOrFPElementsAttr)
    back = dtypes.numpy_from_dense(op.value)
    assert back.dtype == a.dtype
    assert back.tobytes() == a.tobytes()


def test_dense_from_numpy_accepts_non_contiguous_input() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4).T
    np.testing.assert_array_equal(dtypes.numpy_from_dense(dtypes.dense_from_numpy(a)), a)


def test_dtype_table_is_consistent() -> None:
    for np_dt, xt, onnx_elem, _ in dtypes._TABLE:
        assert dtypes.to_numpy_dtype(xt) == np_dt
        assert dtypes.from_onnx_elem(onnx_elem) == xt
        assert dtypes.to_onnx_elem(xt) == onnx_elem
        from onnx import helper

        assert helper.tensor_dtype_to_np_dtype(onnx_elem) == np_dt


# ---- verifiers never crash ---------------------------------------------------------------


def _verify_outcome(
    op_cls: type[IRDLOperation],
    operand_types: list[Attribute],
    result_types: list[Attribute],
    props: dict[str, Attribute],
) -> bool:
    """Build and verify an op; True if it verifies. Any exception other than
    VerifyException is a verifier bug and propagates."""
    block = Block(arg_types=operand_types)
    defs = [d for _, d in op_cls.get_irdl_definition().operands]
    operands: list[object] = list(block.args)
    if (
        len(defs) == 1
        and isinstance(defs[0], VarOperandDef)
        and not isinstance(defs[0], OptOperandDef)
    ):
        operands = [operands]  # one variadic group (concat)
    # Trailing optional operands (conv bias, layer_norm bias, ...) are absent.
    operands += [[]] * (len(defs) - len(operands))
    op = op_cls.build(operands=operands, result_types=result_types, properties=props)
    block.add_op(op)
    try:
        op.verify()
    except VerifyException as e:
        message = str(e)
    else:
        return True
    assert op_cls.name in message or "expected" in message, message
    return False


dims = st.integers(min_value=0, max_value=5)
small_ints = st.integers(min_value=-2, max_value=4)


def _t(shape: list[int] | tuple[int, ...]) -> TensorType[Attribute]:
    return TensorType(f32, list(shape))


@settings(max_examples=150, deadline=None)
@given(
    x=st.lists(st.integers(1, 6), min_size=1, max_size=5),
    w=st.lists(st.integers(0, 4), min_size=1, max_size=5),
    strides=st.lists(small_ints, min_size=0, max_size=3),
    pads=st.lists(small_ints, min_size=0, max_size=6),
    dil=st.lists(small_ints, min_size=0, max_size=3),
    group=small_ints,
    out=st.lists(st.integers(0, 6), min_size=1, max_size=5),
)
def test_conv_verifier_only_raises_verify_exception(
    x: list[int],
    w: list[int],
    strides: list[int],
    pads: list[int],
    dil: list[int],
    group: int,
    out: list[int],
) -> None:
    _verify_outcome(
        nn.ConvOp,
        [_t(x), _t(w)],
        [_t(out)],
        {
            "strides": i64_array(strides),
            "pads": i64_array(pads),
            "dilations": i64_array(dil),
            "group": int_attr(group),
        },
    )


@settings(max_examples=150, deadline=None)
@given(
    x=st.lists(st.integers(1, 6), min_size=1, max_size=5),
    kernel=st.lists(small_ints, min_size=0, max_size=3),
    strides=st.lists(small_ints, min_size=0, max_size=3),
    pads=st.lists(small_ints, min_size=0, max_size=6),
    ceil=st.booleans(),
    out=st.lists(st.integers(0, 6), min_size=1, max_size=5),
)
def test_pool_verifier_only_raises_verify_exception(
    x: list[int],
    kernel: list[int],
    strides: list[int],
    pads: list[int],
    ceil: bool,
    out: list[int],
) -> None:
    _verify_outcome(
        nn.MaxPoolOp,
        [_t(x)],
        [_t(out)],
        {
            "kernel": i64_array(kernel),
            "strides": i64_array(strides),
            "pads": i64_array(pads),
            "dilations": i64_array([1] * len(kernel)),
            "ceil_mode": bool_attr(ceil),
        },
    )


@settings(max_examples=150, deadline=None)
@given(
    x=st.lists(dims, min_size=0, max_size=4),
    ints=st.lists(small_ints, min_size=0, max_size=5),
    ints2=st.lists(small_ints, min_size=0, max_size=5),
    ints3=st.lists(small_ints, min_size=0, max_size=5),
    axis=small_ints,
    flag=st.booleans(),
    out=st.lists(dims, min_size=0, max_size=4),
    idx=st.lists(dims, min_size=0, max_size=3),
)
def test_data_movement_verifiers_only_raise_verify_exception(
    x: list[int],
    ints: list[int],
    ints2: list[int],
    ints3: list[int],
    axis: int,
    flag: bool,
    out: list[int],
    idx: list[int],
) -> None:
    it = TensorType(i64, list(idx))
    cases: list[tuple[type[IRDLOperation], list[Attribute], dict[str, Attribute]]] = [
        (nn.TransposeOp, [_t(x)], {"perm": i64_array(ints)}),
        (
            nn.SliceOp,
            [_t(x)],
            {"starts": i64_array(ints), "ends": i64_array(ints2), "steps": i64_array(ints3)},
        ),
        (
            nn.PadOp,
            [_t(x)],
            {"pads": i64_array(ints), "mode": StringAttr("constant"), "value": f64_attr(0.0)},
        ),
        (nn.ReduceSumOp, [_t(x)], {"axes": i64_array(ints), "keepdims": bool_attr(flag)}),
        (nn.ArgMaxOp, [_t(x)], {"axis": int_attr(axis), "keepdims": bool_attr(flag)}),
        (nn.SoftmaxOp, [_t(x)], {"axis": int_attr(axis)}),
        (nn.TileOp, [_t(x)], {"repeats": i64_array(ints)}),
        (nn.ConcatOp, [_t(x), _t(out)], {"axis": int_attr(axis)}),
        (nn.GatherOp, [_t(x), it], {"axis": int_attr(axis)}),
        (nn.GatherElementsOp, [_t(x), it], {"axis": int_attr(axis)}),
        (nn.GatherNDOp, [_t(x), it], {"batch_dims": int_attr(axis)}),
        (nn.LayerNormOp, [_t(x), _t(out)], {"axis": int_attr(axis), "epsilon": f64_attr(1e-5)}),
        (nn.GlobalAvgPoolOp, [_t(x)], {}),
        (nn.MatMulOp, [_t(x), _t(out)], {}),
    ]
    for op_cls, operands, props in cases:
        result = TensorType(i64, out) if op_cls is nn.ArgMaxOp else _t(out)
        _verify_outcome(op_cls, operands, [result], props)


def test_verifier_accepts_its_own_inferred_shapes() -> None:
    """The shape rules and the verifiers agree on a valid op (guards against a verifier that
    rejects everything)."""
    assert _verify_outcome(
        nn.ConvOp,
        [_t([1, 3, 8, 8]), _t([4, 3, 3, 3])],
        [_t([1, 4, 4, 4])],
        {
            "strides": i64_array([2, 2]),
            "pads": i64_array([1, 1, 1, 1]),
            "dilations": i64_array([1, 1]),
            "group": int_attr(1),
        },
    )
    assert _verify_outcome(
        nn.ArgMaxOp,
        [_t([2, 3])],
        [TensorType(i64, [2])],
        {"axis": int_attr(1), "keepdims": bool_attr(False)},
    )
    assert not _verify_outcome(
        nn.ArgMaxOp,
        [_t([2, 3])],
        [TensorType(i64, [2])],
        {"axis": int_attr(2), "keepdims": bool_attr(False)},
    )


# ---- imported models survive printing and re-parsing ----------------------------------------


@pytest.mark.parametrize("name", ["tiny_cnn", "tiny_bert", "zoo_cnn_opset9"])
def test_imported_zoo_ir_roundtrips_through_text(name: str) -> None:
    """Real importer output (weights printed in full, i1/i64 values, origins attributes)
    prints, parses back, verifies and prints identically; constants keep their bytes."""
    from autofusion import zoo
    from autofusion.frontend.onnx_import import import_onnx

    module = import_onnx(zoo.get_model(name))
    old_limit = nn.ConstantOp.ELIDE_LIMIT
    nn.ConstantOp.ELIDE_LIMIT = None
    try:
        text = _print(module)
        again = _reparse(module)
        assert _print(again) == text
    finally:
        nn.ConstantOp.ELIDE_LIMIT = old_limit
    consts = [o for o in module.walk() if isinstance(o, nn.ConstantOp)]
    consts2 = [o for o in again.walk() if isinstance(o, nn.ConstantOp)]
    assert len(consts) == len(consts2) > 0
    for a, b in zip(consts, consts2):
        assert isinstance(a.value, DenseIntOrFPElementsAttr)
        assert isinstance(b.value, DenseIntOrFPElementsAttr)
        assert a.value.data.data == b.value.data.data
