"""``--report-html FILE``: the compile report as one self-contained HTML page.

The page holds, in order: summary figures (kernels before/after, arena, naive and lower-bound
bytes, compile seconds), the graph after fusion drawn as an SVG, the fused groups with their
ONNX origins, every refusal with its reason code and reason, the memory plan (the SVG of
:mod:`autofusion.analysis.memory_plot`), and after ``autofusion-bench --profile`` the
per-kernel profile against this machine's roofs with a roofline chart.

Self-contained: inline CSS and SVG, no script, no external asset. Every string that comes
from the model (node names, patterns, reasons) is HTML-escaped.

Graph layout: each top-level step of ``@main`` (a fused kernel or an unfused op; weights and
other constants are left out) is one box, placed on the layer one below its deepest producer
(a topological layering, top to bottom), boxes of a layer side by side ordered by their
producers' positions. Fused kernels are coloured by pattern, unfused ops grey. A box shows
the kernel's step number, pattern and its first ONNX origin; all origins are in the box's
tooltip and in the groups table. The drawing grows linearly with the number of steps
(about 0.5 KB each), so a model of thousands of ops gives a page of a few MB at most.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import BlockArgument, SSAValue

from autofusion.analysis.liveness import find_main
from autofusion.dialects import nn
from autofusion.dialects.attrs import ONNX_NAME, origin_names
from autofusion.dialects.base import type_dims
from autofusion.dialects.fusion import KernelOp
from autofusion.errors import AutofusionError

BOX_W, BOX_H, GAP_X, GAP_Y, MARGIN = 230, 40, 26, 30, 16
NOTES_W = 900  # the column listing each layer's ONNX origins
PALETTE = ("#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5",
           "#bc80bd", "#ccebc5", "#ffed6f", "#66c2a5", "#e5c494")  # fmt: skip
UNFUSED = "#e6e6e6"
INPUT = "#ffffff"


def esc(text: object) -> str:
    """Escape ``text`` for HTML element content and quoted attribute values."""
    return html.escape(str(text), quote=True)


@dataclass
class Step:
    """One box of the graph: a graph input, a fused kernel or an unfused op."""

    index: int  # position among the top-level ops of @main (the C kernel's k<index>_ number)
    kind: str  # "input", "kernel" or "op"
    pattern: str  # kernel pattern, op name without "nn.", or the input's name
    origins: list[str]
    shape: str
    producers: list[int] = field(default_factory=list)  # indices into the step list
    layer: int = 0
    x: float = 0.0


@dataclass
class Page:
    """What the page needs from the module after the tensor passes."""

    steps: list[Step]
    memory_svg: str


def _shape(values: Sequence[SSAValue]) -> str:
    parts = []
    for v in values:
        t = v.type
        if isinstance(t, TensorType):
            parts.append("x".join(str(d) for d in type_dims(t)) or "scalar")
    return ", ".join(parts)


def collect(module: ModuleOp) -> Page:
    """The graph steps and the memory-plan SVG of ``module`` (after the tensor passes)."""
    from autofusion.analysis.memory_plot import render_memory_plot

    main = find_main(module)
    steps: list[Step] = []
    where: dict[SSAValue, int] = {}
    for arg in main.body.block.args:
        name = _arg_name(main, arg)
        where[arg] = len(steps)
        steps.append(Step(-1, "input", name, [], _shape([arg])))
    for index, op in enumerate(main.body.block.ops):
        if isinstance(op, func.ReturnOp | nn.ConstantOp):
            continue
        kernel = isinstance(op, KernelOp)
        step = Step(
            index,
            "kernel" if kernel else "op",
            op.pattern_name if kernel else op.name.removeprefix("nn."),
            list(op.origin_names) if kernel else list(origin_names(op)),
            _shape(op.results),
        )
        step.producers = sorted({where[v] for v in op.operands if v in where})
        for r in op.results:
            where[r] = len(steps)
        steps.append(step)
    _layout(steps)
    return Page(steps, render_memory_plot(module, "memory plan"))


def _arg_name(main: func.FuncOp, arg: BlockArgument) -> str:
    attrs = main.arg_attrs.data if main.arg_attrs is not None else ()
    if arg.index < len(attrs):
        name = attrs[arg.index].data.get(ONNX_NAME)
        if isinstance(name, StringAttr):
            return name.data
    return f"input {arg.index}"


def _layout(steps: list[Step]) -> None:
    """Layer = 1 + the deepest producer's layer; within a layer, order by the producers'
    mean position (one barycentre sweep keeps chains straight)."""
    for s in steps:
        s.layer = 1 + max((steps[p].layer for p in s.producers), default=-1)
    layers: dict[int, list[Step]] = {}
    for s in steps:
        layers.setdefault(s.layer, []).append(s)
    for layer in sorted(layers):
        row = layers[layer]
        if layer > 0:
            row.sort(key=lambda s: sum(steps[p].x for p in s.producers) / max(len(s.producers), 1))
        for i, s in enumerate(row):
            s.x = float(i)


def _colours(steps: Sequence[Step]) -> dict[str, str]:
    patterns = sorted({s.pattern for s in steps if s.kind == "kernel"})
    return {p: PALETTE[i % len(PALETTE)] for i, p in enumerate(patterns)}


def _clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def graph_svg(steps: Sequence[Step]) -> str:
    """The layered drawing of the fused graph (see the module docstring)."""
    if not steps:
        return "<p>(empty graph)</p>"
    colour = _colours(steps)
    lanes = 1 + int(max(s.x for s in steps))
    layers = 1 + max(s.layer for s in steps)
    notes_x = MARGIN + lanes * (BOX_W + GAP_X)
    width = notes_x + NOTES_W
    height = 2 * MARGIN + layers * BOX_H + (layers - 1) * GAP_Y

    def pos(s: Step) -> tuple[float, float]:
        return MARGIN + s.x * (BOX_W + GAP_X), MARGIN + s.layer * (BOX_H + GAP_Y)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}">']  # fmt: skip
    for s in steps:  # edges first, under the boxes
        x1, y1 = pos(s)
        for p in s.producers:
            x0, y0 = pos(steps[p])
            ax, ay, bx, by = x0 + BOX_W / 2, y0 + BOX_H, x1 + BOX_W / 2, y1
            mid = (ay + by) / 2 if s.layer - steps[p].layer == 1 else ay + GAP_Y / 2
            bend = 0.0 if s.layer - steps[p].layer == 1 else BOX_W / 2 + GAP_X / 3
            out.append(f'<path d="M{ax:.0f},{ay:.0f} C{ax + bend:.0f},{mid:.0f} '
                       f'{bx + bend:.0f},{by - GAP_Y / 2:.0f} {bx:.0f},{by:.0f}" '
                       'fill="none" stroke="#888" stroke-width="1"/>')  # fmt: skip
    for s in steps:
        x, y = pos(s)
        fill = INPUT if s.kind == "input" else colour.get(s.pattern, UNFUSED)
        if s.kind == "input":
            title, head = f"input {s.pattern} [{s.shape}]", f"input {s.pattern}"
        else:
            tag = "k" if s.kind == "kernel" else "op"
            head = f"{tag}{s.index} {s.pattern}"
            title = f"{head} -> [{s.shape}]\n" + "\n".join(s.origins)
        first = s.origins[0].lstrip("/") if s.origins else s.shape
        extra = f" (+{len(s.origins) - 1})" if len(s.origins) > 1 else ""
        room = 34 - len(extra)  # the end of an ONNX name says most: keep it
        first = first if len(first) <= room else "…" + first[-(room - 1) :]
        dash = ' stroke-dasharray="4,3"' if s.kind != "kernel" else ""
        out.append(
            f'<g><title>{esc(title)}</title><rect x="{x:.0f}" y="{y:.0f}" width="{BOX_W}" '
            f'height="{BOX_H}" rx="5" fill="{fill}" stroke="#444"{dash}/>'
            f'<text x="{x + 6:.0f}" y="{y + 16:.0f}" class="b">{esc(_clip(head, 34))}</text>'
            f'<text x="{x + 6:.0f}" y="{y + 32:.0f}">{esc(first + extra)}'
            "</text></g>"
        )
    by_layer: dict[int, list[Step]] = {}
    for s in steps:
        if s.kind != "input":
            by_layer.setdefault(s.layer, []).append(s)
    for layer, row in sorted(by_layer.items()):  # each layer's ONNX origins, beside it
        _, y = pos(row[0])
        text = "; ".join(
            f"{'k' if s.kind == 'kernel' else 'op'}{s.index}: {', '.join(s.origins) or '-'}"
            for s in sorted(row, key=lambda s: s.x)
        )
        out.append(f'<text x="{notes_x:.0f}" y="{y + BOX_H / 2 + 4:.0f}" class="n">'
                   f"{esc(_clip(text, NOTES_W // 7))}</text>")  # fmt: skip
    out.append("</svg>")
    return "\n".join(out)


def _bytes(n: object) -> str:
    if not isinstance(n, int | float):
        return "n/a"
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"


def _num(v: object, fmt: str) -> str:
    return format(v, fmt) if isinstance(v, int | float) else "-"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "") -> str:
    """An HTML table; cells are already-escaped HTML."""
    attr = f' class="{cls}"' if cls else ""
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table{attr}><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _origins_cell(origins: Sequence[str]) -> str:
    return "<br>".join(esc(o) for o in origins) or "-"


def _summary(report: Mapping[str, Any], extra: Sequence[tuple[str, str]]) -> str:
    items = [
        *extra,
        ("kernels before fusion", str(report.get("kernels_before", "n/a"))),
        ("kernels after fusion", str(report.get("kernels_after", "n/a"))),
        ("fused groups", str(len(report.get("groups", [])))),
        ("refusals", str(len(report.get("refusals", [])))),
        ("arena", _bytes(report.get("arena_bytes"))),
        ("naive (no reuse)", _bytes(report.get("naive_bytes"))),
        ("lower bound", _bytes(report.get("lower_bound_bytes"))),
        ("compile", f"{report.get('compile_seconds', 'n/a')} s"),
    ]
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>'
        for k, v in items
    ) + "</div>"  # fmt: skip


def _groups(report: Mapping[str, Any], steps: Sequence[Step]) -> str:
    groups = report.get("groups", [])
    if not groups:
        return "<p>No fused groups.</p>"
    kernels = [s for s in steps if s.kind == "kernel"]  # the same execution order
    colour = _colours(steps)
    rows = []
    for i, g in enumerate(groups):
        step = f"k{kernels[i].index}" if i < len(kernels) else ""
        swatch = f'<span class="sw" style="background:{colour.get(g["pattern"], UNFUSED)}"></span>'
        rows.append([esc(step), swatch + esc(g["pattern"]), _origins_cell(g.get("origins", [])),
                     esc(_num(g.get("flops"), ",")),
                     esc(_bytes(g.get("estimated_bytes_saved")))])  # fmt: skip
    return _table(["kernel", "pattern", "ONNX origins", "FLOPs", "traffic saved (est.)"], rows)


def _refusals(report: Mapping[str, Any]) -> str:
    refusals = report.get("refusals", [])
    if not refusals:
        return "<p>No refusals: every fusion the passes considered was made.</p>"
    rows = [[f'<code class="code">{esc(r["code"])}</code>', esc(r["reason"]),
             _origins_cell(r.get("nodes", []))] for r in refusals]  # fmt: skip
    return _table(["code", "reason", "ONNX nodes"], rows)


def _profile(profile: Sequence[Mapping[str, Any]], roofs: Mapping[str, Any]) -> str:
    head = (f"<p>Roofs of this machine ({esc(roofs['source'])}): sgemm "
            f"<b>{roofs['peak_gflops']:.1f} GFLOP/s</b> on {roofs['threads']} thread(s), copy "
            f"bandwidth <b>{roofs['dram_gbs']:.1f} GB/s</b>, ridge "
            f"{roofs['ridge_flops_per_byte']:.1f} FLOP/B. Bytes are the compulsory traffic "
            "(inputs read once, outputs written once), so GB/s is a lower bound; kernels whose "
            "data stay in cache can pass the DRAM roof.</p>")  # fmt: skip
    rows = []
    for p in profile:
        frac = p.get("roof_fraction")
        rows.append([esc(p["kernel"]), esc(_num(p["ms"], ".3f")),
                     esc(_num(100 * p["share"], ".1f") + "%" if p.get("share") is not None
                         else "n/a"),
                     esc(_num(p.get("gflops_per_s"), ".2f")), esc(_num(p.get("gb_per_s"), ".2f")),
                     esc(_num(p.get("flops_per_byte"), ".1f")), esc(p.get("bound") or "-"),
                     esc(_num(100 * frac, ".1f") + "%" if isinstance(frac, int | float) else "-"),
                     _origins_cell(p.get("origins", []))])  # fmt: skip
    table = _table(["kernel", "ms/run", "share", "GFLOP/s", "GB/s", "FLOP/B", "bound",
                    "of roof", "ONNX origins"], rows, "num")  # fmt: skip
    return head + roofline_svg(profile, roofs) + table


def roofline_svg(profile: Sequence[Mapping[str, Any]], roofs: Mapping[str, Any]) -> str:
    """Log-log roofline: the two roofs and one dot per profiled kernel."""
    pts: list[tuple[float, float, str]] = []
    for p in profile:
        ai, g = p.get("flops_per_byte"), p.get("gflops_per_s")
        if isinstance(ai, int | float) and isinstance(g, int | float) and ai > 0 and g > 0:
            pts.append((float(ai), float(g), str(p["kernel"])))
    peak, bw = float(roofs["peak_gflops"]), float(roofs["dram_gbs"])
    xs = [a for a, _, _ in pts] + [peak / bw]
    ys = [g for _, g, _ in pts] + [peak]
    x_lo, x_hi = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)) + 0.3)
    y_lo, y_hi = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)) + 0.1)
    w, h, left, bottom, top, right = 620, 320, 60, 36, 12, 16

    def px(ai: float) -> float:
        return left + (math.log10(ai) - x_lo) / (x_hi - x_lo) * (w - left - right)

    def py(g: float) -> float:
        return h - bottom - (math.log10(g) - y_lo) / (y_hi - y_lo) * (h - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="roofline" width="{w}" height="{h}" '
           f'viewBox="0 0 {w} {h}">',
           f'<rect x="{left}" y="{top}" width="{w - left - right}" height="{h - top - bottom}" '
           'fill="#fafafa" stroke="#999"/>']  # fmt: skip
    for e in range(x_lo, x_hi + 1):
        out.append(f'<text x="{px(10.0**e):.0f}" y="{h - bottom + 14}" text-anchor="middle">'
                   f"{10.0**e:g}</text>")  # fmt: skip
    for e in range(y_lo, y_hi + 1):
        out.append(f'<text x="{left - 4}" y="{py(10.0**e) + 4:.0f}" text-anchor="end">'
                   f"{10.0**e:g}</text>")  # fmt: skip
    out.append(f'<text x="{(left + w) / 2:.0f}" y="{h - 4}" text-anchor="middle">'
               "FLOPs per byte</text>")  # fmt: skip
    out.append(f'<text x="12" y="{h / 2:.0f}" transform="rotate(-90 12 {h / 2:.0f})" '
               'text-anchor="middle">GFLOP/s</text>')  # fmt: skip
    lo_ai = 10.0**x_lo
    ridge = peak / bw
    y_start = max(lo_ai * bw, 10.0**y_lo)
    x_start = y_start / bw
    out.append(f'<polyline fill="none" stroke="#c0392b" stroke-width="2" points="'
               f"{px(x_start):.1f},{py(y_start):.1f} {px(ridge):.1f},{py(peak):.1f} "
               f'{px(10.0**x_hi):.1f},{py(peak):.1f}"/>')  # fmt: skip
    for ai, g, name in pts:
        out.append(f'<circle cx="{px(ai):.1f}" cy="{py(g):.1f}" r="4" fill="#2c7fb8" '
                   f'fill-opacity="0.75"><title>{esc(name)}: {g:.2f} GFLOP/s at {ai:.1f} '
                   "FLOP/B</title></circle>")  # fmt: skip
    out.append("</svg>")
    return "\n".join(out)


CSS = """
body { font-family: DejaVu Sans, Arial, sans-serif; margin: 20px; color: #222; }
h1 { font-size: 22px; margin: 0 0 4px 0; } h2 { font-size: 17px; margin: 26px 0 8px 0; }
.sub { color: #555; font-size: 13px; margin-bottom: 12px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; }
.card { border: 1px solid #ccc; border-radius: 6px; padding: 8px 14px; min-width: 120px; }
.card .v { font-size: 19px; font-weight: bold; } .card .k { font-size: 12px; color: #555; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } table.num td { white-space: nowrap; }
.sw { display: inline-block; width: 10px; height: 10px; border: 1px solid #444;
      margin-right: 5px; }
.code { background: #fde2e2; padding: 0 4px; border-radius: 3px; }
.scroll { overflow: auto; max-height: 900px; border: 1px solid #ddd; }
svg.graph text { font-size: 11px; font-family: DejaVu Sans Mono, monospace; }
svg.graph text.b { font-weight: bold; } svg.graph text.n { fill: #333; }
svg.roofline text { font-size: 11px; }
"""


def render_html(report: Mapping[str, Any], page: Page, title: str,
                profile: Sequence[Mapping[str, Any]] | None = None,
                roofs: Mapping[str, Any] | None = None,
                extra: Sequence[tuple[str, str]] = ()) -> str:  # fmt: skip
    """The whole page as text. ``profile`` rows and ``roofs`` (``autofusion-bench
    --profile``) add the profile section; ``extra`` (label, value) pairs lead the summary."""
    sub = (f"target {report.get('target', '?')} · fusion "
           f"{'on' if report.get('fusion', True) else 'off'} · "
           f"{len(page.steps)} steps drawn (weights omitted)")  # fmt: skip
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>autofusion report: {esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>autofusion report: {esc(title)}</h1>",
        f'<div class="sub">{esc(sub)}</div>',
        '<section id="summary">' + _summary(report, extra) + "</section>",
    ]
    if profile is not None and roofs is not None:
        parts += ['<section id="profile"><h2>Per-kernel profile</h2>',
                  _profile(profile, roofs), "</section>"]  # fmt: skip
    parts += [
        '<section id="graph"><h2>Graph after fusion</h2>',
        "<p>One box per kernel call, top to bottom in dependence order; fused kernels coloured "
        "by pattern, unfused ops grey and dashed; each row's ONNX origins on its right (hover a "
        "box for its own).</p>",
        f'<div class="scroll">{graph_svg(page.steps)}</div></section>',
        '<section id="groups"><h2>Fused groups</h2>' + _groups(report, page.steps) + "</section>",
        '<section id="refusals"><h2>Refusals</h2>' + _refusals(report) + "</section>",
        '<section id="memory"><h2>Memory plan</h2>',
        f"<p>Arena {esc(_bytes(report.get('arena_bytes')))}, naive "
        f"{esc(_bytes(report.get('naive_bytes')))}, lower bound "
        f"{esc(_bytes(report.get('lower_bound_bytes')))}.</p>",
        f'<div class="scroll">{page.memory_svg}</div></section>',
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def write_html(flag: str, path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically: a hidden file beside it, then a rename."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(p)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise AutofusionError(f"{flag} {p}: cannot write: {e.strerror or e}") from None
