"""Loading and validating ONNX models before conversion.

Everything here turns malformed input into one :class:`AutofusionError` naming the file
and, where there is one, the node and op type: garbage or truncated protobuf, a missing
graph, an opset outside 9..28, a node input that nothing produces, a cycle, graph inputs
without a static shape, unsupported element types.
"""

from __future__ import annotations

import mmap
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO

import onnx
import onnx.external_data_helper
from google.protobuf.message import DecodeError

from autofusion.analysis.order import stable_topological_order
from autofusion.dialects import dtypes
from autofusion.errors import AutofusionError
from autofusion.frontend import wire

MIN_OPSET = 9
MAX_OPSET = 28
DEFAULT_DOMAINS = ("", "ai.onnx")


def node_label(node: onnx.NodeProto, index: int) -> str:
    """The node's name, or ``<OpType>_<index>`` for unnamed nodes (docs/internals.md)."""
    return node.name or f"{node.op_type}_{index}"


@dataclass
class Loaded:
    """A parsed model and, per initializer index, raw weight bytes cut out before parsing
    (see :mod:`autofusion.frontend.wire`); ``None`` entries are still inside the proto."""

    model: onnx.ModelProto
    raws: list[bytes | None]


# Files at least this large are memory-mapped and their weights cut out before parsing.
_MMAP_MIN = 16 * 1024 * 1024


def load_path(path: str | os.PathLike[str]) -> tuple[Loaded, str]:
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            return load_stream(f, path), path
    except FileNotFoundError:
        raise AutofusionError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise AutofusionError(f"{path}: is a directory, not an ONNX file") from None


def load_stream(stream: IO[bytes], filename: str) -> Loaded:
    """Load from an open binary file: big regular files are memory-mapped (read once,
    weights copied straight out of the mapping), anything else is read."""
    try:
        fd = stream.fileno()
        size = os.fstat(fd).st_size if stat.S_ISREG(os.fstat(fd).st_mode) else 0
    except (OSError, AttributeError, ValueError):
        size = 0
    if size >= _MMAP_MIN and stream.tell() == 0:
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mm:
            return load_bytes(mm, filename)
    return load_bytes(stream.read(), filename)


def load_bytes(data: wire.Buffer, filename: str) -> Loaded:
    """Parse a serialised model and load its external data from beside ``filename``.

    Large ``raw_data`` weights are cut out of ``data`` first and copied once each, so the
    parsed protobuf does not hold a second copy of them."""
    if not len(data):
        raise AutofusionError(f"{filename}: empty file, not an ONNX model")
    split = wire.split_weights(data) if len(data) >= wire.MIN_CUT else None
    raws: list[bytes | None] = []
    model = onnx.ModelProto()
    try:
        if split is None:
            # The stub says bytes; protobuf parses any bytes-like object (bytearray, memoryview).
            whole = bytes(data) if isinstance(data, mmap.mmap) else data
            model.ParseFromString(whole)  # pyright: ignore[reportArgumentType]
        else:
            small, slices = split
            model.ParseFromString(small)
            raws = [_copy_out(data, s) for s in slices]
    except (DecodeError, RuntimeError, ValueError) as e:
        raise AutofusionError(
            f"{filename}: not a valid ONNX model (truncated or corrupt protobuf: {e})"
        ) from None
    check_structure(model, filename)
    if _uses_external_data(model):
        base = os.path.dirname(os.path.abspath(filename))
        try:
            onnx.external_data_helper.load_external_data_for_model(model, base)
        except Exception as e:  # onnx raises OSError, ValidationError, ...
            raise AutofusionError(
                f"{filename}: cannot load external weight data from {base}: "
                f"{str(e).splitlines()[0] if str(e) else type(e).__name__}"
            ) from None
    return Loaded(model, raws)


