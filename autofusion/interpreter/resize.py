"""Resize semantics: the per-axis tap tables of ``nn.resize`` and their numpy application.

``axis_table`` turns one axis of an ONNX Resize (input size, output size, scale, the
coordinate transformation, the interpolation mode and its options) into an index table and
a weight table of shape ``[out, taps]``. The importer stores the tables as the op's
operands and both the interpreter (here) and the C lowering apply them, so the ONNX rules
live in this one function.

Per output coordinate ``o`` the source coordinate ``x`` follows the transformation mode;
nearest picks one index by ``nearest_mode``; linear and cubic take the ``taps`` neighbours
``ceil(x) - taps/2 .. ceil(x) + taps/2 - 1`` weighted by the kernel at their distance from
``x`` (stretched by the scale when antialiasing a downsample, then normalised), with
out-of-range neighbours clamped to the edge or, with ``exclude_outside``, dropped and the
rest renormalised. A table whose every row puts weight 1 on one tap is reduced to that tap
(a copy), so unchanged axes drop out. A ``tf_crop_and_resize`` coordinate outside the
input gives row index -1 (the extrapolation value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from autofusion.dialects import nn
from autofusion.interpreter.core import register

COORD_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
)
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
MODES = ("nearest", "linear", "cubic")


@dataclass(frozen=True)
class ResizeRule:
    """The interpolation options shared by every axis of one Resize node."""

    mode: str = "nearest"
    coord: str = "half_pixel"
    nearest_mode: str = "round_prefer_floor"
    cubic_a: float = -0.75
    exclude_outside: bool = False
    antialias: bool = False


def source_coords(
    rule: ResizeRule, n: int, m: int, scale: float, roi: tuple[float, float]
) -> np.ndarray:
    """The source coordinate of each of the ``m`` outputs of an axis of ``n`` inputs.

    ``scale`` is the ONNX scale of the axis (given, or ``m / n`` from sizes); the modes
    that divide by the output length use ``scale * n``, which differs from ``m`` when the
    scale does not give a whole size."""
    o = np.arange(m, dtype=np.float64)
    length = scale * n
    c = rule.coord
    if c == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if c == "half_pixel_symmetric":
        offset = n / 2 * (1 - m / length)
        return offset + (o + 0.5) / scale - 0.5
    if c == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if length > 1 else np.full(m, -0.5)
    if c == "align_corners":
        return o * (n - 1) / (length - 1) if length > 1 else np.zeros(m)
    if c == "asymmetric":
        return o / scale
    assert c == "tf_crop_and_resize", c
    start, end = roi
    if length > 1:
        return start * (n - 1) + o * (end - start) * (n - 1) / (length - 1)
    return np.full(m, (start + end) * (n - 1) / 2)


def _nearest(rule: ResizeRule, x: np.ndarray) -> np.ndarray:
    lo = np.floor(x)
    frac = x - lo
    up = {
        "round_prefer_floor": frac > 0.5,
        "round_prefer_ceil": frac >= 0.5,
        "floor": np.zeros_like(x, dtype=bool),
        "ceil": frac > 0,
    }[rule.nearest_mode]
    return (lo + up).astype(np.int64)


def _kernel(rule: ResizeRule, d: np.ndarray) -> np.ndarray:
    d = np.abs(d)
    if rule.mode == "linear":
        return np.clip(1 - d, 0, 1)
    a = rule.cubic_a
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def tap_count(rule: ResizeRule, scale: float) -> int:
    """Taps per output coordinate: 1 nearest, 2 linear, 4 cubic; antialiased downsampling by
    ``scale`` widens linear to about ``2 / scale`` and cubic to ``4 / scale``."""
    if rule.mode == "nearest":
        return 1
    support = 1 if rule.mode == "linear" else 2
    stretch = min(scale, 1.0) if rule.antialias else 1.0
    return 2 * -(math.floor(-support / stretch) + 1) + 2


def axis_table(
    rule: ResizeRule, n: int, m: int, scale: float, roi: tuple[float, float] = (0.0, 1.0)
) -> tuple[np.ndarray, np.ndarray]:
    """``(indices i64 [m, taps], weights f32 [m, taps])`` of one resized axis."""
    x = source_coords(rule, n, m, scale, roi)
    if rule.mode == "nearest":
        idx = np.clip(_nearest(rule, x), 0, n - 1)[:, None]
        w = np.ones((m, 1))
    else:
        support = 1 if rule.mode == "linear" else 2
        stretch = min(scale, 1.0) if rule.antialias else 1.0
        first = math.floor(-support / stretch) + 1
        offsets = np.arange(first, 1 - first + 1)
        assert len(offsets) == tap_count(rule, scale)
        base = np.ceil(x) - 1  # the neighbour strictly left of x
        ratio = x - base  # in (0, 1]
        taps = base[:, None].astype(np.int64) + offsets[None, :]
        w = _kernel(rule, stretch * (offsets[None, :] - ratio[:, None]))
        if rule.antialias:
            w = w / w.sum(axis=1, keepdims=True)
        if rule.exclude_outside:
            w = np.where((taps < 0) | (taps >= n), 0.0, w)
            total = w.sum(axis=1, keepdims=True)
            w = w / np.where(total == 0, 1.0, total)
        idx = np.clip(taps, 0, n - 1)
        if np.all((w == 0) | (w == 1)) and np.all(w.sum(axis=1) == 1):
            # Every output copies one input (e.g. scale 1, or whole-pixel coordinates).
            idx = idx[np.arange(m), w.argmax(axis=1)][:, None]
            w = np.ones((m, 1))
    if rule.coord == "tf_crop_and_resize":
        outside = (x < 0) | (x > n - 1)
        idx = np.where(outside[:, None], 0, idx)
        idx[outside, 0] = -1
        w = np.where(outside[:, None], 0.0, w)
    return idx.astype(np.int64), w.astype(np.float32)


def is_identity(n: int, idx: np.ndarray, w: np.ndarray) -> bool:
    """Whether a table copies its axis of ``n`` unchanged (a 1-tap, unit-weight ``arange``)."""
    return (
        idx.shape == (n, 1)
        and np.array_equal(idx[:, 0], np.arange(idx.shape[0]))
        and bool(np.all(w == 1))
    )


def resize_axis(
    x: np.ndarray, axis: int, idx: np.ndarray, w: np.ndarray, fill: float
) -> np.ndarray:
    """Apply one axis table to ``x`` (float math in float32, as the C code does)."""
    outside = idx[:, 0] < 0
    safe = np.where(idx < 0, 0, idx)
    g = np.take(x, safe, axis=axis)  # [..., m, taps, ...]
    if idx.shape[1] == 1:  # a 1-tap table selects; its weights are 1 and not read
        y = np.take(g, 0, axis=axis + 1)
    else:
        shape = (1,) * axis + w.shape + (1,) * (x.ndim - axis - 1)
        y = (g.astype(np.float32) * w.reshape(shape)).sum(axis=axis + 1, dtype=np.float32)
        y = y.astype(x.dtype)
    if outside.any():
        mask = outside.reshape((1,) * axis + (-1,) + (1,) * (x.ndim - axis - 1))
        y = np.where(mask, np.asarray(fill, dtype=x.dtype), y)
    return y


def resize(
    x: np.ndarray, axes: Sequence[int], tables: Sequence[np.ndarray], fill: float = 0.0
) -> np.ndarray:
    for k, a in enumerate(axes):
        x = resize_axis(x, a, tables[2 * k], tables[2 * k + 1], fill)
    return x


@register(nn.ResizeOp)
def _resize(op: nn.ResizeOp, args: Sequence[np.ndarray]) -> np.ndarray:
    fill = op.extrapolation_value
    return resize(args[0], op.axes, args[1:], fill if fill is not None else 0.0)
