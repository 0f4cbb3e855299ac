"""The ONNX backend node tests as importable cases (shared by the interpreter and C tests).

Each case is one small ONNX model with inputs and expected outputs. They come from the
onnx package: the files under ``onnx/backend/test/data/node/*/`` when the installed wheel
ships them, otherwise the same cases generated in memory by
``onnx.backend.test.case.node.collect_testcases`` (the generator those files are written
from; wheels of onnx 1.23 ship only the generator).

Usage::

    from onnx_node_cases import case_names, get_case, import_case, assert_close

    case = get_case("test_relu")
    imp = import_case(case)                  # imp.reason: why it is unsupported
    outputs = run(imp.module, case.feeds())  # however you run it
    for name, ref in zip(case.output_names, case.outputs):
        assert_close(outputs[name], ref, name)

A case is *supported* when every input and output is a tensor and the importer accepts the
model. Models outside the importer's opset range (9..23) are first converted with
``onnx.version_converter`` where it can (``Imported.converted_from`` records it). The
importer rejects what it cannot represent with an ``AutofusionError``; that message is the
reason. Any other exception is a bug and propagates.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from autofusion.testing import assert_close  # noqa: F401 - the bar, used as cases.assert_close

NODE_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"


@dataclass(frozen=True)
class NodeCase:
    """One backend node test: the model and its first data set."""

    name: str
    model: onnx.ModelProto
    inputs: tuple[object, ...]  # np.ndarray for tensors; lists/None for sequences, optionals
    outputs: tuple[object, ...]

    @property
    def op_types(self) -> list[str]:
        return sorted({n.op_type for n in self.model.graph.node})

    @property
    def input_names(self) -> list[str]:
        inits = {t.name for t in self.model.graph.initializer}
        return [i.name for i in self.model.graph.input if i.name not in inits]

    @property
    def output_names(self) -> list[str]:
        return [o.name for o in self.model.graph.output]

    @property
    def tensors_only(self) -> bool:
        """Every input and output is a plain tensor (no sequences, optionals, maps)."""
        graph = self.model.graph
        for vi in [*graph.input, *graph.output]:
            if not vi.type.HasField("tensor_type"):
                return False
        return all(isinstance(v, np.ndarray) for v in (*self.inputs, *self.outputs))

    def feeds(self) -> dict[str, np.ndarray]:
        """Input name -> array. Inputs beyond the data set's count are optional and absent."""
        return {n: v for n, v in zip(self.input_names, self.inputs) if isinstance(v, np.ndarray)}


def _as_value(v: object) -> object:
    if isinstance(v, onnx.TensorProto):
        try:
            return numpy_helper.to_array(v)
        except Exception:  # exotic element types stay non-tensors
            return v
    if isinstance(v, np.generic):
        return np.asarray(v)
    return v


def _load_pb(path: Path) -> object:
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return _as_value(t)


