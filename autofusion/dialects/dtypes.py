"""One table between numpy dtypes, ONNX tensor types and xDSL element types, plus
bytes-backed constants built from (and read back into) numpy arrays without per-element
Python work."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias, TypeVar

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute

from autofusion import symbolic

ui8 = IntegerType(8, Signedness.UNSIGNED)
ui16 = IntegerType(16, Signedness.UNSIGNED)
ui32 = IntegerType(32, Signedness.UNSIGNED)
ui64 = IntegerType(64, Signedness.UNSIGNED)

ElemType: TypeAlias = IntegerType | AnyFloat
"""What every element type in the table is (and what dense attributes accept)."""

_ElemT = TypeVar("_ElemT", bound=Attribute)

# (numpy dtype, xDSL type, ONNX TensorProto enum, C type)
_TABLE: list[tuple[np.dtype, ElemType, int, str]] = [
    (np.dtype(np.float32), f32, 1, "float"),
    (np.dtype(np.uint8), ui8, 2, "uint8_t"),
    (np.dtype(np.int8), i8, 3, "int8_t"),
    (np.dtype(np.int16), i16, 5, "int16_t"),
    (np.dtype(np.int32), i32, 6, "int32_t"),
    (np.dtype(np.int64), i64, 7, "int64_t"),
    (np.dtype(np.bool_), i1, 9, "bool"),
    (np.dtype(np.float16), f16, 10, "_Float16"),
    (np.dtype(np.float64), f64, 11, "double"),
    (np.dtype(np.uint16), ui16, 4, "uint16_t"),
    (np.dtype(np.uint32), ui32, 12, "uint32_t"),
    (np.dtype(np.uint64), ui64, 13, "uint64_t"),
]


# Columns of _TABLE.
_NUMPY, _XDSL, _ONNX, _C = range(4)


def _lookup(key_col: int, key: object, want_col: int, what: str) -> Any:
    """The ``want_col`` entry of the row whose ``key_col`` equals ``key``."""
    for row in _TABLE:
        if row[key_col] == key:
            return row[want_col]
    raise ValueError(f"no {what} for {key}")


def to_numpy_dtype(t: Attribute) -> np.dtype:
    return _lookup(_XDSL, t, _NUMPY, "numpy dtype for element type")


def from_numpy_dtype(dt: np.dtype | type) -> ElemType:
    return _lookup(_NUMPY, np.dtype(dt), _XDSL, "element type for numpy dtype")


def from_onnx_elem(elem: int) -> ElemType:
    return _lookup(_ONNX, elem, _XDSL, "element type for ONNX element type")


def to_onnx_elem(t: Attribute) -> int:
    return _lookup(_XDSL, t, _ONNX, "ONNX element type for")


def c_type(t: Attribute) -> str:
    return _lookup(_XDSL, t, _C, "C type for")


def is_float(t: Attribute) -> bool:
    return isinstance(t, Float16Type | Float32Type | Float64Type)


def tensor_type(elem: _ElemT, shape: Sequence[int]) -> TensorType[_ElemT]:
    """``tensor<shape x elem>``; symbolic dims (``symbolic.Size``) become ``?`` with the sizes
    in a ``#nn.shape`` encoding (``base.SymShapeAttr``)."""
    if symbolic.is_static(shape):
        return TensorType(elem, [int(d) for d in shape])
    from autofusion.dialects.base import sym_shape_attr

    dims = [d if isinstance(d, int) else DYNAMIC_INDEX for d in shape]
    return TensorType(elem, dims, sym_shape_attr(shape))


def dense_from_numpy(arr: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A bytes-backed dense attribute; bool is stored one byte per element (as MLIR's i1)."""
    arr = np.asarray(arr, order="C")  # np.ascontiguousarray would make rank 0 rank 1
    elem = from_numpy_dtype(arr.dtype)
    data = arr.astype(np.int8).tobytes() if arr.dtype == np.bool_ else arr.tobytes()
    return DenseIntOrFPElementsAttr(tensor_type(elem, arr.shape), BytesAttr(data))


def numpy_from_dense(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The array a dense attribute holds (a read-only view of its bytes; splats expanded)."""
    t = attr.get_type()
    assert isinstance(t, TensorType)
    dt = to_numpy_dtype(t.element_type)
    shape = tuple(t.get_shape())
    raw = attr.data.data
    flat = np.frombuffer(raw, dtype=np.int8 if dt == np.bool_ else dt)
    if dt == np.bool_:
        flat = flat.astype(np.bool_)
    n = int(np.prod(shape)) if shape else 1
    if flat.size == 1 and n != 1:
        return np.broadcast_to(flat, shape)
    return flat.reshape(shape)
