"""Converters for constants, shape computations and data movement.

Each converter normalises the ONNX attributes/constant inputs once (reshape targets with
0/-1, squeeze axes, clamped slices, split sizes, pads) and then either evaluates with
numpy when the data is an import-time constant, or emits the ``nn`` op.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from autofusion import symbolic
from autofusion.dialects import dtypes, nn, shapes
from autofusion.dialects.base import f64_attr, i64_array, int_attr, str_attr
from autofusion.errors import AutofusionError
from autofusion.frontend.context import (
    FOLD_LIMIT,
    Const,
    NodeCtx,
    Value,
    value_elem,
    value_np_dtype,
    value_shape,
)
from autofusion.frontend.loader import elem_name
from autofusion.frontend.registry import converter


def _contiguous(arr: np.ndarray) -> np.ndarray:
    """C-contiguous copy if needed, keeping rank 0 (``np.ascontiguousarray`` makes it 1)."""
    return np.asarray(arr, order="C")


def norm_axis(ctx: NodeCtx, axis: int, rank: int) -> int:
    a = int(axis)
    if a < 0:
        a += rank
    if not 0 <= a < rank:
        raise ctx.error(f"axis {axis} out of range for rank {rank}")
    return a


def norm_axes(ctx: NodeCtx, axes: Sequence[int], rank: int) -> list[int]:
    out = sorted({norm_axis(ctx, a, rank) for a in axes})
    if len(out) != len(list(axes)):
        raise ctx.error(f"repeated axes {list(axes)}")
    return out


def axes_input_or_attr(ctx: NodeCtx, input_index: int, input_opset: int) -> list[int] | None:
    """Axes from the attribute (older opsets) or a constant input (newer); None if absent."""
    if ctx.opset >= input_opset:
        arr = ctx.const_input(input_index, "axes")
        return None if arr is None else [int(a) for a in arr.reshape(-1)]
    axes = ctx.attr("axes")
    return None if axes is None else [int(a) for a in axes]


# ---------------------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------------------


def tensor_to_const(
    t: onnx.TensorProto, origin: str, filename: str, raw: bytes | None = None
) -> Const:
    """An initializer/attribute tensor as a :class:`Const`, viewing its raw bytes in place.

    ``raw`` is the tensor's ``raw_data`` when it was cut out of the file before parsing."""
    try:
        elem = dtypes.from_onnx_elem(t.data_type)
    except ValueError:
        raise AutofusionError(
            f"{filename}: tensor '{origin}' has unsupported element type {elem_name(t.data_type)}"
        ) from None
    dt = dtypes.to_numpy_dtype(elem)
    dims = tuple(int(d) for d in t.dims)
    if raw is None and t.data_location != onnx.TensorProto.EXTERNAL and t.HasField("raw_data"):
        raw = t.raw_data
    if raw is not None:
        n = int(np.prod(dims)) if dims else 1
        if len(raw) != n * dt.itemsize:
            raise AutofusionError(
                f"{filename}: tensor '{origin}' holds {len(raw)} bytes, "
                f"its shape {list(dims)} needs {n * dt.itemsize}"
            )
        arr = np.frombuffer(raw, dtype=dt.newbyteorder("<")).reshape(dims)
        if arr.dtype.byteorder not in ("=", "|") and not np.little_endian:
            return Const(arr.astype(dt), origin)
        return Const(arr, origin, raw)
    try:
        arr = numpy_helper.to_array(t)
    except Exception as e:  # onnx raises assorted errors for bad tensors
        raise AutofusionError(f"{filename}: cannot read tensor '{origin}': {e}") from None
    return Const(_contiguous(arr.astype(dt, copy=False)), origin)


