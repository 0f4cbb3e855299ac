"""QuantizeLinear and DequantizeLinear (opsets 10 to 28) as decompositions onto ``nn`` ops.

- ``DequantizeLinear``: ``y = (cast(x) - cast(zero_point)) * scale`` in the output type
  (``output_dtype``, else the scale's type); an int32 ``x`` has no zero point.
- ``QuantizeLinear``: ``y = cast(clip(round_half_even(x / scale) + zero_point, lo, hi))`` with
  the division in the ``precision`` type (else the scale's type) and ``[lo, hi]`` the range of
  the quantized type (zero point's type, else ``output_dtype``, else uint8).

``DynamicQuantizeLinear`` computes a uint8 scale and zero point from the data's range (widened
to include 0) with reductions, then quantizes as above.

Scale and zero point are a scalar (per tensor), a 1-D tensor along ``axis`` (per axis), or of
the input's rank with ``ceil(D / block_size)`` along ``axis`` (blocked: each entry is repeated
``block_size`` times, then cut to ``D``). Integer types of 8 and 16 bits are supported (and
int32 for DequantizeLinear); float8, 4-bit and 2-bit types are refused by the element-type
checks or here. In a QDQ model the DequantizeLinear of constant weights folds at import; a
run-time Q/DQ pair becomes one elementwise chain that fuses with its neighbours.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Attribute

from autofusion.dialects import dtypes, nn
from autofusion.dialects.base import bool_attr, f64_attr, i64_array, int_attr
from autofusion.frontend.context import Const, NodeCtx, Value, value_elem, value_shape
from autofusion.frontend.convert_elementwise import cast_value, emit_binary
from autofusion.frontend.convert_shape import norm_axis, reshape_to
from autofusion.frontend.registry import converter

#: Quantized element types (numpy dtype names) and their saturation ranges.
_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-128, 127),
    "uint8": (0, 255),
    "int16": (-32768, 32767),
    "uint16": (0, 65535),
}


def _onnx_type(ctx: NodeCtx, code: int, what: str) -> Attribute:
    try:
        return dtypes.from_onnx_elem(code)
    except ValueError:
        raise ctx.error(f"{what} {code} is not a supported element type") from None


def _broadcast_param(
    ctx: NodeCtx, p: Value, xs: tuple[int, ...], axis_attr: int, block: int, what: str
) -> Value:
    """``p`` (scale or zero point) shaped to broadcast against an input of shape ``xs``."""
    ps = value_shape(p)
    if len(ps) == 0 or (len(ps) == 1 and ps[0] == 1 and block == 0):
        return p
    axis = norm_axis(ctx, axis_attr, len(xs))
    if block == 0:
        if len(ps) != 1 or ps[0] != xs[axis]:
            raise ctx.error(
                f"{what} shape {list(ps)} must be a scalar or [{xs[axis]}] "
                f"(axis {axis} of input {list(xs)})"
            )
        return reshape_to(ctx, p, [xs[axis] if i == axis else 1 for i in range(len(xs))])
    if block < 0:
        raise ctx.error(f"block_size must be positive, got {block}")
    want = [-(-xs[i] // block) if i == axis else xs[i] for i in range(len(xs))]
    if list(ps) != want:
        raise ctx.error(f"{what} shape {list(ps)} should be {want} for block_size {block}")
    idx = np.arange(xs[axis], dtype=np.int64) // block
    if isinstance(p, Const):
        return ctx.const(np.ascontiguousarray(np.take(p.array, idx, axis=axis)))
    return ctx.emit1(nn.GatherOp, [p, ctx.const(idx)], xs, value_elem(p), {"axis": int_attr(axis)})


def _params(ctx: NodeCtx, xs: tuple[int, ...]) -> tuple[Value, Value | None]:
    scale, zp = ctx.input(1), ctx.opt_input(2)
    if not dtypes.is_float(value_elem(scale)):
        raise ctx.error(f"the scale must be a floating-point tensor, got {value_elem(scale)}")
    if zp is not None and value_shape(zp) != value_shape(scale):
        raise ctx.error(
            f"zero point shape {list(value_shape(zp))} differs from the scale's "
            f"{list(value_shape(scale))}"
        )
    axis, block = int(ctx.attr("axis", 1)), int(ctx.attr("block_size", 0))
    scale = _broadcast_param(ctx, scale, xs, axis, block, "scale")
    if zp is not None:
        zp = _broadcast_param(ctx, zp, xs, axis, block, "zero point")
    return scale, zp


@converter("DequantizeLinear", version=28)
def _dequantize(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    xs, qelem = value_shape(x), value_elem(x)
    qname = dtypes.to_numpy_dtype(qelem).name
    if qname not in (*_RANGES, "int32"):
        raise ctx.error(f"quantized input of type {qname} is not supported")
    scale, zp = _params(ctx, xs)
    if zp is not None and value_elem(zp) != qelem:
        raise ctx.error(f"zero point type {value_elem(zp)} differs from the input's {qelem}")
    code = int(ctx.attr("output_dtype", 0))
    out = _onnx_type(ctx, code, "output_dtype") if code else value_elem(scale)
    if not dtypes.is_float(out):
        raise ctx.error(f"output_dtype must be a floating-point type, got {out}")
    y = cast_value(ctx, x, out)
    if zp is not None:
        y = emit_binary(ctx, nn.SubOp, y, cast_value(ctx, zp, out))
    s = scale if value_elem(scale) == out else cast_value(ctx, scale, out)
    return [emit_binary(ctx, nn.MulOp, y, s)]


@converter("QuantizeLinear", version=28)
def _quantize(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    xs = value_shape(x)
    if not dtypes.is_float(value_elem(x)):
        raise ctx.error(f"input must be a floating-point tensor, got {value_elem(x)}")
    scale, zp = _params(ctx, xs)
    code = int(ctx.attr("output_dtype", 0))
    if zp is not None:
        qelem = value_elem(zp)
        if code and _onnx_type(ctx, code, "output_dtype") != qelem:
            raise ctx.error("output_dtype differs from the zero point's type")
    else:
        qelem = _onnx_type(ctx, code, "output_dtype") if code else dtypes.from_numpy_dtype(np.uint8)
    qname = dtypes.to_numpy_dtype(qelem).name
    if qname not in _RANGES:
        raise ctx.error(f"quantized type {qname} is not supported (int8/uint8/int16/uint16)")
    prec = int(ctx.attr("precision", 0))
    work = _onnx_type(ctx, prec, "precision") if prec else value_elem(scale)
    if not dtypes.is_float(work):
        raise ctx.error(f"precision must be a floating-point type, got {work}")
    xw = x if value_elem(x) == work else cast_value(ctx, x, work)
    sw = scale if value_elem(scale) == work else cast_value(ctx, scale, work)
    q = ctx.emit1(nn.RoundOp, [emit_binary(ctx, nn.DivOp, xw, sw)], xs, work)
    if zp is not None:
        q = emit_binary(ctx, nn.AddOp, q, cast_value(ctx, zp, work))
    lo, hi = _RANGES[qname]
    q = ctx.emit1(nn.ClipOp, [q], xs, work, {"min": f64_attr(lo), "max": f64_attr(hi)})
    return [ctx.emit1(nn.CastOp, [q], xs, qelem)]


@converter("DynamicQuantizeLinear")
def _dynamic_quantize(ctx: NodeCtx) -> list[Value]:
    """uint8 quantization with the scale and zero point of the data's range widened to 0:
    ``scale = (max(0, max x) - min(0, min x)) / 255``, ``zp = sat(round(-min(0, min x) /
    scale))``, ``y = sat(round(x / scale) + zp)``; outputs ``y``, ``scale``, ``zp``."""
    x = ctx.input(0)
    xs, elem = value_shape(x), value_elem(x)
    if elem != dtypes.f32:
        raise ctx.error(f"input must be float32, got {elem}")
    all_axes = {"axes": i64_array(range(len(xs))), "keepdims": bool_attr(False)}
    zero, npd = ctx.const(np.array(0.0, np.float32)), np.float32
    hi = emit_binary(ctx, nn.MaxOp, ctx.emit1(nn.ReduceMaxOp, [x], (), elem, all_axes), zero)
    lo = emit_binary(ctx, nn.MinOp, ctx.emit1(nn.ReduceMinOp, [x], (), elem, all_axes), zero)
    scale = emit_binary(
        ctx, nn.DivOp, emit_binary(ctx, nn.SubOp, hi, lo), ctx.const(np.array(255.0, npd))
    )
    clip: dict[str, Attribute] = {"min": f64_attr(0), "max": f64_attr(255)}
    u8 = dtypes.from_numpy_dtype(np.uint8)
    zp_f = ctx.emit1(
        nn.RoundOp,
        [emit_binary(ctx, nn.DivOp, ctx.emit1(nn.NegOp, [lo], (), elem), scale)],
        (),
        elem,
    )
    zp_f = ctx.emit1(nn.ClipOp, [zp_f], (), elem, clip)
    q = ctx.emit1(nn.RoundOp, [emit_binary(ctx, nn.DivOp, x, scale)], xs, elem)
    q = ctx.emit1(nn.ClipOp, [emit_binary(ctx, nn.AddOp, q, zp_f)], xs, elem, clip)
    return [
        ctx.emit1(nn.CastOp, [q], xs, u8),
        scale,
        ctx.emit1(nn.CastOp, [zp_f], (), u8),
    ]
