"""Resize (opsets 10 to 19) and Upsample (opset 9) as ``nn.resize`` with per-axis tables.

The output shape must be known at import, so ``scales`` / ``sizes`` (and ``roi`` for
``tf_crop_and_resize``) must be constants. Each resized axis gets its index and weight
tables from :func:`autofusion.interpreter.resize.axis_table`; axes the node leaves
unchanged (scale 1 under a mode that maps them onto themselves) get none, and a node that
changes nothing is the identity.

Opset 10 Resize and Upsample use the old rules: ``asymmetric`` coordinates and ``floor``
for nearest. Opset 11+ defaults are ``half_pixel``, ``round_prefer_floor`` and
``cubic_coeff_a = -0.75``; 18 adds ``axes``, ``keep_aspect_ratio_policy`` and ``antialias``,
19 ``half_pixel_symmetric``.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import Attribute

from autofusion.dialects import dtypes, nn
from autofusion.dialects.base import f64_attr, i64_array
from autofusion.frontend.context import NodeCtx, Value, value_elem, value_shape
from autofusion.frontend.convert_shape import norm_axis
from autofusion.frontend.registry import converter
from autofusion.interpreter import resize as rs

#: Most entries of one axis's tap table (antialiased downsampling by a tiny scale would need
#: about ``4 / scale`` taps per output).
MAX_TABLE = 1 << 24


def _choice(ctx: NodeCtx, name: str, default: str, allowed: tuple[str, ...]) -> str:
    v = str(ctx.attr(name, default))
    if v not in allowed:
        raise ctx.error(f"attribute '{name}' = {v!r} is not supported ({', '.join(allowed)})")
    return v


def _rule(ctx: NodeCtx, legacy: bool) -> rs.ResizeRule:
    mode = _choice(ctx, "mode", "nearest", rs.MODES)
    if legacy:
        if mode == "cubic":
            raise ctx.error("attribute 'mode' = 'cubic' needs opset 11 or later")
        return rs.ResizeRule(mode, "asymmetric", "floor")
    coord = _choice(ctx, "coordinate_transformation_mode", "half_pixel", rs.COORD_MODES)
    if coord == "half_pixel_symmetric" and ctx.opset < 19:
        raise ctx.error("coordinate_transformation_mode 'half_pixel_symmetric' needs opset 19")
    return rs.ResizeRule(
        mode,
        coord,
        _choice(ctx, "nearest_mode", "round_prefer_floor", rs.NEAREST_MODES),
        float(ctx.attr("cubic_coeff_a", -0.75)),
        bool(ctx.attr("exclude_outside", 0)),
        bool(ctx.attr("antialias", 0)),
    )


def _present(ctx: NodeCtx, i: int, what: str) -> np.ndarray | None:
    """A constant optional input, None when absent or empty (ONNX's "not given")."""
    arr = ctx.const_input(i, what)
    return None if arr is None or arr.size == 0 else arr.reshape(-1)


def _sizes_and_scales(
    ctx: NodeCtx, xs: tuple[int, ...], axes: list[int], scales_in: int, sizes_in: int | None
) -> tuple[list[int], list[float]]:
    """Output sizes and coordinate scales of every axis."""
    scales = _present(ctx, scales_in, "scales")
    sizes = _present(ctx, sizes_in, "sizes") if sizes_in is not None else None
    if (scales is None) == (sizes is None):
        raise ctx.error("exactly one of 'scales' and 'sizes' must be given")
    out, sc = list(xs), [1.0] * len(xs)
    given = scales if scales is not None else sizes
    assert given is not None
    if len(given) != len(axes):
        what = "scales" if scales is not None else "sizes"
        raise ctx.error(f"{what} has {len(given)} values for {len(axes)} axes")
    if scales is not None:
        for a, s in zip(axes, scales.astype(np.float64)):
            if not (s > 0 and math.isfinite(s)):
                raise ctx.error(
                    f"scales must be positive and finite, got {list(map(float, scales))}"
                )
            sc[a], out[a] = float(s), math.floor(xs[a] * float(s))
        return out, sc
    assert sizes is not None
    want = [int(v) for v in sizes]
    if any(v <= 0 for v in want) or any(xs[a] == 0 for a in axes):
        raise ctx.error(f"sizes {want} must be positive for non-empty axes of input {list(xs)}")
    policy = _choice(
        ctx, "keep_aspect_ratio_policy", "stretch", ("stretch", "not_larger", "not_smaller")
    )
    if policy == "stretch":
        for a, v in zip(axes, want):
            out[a], sc[a] = v, v / xs[a]
        return out, sc
    ratios = [v / xs[a] for a, v in zip(axes, want)]
    s = min(ratios) if policy == "not_larger" else max(ratios)
    for a in axes:
        out[a], sc[a] = math.floor(s * xs[a] + 0.5), s
    return out, sc


def _roi(
    ctx: NodeCtx, rule: rs.ResizeRule, axes: list[int], rank: int
) -> list[tuple[float, float]]:
    if rule.coord != "tf_crop_and_resize":
        return [(0.0, 1.0)] * rank
    roi = _present(ctx, 1, "roi")
    if roi is None or len(roi) != 2 * len(axes):
        raise ctx.error(f"tf_crop_and_resize needs roi with {2 * len(axes)} values (input 1)")
    out = [(0.0, 1.0)] * rank
    for k, a in enumerate(axes):
        out[a] = (float(roi[k]), float(roi[len(axes) + k]))
    return out


def _emit(
    ctx: NodeCtx,
    x: Value,
    rule: rs.ResizeRule,
    out: list[int],
    scales: list[float],
    rois: list[tuple[float, float]],
) -> Value:
    xs, elem = value_shape(x), value_elem(x)
    if rule.mode != "nearest" and not dtypes.is_float(elem):
        raise ctx.error(f"mode '{rule.mode}' needs a floating-point input, got {elem}")
    ctx.check_size(out, dtypes.to_numpy_dtype(elem))
    if any(d == 0 for d in xs) and any(o != d for o, d in zip(out, xs)):
        raise ctx.error(f"cannot resize an empty input {list(xs)}")
    axes: list[int] = []
    tables: list[Value] = []
    for a, (n, m) in enumerate(zip(xs, out)):
        if m == 0 or n == 0:
            if m != n:
                raise ctx.error(f"output size 0 on axis {a} of input {list(xs)} is not supported")
            continue
        taps = rs.tap_count(rule, scales[a])
        if m * taps > MAX_TABLE:
            raise ctx.error(f"axis {a} ({n} -> {m}) needs {taps} taps per output with antialias; "
                            f"over {MAX_TABLE} table entries is not supported")  # fmt: skip
        idx, w = rs.axis_table(rule, n, m, scales[a], rois[a])
        if rs.is_identity(n, idx, w):
            continue
        axes.append(a)
        tables += [ctx.const(idx), ctx.const(w)]
    if not axes:
        return x
    props: dict[str, Attribute] = {"axes": i64_array(axes)}
    if rule.coord == "tf_crop_and_resize":
        props["extrapolation_value"] = f64_attr(float(ctx.attr("extrapolation_value", 0.0)))
    return ctx.emit1(nn.ResizeOp, [x, tables], out, elem, props)


@converter("Resize")
def _resize(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    xs = value_shape(x)
    legacy = ctx.opset < 11
    rule = _rule(ctx, legacy)
    if legacy:
        return [_emit(ctx, x, rule, *_sizes_and_scales(ctx, xs, list(range(len(xs))), 1, None),
                      [(0.0, 1.0)] * len(xs))]  # fmt: skip
    raw_axes = ctx.attr("axes")
    if raw_axes is None:
        axes = list(range(len(xs)))
    else:
        axes = [norm_axis(ctx, int(a), len(xs)) for a in raw_axes]
        if len(set(axes)) != len(axes):
            raise ctx.error(f"repeated axes {list(raw_axes)}")
    out, scales = _sizes_and_scales(ctx, xs, axes, 2, 3)
    return [_emit(ctx, x, rule, out, scales, _roi(ctx, rule, axes, len(xs)))]


@converter("Upsample")
def _upsample(ctx: NodeCtx) -> list[Value]:
    x = ctx.input(0)
    xs = value_shape(x)
    rule = _rule(ctx, legacy=True)
    out, scales = _sizes_and_scales(ctx, xs, list(range(len(xs))), 1, None)
    return [_emit(ctx, x, rule, out, scales, [(0.0, 1.0)] * len(xs))]