def sparse_to_dense(sp: onnx.SparseTensorProto, origin: str, filename: str) -> np.ndarray:
    """A sparse tensor (``sparse_value`` / ``sparse_initializer``) as a dense array."""
    values = tensor_to_const(sp.values, origin, filename).array
    idx = tensor_to_const(sp.indices, origin, filename).array.astype(np.int64)
    dims = tuple(int(d) for d in sp.dims)
    out = np.zeros(dims, dtype=values.dtype)
    flat = out.reshape(-1)
    try:
        if idx.ndim == 1:
            flat[idx] = values
        else:
            flat[np.ravel_multi_index(tuple(idx.T), dims)] = values
    except (IndexError, ValueError) as e:
        raise AutofusionError(f"{filename}: sparse tensor '{origin}' is malformed: {e}") from None
    return out


@converter("Constant", folds=True)
def _constant(ctx: NodeCtx) -> list[Value]:
    for a in ctx.node.attribute:
        if a.name == "value":
            c = tensor_to_const(a.t, ctx.origin, ctx.filename)
            return [c]
        if a.name == "sparse_value":
            return [ctx.const(sparse_to_dense(a.sparse_tensor, ctx.origin, ctx.filename))]
        if a.name == "value_float":
            return [ctx.const(np.array(a.f, dtype=np.float32))]
        if a.name == "value_floats":
            return [ctx.const(np.array(list(a.floats), dtype=np.float32))]
        if a.name == "value_int":
            return [ctx.const(np.array(a.i, dtype=np.int64))]
        if a.name == "value_ints":
            return [ctx.const(np.array(list(a.ints), dtype=np.int64))]
        if a.name in ("value_string", "value_strings"):
            raise ctx.error("string constants are not supported (unsupported element type)")
    raise ctx.error("has no value attribute")


@converter("ConstantOfShape", folds=True)
def _constant_of_shape(ctx: NodeCtx) -> list[Value]:
    shape = ctx.const_input(0, "shape")
    assert shape is not None
    value = ctx.attr("value")
    if value is None:
        fill = np.zeros((), dtype=np.float32)
    else:
        fill = value.reshape(-1)[0] if value.size else np.zeros((), value.dtype)
    dims = [symbolic.as_dim(d) for d in shape.reshape(-1)]
    if not symbolic.is_static(dims):  # a symbolic import: the fill broadcast at run time
        if any(isinstance(d, int) and d < 0 for d in dims):
            raise ctx.error(f"negative dimension in shape {[str(d) for d in dims]}")
        one = ctx.const(np.asarray(fill).reshape(()))
        return [ctx.emit1(nn.ExpandOp, [one], dims, one.elem)]
    if min(dims, default=1) < 0:
        raise ctx.error(f"negative dimension in shape {dims}")
    ctx.check_size(dims, np.asarray(fill).dtype)
    # A broadcast view: no memory per element, emitted as a splat constant.
    return [ctx.const(np.broadcast_to(np.asarray(fill), dims))]


@converter("Range", folds=True)
def _range(ctx: NodeCtx) -> list[Value]:
    start, limit, delta = (
        ctx.const_input(i, name) for i, name in enumerate(("start", "limit", "delta"))
    )
    assert start is not None and limit is not None and delta is not None
    s, lim, d = start.reshape(-1)[0], limit.reshape(-1)[0], delta.reshape(-1)[0]
    if any(isinstance(v, symbolic.Size) for v in (s, lim, d)):
        return [_symbolic_range(ctx, s, lim, d)]
    n = _range_length(ctx, s, lim, d)
    # Range has no run-time lowering: a result too big to fold is an error, not a constant.
    if not ctx.fold_fits([n], start.dtype):
        raise ctx.error(
            f"{n} elements ({n * start.dtype.itemsize} bytes) are more than an "
            f"import-time constant may hold ({FOLD_LIMIT} bytes)"
        )
    return [ctx.const((s + np.arange(n) * d).astype(start.dtype))]


_INT64_MAX = (1 << 63) - 1