def _from_files() -> list[NodeCase]:
    cases = []
    for d in sorted(NODE_DATA.iterdir()):
        model_path, data = d / "model.onnx", d / "test_data_set_0"
        if not model_path.exists() or not data.is_dir():
            continue
        ins = sorted(data.glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
        outs = sorted(data.glob("output_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
        cases.append(
            NodeCase(
                d.name,
                onnx.load(str(model_path)),
                tuple(_load_pb(p) for p in ins),
                tuple(_load_pb(p) for p in outs),
            )
        )
    return cases


def _generated() -> list[NodeCase]:
    from onnx.backend.test.case import node

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        raw = node.collect_testcases(None)
    cases = []
    for c in raw:
        if not c.data_sets:
            continue
        ins, outs = c.data_sets[0]
        cases.append(
            NodeCase(
                c.name, c.model, tuple(_as_value(v) for v in ins), tuple(_as_value(v) for v in outs)
            )
        )
    return sorted(cases, key=lambda c: c.name)


@functools.cache
def _all_cases() -> dict[str, NodeCase]:
    have_files = NODE_DATA.is_dir() and any(NODE_DATA.glob("*/model.onnx"))
    cases = _from_files() if have_files else _generated()
    return {c.name: c for c in cases}


def case_names() -> list[str]:
    """Names of every node test (``test_abs``, ...), sorted."""
    return list(_all_cases())


def get_case(name: str) -> NodeCase:
    return _all_cases()[name]


@dataclass(frozen=True)
class Imported:
    """What the importer made of a case: ``module``, or ``reason`` it is unsupported.

    ``converted_from`` is the case's own opset when the model was first converted into the
    importer's opset range with ``onnx.version_converter`` (the generator writes most
    cases at the newest opset although the op's semantics did not change).
    """

    module: object | None
    reason: str | None
    converted_from: int | None = None
    #: graph inputs bound to their data-set values because the importer needs them constant
    bound: tuple[str, ...] = ()

    def feeds(self, case: NodeCase) -> dict[str, np.ndarray]:
        """The case's feeds without the inputs bound as constants."""
        return {n: v for n, v in case.feeds().items() if n not in self.bound}


def in_importer_range(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int | None]:
    """The model itself if its default-domain opset is one the importer reads, else its
    conversion to the nearest such opset. Raises ``ValueError`` if conversion fails."""
    from autofusion.frontend.loader import MAX_OPSET, MIN_OPSET

    version = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if version is None or MIN_OPSET <= version <= MAX_OPSET:
        return model, None
    from onnx import version_converter

    target = MAX_OPSET if version > MAX_OPSET else MIN_OPSET
    try:
        return version_converter.convert_version(model, target), version
    except Exception as e:  # the converter raises bare C++ assertion errors
        raise ValueError(
            f"onnx.version_converter cannot convert opset {version} to "
            f"{target}: {str(e).splitlines()[0][:120]}"
        ) from None


# The importer's message for an input it needs at import time (axes, pads, Clip bounds, ...).
_NEEDS_CONST = re.compile(r"\((\w+)\): .*\(input (\d+)\) must be a constant computable at import")


def _bindable(model: onnx.ModelProto, case: NodeCase, reason: str) -> str | None:
    """The graph input the importer asked to be constant in ``reason``, if the case feeds it.

    The node tests feed values such as reduction axes, Slice starts or Pad pads as graph
    inputs, where exported models have initializers or folded subgraphs; binding them to the
    data set's value is the model those exporters would write."""
    m = _NEEDS_CONST.search(reason)
    if m is None:
        return None
    op_type, index = m.group(1), int(m.group(2))
    feeds = case.feeds()
    for node in model.graph.node:
        if node.op_type == op_type and index < len(node.input) and node.input[index] in feeds:
            return node.input[index]
    return None


def _bind(model: onnx.ModelProto, name: str, value: np.ndarray) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    kept = [i for i in out.graph.input if i.name != name]
    del out.graph.input[:]
    out.graph.input.extend(kept)
    out.graph.initializer.append(numpy_helper.from_array(value, name))
    return out


def import_case(case: NodeCase) -> Imported:
    """Import a case (converted into the importer's opset range if needed). Inputs the
    importer needs constant are bound to the data set's values (``Imported.bound``)."""
    from autofusion.errors import AutofusionError
    from autofusion.frontend import import_onnx

    if not case.tensors_only:
        return Imported(None, "inputs or outputs are not plain tensors")
    try:
        model, converted_from = in_importer_range(case.model)
    except ValueError as e:
        return Imported(None, str(e))
    bound: list[str] = []
    while True:
        try:
            module = import_onnx(model, progress=False)
            return Imported(module, None, converted_from, tuple(bound))
        except AutofusionError as e:
            name = _bindable(model, case, str(e))
            if name is None or name in bound:
                return Imported(None, str(e), converted_from, tuple(bound))
            bound.append(name)
            model = _bind(model, name, case.feeds()[name])


@functools.cache
def imported(name: str) -> Imported:
    """:func:`import_case` of the named case, once per process: test_onnx_node_tests.py and
    test_c_node_tests.py both import every case while collecting, and a worker collects both.
    Read-only: lowering rewrites a module in place, so a test that lowers imports afresh."""
    return import_case(get_case(name))


def count_summary(results: Sequence[str]) -> dict[str, int]:
    """Tally of outcome strings ("passed", "failed", "unsupported", ...)."""
    out: dict[str, int] = {}
    for r in results:
        out[r] = out.get(r, 0) + 1
    return out
