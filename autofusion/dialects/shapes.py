"""Pure shape rules shared by the nn verifiers, the importer and the lowering.

Each function takes static shapes (tuples of ints) and normalised attributes and returns the
result shape, raising ``ValueError`` with a short reason when the inputs cannot be combined.
"""

from __future__ import annotations

from collections.abc import Sequence

Shape = tuple[int, ...]


def broadcast(*shapes: Sequence[int]) -> Shape:
    """numpy/ONNX multidirectional broadcasting."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        padded = [1] * (rank - len(s)) + list(s)
        for i, d in enumerate(padded):
            if d == 1:
                continue
            if out[i] not in (1, d):
                raise ValueError(
                    "shapes " + " and ".join(str(tuple(x)) for x in shapes) + " do not broadcast"
                    f" (dimension {i} of the result: {out[i]} against {d})"
                )
            out[i] = d
    return tuple(out)


def _check_window(strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int]) -> None:
    if min(strides, default=1) < 1 or min(dilations, default=1) < 1:
        raise ValueError(f"strides {tuple(strides)} and dilations {tuple(dilations)} must be >= 1")
    if min(pads, default=0) < 0:
        raise ValueError(f"pads {tuple(pads)} must be >= 0")


def conv_out(
    x: Sequence[int],
    w: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    group: int,
) -> Shape:
    nsp = len(x) - 2
    if nsp < 1:
        raise ValueError(f"input rank {len(x)} must be >= 3 (N, C, spatial...)")
    if len(w) != len(x):
        raise ValueError(f"input rank {len(x)} and weight rank {len(w)} differ")
    if not (len(strides) == len(dilations) == nsp and len(pads) == 2 * nsp):
        raise ValueError("strides/dilations/pads do not match the spatial rank")
    _check_window(strides, pads, dilations)
    if group < 1 or x[1] != w[1] * group:
        raise ValueError(f"input channels {x[1]} != weight channels {w[1]} x group {group}")
    if w[0] % group:
        raise ValueError(f"output channels {w[0]} not divisible by group {group}")
    out = [x[0], w[0]]
    for i in range(nsp):
        k = dilations[i] * (w[2 + i] - 1) + 1
        size = (x[2 + i] + pads[i] + pads[nsp + i] - k) // strides[i] + 1
        if size < 1:
            raise ValueError("kernel larger than padded input")
        out.append(size)
    return tuple(out)


def pool_out(
    x: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
) -> Shape:
    nsp = len(x) - 2
    if nsp < 1:
        raise ValueError(f"input rank {len(x)} must be >= 3 (N, C, spatial...)")
    if not (len(kernel) == len(strides) == len(dilations) == nsp and len(pads) == 2 * nsp):
        raise ValueError("kernel/strides/dilations/pads do not match the spatial rank")
    _check_window(strides, pads, dilations)
    if min(kernel) < 1:
        raise ValueError(f"kernel {tuple(kernel)} must be >= 1")
    out = [x[0], x[1]]
    for i in range(nsp):
        k = dilations[i] * (kernel[i] - 1) + 1
        span = x[2 + i] + pads[i] + pads[nsp + i] - k
        if ceil_mode:
            size = -(-span // strides[i]) + 1
            # The last window must start inside the input or the left padding.
            if (size - 1) * strides[i] >= x[2 + i] + pads[i]:
                size -= 1
        else:
            size = span // strides[i] + 1
        if size < 1:
            raise ValueError("kernel larger than padded input")
        out.append(size)
    return tuple(out)


def matmul_out(a: Sequence[int], b: Sequence[int]) -> Shape:
    if not a or not b:
        raise ValueError("matmul operands must have rank >= 1")
    a2 = list(a) if len(a) > 1 else [1, a[0]]
    b2 = list(b) if len(b) > 1 else [b[0], 1]
    if a2[-1] != b2[-2]:
        raise ValueError(f"contraction sizes differ: {tuple(a)} x {tuple(b)}")
    batch = broadcast(a2[:-2], b2[:-2])
    out = [*batch, a2[-2], b2[-1]]
    if len(a) == 1:
        out.pop(-2)
    if len(b) == 1:
        out.pop(-1)
    return tuple(out)


def reduce_out(x: Sequence[int], axes: Sequence[int], keepdims: bool) -> Shape:
    axes_set = set(axes)
    if any(a < 0 or a >= len(x) for a in axes_set):
        raise ValueError(f"axes {tuple(axes)} out of range for rank {len(x)}")
    if keepdims:
        return tuple(1 if i in axes_set else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in axes_set)


def slice_out(
    x: Sequence[int], starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]
) -> Shape:
    """Normalised slice: one (start, end, step) per dim, already clamped."""
    if not (len(starts) == len(ends) == len(steps) == len(x)):
        raise ValueError("starts/ends/steps must give one entry per dimension")
    out = []
    for d, s, e, st in zip(x, starts, ends, steps):
        if st == 0:
            raise ValueError("slice step 0")
        if st > 0:
            n = max(0, -(-(e - s) // st))
        else:
            n = max(0, -(-(s - e) // -st))
        if not (-1 <= s <= d and -1 <= e <= d):
            raise ValueError(f"slice bounds {s}:{e} outside dimension {d}")
        out.append(n)
    return tuple(out)


def numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