def _symbolic_range(ctx: NodeCtx, s: object, lim: object, d: object) -> Value:
    """Range to a symbolic limit (``arange(seq)``, a symbolic import): the first ``n`` of a
    constant table of ``s + i*d`` for every ``i`` up to the length's upper bound, taken by a
    symbolic slice. Start and delta must be static integers and ``d`` divide the span."""
    if isinstance(s, symbolic.Size) or isinstance(d, symbolic.Size):
        raise symbolic.SymbolicError("Range with a symbolic start or delta is not supported")
    a, c = int(s), int(d)  # type: ignore[arg-type]
    if c <= 0:
        raise symbolic.SymbolicError(f"Range to a symbolic limit needs a positive delta, not {c}")
    n = symbolic.as_dim(lim) - a
    if c != 1:
        n = n // c  # exact, or a SymbolicError
    if n < 1:  # decided by the symbols' ranges, or a SymbolicError
        raise symbolic.SymbolicError(f"Range from {a} to {lim} may be empty")
    hi = symbolic.upper_bound(n)
    if not ctx.fold_fits([hi], np.dtype(np.int64)):
        raise ctx.error(f"Range up to {lim} can hold {hi} elements, too many for its table")
    table = ctx.const((a + np.arange(hi, dtype=np.int64) * c).astype(np.int64))
    return slice_value(ctx, table, [0], [n], [1])


