"""``--memory-plot plan.svg``: draw a memory plan as an SVG picture.

Time (schedule step) runs left to right, the arena offset bottom to top; each planned
intermediate is one box spanning its live interval and its bytes, labelled with the ONNX
node(s) it came from (the full name, shape and bytes are in the box's tooltip). Tensors a
step computes in place over a dying input sit exactly on top of it in time, at the same
height; a reshape (a view of its operand) is drawn dashed over it. Tiled pieces
(``tile-fusion``) show as a run of small boxes. Every string from the model is XML-escaped.

``write_memory_plot(module, path)`` reads the ``memory.offsets`` that ``plan-buffers`` wrote
(so the picture shows exactly what the lowering uses), planning first if there are none.
"""

from __future__ import annotations

import hashlib
import os
from xml.sax.saxutils import escape, quoteattr

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue

from autofusion.analysis.liveness import Interval, find_main, schedule
from autofusion.analysis.memory_plan import plan_memory
from autofusion.dialects.attrs import (
    MEMORY_ARENA_BYTES,
    MEMORY_LOWER_BOUND_BYTES,
    MEMORY_NAIVE_BYTES,
    MEMORY_OFFSETS,
    MEMORY_TILE,
    ORIGINS,
)
from autofusion.dialects.base import shape_of

WIDTH = 1400
HEIGHT = 760
LEFT, RIGHT, TOP, BOTTOM = 90, 20, 56, 48
PALETTE = (
    "#8dd3c7",
    "#ffffb3",
    "#bebada",
    "#fb8072",
    "#80b1d3",
    "#fdb462",
    "#b3de69",
    "#fccde5",
    "#d9d9d9",
    "#bc80bd",
    "#ccebc5",
    "#ffed6f",
)


def _origins(op: Operation) -> list[str]:
    for attr in (op.attributes.get(ORIGINS), op.properties.get("origins")):
        if isinstance(attr, ArrayAttr):
            return [a.data for a in attr.data if isinstance(a, StringAttr)]
    return []


def _short(name: str) -> str:
    """``/layer1/0/relu_2/Relu`` -> ``layer1/0/relu_2``: exporters end names in the op type."""
    parts = [p for p in name.split("/") if p]
    if len(parts) > 1:
        parts = parts[:-1]
    return "/".join(parts) or name


def _label(op: Operation) -> str:
    names = _origins(op)
    text = op.name
    if names:
        last = _short(names[-1])
        text = last if len(names) == 1 else f"{last} (+{len(names) - 1})"
    tile = op.attributes.get(MEMORY_TILE)
    if isinstance(tile, DenseArrayBase):
        index, count = (int(v) for v in tile.get_values())
        text += f" [tile {index + 1}/{count}]" if index >= 0 else f" [{count} tiles]"
    return text


def _kind(op: Operation) -> str:
    pattern = op.properties.get("pattern")
    return pattern.data if isinstance(pattern, StringAttr) else op.name


def _colours(kinds: list[str]) -> dict[str, str]:
    """Distinct colours for the first kinds (sorted), then a stable hash for the rest."""
    out: dict[str, str] = {}
    for i, kind in enumerate(sorted(kinds)):
        if i < len(PALETTE):
            out[kind] = PALETTE[i]
        else:
            out[kind] = PALETTE[hashlib.sha1(kind.encode()).digest()[0] % len(PALETTE)]
    return out


def _human(n: float) -> str:
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def _planned_offsets(intervals: list[Interval], offsets: dict[SSAValue, int]) -> None:
    """Overwrite ``offsets`` with the ``memory.offsets`` the module carries, if any."""
    for iv in intervals:
        attr = iv.op.attributes.get(MEMORY_OFFSETS)
        if isinstance(attr, DenseArrayBase):
            value = [int(v) for v in attr.get_values()][iv.value.index]
            if value >= 0:
                offsets[iv.value] = value


def _arena_attr(module: ModuleOp, key: str) -> int | None:
    attr = find_main(module).attributes.get(key)
    return int(attr.value.data) if isinstance(attr, IntegerAttr) else None