def _copy_out(data: wire.Buffer, span: wire.Span | None) -> bytes | None:
    """The bytes of one cut weight; a mapped file's pages are dropped once copied."""
    if span is None:
        return None
    start, end = span
    raw = data[start:end]
    if not isinstance(raw, bytes):
        raw = bytes(raw)
    if isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        page = mmap.PAGESIZE
        lo, hi = -(-start // page) * page, end // page * page
        if hi > lo:
            data.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
    return raw


def _uses_external_data(model: onnx.ModelProto) -> bool:
    return any(
        t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer
    ) or any(
        a.t.data_location == onnx.TensorProto.EXTERNAL
        for n in model.graph.node
        for a in n.attribute
        if a.type == onnx.AttributeProto.TENSOR
    )


def check_structure(model: onnx.ModelProto, filename: str) -> None:
    """Reject protobufs that parsed but are no usable ONNX model."""
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise AutofusionError(
            f"{filename}: not a valid ONNX model (no graph; truncated or not an ONNX file)"
        )
    if not model.graph.output:
        raise AutofusionError(f"{filename}: the graph has no outputs")


def _first_duplicate(names: Sequence[str]) -> str | None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            return n
        seen.add(n)
    return None


def _check_text(graph: onnx.GraphProto, filename: str) -> None:
    """Every name the importer reads is text. protobuf hands back ``bytes`` for a string
    field that is not valid UTF-8 (onnxruntime rejects such a model)."""

    def bad(value: object, what: str) -> None:
        if not isinstance(value, str):
            raise AutofusionError(f"{filename}: {what} {value!r} is not valid UTF-8")

    for kind, vis in (("graph input", graph.input), ("graph output", graph.output),
                      ("value_info", graph.value_info)):  # fmt: skip
        for vi in vis:
            bad(vi.name, f"{kind} name")
    for t in graph.initializer:
        bad(t.name, "initializer name")
    for sp in graph.sparse_initializer:
        bad(sp.values.name, "sparse initializer name")
    for i, n in enumerate(graph.node):
        bad(n.name, f"node #{i} name")
        where = f"node #{i}" + (f" '{n.name}'" if n.name else "")
        bad(n.op_type, f"{where} op type")
        bad(n.domain, f"{where} domain")
        for name in (*n.input, *n.output):
            bad(name, f"{where} tensor name")
        for a in n.attribute:
            bad(a.name, f"{where} attribute name")


def check_names(graph: onnx.GraphProto, filename: str) -> None:
    """Each value has one definition: graph inputs, graph outputs and initializers are each
    listed once (onnxruntime rejects a repeated input; a repeated output or initializer
    would make one of them silently win). An initializer may share its name with a graph
    input (IR >= 4: an input with a default); it is then a constant here."""
    _check_text(graph, filename)
    groups = (
        ("graph input", [vi.name for vi in graph.input]),
        ("graph output", [vi.name for vi in graph.output]),
        ("initializer", [t.name for t in graph.initializer]
         + [sp.values.name for sp in graph.sparse_initializer]),
    )  # fmt: skip
    for what, names in groups:
        dup = _first_duplicate(names)
        if dup is not None:
            raise AutofusionError(f"{filename}: {what} '{dup}' is defined more than once")
        if any(not n for n in names):
            raise AutofusionError(f"{filename}: a {what} has an empty name")


def default_opset(model: onnx.ModelProto, filename: str) -> int:
    version = None
    for imp in model.opset_import:
        if imp.domain in DEFAULT_DOMAINS:
            version = int(imp.version)
    if version is None:
        if model.ir_version and model.ir_version <= 2:
            version = 1
        else:
            raise AutofusionError(f"{filename}: the model imports no default-domain opset")
    if not MIN_OPSET <= version <= MAX_OPSET:
        raise AutofusionError(
            f"{filename}: opset {version} is not supported "
            f"(autofusion imports opsets {MIN_OPSET} to {MAX_OPSET})"
        )
    return version


@dataclass
class Ordered:
    """Nodes in a topological order, with their labels."""

    nodes: list[onnx.NodeProto]
    labels: list[str]


def topo_sort(graph: onnx.GraphProto, known: set[str], filename: str) -> Ordered:
    """Kahn's algorithm in file order; dangling inputs, cycles and a value defined twice
    (SSA violation) are errors.

    ``known`` holds the names available before any node runs (inputs, initializers).
    """
    inits = {t.name for t in graph.initializer}
    inits.update(sp.values.name for sp in graph.sparse_initializer)
    nodes = list(graph.node)
    labels = [node_label(n, i) for i, n in enumerate(nodes)]
    producer: dict[str, int] = {}
    for i, n in enumerate(nodes):
        for o in n.output:
            if not o:
                continue
            if o in producer or o in known:
                first = (f"node '{labels[producer[o]]}'" if o in producer
                         else "an initializer" if o in inits else "a graph input")  # fmt: skip
                raise AutofusionError(
                    f"{filename}: node '{labels[i]}' ({n.op_type}) output '{o}' is already "
                    f"produced by {first}"
                )
            producer[o] = i
    dangling: list[str] = []
    deps: list[set[int]] = []
    for i, n in enumerate(nodes):
        d: set[int] = set()
        for name in n.input:
            if not name or name in known:
                continue
            p = producer.get(name)
            if p is None:
                dangling.append(f"node '{labels[i]}' ({n.op_type}) input '{name}'")
            else:
                d.add(p)
        deps.append(d)
    for out in graph.output:
        if out.name not in known and out.name not in producer:
            dangling.append(f"graph output '{out.name}'")
    if dangling:
        raise AutofusionError(
            f"{filename}: value never produced (dangling input): " + "; ".join(dangling)
        )
    order = stable_topological_order(deps)
    if len(order) != len(nodes):
        # Drop nodes that merely depend on the cycle: keep those with a stuck user.
        stuck_set = set(range(len(nodes))).difference(order)
        users: list[list[int]] = [[] for _ in nodes]
        for i, d in enumerate(deps):
            for p in d:
                users[p].append(i)
        changed = True
        while changed:
            changed = False
            for i in list(stuck_set):
                if not any(u in stuck_set for u in users[i]):
                    stuck_set.discard(i)
                    changed = True
        stuck = [f"'{labels[i]}' ({nodes[i].op_type})" for i in sorted(stuck_set)]
        raise AutofusionError(
            f"{filename}: the graph has a cycle through nodes " + ", ".join(stuck)
        )
    return Ordered([nodes[i] for i in order], [labels[i] for i in order])


def bind_symbols(
    inputs: Sequence[onnx.ValueInfoProto], pins: Mapping[str, Sequence[int]], filename: str
) -> dict[str, list[int]]:
    """``pins`` (input name -> dims) completed from the symbols they bind: a ``dim_param``
    fixed by a pinned input fixes it in every input that shares it, so pinning
    ``input_ids=1x128`` also pins an ``attention_mask`` declared ``[batch, seq]``. Two pins
    that give one symbol different sizes are an error naming both inputs."""
    bound: dict[str, tuple[int, str]] = {}  # symbol -> (size, the input that fixed it)
    for vi in inputs:
        given = pins.get(vi.name)
        dims = list(vi.type.tensor_type.shape.dim) if vi.type.HasField("tensor_type") else []
        if given is None or len(given) != len(dims):
            continue  # unpinned, or a rank error reported by static_input_shape
        for d, size in zip(dims, given):
            if not d.dim_param:
                continue
            old = bound.setdefault(d.dim_param, (int(size), vi.name))
            if old[0] != int(size):
                raise AutofusionError(
                    f"{filename}: input shapes disagree on dimension '{d.dim_param}': "
                    f"{old[0]} for input '{old[1]}', {int(size)} for input '{vi.name}'"
                )
    out = {k: list(v) for k, v in pins.items()}
    for vi in inputs:
        if vi.name in out or not vi.type.HasField("tensor_type"):
            continue
        dims = list(vi.type.tensor_type.shape.dim)
        if not any(d.dim_param in bound for d in dims):
            continue
        if all(d.HasField("dim_value") or d.dim_param in bound for d in dims):
            out[vi.name] = [
                int(d.dim_value) if d.HasField("dim_value") else bound[d.dim_param][0] for d in dims
            ]
    return out


def static_input_shape(
    vi: onnx.ValueInfoProto, filename: str, override: Sequence[int] | None = None
) -> tuple[list[int], int]:
    """Shape and ONNX element type of a graph input; unknown dims are errors.

    ``override`` (from ``input_shapes``) fixes dynamic dims; it must keep the rank and the
    static dims."""
    t = vi.type
    if not t.HasField("tensor_type"):
        raise AutofusionError(f"{filename}: graph input '{vi.name}' is not a tensor")
    tt = t.tensor_type
    elem = tt.elem_type
    check_elem(elem, filename, f"graph input '{vi.name}'")
    if not tt.HasField("shape"):
        raise AutofusionError(
            f"{filename}: graph input '{vi.name}' has no shape; static shapes are required"
        )
    if override is not None:
        given = [int(v) for v in override]
        declared = list(tt.shape.dim)
        if (
            len(given) != len(declared)
            or min(given, default=0) < 0
            or any(d.HasField("dim_value") and d.dim_value != g for d, g in zip(declared, given))
        ):
            shown = [
                d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in declared
            ]
            raise AutofusionError(
                f"{filename}: input_shapes gives {given} for graph input '{vi.name}', "
                f"which is declared {shown}"
            )
        return given, elem
    dims: list[int] = []
    for i, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value") and d.dim_value >= 0:
            dims.append(int(d.dim_value))
        else:
            what = f"'{d.dim_param}'" if d.dim_param else "unknown"
            raise AutofusionError(
                f"{filename}: graph input '{vi.name}' has a dynamic dimension {what} "
                f"(dim {i}); pin it with --input-shape {vi.name}=DIMS (or "
                f"input_shapes={{'{vi.name}': [...]}} in autofusion.compile / import_onnx)"
            )
    return dims, elem


def check_elem(elem: int, filename: str, where: str) -> None:
    try:
        dtypes.from_onnx_elem(elem)
    except ValueError:
        raise AutofusionError(
            f"{filename}: {where} has unsupported element type {elem_name(elem)}"
        ) from None


def unsupported_message(filename: str, items: Sequence[tuple[str, str]]) -> str:
    """``file: unsupported ONNX ops: Foo (nodes: a, b); Bar (nodes: c)``."""
    by_type: dict[str, list[str]] = {}
    for op_type, label in items:
        by_type.setdefault(op_type, []).append(label)
    parts = [f"{t} (nodes: {', '.join(ls)})" for t, ls in by_type.items()]
    return f"{filename}: unsupported ONNX ops: " + "; ".join(parts)


def elem_name(elem: int) -> str:
    """``FLOAT``, ``BFLOAT16``, ... for an ONNX element type enum."""
    try:
        return onnx.TensorProto.DataType.Name(elem)
    except ValueError:
        return str(elem)