def _range_length(ctx: NodeCtx, s: np.generic, lim: np.generic, d: np.generic) -> int:
    """``max(ceil((limit - start) / delta), 0)`` exactly (ONNX), in Python arithmetic so it
    cannot overflow; NaN / infinite operands and a zero delta are errors naming them."""
    vals = {"start": s, "limit": lim, "delta": d}
    for name, v in vals.items():
        if isinstance(v, np.floating) and not np.isfinite(v):
            raise ctx.error(f"{name} is {float(v)}; Range needs finite start, limit and delta")
    if d == 0:
        raise ctx.error("delta is 0")
    if isinstance(s, np.integer):
        a, b, c = int(s), int(lim), int(d)
        return max(-((a - b) // c), 0)
    q = (float(lim) - float(s)) / float(d)
    if not math.isfinite(q):  # (limit - start) / delta overflows float64: beyond any limit
        raise ctx.error(
            f"Range from {float(s)} to {float(lim)} by {float(d)} has more than "
            "2^48 elements, over the limit of 2^48 bytes (256 TiB) per tensor"
        )
    return max(math.ceil(q), 0)


@converter("Shape", folds=True)
def _shape(ctx: NodeCtx) -> list[Value]:
    dims = list(ctx.shape(0))
    r = len(dims)
    # start/end exist from opset 15 on.
    start = int(ctx.attr("start", 0)) if ctx.opset >= 15 else 0
    end = ctx.attr("end") if ctx.opset >= 15 else None
    end = r if end is None else int(end)
    start = min(max(start + r if start < 0 else start, 0), r)
    end = min(max(end + r if end < 0 else end, 0), r)
    kept = dims[start:end]
    # a symbolic dim makes an object array of sizes (frontend/symfold.py)
    return [ctx.const(np.array(kept, dtype=np.int64 if symbolic.is_static(kept) else object))]


@converter("Size", folds=True)
def _size(ctx: NodeCtx) -> list[Value]:
    return [ctx.const(np.array(shapes.numel(ctx.shape(0)), dtype=np.int64))]


@converter("Identity", folds=True)
def _identity(ctx: NodeCtx) -> list[Value]:
    return [ctx.input(0)]


@converter("Dropout", folds=True)
def _dropout(ctx: NodeCtx) -> list[Value]:
    if ctx.opset >= 12:
        training = ctx.const_input(2, "training_mode")
        if training is not None and bool(training.reshape(-1)[0]):
            raise ctx.error("training_mode=True is not supported (inference only)")
    x = ctx.input(0)
    if len(ctx.n_outputs_used) > 1 and ctx.n_outputs_used[1] and ctx.opset < 12:
        # Before opset 12 the inference-mode mask is not pinned down (onnxruntime returns
        # zeros at opset 7-10, ones from 12 on).
        raise ctx.error("the mask output is only supported from opset 12 on")
    mask = ctx.const(np.ones(value_shape(x), dtype=np.bool_))
    return [x, mask]


# ---------------------------------------------------------------------------------------
# Reshape family
# ---------------------------------------------------------------------------------------


def reshape_to(ctx: NodeCtx, x: Value, shape: Sequence[int]) -> Value:
    shape = tuple(symbolic.as_dim(d) for d in shape)
    if shapes.numel(shape) != shapes.numel(value_shape(x)):
        raise ctx.error(f"cannot reshape {value_shape(x)} to {shape}")
    if isinstance(x, Const):
        return ctx.const(x.array.reshape(shape))
    if shape == value_shape(x):
        return x
    return ctx.emit1(nn.ReshapeOp, [x], shape, value_elem(x))


def reshape_target(
    ctx: NodeCtx, in_shape: Sequence[int], target: Sequence[int], allowzero: bool
) -> tuple[int, ...]:
    """ONNX Reshape: 0 copies the input dim (unless ``allowzero``), one -1 is inferred."""
    out: list[int] = []
    infer = -1
    for i, d in enumerate(symbolic.as_dim(v) for v in target):
        if d == 0 and not allowzero:
            if i >= len(in_shape):
                raise ctx.error(f"shape entry {i} is 0 but the input has rank {len(in_shape)}")
            out.append(symbolic.as_dim(in_shape[i]))
        elif d == -1:
            if infer >= 0:
                raise ctx.error(f"shape {list(target)} has more than one -1")
            infer = i
            out.append(1)
        elif d < 0:
            raise ctx.error(f"invalid shape entry {d}")
        else:
            out.append(d)
    total = shapes.numel(in_shape)
    if infer >= 0:
        known = shapes.numel(out)
        if known == 0 or total % known:
            raise ctx.error(f"cannot reshape {tuple(in_shape)} to {list(target)}")
        out[infer] = total // known
    if shapes.numel(out) != total:
        raise ctx.error(f"cannot reshape {tuple(in_shape)} to {list(target)}")
    return tuple(out)


@converter("Reshape", folds=True)
def _reshape(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    if ctx.opset < 5 or (ctx.has_attr("shape") and ctx.opt_input(1) is None):
        target = list(ctx.attr("shape"))
    else:
        arr = ctx.const_input(1, "shape")
        if arr is None:
            raise ctx.error("shape input is required")
        target = [symbolic.as_dim(v) for v in arr.reshape(-1)]
    allowzero = bool(ctx.attr("allowzero", 0))
    return [reshape_to(ctx, x, reshape_target(ctx, value_shape(x), target, allowzero))]


@converter("Flatten", folds=True)
def _flatten(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    s = value_shape(x)
    axis = int(ctx.attr("axis", 1))
    if axis < 0:
        axis += len(s)
    if not 0 <= axis <= len(s):
        raise ctx.error(f"axis {ctx.attr('axis')} out of range for rank {len(s)}")
    return [reshape_to(ctx, x, (shapes.numel(s[:axis]), shapes.numel(s[axis:])))]


@converter("Squeeze", folds=True)
def _squeeze(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    s = value_shape(x)
    axes = axes_input_or_attr(ctx, 1, 13)
    if axes is None:
        drop = [i for i, d in enumerate(s) if d == 1]
    else:
        drop = norm_axes(ctx, axes, len(s))
        bad = [a for a in drop if s[a] != 1]
        if bad:
            raise ctx.error(f"cannot squeeze dims {bad} of shape {s}: not of size 1")
    return [reshape_to(ctx, x, [d for i, d in enumerate(s) if i not in drop])]


@converter("Unsqueeze", folds=True)
def _unsqueeze(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    s = value_shape(x)
    axes = axes_input_or_attr(ctx, 1, 13)
    if axes is None:
        raise ctx.error("axes are required")
    out_rank = len(s) + len(axes)
    ins = norm_axes(ctx, axes, out_rank)
    it = iter(s)
    out = [1 if i in ins else next(it) for i in range(out_rank)]
    return [reshape_to(ctx, x, out)]


# ---------------------------------------------------------------------------------------
# Permutations, concatenation, splitting
# ---------------------------------------------------------------------------------------


@converter("Transpose", folds=True)
def _transpose(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    s = value_shape(x)
    perm = ctx.attr("perm")
    perm = list(range(len(s)))[::-1] if perm is None else [int(p) for p in perm]
    if sorted(perm) != list(range(len(s))):
        raise ctx.error(f"perm {perm} is not a permutation of rank {len(s)}")
    if isinstance(x, Const):
        return [ctx.const(_contiguous(x.array.transpose(perm)))]
    if perm == list(range(len(s))):
        return [x]
    return [
        ctx.emit1(
            nn.TransposeOp, [x], [s[p] for p in perm], value_elem(x), {"perm": i64_array(perm)}
        )
    ]


@converter("Concat", folds=True)
def _concat(ctx: NodeCtx) -> list[Value]:
    vals = [v for v in ctx.inputs if v is not None]
    if not vals:
        raise ctx.error("needs at least one input")
    rank = len(value_shape(vals[0]))
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), rank)
    elems = {str(value_elem(v)) for v in vals}
    if len(elems) > 1:
        raise ctx.error(f"input element types differ: {sorted(elems)}")
    out = list(value_shape(vals[0]))
    for v in vals[1:]:
        s = value_shape(v)
        if len(s) != rank or any(a != b for i, (a, b) in enumerate(zip(s, out)) if i != axis):
            raise ctx.error(f"input shapes {value_shape(vals[0])} and {s} differ off axis {axis}")
        out[axis] += s[axis]
    folds = all(isinstance(v, Const) for v in vals)
    if ctx.check_size(out, value_np_dtype(vals[0])) > FOLD_LIMIT:
        folds = False  # e.g. splats: keep the copy a run-time op, not a giant constant
    if folds:
        arrays = [v.array for v in vals if isinstance(v, Const)]  # all are, checked above
        return [ctx.const(np.concatenate(arrays, axis=axis))]
    nonempty = [v for v in vals if value_shape(v)[axis] != 0]
    if len(nonempty) <= 1:  # the one input with data, or (all empty) any input: same shape
        return [(nonempty or vals)[0]]
    vals = nonempty
    return [ctx.emit1(nn.ConcatOp, [vals], out, value_elem(vals[0]), {"axis": int_attr(axis)})]


def split_sizes(ctx: NodeCtx, dim: int, n_out: int) -> list[int]:
    if ctx.opset >= 13:
        arr = ctx.const_input(1, "split")
        split = None if arr is None else [int(v) for v in arr.reshape(-1)]
    else:
        split = ctx.attr("split")
        split = None if split is None else [int(v) for v in split]
    if split is not None:
        if len(split) != n_out or sum(split) != dim:
            raise ctx.error(f"split sizes {split} do not fit dimension {dim} into {n_out} outputs")
        return split
    n = int(ctx.attr("num_outputs", n_out))
    if n != n_out:
        raise ctx.error(f"num_outputs={n} but the node has {n_out} outputs")
    chunk = -(-dim // n)
    sizes = [min(chunk, max(dim - i * chunk, 0)) for i in range(n)]
    if ctx.opset < 18 and dim % n:
        raise ctx.error(f"dimension {dim} does not split evenly into {n} outputs")
    return sizes


@converter("Split", folds=True)
def _split(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    s = value_shape(x)
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), len(s))
    sizes = split_sizes(ctx, s[axis], len(ctx.node.output))
    if isinstance(x, Const):
        cuts = np.cumsum(sizes)[:-1]
        return [ctx.const(_contiguous(p)) for p in np.split(x.array, cuts, axis=axis)]
    types = [dtypes.tensor_type(value_elem(x), (*s[:axis], n, *s[axis + 1 :])) for n in sizes]
    op = ctx.emit(nn.SplitOp, [x], [types], {"axis": int_attr(axis)})
    return list(op.results)


# ---------------------------------------------------------------------------------------
# Slice and Pad
# ---------------------------------------------------------------------------------------


def normalise_slice(
    ctx: NodeCtx,
    dims: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int] | None,
    steps: Sequence[int] | None,
) -> tuple[list[int], list[int], list[int]]:
    """One clamped (start, end, step) per dim; ``end = -1`` with step < 0 means "through 0"."""
    r = len(dims)
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error("starts, ends, axes and steps have different lengths")
    out_s, out_e, out_st = [0] * r, list(dims), [1] * r
    seen: set[int] = set()
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = norm_axis(ctx, a, r)
        if a in seen:
            raise ctx.error(f"axis {a} sliced twice")
        seen.add(a)
        d = dims[a]
        s, e, st = symbolic.as_dim(s), symbolic.as_dim(e), int(st)
        if st == 0:
            raise ctx.error("slice step 0")
        if s < 0:
            s += d
        if e < 0:
            e += d
        if st > 0:
            s, e = min(max(s, 0), d), min(max(e, 0), d)
        else:
            s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
        out_s[a], out_e[a], out_st[a] = s, e, st
    return out_s, out_e, out_st


def apply_slice(
    arr: np.ndarray, starts: list[int], ends: list[int], steps: list[int]
) -> np.ndarray:
    idx = tuple(
        slice(s, None if (st < 0 and e < 0) else e, st) for s, e, st in zip(starts, ends, steps)
    )
    return _contiguous(arr[idx])


def slice_value(
    ctx: NodeCtx, x: Value, starts: list[int], ends: list[int], steps: list[int]
) -> Value:
    s = value_shape(x)
    static = symbolic.is_static([*starts, *ends])
    if isinstance(x, Const) and static:
        return ctx.const(apply_slice(x.array, starts, ends, steps))
    if starts == [0] * len(s) and ends == list(s) and steps == [1] * len(s):
        return x
    out = shapes.slice_out(s, starts, ends, steps)
    if not static:
        # a symbolic import: a symbolic end is stored as nn.SYMBOLIC_END (the op reads it
        # back as start + the result's size); starts must be static, steps 1 there
        if not symbolic.is_static(starts) or any(
            not isinstance(e, int) and st != 1 for e, st in zip(ends, steps)
        ):
            raise symbolic.SymbolicError(
                f"slice {starts}:{ends} by {steps}: a symbolic start, or a symbolic end with a "
                "step other than 1, is not supported"
            )
        ends = [e if isinstance(e, int) else nn.SYMBOLIC_END for e in ends]
    return ctx.emit1(
        nn.SliceOp,
        [x],
        out,
        value_elem(x),
        {
            "starts": i64_array(starts),
            "ends": i64_array(ends),
            "steps": i64_array(steps),
        },
    )


def _ints(arr: np.ndarray | None) -> list[int] | None:
    return None if arr is None else [symbolic.as_dim(v) for v in arr.reshape(-1)]


@converter("Slice", folds=True)
def _slice(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    if ctx.opset < 10:
        starts, ends = list(ctx.attr("starts", [])), list(ctx.attr("ends", []))
        axes, steps = ctx.attr("axes"), None
    else:
        starts = _ints(ctx.const_input(1, "starts")) or []
        ends = _ints(ctx.const_input(2, "ends")) or []
        axes = _ints(ctx.const_input(3, "axes"))
        steps = _ints(ctx.const_input(4, "steps"))
    st, en, sp = normalise_slice(ctx, value_shape(x), starts, ends, axes, steps)
    return [slice_value(ctx, x, st, en, sp)]


@converter("Pad", folds=True)
def _pad(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    s = value_shape(x)
    r = len(s)
    mode = ctx.attr("mode", "constant")
    if ctx.opset < 11:
        pads = [int(p) for p in ctx.attr("pads", ctx.attr("paddings", [0] * 2 * r))]
        value = float(ctx.attr("value", 0.0))
        axes = None
    else:
        pads = _ints(ctx.const_input(1, "pads")) or [0] * 2 * r
        v = ctx.const_input(2, "constant_value")
        value = 0.0 if v is None or v.size == 0 else float(v.reshape(-1)[0])
        axes = _ints(ctx.const_input(3, "axes"))
    if mode not in ("constant", "reflect", "edge"):
        raise ctx.error(f"pad mode {mode!r} is not supported")
    if axes is not None:
        ax = [norm_axis(ctx, a, r) for a in axes]
        if len(pads) != 2 * len(ax):
            raise ctx.error("pads must have 2 entries per axis")
        full = [0] * (2 * r)
        for i, a in enumerate(ax):
            full[a], full[r + a] = pads[i], pads[len(ax) + i]
        pads = full
    if len(pads) != 2 * r:
        raise ctx.error(f"pads {pads} must have 2 x rank ({2 * r}) entries")
    pos = [max(p, 0) for p in pads]
    if isinstance(x, Const):
        width = [(pos[i], pos[r + i]) for i in range(r)]
        np_modes: dict[str, nn.PadMode] = {
            "constant": "constant",
            "reflect": "reflect",
            "edge": "edge",
        }
        np_mode = np_modes[mode]
        kw: dict[str, Any] = {"constant_values": value} if mode == "constant" else {}
        y: Value = ctx.const(np.pad(x.array, width, mode=np_mode, **kw).astype(x.array.dtype))
    elif any(pos):
        out = [d + pos[i] + pos[r + i] for i, d in enumerate(s)]
        y = ctx.emit1(
            nn.PadOp,
            [x],
            out,
            value_elem(x),
            {
                "pads": i64_array(pos),
                "mode": str_attr(mode),
                "value": f64_attr(value),
            },
        )
    else:
        y = x
    if any(p < 0 for p in pads):
        ys = value_shape(y)
        starts = [-min(pads[i], 0) for i in range(r)]
        ends = [ys[i] + min(pads[r + i], 0) for i in range(r)]
        if any(e < st for st, e in zip(starts, ends)):
            raise ctx.error(f"negative pads {pads} remove more than the tensor holds")
        y = slice_value(ctx, y, starts, ends, [1] * r)
    return [y]


# ---------------------------------------------------------------------------------------
# Gather family, Expand, Tile
# ---------------------------------------------------------------------------------------


def _check_indices(ctx: NodeCtx, idx: Value) -> None:
    if dtypes.is_float(value_elem(idx)) or value_np_bool(idx):
        raise ctx.error(f"indices must be integers, got {value_elem(idx)}")


def _check_const_indices(ctx: NodeCtx, i: np.ndarray, axis: int, ds: tuple[int, ...]) -> None:
    """Constant indices into axis ``axis`` of data ``ds`` must lie in ``[-dim, dim-1]`` (ONNX):
    the first one outside is refused naming it and the range (numpy would raise IndexError,
    or silently wrap a second time after the ONNX wrap)."""
    n = ds[axis]
    bad = np.argwhere((i >= n) | (i < -n))
    if len(bad):
        k = int(i[tuple(bad[0])])
        raise ctx.error(f"index {k} (at {list(map(int, bad[0]))} of the indices) is out of range "
                        f"[{-n}, {n - 1}] for axis {axis} of data {list(ds)}")  # fmt: skip


def value_np_bool(v: Value) -> bool:
    return dtypes.to_numpy_dtype(value_elem(v)) == np.bool_


@converter("Gather", folds=True)
def _gather(ctx: NodeCtx) -> list[Value]:
    data, idx = ctx.input(0), ctx.input(1)
    _check_indices(ctx, idx)
    ds = value_shape(data)
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), len(ds))
    if isinstance(data, Const) and isinstance(idx, Const):
        i = idx.array.astype(np.int64)
        _check_const_indices(ctx, i, axis, ds)
        return [ctx.const(np.take(data.array, i, axis=axis))]
    out = (*ds[:axis], *value_shape(idx), *ds[axis + 1 :])
    return [ctx.emit1(nn.GatherOp, [data, idx], out, value_elem(data), {"axis": int_attr(axis)})]


@converter("GatherElements", folds=True)
def _gather_elements(ctx: NodeCtx) -> list[Value]:
    data, idx = ctx.input(0), ctx.input(1)
    _check_indices(ctx, idx)
    ds = value_shape(data)
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), len(ds))
    if len(value_shape(idx)) != len(ds):
        raise ctx.error("data and indices ranks differ")
    if isinstance(data, Const) and isinstance(idx, Const):
        i = idx.array.astype(np.int64)
        _check_const_indices(ctx, i, axis, ds)
        i = np.where(i < 0, i + ds[axis], i)
        return [ctx.const(np.take_along_axis(data.array, i, axis=axis))]
    return [
        ctx.emit1(
            nn.GatherElementsOp,
            [data, idx],
            value_shape(idx),
            value_elem(data),
            {"axis": int_attr(axis)},
        )
    ]


@converter("GatherND")
def _gather_nd(ctx: NodeCtx) -> list[Value]:
    data, idx = ctx.input(0), ctx.input(1)
    _check_indices(ctx, idx)
    ds, is_ = value_shape(data), value_shape(idx)
    b = int(ctx.attr("batch_dims", 0))
    if not is_ or is_[-1] > len(ds) - b:
        raise ctx.error(f"index depth {is_[-1] if is_ else 0} too large for data {ds}")
    out = (*is_[:-1], *ds[b + is_[-1] :])
    return [
        ctx.emit1(nn.GatherNDOp, [data, idx], out, value_elem(data), {"batch_dims": int_attr(b)})
    ]


@converter("Expand", folds=True)
def _expand(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    shape = _ints(ctx.const_input(1, "shape")) or []
    try:
        out = shapes.broadcast(value_shape(x), shape)
    except ValueError as e:
        raise ctx.error(str(e)) from None
    static = symbolic.is_static(out)
    if static and isinstance(x, Const) and ctx.fold_fits(out, x.array.dtype):
        return [ctx.const(_contiguous(np.broadcast_to(x.array, out)))]
    if static and max(out, default=0) > _INT64_MAX:  # no tensor type: larger ones, type_problem
        ctx.check_size(out, value_np_dtype(x))
    if out == value_shape(x):
        return [x]
    return [ctx.emit1(nn.ExpandOp, [x], out, value_elem(x))]


@converter("Tile", folds=True)
def _tile(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    reps = _ints(ctx.const_input(1, "repeats")) or []
    s = value_shape(x)
    if len(reps) != len(s) or min(reps, default=1) < 0:
        raise ctx.error(f"repeats {reps} must give one non-negative entry per dimension")
    out = [d * r for d, r in zip(s, reps)]
    if isinstance(x, Const) and ctx.fold_fits(out, x.array.dtype):
        return [ctx.const(np.tile(x.array, reps))]
    if max(out, default=0) > _INT64_MAX:  # no tensor type holds it; smaller: type_problem
        ctx.check_size(out, value_np_dtype(x))
    if all(r == 1 for r in reps):
        return [x]
    return [ctx.emit1(nn.TileOp, [x], out, value_elem(x), {"repeats": i64_array(reps)})]
