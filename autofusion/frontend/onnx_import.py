"""ONNX -> ``nn`` IR: the importer's entry points and driver.

``import_onnx(model)`` returns a ``builtin.module`` holding one ``func.func @main`` as fixed
in docs/internals.md: arguments are the graph inputs that have no initializer, results the
graph outputs (both with ``onnx.name``), weights and folded values are bytes-backed
``nn.constant`` ops, and every op carries ``onnx.origins``.

The driver walks the nodes in topological order. A node whose inputs are all import-time
constants is evaluated (numpy rules in the converter modules, ``onnx.reference`` as the
fallback); ``Shape``/``Size`` of a statically shaped value are constants too, so exporter
shape subgraphs fold away and Reshape/Expand targets become known. Every other node goes
through its converter, which computes static result shapes itself. ONNX shape inference
(with data propagation) runs on a weight-free copy of the graph and is used to cross-check
every computed shape.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import IO

import numpy as np
import onnx
from onnx import helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, IntAttr, ModuleOp
from xdsl.ir import Attribute
from xdsl.utils.exceptions import DiagnosticException

from autofusion import symbolic
from autofusion.analysis.static_shapes import type_problem
from autofusion.dialects import dtypes
from autofusion.dialects.attrs import SYMBOLS, name_dict
from autofusion.errors import AutofusionError
from autofusion.frontend import loader, symfold
from autofusion.frontend import symbols as symbols_mod
from autofusion.frontend.context import (
    FOLD_LIMIT,
    Const,
    Emitter,
    NodeCtx,
    Value,
    kind_text,
    value_elem,
    value_shape,
    virtual_nbytes,
)
from autofusion.frontend.convert_shape import sparse_to_dense, tensor_to_const
from autofusion.frontend.converters import tables
from autofusion.frontend.progress import Progress
from autofusion.frontend.registry import SELF_FOLDING, node_version_problem

# Control flow (subgraphs may read outer values) and random ops are never folded.
_NEVER_FOLD = frozenset(
    {
        "If",
        "Loop",
        "Scan",
        "RandomNormal",
        "RandomUniform",
        "RandomNormalLike",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
    }
)
# Constants at most this large are kept in the weight-free copy used for shape inference.
_SMALL = 4096


InputShapes = Mapping[str, Sequence[int]]
SymbolRanges = Mapping[str, tuple[int, int]]


def import_onnx(
    model: str | os.PathLike[str] | onnx.ModelProto,
    *,
    progress: bool | None = None,
    input_shapes: InputShapes | None = None,
    symbols: SymbolRanges | None = None,
) -> ModuleOp:
    """Import an ONNX model (a path or a ``ModelProto``) into ``nn`` IR.

    ``progress``: ``True`` always reports progress on stderr, ``False`` never, ``None``
    (default) reports for big models (> 100 MB of weights or > 500 nodes) when stderr is a
    terminal or ``AUTOFUSION_PROGRESS=1``.
    ``input_shapes``: static shapes for graph inputs by name, fixing dynamic dimensions
    (e.g. ``{"input_ids": [1, 128]}``); given dimensions must agree with static ones.
    ``symbols``: import dynamic dims no pin fixes as **symbolic** sizes (docs/dynamic.md,
    "Symbolic import"), with these ranges (symbol -> ``(LO, HI)``; others get the default
    range). ``None`` (default): every dynamic dim must be pinned.
    """
    if isinstance(model, onnx.ModelProto):
        loader.check_structure(model, "<model>")
        loaded = loader.Loaded(model, [])
        return _Importer(
            loaded,
            "<model>",
            owned=False,
            progress=progress,
            input_shapes=input_shapes,
            symbols=symbols,
        ).run()
    Progress.reading(progress, model)
    loaded, path = loader.load_path(model)
    return _Importer(
        loaded, path, owned=True, progress=progress, input_shapes=input_shapes, symbols=symbols
    ).run()


def import_onnx_bytes(
    data: bytes,
    filename: str,
    ctx: object = None,
    *,
    progress: bool | None = None,
    input_shapes: InputShapes | None = None,
) -> ModuleOp:
    """Import a serialised model; external data is resolved beside ``filename``.

    ``ctx`` (an xDSL ``Context``) is accepted for the frontend hook of ``autofusion-opt``;
    the importer builds ops directly and does not need it.
    """
    del ctx
    loaded = loader.load_bytes(data, filename)
    return _Importer(
        loaded, filename, owned=True, progress=progress, input_shapes=input_shapes
    ).run()


def _attr_value(a: onnx.AttributeProto, op_type: str) -> object:
    if a.type == onnx.AttributeProto.TENSOR:
        if op_type == "Constant":
            return None  # read by the Constant converter without copying
        return numpy_helper.to_array(a.t)
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return [s.decode("utf-8", "replace") for s in v]
    return v


def import_onnx_stream(
    stream: IO[bytes],
    filename: str,
    *,
    progress: bool | None = None,
    input_shapes: InputShapes | None = None,
    symbols: SymbolRanges | None = None,
) -> ModuleOp:
    """Import from an open binary file (``autofusion-opt``'s frontend hook); a big regular
    file is memory-mapped so its weights are copied once, straight into the constants.
    ``symbols`` as for :func:`import_onnx`."""
    loaded = loader.load_stream(stream, filename)
    return _Importer(
        loaded,
        filename,
        owned=True,
        progress=progress,
        input_shapes=input_shapes,
        symbols=symbols,
    ).run()


def import_loaded(
    loaded: loader.Loaded,
    filename: str,
    *,
    owned: bool,
    progress: bool | None = None,
    input_shapes: InputShapes | None = None,
    symbols: SymbolRanges | None = None,
) -> ModuleOp:
    """Import a model already read by :mod:`autofusion.frontend.loader` (``autofusion.
    compile`` reads once, hashes that for its cache key, then imports it). ``owned``: the
    proto is the caller's to spend, so weights are dropped from it as they are copied out.
    ``symbols``: as for :func:`import_onnx` (a symbolic import)."""
    return _Importer(
        loaded,
        filename,
        owned=owned,
        progress=progress,
        input_shapes=input_shapes,
        symbols=symbols,
    ).run()


class _Importer:
    def __init__(
        self,
        loaded: loader.Loaded,
        filename: str,
        *,
        owned: bool,
        progress: bool | None,
        input_shapes: InputShapes | None = None,
        symbols: SymbolRanges | None = None,
    ):
        self.symbols = None if symbols is None else dict(symbols)
        self.model = loaded.model
        self.raws = loaded.raws
        self.input_shapes = dict(input_shapes or {})
        self.filename = filename
        self.owned = owned
        self.progress_opt = progress
        self.converters, self.folders = tables()

    # ---- driver -----------------------------------------------------------------------
    def run(self) -> ModuleOp:
        graph = self.model.graph
        fn = self.filename
        self.opset = loader.default_opset(self.model, fn)
        loader.check_names(graph, fn)
        init_names = {t.name for t in graph.initializer}
        init_names.update(sp.values.name for sp in graph.sparse_initializer)
        args = [vi for vi in graph.input if vi.name not in init_names]
        known = init_names | {vi.name for vi in graph.input}
        order = loader.topo_sort(graph, known, fn)
        self._check_supported(order, init_names)

        weight_bytes = sum(_tensor_nbytes(t) for t in graph.initializer)
        progress = Progress.create(self.progress_opt, len(order.nodes), weight_bytes)
        inferred = self._infer_shapes()

        unknown = sorted(set(self.input_shapes) - {vi.name for vi in args})
        if unknown:
            raise AutofusionError(
                f"{fn}: input_shapes names {', '.join(unknown)}, which are not graph inputs "
                f"(inputs: {', '.join(vi.name for vi in args)})"
            )
        pins = loader.bind_symbols(args, self.input_shapes, fn)
        sym_dims = self._symbolic_inputs(pins)
        sym_ranges = self._used_ranges(sym_dims)
        arg_types: list[Attribute] = []
        for vi in args:
            if vi.name in sym_dims:
                dims = sym_dims[vi.name]
                elem = vi.type.tensor_type.elem_type
                loader.check_elem(elem, fn, f"graph input '{vi.name}'")
            else:
                dims, elem = loader.static_input_shape(vi, fn, pins.get(vi.name))
            arg_types.append(dtypes.tensor_type(dtypes.from_onnx_elem(elem), dims))
            problem = type_problem(arg_types[-1], symbolic=True)
            if problem:
                raise AutofusionError(
                    f"{fn}: input '{vi.name}' has type {arg_types[-1]}: {problem}"
                )
        out_names = [o.name for o in graph.output]
        main = func.FuncOp("main", (arg_types, []))
        block = main.body.block
        emitter = Emitter(block)
        env: dict[str, Value] = {}
        for vi, barg in zip(args, block.args):
            env[vi.name] = barg
        for i, t in enumerate(graph.initializer):
            raw = self.raws[i] if i < len(self.raws) else None
            c = tensor_to_const(t, t.name, fn, raw)
            env[t.name] = c
            # The Const owns a copy of the bytes; drop the protobuf's (only in our own model).
            if self.owned and c.raw is not None and len(c.raw) > _SMALL:
                t.ClearField("raw_data")
        for sp in graph.sparse_initializer:
            env[sp.values.name] = Const(sparse_to_dense(sp, sp.values.name, fn), sp.values.name)
        progress.loaded()

        used = {name for n in order.nodes for name in n.input if name}
        used.update(out_names)
        with symbolic.scope(sym_ranges):
            for i, (node, label) in enumerate(zip(order.nodes, order.labels)):
                self._convert_node(node, label, env, emitter, used, inferred)
                progress.step(i + 1)

        results = [
            emitter.materialise(v) if isinstance(v, Const) else v
            for v in (env[n] for n in out_names)
        ]
        block.add_op(func.ReturnOp(*results))
        main.function_type = FunctionType.from_lists(arg_types, [r.type for r in results])
        main.arg_attrs = ArrayAttr([name_dict(vi.name) for vi in args])
        main.res_attrs = ArrayAttr([name_dict(n) for n in out_names])
        module = ModuleOp([main])
        if sym_dims:
            module.attributes[SYMBOLS] = DictionaryAttr(
                {k: ArrayAttr([IntAttr(lo), IntAttr(hi)]) for k, (lo, hi) in sym_ranges.items()}
            )
        try:
            with symbolic.scope(sym_ranges):
                module.verify()
        except DiagnosticException as e:
            raise AutofusionError(f"{fn}: imported IR does not verify: {e}") from None
        progress.done()
        return module

    def _symbolic_inputs(self, pins: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
        """In symbolic mode, the dims of each input some dynamic dim of which no pin fixes:
        static dims, pinned sizes, and a ``symbolic.Size`` per free symbol."""
        if self.symbols is None:
            return {}
        out: dict[str, list[int]] = {}
        for sig in symbols_mod.signature(self.model, self.filename):
            if sig.name in pins:
                continue
            if all(isinstance(d, int) for d in sig.dims):
                continue
            dims: list[int] = []
            for d in sig.dims:
                if isinstance(d, int):
                    dims.append(d)
                else:
                    lo, hi = self.symbols.get(d, symbols_mod.DEFAULT_RANGE)
                    dims.append(symbolic.symbol(d, lo, hi))
            out[sig.name] = dims
        return out

    def _used_ranges(self, sym_dims: Mapping[str, Sequence[int]]) -> dict[str, tuple[int, int]]:
        declared = self.symbols or {}
        out: dict[str, tuple[int, int]] = {}
        for dims in sym_dims.values():
            for name in symbolic.symbols_of(dims):
                out[name] = declared.get(name, symbols_mod.DEFAULT_RANGE)
        return out

    def _check_supported(self, order: loader.Ordered, init_names: set[str]) -> None:
        """List every unsupported op at once (constant-foldable nodes are fine)."""
        const = set(init_names)
        bad: list[tuple[str, str]] = []
        for node, label in zip(order.nodes, order.labels):
            ins = [x for x in node.input if x]
            all_const = all(x in const for x in ins)
            if node.domain not in loader.DEFAULT_DOMAINS:
                bad.append((f"{node.domain}.{node.op_type}", label))
                continue
            if node.op_type in ("Shape", "Size", "Constant") or (
                all_const and node.op_type not in _NEVER_FOLD
            ):
                const.update(o for o in node.output if o)
            elif node.op_type not in self.converters:
                bad.append((node.op_type, label))
        if bad:
            raise AutofusionError(loader.unsupported_message(self.filename, bad))

    def _convert_node(
        self,
        node: onnx.NodeProto,
        label: str,
        env: dict[str, Value],
        emitter: Emitter,
        used: set[str],
        inferred: dict[str, tuple[tuple[int, ...], int]],
    ) -> None:
        inputs: list[Value | None] = [env[name] if name else None for name in node.input]
        ctx = NodeCtx(
            node=node,
            origin=label,
            opset=self.opset,
            inputs=inputs,
            emitter=emitter,
            filename=self.filename,
            n_outputs_used=[o in used for o in node.output],
            attr_kinds={a.name: int(a.type) for a in node.attribute},
        )
        for a in node.attribute:
            if a.name in ctx.attrs:
                raise ctx.error(f"attribute '{a.name}' is given twice")
            try:
                ctx.attrs[a.name] = _attr_value(a, node.op_type)
            except ValueError:  # onnx.helper: an UNDEFINED or unknown kind
                raise ctx.error(
                    f"attribute '{a.name}' has no usable value ({kind_text(a.type)})"
                ) from None
        op_type = node.op_type
        if node.domain in loader.DEFAULT_DOMAINS:
            problem = node_version_problem(ctx, self.opset)
            if problem is not None:
                raise ctx.error(problem)
        outs: Sequence[Value | None]
        try:
            if ctx.all_const() and op_type not in SELF_FOLDING and symfold.has_symbolic(ctx):
                outs = [ctx.const(a) for a in symfold.fold(ctx)]
            elif (
                ctx.all_const()
                and op_type not in SELF_FOLDING
                and not self._fold_too_big(ctx, inferred)
            ):
                if op_type in self.folders:
                    outs = [ctx.const(a) for a in self.folders[op_type](ctx)]
                else:
                    outs = [ctx.const(a) for a in self._reference_fold(ctx)]
            else:
                outs = self.converters[op_type](ctx)
        except AutofusionError:
            raise
        except (ValueError, IndexError, TypeError, KeyError) as e:
            raise ctx.error(f"cannot convert: {e}") from None
        if len(outs) < len([o for o in node.output if o]):
            raise ctx.error(f"produced {len(outs)} results for {len(node.output)} outputs")
        for name, v in zip(node.output, outs):
            if not name:
                continue
            if v is None:
                raise ctx.error(f"output '{name}' is not supported")
            if isinstance(v, Const) and v.array.dtype not in _NP_OK and not v.is_symbolic:
                raise ctx.error(f"output '{name}' has unsupported element type {v.array.dtype}")
            problem = None if isinstance(v, Const) else type_problem(v.type, symbolic=True)
            if problem:
                assert not isinstance(v, Const)
                raise ctx.error(f"output '{name}' has type {v.type}: {problem}")
            self._cross_check(ctx, name, v, inferred)
            env[name] = v

    def _fold_too_big(
        self,
        ctx: NodeCtx,
        inferred: dict[str, tuple[tuple[int, ...], int]],
    ) -> bool:
        """Whether an all-constant node must stay a run-time op because folding it would
        materialise more than ``FOLD_LIMIT`` bytes: an input splat (e.g. ConstantOfShape)
        that big, or an output ONNX infers that big. An output over the per-tensor byte
        limit, or a big one of an op with no run-time lowering, is an error naming the node,
        raised before anything is allocated."""
        big = any(
            isinstance(v, Const) and v.is_splat and virtual_nbytes(v) > FOLD_LIMIT
            for v in ctx.inputs
        )
        for name in ctx.node.output:
            if name in inferred:
                shape, elem = inferred[name]
                try:
                    dt = dtypes.to_numpy_dtype(dtypes.from_onnx_elem(elem))
                except ValueError:
                    continue
                big = not ctx.fold_fits(shape, dt) or big
        if big and ctx.node.op_type not in self.converters:
            raise ctx.error(
                f"folding it would create a constant of more than {FOLD_LIMIT} "
                "bytes, and the op has no run-time lowering"
            )
        return big

    def _reference_fold(self, ctx: NodeCtx) -> list[np.ndarray]:
        from onnx.reference import ReferenceEvaluator

        node = ctx.node
        feeds: dict[str, np.ndarray] = {}
        g_inputs = []
        for name, v in zip(node.input, ctx.inputs):
            if name and isinstance(v, Const):
                # onnx.reference may work in place on its inputs (LogSoftmax does);
                # our constants are read-only views of the model's bytes
                feeds[name] = v.array if v.array.flags.writeable else v.array.copy()
                g_inputs.append(
                    helper.make_tensor_value_info(name, dtypes.to_onnx_elem(v.elem), list(v.shape))
                )
        g_outputs = [helper.make_value_info(o, onnx.TypeProto()) for o in node.output if o]
        graph = helper.make_graph([node], "fold", g_inputs, g_outputs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        try:
            results = ReferenceEvaluator(model).run(None, feeds)
        except Exception as e:  # onnx.reference raises anything
            raise ctx.error(f"cannot evaluate constant node: {type(e).__name__}: {e}") from None
        return [np.asarray(r) for r in results]

    # ---- shape inference cross-check --------------------------------------------------
    def _infer_shapes(self) -> dict[str, tuple[tuple[int, ...], int]]:
        """Static shapes ONNX infers on a weight-free copy of the graph (best effort)."""
        g = self.model.graph
        light = onnx.GraphProto(name=g.name)
        init_names = {t.name for t in g.initializer}
        init_names.update(sp.values.name for sp in g.sparse_initializer)
        for sp in g.sparse_initializer:
            light.input.append(
                helper.make_tensor_value_info(sp.values.name, sp.values.data_type, sp.dims)
            )
        for vi in g.input:
            if vi.name in init_names:
                continue
            if vi.name in self.input_shapes:
                elem = vi.type.tensor_type.elem_type
                vi = helper.make_tensor_value_info(vi.name, elem, self.input_shapes[vi.name])
            light.input.append(vi)
        for t in g.initializer:
            if _numel(t.dims) <= _SMALL and t.data_location != onnx.TensorProto.EXTERNAL:
                light.initializer.append(t)
            else:
                light.input.append(helper.make_tensor_value_info(t.name, t.data_type, t.dims))
        for n in g.node:
            big = n.op_type == "Constant" and any(
                a.name == "value" and _numel(a.t.dims) > _SMALL for a in n.attribute
            )
            if big:
                t = next(a.t for a in n.attribute if a.name == "value")
                light.input.append(helper.make_tensor_value_info(n.output[0], t.data_type, t.dims))
            else:
                light.node.append(n)
        light.output.extend(g.output)
        m = onnx.ModelProto(ir_version=max(self.model.ir_version, 7), graph=light)
        m.opset_import.extend(self.model.opset_import)
        try:
            inferred = onnx.shape_inference.infer_shapes(m, strict_mode=False, data_prop=True)
        except Exception:  # inference is only a cross-check
            return {}
        out: dict[str, tuple[tuple[int, ...], int]] = {}
        for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
            tt = vi.type.tensor_type
            if not vi.type.HasField("tensor_type") or not tt.HasField("shape"):
                continue
            if all(d.HasField("dim_value") for d in tt.shape.dim):
                out[vi.name] = (tuple(int(d.dim_value) for d in tt.shape.dim), tt.elem_type)
        return out

    def _cross_check(
        self,
        ctx: NodeCtx,
        name: str,
        v: Value,
        inferred: dict[str, tuple[tuple[int, ...], int]],
    ) -> None:
        if name not in inferred:
            return
        shape, elem = inferred[name]
        mine = value_shape(v)
        if shape != mine:
            raise ctx.error(
                f"output '{name}': computed shape {list(mine)} but ONNX shape inference "
                f"gives {list(shape)}"
            )
        try:
            theirs = dtypes.from_onnx_elem(elem) if elem else None
        except ValueError:
            raise ctx.error(f"output '{name}' has unsupported element type {elem}") from None
        if theirs is not None and theirs != value_elem(v):
            raise ctx.error(
                f"output '{name}': computed element type {value_elem(v)} but ONNX gives {theirs}"
            )


_NP_OK = {
    np.dtype(d)
    for d in (
        np.float32,
        np.float16,
        np.float64,
        np.int64,
        np.int32,
        np.int16,
        np.int8,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.bool_,
    )
}


def _numel(dims: Sequence[int]) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def _tensor_nbytes(t: onnx.TensorProto) -> int:
    try:
        size = dtypes.to_numpy_dtype(dtypes.from_onnx_elem(t.data_type)).itemsize
    except ValueError:
        size = 4
    return _numel(t.dims) * size


__all__ = ["import_loaded", "import_onnx", "import_onnx_bytes", "import_onnx_stream"]