def render_memory_plot(module: ModuleOp, title: str = "memory plan") -> str:
    """The SVG text for ``module``'s memory plan."""
    main = find_main(module)
    steps = schedule(main)
    plan = plan_memory(main)
    intervals = plan.intervals
    offsets: dict[SSAValue, int] = dict(plan.offsets)
    _planned_offsets(intervals, offsets)
    arena = _arena_attr(module, MEMORY_ARENA_BYTES) or plan.arena_bytes
    lower = _arena_attr(module, MEMORY_LOWER_BOUND_BYTES) or plan.lower_bound_bytes
    naive = _arena_attr(module, MEMORY_NAIVE_BYTES) or plan.naive_bytes
    n = max(1, len(steps))
    top = max([arena or 1, *(offsets[iv.value] + iv.size for iv in intervals)])
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    sx, sy = pw / n, ph / top

    def x(step: float) -> float:
        return LEFT + step * sx

    def y(offset: float) -> float:
        return TOP + ph - offset * sy

    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="DejaVu Sans, Arial, sans-serif">',
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="16" font-weight="bold">{escape(title)}</text>',
        f'<text x="{LEFT}" y="42" font-size="12">arena {_human(arena or 0)} · lower bound '
        f"{_human(lower or 0)} · no reuse {_human(naive or 0)} · {len(intervals)} tensors, "
        f"{len(steps)} steps</text>",
        f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#999"/>',
    ]
    # Grid and axes.
    for i in range(6):
        off = top * i / 5
        yy = y(off)
        out.append(
            f'<line x1="{LEFT}" y1="{yy:.1f}" x2="{LEFT + pw}" y2="{yy:.1f}" stroke="#e4e4e4"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{yy + 4:.1f}" font-size="11" '
            f'text-anchor="end">{escape(_human(off))}</text>'
        )
    tick = max(1, round(n / 12))
    for s in range(0, n + 1, tick):
        out.append(
            f'<text x="{x(s):.1f}" y="{TOP + ph + 16}" font-size="11" '
            f'text-anchor="middle">{s}</text>'
        )
    out.append(
        f'<text x="{LEFT + pw / 2}" y="{HEIGHT - 10}" font-size="12" '
        f'text-anchor="middle">schedule step (top-level op / fused kernel)</text>'
    )
    out.append(
        f'<text x="16" y="{TOP + ph / 2}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + ph / 2})">arena offset</text>'
    )
    # Legend: one swatch per kind of producing step.
    kinds = sorted({_kind(iv.op) for iv in intervals})
    colour = _colours(kinds)
    lx = WIDTH - RIGHT
    for kind in reversed(kinds[:10]):
        width = 14 + 6 * len(kind) + 16
        lx -= width
        out.append(
            f'<rect x="{lx}" y="30" width="10" height="10" fill={quoteattr(colour[kind])} '
            f'stroke="#444" stroke-width="0.5"/>'
        )
        out.append(f'<text x="{lx + 14}" y="39" font-size="11">{escape(kind)}</text>')
    # One box per tensor; labels only where they fit.
    for iv in intervals:
        off = offsets[iv.value]
        x0, x1 = x(iv.start), x(iv.end + 1)
        y0, y1 = y(off + iv.size), y(off)
        w, h = max(x1 - x0, 0.5), max(y1 - y0, 0.5)
        label = _label(iv.op)
        shape = "x".join(str(d) for d in shape_of(iv.value))
        tip = (
            f"{label} [{_kind(iv.op)}] {shape}: {_human(iv.size)} at {off}, "
            f"steps {iv.start}-{iv.end}"
        )
        origins = ", ".join(_origins(iv.op))
        if origins:
            tip += f"\norigins: {origins}"
        view = iv.value in plan.views
        if view:
            tip += "\n(reshape view of its operand: same bytes, no copy)"
        style = ' fill-opacity="0.35" stroke-dasharray="3,2"' if view else ""
        out.append(
            f'<g><title>{escape(tip)}</title><rect x="{x0:.2f}" y="{y0:.2f}" width="{w:.2f}" '
            f'height="{h:.2f}" fill={quoteattr(colour[_kind(iv.op)])} stroke="#444" '
            f'stroke-width="0.5"{style}/>'
        )
        fits_across = (len(label) * 6 + 4 <= w) and h >= 13
        horizontal = fits_across or w >= h or w < 11
        room, across = (w, h) if horizontal else (h, w)
        if across >= 11 and room >= 24:
            size_px = 10 if across >= 13 else 8
            chars = int((room - 4) / (size_px * 0.6))
            text = label if len(label) <= chars else label[: max(1, chars - 1)] + "…"
            if horizontal:
                tx, ty = x0 + 2, y0 + min(h / 2 + 4, 12)
                out.append(
                    f'<text x="{tx:.2f}" y="{ty:.2f}" font-size="{size_px}">{escape(text)}</text>'
                )
            else:
                tx, ty = x0 + min(w / 2 + 4, 12), y1 - 2
                out.append(
                    f'<text x="{tx:.2f}" y="{ty:.2f}" font-size="{size_px}" '
                    f'transform="rotate(-90 {tx:.2f} {ty:.2f})">{escape(text)}</text>'
                )
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_memory_plot(
    module: ModuleOp, path: str | os.PathLike[str], title: str | None = None
) -> None:
    """Write the SVG picture of ``module``'s memory plan to ``path``."""
    text = render_memory_plot(module, title or "memory plan")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
