"""The fusion report: what was fused, what was refused and why, read back from the IR.

``build_report(module)`` needs nothing but the module: kernels are ``fusion.kernel`` ops
(pattern, origins), refusals the module attribute ``fusion.refusals``, memory figures the
``memory.*`` attributes of ``@main`` (docs/internals.md). ``summarize_module`` renders it
for people (``autofusion-opt --fusion-summary``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Operation

from autofusion import symbolic
from autofusion.dialects.attrs import (
    BLOCKED_LAYOUT,
    FUSION_DECIDED_BY,
    FUSION_POLICY,
    MEMORY_CONCAT_INPLACE,
    MEMORY_CONCAT_PLAN,
    MEMORY_RESIDUAL_INPLACE,
    PRECISION_GROUPS,
    origin_names,
)
from autofusion.dialects.fusion import FAST_MATH_ATTR, KernelOp
from autofusion.policy.reasons import read_refusals

GROUPS_ATTR = PRECISION_GROUPS  # written by validate-precision

_MEMORY_FIELDS = ("arena_bytes", "naive_bytes", "lower_bound_bytes")


def _funcs(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp)]


def _is_compute(op: Operation) -> bool:
    return op.name.startswith("nn.") and op.name != "nn.constant"


def count_kernels(module: ModuleOp) -> int:
    """Top-level units that become one kernel function each: fused kernels plus unfused nn
    ops, but not the views and in-place concats the lowering makes no call of
    (:func:`~autofusion.analysis.memory_plan.makes_no_kernel`)."""
    from autofusion.analysis.memory_plan import makes_no_kernel

    n = 0
    for f in _funcs(module):
        for op in f.body.block.ops:
            if isinstance(op, KernelOp) or (_is_compute(op) and not makes_no_kernel(op)):
                n += 1
    return n


def count_unfused_ops(module: ModuleOp) -> int:
    """nn compute ops counting those inside kernels, views left out: the kernel count
    without fusion."""
    from autofusion.analysis.memory_plan import makes_no_kernel

    n = 0
    for f in _funcs(module):
        for op in f.body.block.ops:
            inner = op.body.block.ops if isinstance(op, KernelOp) else (op,)
            n += sum(1 for o in inner if _is_compute(o) and not makes_no_kernel(o))
    return n


def _plain(attr: Attribute) -> Any:
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, ArrayAttr):
        return [_plain(a) for a in attr.data]
    return str(attr)


def decided_by(kernel: KernelOp) -> str:
    """The layer that decided a kernel (``fusion.decided_by``); a kernel that no fusion
    pass of this compile formed (written in the input IR) reports ``structure``."""
    attr = kernel.attributes.get(FUSION_DECIDED_BY)
    return attr.data if isinstance(attr, StringAttr) else "structure"


def build_report(module: ModuleOp, kernels_before: int | None = None) -> dict[str, Any]:
    """A JSON-serialisable report: kernels_before/after, groups, refusals, memory fields.

    ``kernels_before`` defaults to the number of nn compute ops (inside kernels included),
    i.e. the kernel count of the same module without fusion. Groups are listed in
    execution order with ``pattern``, ``origins``, ``estimated_bytes_saved`` (cost model),
    ``ops`` and ``flops``. For a symbolic module (docs/dynamic.md) the byte and FLOP
    figures are at the symbols' upper bounds, and ``symbols`` lists their ranges
    (``{"seq": {"range": [1, 512]}}``).
    """
    from autofusion.dialects.base import symbol_ranges

    ranges = symbol_ranges(module)
    with symbolic.scope(ranges):  # symbolic sizes count at their upper bounds
        report = _build_report(module, kernels_before)
    if ranges:
        # the shape of ``m.report["symbols"]`` of a compile (frontend/symbols.py), ranges only
        report["symbols"] = {k: {"range": list(v)} for k, v in ranges.items()}
    return report


def _build_report(module: ModuleOp, kernels_before: int | None) -> dict[str, Any]:
    from autofusion.analysis.cost import kernel_bytes_saved, op_flops

    groups: list[dict[str, Any]] = []
    for f in _funcs(module):
        for op in f.body.block.ops:
            if isinstance(op, KernelOp):
                groups.append(
                    {
                        "pattern": op.pattern_name,
                        "origins": op.origin_names,
                        "estimated_bytes_saved": kernel_bytes_saved(op),
                        "ops": sum(1 for o in op.body.block.ops if _is_compute(o)),
                        "flops": op_flops(op),
                        "decided_by": decided_by(op),
                        **({"fast_math": True} if FAST_MATH_ATTR in op.attributes else {}),
                    }
                )
    report: dict[str, Any] = {
        "kernels_before": count_unfused_ops(module)
        if kernels_before is None
        else int(kernels_before),
        "kernels_after": count_kernels(module),
        "groups": groups,
        "refusals": [r.to_dict() for r in read_refusals(module)],
        "estimated_bytes_saved": sum(g["estimated_bytes_saved"] for g in groups),
    }
    pol = module.attributes.get(FUSION_POLICY)
    if isinstance(pol, DictionaryAttr):
        report["policy"] = {k: _plain(v) for k, v in pol.data.items()}
    if GROUPS_ATTR in module.attributes:  # validate-precision ran: every group's delta
        report["precision"] = {"groups": record_rows(module)}
    mains = [f for f in _funcs(module) if f.sym_name.data == "main"] or _funcs(module)[:1]
    if mains:
        for key in _MEMORY_FIELDS:
            attr = mains[0].attributes.get(f"memory.{key}")
            if isinstance(attr, IntegerAttr):
                report[key] = int(attr.value.data)
        if "arena_bytes" in report:
            report["concat_copies_removed"] = concat_copies_removed(mains[0])
            choice = mains[0].attributes.get(MEMORY_CONCAT_PLAN)
            if isinstance(choice, StringAttr):  # plan-buffers chose between two plans
                report["concat_plan"] = choice.data
            report["residual_inplace"] = sum(  # results written over an operand
                sum(int(v) >= 0 for v in attr.get_values())
                for op in mains[0].body.block.ops
                if isinstance(attr := op.attributes.get(MEMORY_RESIDUAL_INPLACE), DenseArrayBase)
            )
    return report


def concat_copies_removed(main: func.FuncOp) -> int:
    """Concat operands the memory plan writes in place (``memory.concat_inplace``): each is
    one copy the generated code no longer makes."""
    n = 0
    for op in main.body.block.ops:
        attr = op.attributes.get(MEMORY_CONCAT_INPLACE)
        if isinstance(attr, DenseArrayBase):
            n += sum(1 for v in attr.get_values() if v)
    return n


def summarize_report(report: dict[str, Any]) -> str:
    lines = [
        f"fusion: {report['kernels_before']} ops -> {report['kernels_after']} kernels, "
        f"{len(report['groups'])} fused groups, ~{report['estimated_bytes_saved']} bytes of "
        f"traffic saved (estimate)"
    ]
    if report.get("symbols"):
        syms = sorted(report["symbols"].items())
        bounds = ", ".join(f"{k} <= {v['range'][1]}" for k, v in syms)
        lines[0] += f" at the symbols' upper bounds ({bounds})"
    by_pattern: dict[str, int] = {}
    for g in report["groups"]:
        by_pattern[g["pattern"]] = by_pattern.get(g["pattern"], 0) + 1
    for pat, n in sorted(by_pattern.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"  {n:4d} x {pat}")
    layers: dict[str, int] = {}
    for g in report["groups"]:
        layers[g["decided_by"]] = layers.get(g["decided_by"], 0) + 1
    if layers:
        lines.append(
            "groups decided by: " + ", ".join(f"{k}: {n}" for k, n in sorted(layers.items()))
        )
    if report["refusals"]:
        counts: dict[str, int] = {}
        for r in report["refusals"]:
            counts[r["code"]] = counts.get(r["code"], 0) + 1
        lines.append(
            f"refusals: {len(report['refusals'])} ("
            + ", ".join(f"{c}: {n}" for c, n in sorted(counts.items()))
            + ")"
        )
        for r in report["refusals"][:20]:
            nodes = list(r["nodes"])
            shown = ", ".join(nodes[:3]) + (f", ... ({len(nodes)} nodes)" if len(nodes) > 3 else "")
            lines.append(f"  [{r['code']}, {r['decided_by']}] {shown}: {r['reason']}")
        if len(report["refusals"]) > 20:
            lines.append(f"  ... {len(report['refusals']) - 20} more")
    else:
        lines.append("refusals: none")
    for key in _MEMORY_FIELDS:
        if key in report:
            lines.append(f"{key}: {report[key]}")
    return "\n".join(lines)


def summarize_module(module: ModuleOp) -> str:
    """Readable summary of :func:`build_report` (used by ``autofusion-opt --fusion-summary``)."""
    return summarize_report(build_report(module))


def record_rows(module: ModuleOp) -> list[dict[str, object]]:
    """``precision.groups`` as JSON-ready rows (for the report)."""
    attr = module.attributes.get(GROUPS_ATTR)
    rows: list[dict[str, object]] = []
    if not isinstance(attr, ArrayAttr):
        return rows
    for entry in attr.data:
        if not isinstance(entry, DictionaryAttr):
            continue
        d = entry.data
        row: dict[str, object] = {}
        for key, value in d.items():
            if isinstance(value, StringAttr):
                row[key] = value.data
            elif isinstance(value, FloatAttr):
                row[key] = float(value.value.data)
            elif isinstance(value, IntegerAttr):  # BoolAttr is IntegerAttr[i1]
                row[key] = bool(value.value.data)
            elif isinstance(value, ArrayAttr):
                row[key] = [s.data for s in value.data if isinstance(s, StringAttr)]
        rows.append(row)
    return rows


def layout_summary(module: ModuleOp) -> dict[str, int] | None:
    """``assign-layout``'s numbers for the model's function (``layout.summary``: blocked
    convs, boundary reorders left, reorder pairs cancelled), None if it blocked nothing."""
    from autofusion.dialects.attrs import LAYOUT_SUMMARY

    for fn in _funcs(module):
        a = fn.attributes.get(LAYOUT_SUMMARY)
        if isinstance(a, DictionaryAttr):
            return {k: int(v.value.data) for k, v in a.data.items() if isinstance(v, IntegerAttr)}
    return None


def attention_algo_rows(module: ModuleOp, avx512: bool) -> list[dict[str, object]]:
    """One row per attention library call of a lowered C module, in module order: the
    kernel function, its ONNX nodes, the path ``afrt_attention_f32`` takes
    (``clib.attention_algo``: ``small`` or ``streamed``; ``avx512``: the build has AVX-512)
    and the shape it was chosen from."""
    from autofusion.dialects import clib

    rows: list[dict[str, object]] = []
    for fn in _funcs(module):
        names = origin_names(fn)
        for op in fn.walk():
            if isinstance(op, clib.AttentionOp):
                values = op.param_values()
                f = {k: "?" if v == clib.DYNAMIC else v
                     for k, v in zip(clib.ATTN_FIELDS, values, strict=True)}  # fmt: skip
                shape = f"batch {f['batch']} S {f['S']} T {f['T']} D {f['D']} E {f['E']}"
                algo = clib.attention_algo(values, op.mask is not None, avx512)
                rows.append({"kernel": fn.sym_name.data, "origins": names,
                             "attention_algo": algo, "shape": shape})  # fmt: skip
    return rows


def _conv_shape(values: Sequence[int]) -> str:
    from autofusion.dialects import clib

    # a run-time size (clib.DYNAMIC) shows as "?"
    f = {k: "?" if v == clib.DYNAMIC else v
         for k, v in zip(clib.CONV_FIELDS, values, strict=True)}  # fmt: skip
    return (f"C{f['C']} K{f['K']} {f['H']}x{f['W']} -> {f['OH']}x{f['OW']} "
            f"k{f['R']}x{f['S']} s{f['stride_h']} g{f['group']}")  # fmt: skip


def _conv3d_shape(values: Sequence[int]) -> str:
    from autofusion.dialects import clib

    f = {k: "?" if v == clib.DYNAMIC else v
         for k, v in zip(clib.CONV3D_FIELDS, values, strict=True)}  # fmt: skip
    size = f"{f['D']}x{f['H']}x{f['W']} -> {f['OD']}x{f['OH']}x{f['OW']}"
    kernel = f"k{f['T']}x{f['R']}x{f['S']} s{f['stride_d']}x{f['stride_h']}"
    return f"C{f['C']} K{f['K']} {size} {kernel} g{f['group']}"


def _pool_shape(values: Sequence[int]) -> str:
    from autofusion.dialects import clib

    f = dict(zip(clib.POOL_FIELDS, values, strict=True))
    return (f"max k{f['R']}x{f['S']} s{f['stride_h']} d{f['dil_h']} "
            f"p{f['pad_top']} -> {f['OH']}x{f['OW']}")  # fmt: skip


def conv_algo_rows(module: ModuleOp, avx512: bool = False) -> list[dict[str, object]]:
    """One row per convolution library call of a lowered C module, in module order: the
    kernel function, its ONNX nodes, the algorithm chosen at lowering (``clib.conv_algo``:
    one of ``clib.CONV_ALGOS`` or ``lp_gemm``), the shape it was chosen from and the layouts
    of its input and output (``assign-layout``: ``nchw->nchw16c`` etc.). A conv chain
    (``clib.dwpw``) is one row: ``dwpw_blocked`` or ``dwpw`` (``clib.dwpw_algo``; ``avx512``:
    the build has AVX-512), the depthwise shape then ``+ 1x1 -> K``; with an expand conv in
    front ``expand_dwpw_blocked`` or ``expand_dwpw`` (``clib.edwpw_algo``), the shape
    starting ``1x1 C -> K +``. A stem with its max pool (``fuse-conv-pool``) is one row with
    ``pool``: the pool's window, stride, dilation, pad and output size. Two added 1x1 convs
    as one GEMM (``clib.conv_pair``, ``fuse-conv-pair``) are one row, ``gemm_1x1_pair``, the
    joined conv's shape (both inputs' channels) then ``+ x2`` and the second input's conv.
    A 1x1 -> 1x1 chain (``clib.pw_chain``, ``fuse-pw-chain``) is one row, ``gemm_1x1_chain``,
    the first conv's shape then ``+ 1x1 -> K`` and the second conv's output channels.
    A 3-d conv (``clib.conv3d``) is ``im2col_gemm_3d`` (``clib.CONV3D_ALGO``), its shape
    ``C K DxHxW -> ODxOHxOW kTxRxS``."""
    from autofusion.dialects import clib

    rows: list[dict[str, object]] = []
    for fn in _funcs(module):
        names = origin_names(fn)
        for op in fn.walk():
            if isinstance(op, clib.Conv2DOp):
                rows.append({"kernel": fn.sym_name.data, "origins": names,
                             "conv_algo": op.algo.data, "shape": _conv_shape(op.param_values()),
                             "layout": "->".join(op.layouts())})  # fmt: skip
                if (q := op.pool_values()) is not None:  # fuse-conv-pool: the pool in the call
                    rows[-1]["pool"] = _pool_shape(q)
            elif isinstance(op, clib.Conv3DOp):
                rows.append({"kernel": fn.sym_name.data, "origins": names,
                             "conv_algo": clib.CONV3D_ALGO,
                             "shape": _conv3d_shape(op.param_values()),
                             "layout": "ncdhw->ncdhw"})  # fmt: skip
            elif isinstance(op, clib.ConvPairOp):
                rows.append({"kernel": fn.sym_name.data, "origins": names,
                             "conv_algo": "gemm_1x1_pair",
                             "shape": f"{_conv_shape(op.param_values())} + x2 "
                                      f"{_conv_shape(op.params2_values())}",
                             "layout": "nchw->nchw"})  # fmt: skip
            elif isinstance(op, clib.PwChainOp):
                k2 = op.params2_values()[clib.CONV_FIELDS.index("K")]
                rows.append({"kernel": fn.sym_name.data, "origins": names,
                             "conv_algo": "gemm_1x1_chain",
                             "shape": f"{_conv_shape(op.param_values())} + 1x1 -> K{k2}",
                             "layout": "nchw->nchw"})  # fmt: skip
            elif isinstance(op, clib.DwPwOp):
                dw, pw = op.params_pair()
                k = pw[clib.CONV_FIELDS.index("K")]
                x_lay = BLOCKED_LAYOUT if op.x_blocked() else "nchw"
                algo, head = clib.dwpw_algo(dw, pw, avx512), ""
                if (ex := op.ex_values()) is not None:
                    algo = clib.edwpw_algo(ex, dw, pw, avx512)
                    e = dict(zip(clib.CONV_FIELDS, ex, strict=True))
                    head = f"1x1 C{e['C']} -> K{e['K']} + "
                rows.append({"kernel": fn.sym_name.data, "origins": names, "conv_algo": algo,
                             "shape": f"{head}{_conv_shape(op.param_values())} + 1x1 -> K{k}",
                             "layout": f"{x_lay}->nchw"})  # fmt: skip
    return rows


def sibling_conv_rows(module: ModuleOp) -> list[dict[str, object]]:
    """One row per conv ``merge-sibling-convs`` joined, in module order: its ONNX nodes, the
    output channels of each piece and ``decided_by``."""
    from autofusion.dialects import nn
    from autofusion.dialects.attrs import SIBLING_DECIDED_BY, SIBLING_PIECES
    from autofusion.dialects.base import dense_ints
    from autofusion.policy.reasons import origins_of

    rows: list[dict[str, object]] = []
    for op in module.walk():
        pieces = op.attributes.get(SIBLING_PIECES)
        if isinstance(op, nn.ConvOp) and isinstance(pieces, DenseArrayBase):
            layer = op.attributes.get(SIBLING_DECIDED_BY)
            rows.append({
                "nodes": origins_of(op),
                "pieces": dense_ints(pieces),
                "decided_by": layer.data if isinstance(layer, StringAttr) else "structure",
            })  # fmt: skip
    return rows
